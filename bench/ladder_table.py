#!/usr/bin/env python3
"""The README's answer and squares tables from one or two runs' results.csv (present.tables): each dtype's top rungs
against the vendor line of their accuracy class at 4096³ and 8192³, with the 8192³ rates and errors (a second run's
numbers beside the first's, first / second); then, from the first run, the fastest verified kernel of ours over the
vendor line of its class at every square.

  python bench/ladder_table.py FIRST/results.csv [SECOND/results.csv]
"""
from __future__ import annotations

import sys

import pandas as pd

from matmul_study.present.tables import answer_table, squares_table


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    runs = [pd.read_csv(p) for p in argv]
    print(answer_table(runs))
    print()
    print(squares_table(runs[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
