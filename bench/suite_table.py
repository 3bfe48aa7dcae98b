#!/usr/bin/env python3
"""A suite run's table from its results.csv (present.tables.suite_table): a row per shape (m × k × n), a column per
dtype and accuracy class, each cell the fastest verified kernel of ours in that class over the vendor line of the
class in the same run (* sustained over sustained, where a burst rate is missing); with --rates, that kernel's TF/s
and the build the heuristic picked.

  python bench/suite_table.py RESULTS.csv [--rates]
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from matmul_study.present.tables import suite_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a run's results.csv")
    parser.add_argument("--rates", action="store_true", help="TF/s and builds in place of the ratios")
    args = parser.parse_args(argv)
    print(suite_table(pd.read_csv(args.results), rates=args.rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
