"""The answer the report gives first: per device, element type and shape, the fastest verified kernel of ours, its
rate, its ratio to the vendor line measured in the same run and its share of the datasheet's dense peak. A run
with no kernel of ours (CPU only) ranks the reference lines instead."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import like_with_like, vendor_rate, with_classes
from matmul_study.analysis.columns import numeric
from matmul_study.analysis.ladder import datasheet_tflops
from matmul_study.analysis.result_devices import device_kind
from matmul_study.core import dtypes, registry

NEEDED = {"method", "dtype", "shape", "status", "gflops"}
# One row per device, element type and shape; cublas_tflops is the dtype's vendor line (cuBLAS; cuBLASLt for FP8).
# vs_cublas pairs the kernel with the vendor line of its accuracy class (analysis/accuracy.py): like_with_like.
COLUMNS = ["device", "dtype", "shape", "label", "configuration", "tflops", "vs_cublas", "pct_of_datasheet",
           "cublas_tflops", "accuracy", "like_with_like"]


@dataclass(frozen=True)
class Headline:
    table: pd.DataFrame  # COLUMNS, by device, then element type in dtypes.NAMES order, then size
    ours: bool  # whether a kernel of ours ran; if not, the table ranks the reference lines
    ranked: pd.DataFrame  # the verified jobs the table's rows were chosen from
    gpu: bool  # whether any verified job ran on a GPU


def _fastest(group: pd.DataFrame, ours: pd.DataFrame, device: str, dtype: str, shape: str) -> dict:
    """The row of one (device, dtype, shape): the fastest of `ours` beside the vendor line in `group`."""
    best = ours.loc[ours["gflops"].idxmax()]
    vendor, same = vendor_rate(group, best["accuracy_class"])
    sheet = datasheet_tflops(device, dtype, best["method"]) if best["kind"] == "gpu" else None
    return {"device": device, "dtype": dtype, "shape": shape, "_size": best["size3"],
            "label": best.get("label", best["method"]),
            "configuration": str(best.get("variant") or "default") if pd.notna(best.get("variant")) else "default",
            "tflops": best["gflops"] / 1e3,
            "vs_cublas": best["gflops"] / vendor,
            "pct_of_datasheet": 100 * best["gflops"] / 1e3 / sheet if sheet else np.nan,
            "cublas_tflops": vendor / 1e3, "accuracy": best["accuracy_class"], "like_with_like": same}


def headline(results: pd.DataFrame) -> Headline | None:
    """The headline table of `results` (every job, a sweep's configurations included); None without a verified
    job with a rate, or without the columns that say which."""
    if results.empty or not NEEDED <= set(results.columns):
        return None
    gf = numeric(results, "gflops")
    ok = results[(results["status"] == "passed") & gf.notna() & (gf > 0)].assign(gflops=gf)
    if ok.empty:
        return None
    reference = {name for name, m in registry.METHODS.items() if m.reference_line}
    has_ours = not ok["method"].isin(reference).all()
    ok = with_classes(ok).assign(device=ok["env_device_name"] if "env_device_name" in ok else "",
                                 kind=device_kind(ok), size3=numeric(ok, "m") * numeric(ok, "k") * numeric(ok, "n"))
    rows = []
    for (device, dtype, shape), group in ok.groupby(["device", "dtype", "shape"], sort=False):
        # The fastest kernel whose accuracy class has its vendor line here: never a trade shown as parity.
        ours = like_with_like(group, group[~group["method"].isin(reference)]) if has_ours else group
        if not ours.empty:
            rows.append(_fastest(group, ours, device, dtype, shape))
    if not rows:
        return None
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    table = pd.DataFrame(rows).sort_values(["device", "dtype", "_size"], key=lambda c: c.map(rank) if c.name == "dtype"
                                           else c).drop(columns="_size")
    return Headline(table=table, ours=has_ours, ranked=ok[~ok["method"].isin(reference)] if has_ours else ok,
                    gpu=bool((ok["kind"] == "gpu").any()))
