#!/usr/bin/env python3
"""The README's ladder table from one or two runs' results.csv: for each dtype's best rung, burst × cuBLAS at 4096³
and 8192³ (sustained × sustained in brackets), its 8192³ TF/s and cuBLAS's, first run / second run.

  python bench/ladder_table.py FIRST/results.csv [SECOND/results.csv]
"""
from __future__ import annotations

import sys

import pandas as pd

BEST = {"float16": "wgmma_warp_specialized", "bfloat16": "wgmma_warp_specialized", "tf32": "wgmma_tf32",
        "float32": "warptiled", "float64": "dmma", "int8": "wgmma_int8"}


def _row(d: pd.DataFrame, method: str, dtype: str, size: int) -> pd.Series | None:
    hit = d[(d.method == method) & (d.dtype == dtype) & (d.m == size) & (d.k == size) & (d.n == size)
            & (d.status == "passed")]
    return hit.sort_values("gflops").iloc[-1] if len(hit) else None  # a sweep's fastest verified variant


def ratio(d: pd.DataFrame, dtype: str, size: int, column: str = "gflops") -> float | None:
    ours, cublas = _row(d, BEST[dtype], dtype, size), _row(d, "cublas", dtype, size)
    if ours is None or cublas is None or pd.isna(ours[column]) or pd.isna(cublas[column]):
        return None
    return ours[column] / cublas[column]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def table(runs: list[pd.DataFrame]) -> str:
    lines = ["| dtype | best rung | 4096³ × cuBLAS | 8192³ × cuBLAS | 8192³ TF/s | cuBLAS 8192³ TF/s |",
             "| --- | --- | --- | --- | --- | --- |"]
    for dtype, method in BEST.items():
        if not any(((d.method == method) & (d.dtype == dtype)).any() for d in runs):
            continue  # a rung the study did not run (not in its methods or dtypes)
        cells = []
        for size in (4096, 8192):
            cells.append(" / ".join(f"{_fmt(ratio(d, dtype, size))} ({_fmt(ratio(d, dtype, size, 'sustained_gflops'))})"
                                    for d in runs))
        tf = lambda name: " / ".join(_fmt(r["gflops"] / 1e3 if (r := _row(d, name, dtype, 8192)) is not None else None,
                                          1) for d in runs)
        lines.append(f"| {dtype} | {method} | {cells[0]} | {cells[1]} | {tf(method)} | {tf('cublas')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([pd.read_csv(p) for p in sys.argv[1:3]]))
