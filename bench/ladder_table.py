#!/usr/bin/env python3
"""The README's ladder table from one or two runs' results.csv: for each dtype's top rungs, burst × the dtype's
vendor line (cuBLAS; cuBLASLt for FP8) at 4096³ and 8192³ (sustained × sustained in brackets), the 8192³ TF/s of
both and the relative errors at 8192³, ours (vendor's); first run / second run.

  python bench/ladder_table.py FIRST/results.csv [SECOND/results.csv]
"""
from __future__ import annotations

import sys

import pandas as pd

from matmul_study.core.registry import vendor_method

# (dtype, rung): the fastest rung of each dtype, and fp32's two kinds (SIMT, and 3xTF32 on the tensor cores).
ROWS = [("float8_e4m3", "wgmma_fp8"), ("float16", "wgmma_warp_specialized"), ("bfloat16", "wgmma_warp_specialized"),
        ("tf32", "wgmma_tf32"), ("float32", "warptiled"), ("float32", "wgmma_3xtf32"), ("float64", "dmma"),
        ("int8", "wgmma_int8")]


def _row(d: pd.DataFrame, method: str, dtype: str, size: int) -> pd.Series | None:
    hit = d[(d.method == method) & (d.dtype == dtype) & (d.m == size) & (d.k == size) & (d.n == size)
            & (d.status == "passed")]
    return hit.sort_values("gflops").iloc[-1] if len(hit) else None  # a sweep's fastest verified variant


def ratio(d: pd.DataFrame, dtype: str, method: str, size: int, column: str = "gflops") -> float | None:
    ours, vendor = _row(d, method, dtype, size), _row(d, vendor_method(dtype), dtype, size)
    if ours is None or vendor is None or pd.isna(ours[column]) or pd.isna(vendor[column]):
        return None
    return ours[column] / vendor[column]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _error(r: pd.Series | None) -> str:
    if r is None:
        return "–"
    e = r["verification_rel_fro_error"]
    return "0" if e == 0 else f"{e:.1e}"


def table(runs: list[pd.DataFrame]) -> str:
    lines = ["| dtype | rung | 4096³ × vendor | 8192³ × vendor | 8192³ TF/s | vendor 8192³ TF/s | error (vendor's) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for dtype, method in ROWS:
        if not any(((d.method == method) & (d.dtype == dtype)).any() for d in runs):
            continue  # a rung the study did not run (not in its methods or dtypes)
        vendor = vendor_method(dtype)
        cells = []
        for size in (4096, 8192):
            cells.append(" / ".join(
                f"{_fmt(ratio(d, dtype, method, size))} ({_fmt(ratio(d, dtype, method, size, 'sustained_gflops'))})"
                for d in runs))
        tf = lambda name: " / ".join(_fmt(r["gflops"] / 1e3 if (r := _row(d, name, dtype, 8192)) is not None else None,
                                          1) for d in runs)
        errors = " / ".join(f"{_error(_row(d, method, dtype, 8192))} ({_error(_row(d, vendor, dtype, 8192))})"
                            for d in runs)
        lines.append(f"| {dtype} | {method} | {cells[0]} | {cells[1]} | {tf(method)} | {tf(vendor)} | {errors} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([pd.read_csv(p) for p in sys.argv[1:3]]))
