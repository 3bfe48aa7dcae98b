"""The ladder: each rung's rate at the largest shape, against cuBLAS measured in the same run and the datasheet
(the table; figures.plot_ladder draws it).

The datasheet peaks are the vendor's dense rates for the SXM boards, leads only (the measured cuBLAS line is the
one a ratio divides by). A device the table does not know simply has no datasheet line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import registry

# Dense TFLOP/s by the vendor's datasheet (H100 and H200 SXM share the chip): per dtype of the study. fp64 is the
# tensor-core (DMMA) rate; plain fp64 FMA runs at half of it.
DATASHEET_TFLOPS = {
    "H200": {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9, "float64": 66.9},
    "H100": {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9, "float64": 66.9},
}


def datasheet_tflops(device_name: str, dtype: str) -> float | None:
    for model, peaks in DATASHEET_TFLOPS.items():
        if model in str(device_name):
            return peaks.get(dtype)
    return None


def ladder_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (device, dtype): every verified GPU method's best burst rate at the dtype's largest shape, in ladder
    order, with its ratio to cuBLAS at that shape and the datasheet peak."""
    columns = ["device", "dtype", "shape", "method", "tflops", "vs_cublas", "datasheet_tflops"]
    if results.empty or "gflops" not in results:
        return pd.DataFrame(columns=columns)
    gf = pd.to_numeric(results["gflops"], errors="coerce")
    ok = results[(results["status"] == "passed") & np.isfinite(gf) & (gf > 0)].assign(gflops=gf)
    if "env_device_kind" in ok:
        ok = ok[ok["env_device_kind"] == "gpu"]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    device = ok["env_device_name"] if "env_device_name" in ok else pd.Series("", index=ok.index)
    ok = ok.assign(device=device, size3=ok["m"].astype(float) * ok["k"] * ok["n"])
    rows = []
    order = {name: i for i, name in enumerate(registry.METHODS)}
    for (dev, dtype), group in ok.groupby(["device", "dtype"], sort=False):
        top = group[group["size3"] == group["size3"].max()]
        best = top.groupby("method")["gflops"].max()
        cublas = best.get("cublas")
        for method in sorted(best.index, key=lambda n: order.get(n, len(order))):
            rows.append((dev, dtype, top["shape"].iloc[0], method, best[method] / 1e3,
                         best[method] / cublas if cublas else np.nan, datasheet_tflops(dev, dtype)))
    return pd.DataFrame(rows, columns=columns)
