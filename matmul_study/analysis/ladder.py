"""The ladder: each rung's rate at the largest shape, against the vendor line measured in the same run (cuBLAS;
cuBLASLt for FP8) and the datasheet (the table; figures.plot_ladder draws it, analysis.why explains its steps).

The datasheet peaks are the vendor's dense rates for the SXM boards, leads only (the measured cuBLAS line is the
one a ratio divides by). A device the table does not know simply has no datasheet line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import vendor_rate, with_classes
from matmul_study.core import registry

# Dense TFLOP/s by the vendor's datasheet (H100 and H200 SXM share the chip): per dtype of the study. fp64 is the
# tensor-core (DMMA) rate; plain fp64 FMA runs at half of it.
DATASHEET_TFLOPS = {
    "H200": {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9, "float64": 66.9, "int8": 1978.9,
             "float8_e4m3": 1978.9, "float8_e4m3_block": 1978.9},
    "H100": {"float16": 989.4, "bfloat16": 989.4, "tf32": 494.7, "float32": 66.9, "float64": 66.9, "int8": 1978.9,
             "float8_e4m3": 1978.9, "float8_e4m3_block": 1978.9},
}
# HBM bandwidth by the vendor's datasheet (TB/s): H200 SXM HBM3e, H100 SXM HBM3.
DATASHEET_TBPS = {"H200": 4.8, "H100": 3.35}
# The vendor libraries as the figures and the report name them.
VENDOR_NAMES = {"cublas": "cuBLAS", "cublaslt": "cuBLASLt"}

MODEL_COLUMNS = ("model_flops_issued", "model_bytes_read", "model_bytes_written", "model_intensity")
COLUMNS = ["device", "dtype", "shape", "method", "label", "block", "tflops", "vs_cublas", "datasheet_tflops",
           "flops_issued", "traffic_bytes", "intensity"]


def datasheet_tflops(device_name: str, dtype: str, method: str = "") -> float | None:
    """The datasheet peak of the arithmetic a kernel of `dtype` runs on: its method's (Method.arithmetic: 3xTF32
    computes fp32 on the tf32 tensor cores, so its share of "the peak" is of the tf32 peak, whatever its accuracy
    class), else the dtype's; None where unknown."""
    if method in registry.METHODS:
        dtype = registry.get(method).arithmetic_of(dtype)
    for model, peaks in DATASHEET_TFLOPS.items():
        if model in str(device_name):
            return peaks.get(dtype)
    return None


def datasheet_tbps(device_name: str) -> float | None:
    """The device's datasheet HBM bandwidth in TB/s, None for a device the table does not know."""
    return next((tbps for model, tbps in DATASHEET_TBPS.items() if model in str(device_name)), None)


def vendor_line(dtype: str) -> str | None:
    """The method every kernel of `dtype` is measured against (cuBLAS; cuBLASLt for FP8): the registry's vendor
    line, None where no vendor library runs the dtype (int32)."""
    try:
        return registry.vendor_method(dtype)
    except KeyError:
        return None


def verified_gpu_rates(results: pd.DataFrame) -> pd.DataFrame:
    """The verified GPU jobs with a positive, finite rate (`gflops` as a number) and their `device` (the GPU's
    name, '' where not recorded). A job is on the GPU by its recorded device kind, else by its method."""
    if results.empty or "gflops" not in results or "status" not in results:
        return results.iloc[0:0].assign(device=pd.Series(dtype=object))
    gf = pd.to_numeric(results["gflops"], errors="coerce")
    keep = (results["status"] == "passed") & np.isfinite(gf) & (gf > 0)
    if "env_device_kind" in results:
        keep &= results["env_device_kind"] == "gpu"
    else:
        keep &= results["method"].map(lambda m: m in registry.METHODS and registry.get(m).on_gpu)
    ok = results[keep].copy()  # one block per column type: the wide results table, new columns cheap
    ok["gflops"] = gf[keep]
    ok["device"] = ok["env_device_name"].fillna("").astype(str) if "env_device_name" in ok else ""
    return ok


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _modelled(row: pd.Series) -> tuple[float, float, float]:
    """(FLOP issued, bytes read + written, intensity) of a job: the tidy table's model_* columns, else the model
    itself (results collated before the model columns existed)."""
    values = [_number(row.get(f"model_{key}"))
              for key in ("flops_issued", "bytes_read", "bytes_written", "intensity")]
    if all(np.isfinite(v) for v in values):
        issued, read, written, intensity = values
        return float(issued), float(read + written), float(intensity)
    from matmul_study.analysis.model import known_build, model

    try:
        got = model(row["method"], int(row["m"]), int(row["k"]), int(row["n"]), int(row.get("block") or 0),
                    row["dtype"], known_build(row["method"], row.get("variant")))
    except (KeyError, ValueError, TypeError):
        return np.nan, np.nan, np.nan
    return float(got["flops_issued"]), float(got["bytes_read"] + got["bytes_written"]), float(got["intensity"])


def ladder_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (device, dtype): every verified GPU method's best burst rate at the dtype's largest shape, in ladder
    order, with its ratio to the vendor line at that shape (vs_cublas: cuBLAS, cuBLASLt for FP8), the datasheet
    peak, and the analytic model's work, global-memory traffic and intensity of the job (the block size) that ran
    fastest."""
    ok = verified_gpu_rates(results)
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    ok = with_classes(ok[[c for c in ("device", "method", "label", "block", "variant", "dtype", "m", "k", "n", "shape",
                                      "gflops", "accuracy_class") + MODEL_COLUMNS if c in ok]].copy())
    ok = ok.assign(size3=ok["m"].astype(float) * ok["k"] * ok["n"]).reset_index(drop=True)
    if "label" not in ok:
        ok = ok.assign(label=ok["method"])
    if "block" not in ok:
        ok = ok.assign(block=0)
    rows = []
    order = {name: i for i, name in enumerate(registry.METHODS)}
    for (dev, dtype), group in ok.groupby(["device", "dtype"], sort=False):
        top = group[group["size3"] == group["size3"].max()]
        best = top.loc[top.groupby("method")["gflops"].idxmax()]
        for _, row in best.sort_values("method", key=lambda s: s.map(lambda n: order.get(n, len(order)))).iterrows():
            issued, traffic, intensity = _modelled(row)
            block = _number(row["block"])
            vendor = vendor_rate(top, row["accuracy_class"])[0]  # of its accuracy class (analysis/accuracy.py)
            rows.append((dev, dtype, row["shape"], row["method"], row["label"], int(block) if np.isfinite(block) else 0,
                         row["gflops"] / 1e3, row["gflops"] / vendor,
                         datasheet_tflops(dev, dtype, row["method"]), issued, traffic,
                         intensity))
    return pd.DataFrame(rows, columns=COLUMNS)
