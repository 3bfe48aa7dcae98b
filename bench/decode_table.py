#!/usr/bin/env python3
"""A decode table from bench/compare.py's --json files: for each shape (rows) and dtype (columns), the fastest
kernel of ours whose output passed its checks, its ratio to the vendor line of its class timed in the same process,
and in brackets its share of the device's datasheet HBM bandwidth (A's, B's and C's bytes once, over the time;
analysis.bound.decode_cells).

  python bench/decode_table.py RUN.json [RUN.json ...] --device "NVIDIA H200" [--dtypes D ...]

The columns are the dtypes in the order the runs first name them, or those of --dtypes in its order.
"""
from __future__ import annotations

import argparse
import json
import sys

from matmul_study.analysis.bound import decode_cells
from matmul_study.analysis.ladder import DATASHEET_TBPS, datasheet_tbps


def markdown(cells, dtypes: list[str] | None = None) -> str:
    dtypes, shapes = dtypes or list(dict.fromkeys(cells["dtype"])), list(dict.fromkeys(cells["shape"]))
    at = {(r.dtype, r.shape): f"{r.ratio:.2f} ({r.pct_of_hbm:.0f} %)" for r in cells.itertuples()}
    lines = ["| m × n × k | " + " | ".join(dtypes) + " |", "| --- " * (len(dtypes) + 1) + "|"]
    lines += ["| " + shape.replace("x", "×") + " | " + " | ".join(at.get((d, shape), "–") for d in dtypes) + " |"
              for shape in shapes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="bench/compare.py --json files")
    parser.add_argument("--device", required=True, help="the GPU's name, as nvidia-smi gives it (its datasheet "
                                                        "bandwidth: " + ", ".join(DATASHEET_TBPS) + ")")
    parser.add_argument("--dtypes", nargs="+", help="the columns, in this order (default: every dtype of the runs)")
    args = parser.parse_args(argv)
    tbps = datasheet_tbps(args.device)
    if tbps is None:
        parser.error(f"--device {args.device!r}: no datasheet bandwidth for it; known: {', '.join(DATASHEET_TBPS)}")
    cases = [case for path in args.runs for case in json.loads(open(path).read())]
    print(markdown(decode_cells(cases, tbps), args.dtypes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
