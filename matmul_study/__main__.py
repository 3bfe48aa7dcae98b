"""Command line:
    python -m matmul_study model --method tiled --m 512 --k 512 --n 512 --block 16 --dtype float32
    python -m matmul_study compare run1/results.csv run2/results.csv
"""

from __future__ import annotations

import argparse
import json
import sys

from . import dtypes, registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matmul_study")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("model", help="print the analytic work and traffic model of one kernel and shape as JSON")
    p.add_argument("--method", required=True, choices=list(registry.METHODS))
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--block", type=int, default=0, help="block size for methods with a block axis")
    p.add_argument("--dtype", required=True, choices=list(dtypes.NAMES))
    c = sub.add_parser("compare", help="compare the median times of two runs' results.csv (reproducibility)")
    c.add_argument("first")
    c.add_argument("second")
    c.add_argument("--tolerance", type=float, default=0.03, help="relative change counted as reproduced")
    args = parser.parse_args(argv)

    if args.command == "compare":
        import pandas as pd

        from .reproduce import compare

        json.dump(compare(pd.read_csv(args.first), pd.read_csv(args.second), args.tolerance), sys.stdout,
                  indent=1)
        print()
        return 0

    from .model import model

    method = registry.get(args.method)
    for name in ("m", "k", "n"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.dtype not in method.dtypes:
        parser.error(f"--dtype {args.dtype}: {args.method} supports {', '.join(method.dtypes)}")
    if method.block_axis and not 1 <= args.block <= 32:
        parser.error(f"--block {args.block}: {args.method} needs a block size from 1 to 32")
    json.dump(model(args.method, args.m, args.k, args.n, args.block, args.dtype), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
