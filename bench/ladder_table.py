#!/usr/bin/env python3
"""The README's ladder table from one or two runs' results.csv: for each dtype's top rungs (FP8's also within its
promoted class, where the run has that class's pick), burst × the vendor line
of the rung's accuracy class (cuBLAS; cuBLASLt for FP8, its promoted or its fast-accumulation line;
analysis.accuracy) at 4096³ and 8192³ (sustained × sustained in brackets), the 8192³ TF/s of both and the relative
errors at 8192³, ours (vendor's); first run / second run. A ratio taken against a vendor line of another class (a
build whose class has no vendor line, such as 3xTF32 before promotion) is a trade, marked †.

  python bench/ladder_table.py FIRST/results.csv [SECOND/results.csv]
"""
from __future__ import annotations

import sys

import pandas as pd

from matmul_study.analysis import accuracy
from matmul_study.core import registry
from matmul_study.core.specs import PROMOTED

# (dtype, rung, accuracy class): the fastest rung of each dtype (its fastest build, of any class: None), FP8's also
# within the promoted class, which a study runs beside the fast pick, and fp32's three kinds (SIMT, and 3xTF32 and
# 3xFP16 on the tensor cores).
ROWS = [("float8_e4m3", "wgmma_fp8", None), ("float8_e4m3", "wgmma_fp8", PROMOTED),
        ("float16", "wgmma_warp_specialized", None), ("bfloat16", "wgmma_warp_specialized", None),
        ("tf32", "wgmma_tf32", None), ("float32", "warptiled", None), ("float32", "wgmma_3xtf32", None),
        ("float32", "wgmma_3xfp16", None), ("float64", "dmma", None), ("int8", "wgmma_int8", None)]


def _shape(d: pd.DataFrame, dtype: str, size: int) -> pd.DataFrame:
    return d[(d.dtype == dtype) & (d.m == size) & (d.k == size) & (d.n == size) & (d.status == "passed")]


def _row(d: pd.DataFrame, method: str, dtype: str, size: int, within: str | None = None) -> pd.Series | None:
    hit = _shape(d, dtype, size)
    hit = hit[(hit.method == method) & ((hit.accuracy_class == within) if within else True)]
    return hit.sort_values("gflops").iloc[-1] if len(hit) else None  # a sweep's fastest verified variant


def _vendor(d: pd.DataFrame, ours: pd.Series | None, dtype: str, size: int) -> tuple[pd.Series | None, bool]:
    """The fastest vendor row of `ours`'s accuracy class at its shape, and whether it is of that class."""
    shape = _shape(d, dtype, size)
    vendors = shape[shape.method.isin(registry.vendor_methods())]
    if ours is None or vendors.empty:
        return None, False
    rows, same = accuracy.vendor_rows(vendors, ours["accuracy_class"])
    return rows.sort_values("gflops").iloc[-1], same


def ratio(d: pd.DataFrame, dtype: str, method: str, size: int, column: str = "gflops",
          within: str | None = None) -> str:
    ours = _row(d, method, dtype, size, within)
    vendor, same = _vendor(d, ours, dtype, size)
    if ours is None or vendor is None or pd.isna(ours[column]) or pd.isna(vendor[column]):
        return "–"
    return _fmt(ours[column] / vendor[column]) + ("" if same else "†")


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _error(r: pd.Series | None) -> str:
    if r is None:
        return "–"
    e = r["verification_rel_fro_error"]
    return "0" if e == 0 else f"{e:.1e}"


def table(runs: list[pd.DataFrame]) -> str:
    runs = [accuracy.with_classes(d) for d in runs]
    lines = ["| dtype | rung | 4096³ × vendor | 8192³ × vendor | 8192³ TF/s | vendor 8192³ TF/s | error (vendor's) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for dtype, method, within in ROWS:
        def ran(d: pd.DataFrame) -> pd.Series:
            return (d.method == method) & (d.dtype == dtype) & ((d.accuracy_class == within) if within else True)

        if not any(ran(d).any() for d in runs):
            continue  # a rung (or class) the study did not run (not in its methods, dtypes or picks)
        cells = [" / ".join(f"{ratio(d, dtype, method, size, within=within)} "
                            f"({ratio(d, dtype, method, size, 'sustained_gflops', within)})"
                            for d in runs) for size in (4096, 8192)]
        pairs = [(ours := _row(d, method, dtype, 8192, within), _vendor(d, ours, dtype, 8192)[0]) for d in runs]
        tf = lambda i: " / ".join(_fmt(p[i]["gflops"] / 1e3 if p[i] is not None else None, 1) for p in pairs)
        errors = " / ".join(f"{_error(ours)} ({_error(vendor)})" for ours, vendor in pairs)
        label = f"{dtype}, {within}" if within else dtype
        lines.append(f"| {label} | {method} | {cells[0]} | {cells[1]} | {tf(0)} | {tf(1)} | {errors} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([pd.read_csv(p).copy() for p in sys.argv[1:3]]))  # copy: one block, so adding a column is cheap
