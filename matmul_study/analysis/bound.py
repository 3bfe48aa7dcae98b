"""Per shape, what bounds it: memory or math, by the datasheet roofline, and how much of that bound each line uses.

A product must read A and B and write C once: its ideal traffic, (m k + k n) input bytes + m n output bytes. Its
intensity (2 m n k FLOP over those bytes) against the device's ridge point (datasheet peak over datasheet HBM
bandwidth) says which roof it sits under. For each (device, dtype, shape): the fastest verified kernel of ours of a
class with its vendor line (analysis/accuracy.py) and the vendor line of that class, each with its share of the
datasheet HBM bandwidth (ideal bytes / time / bandwidth) and of the datasheet peak. A share of bandwidth above 100 %
means the operands came from L2 (no launch flushes it): there latency, not bandwidth, decides. The roof is the
dtype's (its vendor line's arithmetic); a kernel of ours that runs the dtype on other arithmetic (3xTF32 and 3xFP16:
fp32 on the tf32 and fp16 tensor cores, Method.arithmetic) has its share of the peak taken against that arithmetic's
peak, so that no share of a peak passes 100 % (fp32 at 208 TF/s on an H100 is 312 % of fp32's peak). So it does where
even the roof's time (the ideal bytes at the datasheet bandwidth, or the FLOP at the peak, whichever is longer) is
a few launches' worth: under LATENCY_US."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import like_with_like, vendor_rows, with_classes
from matmul_study.analysis.ladder import datasheet_tbps, datasheet_tflops, verified_gpu_rates
from matmul_study.core import dtypes, registry

COLUMNS = ["device", "dtype", "shape", "m", "k", "n", "intensity", "ridge", "bound", "roof_us", "label", "variant",
           "tflops", "pct_of_hbm", "pct_of_peak", "vendor", "vendor_tflops", "vendor_pct_of_hbm",
           "vendor_pct_of_peak"]
# A launch alone takes 2.8 µs (cuBLAS) to 5.0 µs (the warp-specialised kernel) to complete in a batch of launches on
# an H200 (64³, docs/tensor-cores.md), before the pipeline's fill and a split's reduction; below LATENCY_US at the
# roof, latency decides.
LAUNCH_FLOOR_US = (2.8, 5.0)
LATENCY_US = 10.0


def ideal_bytes(m: int, k: int, n: int, dtype: str) -> float:
    """A and B read once, C written once, in the dtype's storage."""
    record = dtypes.get(dtype)
    return float((m * k + k * n) * record.itemsize + m * n * record.output.itemsize)


def pct_of_hbm(traffic: float, seconds: float, tbps: float) -> float:
    """The share of the HBM bandwidth `tbps` (TB/s) that `traffic` bytes in `seconds` make, in %."""
    return 100 * traffic / seconds / (tbps * 1e12)


def _shares(gflops: float, flops: float, traffic: float, tbps: float | None, peak: float | None) -> tuple:
    hbm = pct_of_hbm(traffic, flops / (gflops * 1e9), tbps) if tbps else np.nan
    return hbm, 100 * gflops / 1e3 / peak if peak else np.nan


def bound_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (GPU device, dtype, shape) with a verified kernel of ours (COLUMNS)."""
    ok = verified_gpu_rates(results)
    if ok.empty or not {"method", "dtype", "m", "k", "n"} <= set(ok.columns):
        return pd.DataFrame(columns=COLUMNS)
    ok = with_classes(ok)
    if "label" not in ok:
        ok = ok.assign(label=ok["method"])
    vendors = set(registry.vendor_methods())
    reference = {name for name, m in registry.METHODS.items() if m.reference_line}
    rows = []
    for (device, dtype, m, k, n), group in ok.groupby(["device", "dtype", "m", "k", "n"], sort=False):
        ours = like_with_like(group, group[~group["method"].isin(reference)])
        if ours.empty or dtype not in dtypes.NAMES:
            continue
        best = ours.loc[ours["gflops"].idxmax()]
        flops, traffic = 2.0 * m * n * k, ideal_bytes(m, k, n, dtype)
        tbps, peak = datasheet_tbps(device), datasheet_tflops(device, dtype)
        ridge = peak * 1e12 / (tbps * 1e12) if tbps and peak else np.nan
        vendor, same = vendor_rows(group[group["method"].isin(vendors)], best["accuracy_class"])
        vendor = vendor.loc[vendor["gflops"].idxmax()] if same else None  # like with like, or no vendor column
        hbm, math = _shares(best["gflops"], flops, traffic, tbps, datasheet_tflops(device, dtype, best["method"]))
        v_hbm, v_math = _shares(vendor["gflops"], flops, traffic, tbps, peak) if vendor is not None else (np.nan,) * 2
        rows.append({"device": device, "dtype": dtype, "shape": f"{m}x{k}x{n}", "m": m, "k": k, "n": n,
                     "intensity": flops / traffic, "ridge": ridge,
                     "bound": "" if np.isnan(ridge) else "memory" if flops / traffic < ridge else "math",
                     "roof_us": 1e6 * max(traffic / (tbps * 1e12), flops / (peak * 1e12)) if tbps and peak
                     else np.nan,
                     "label": best["label"], "variant": best.get("variant", "default"),
                     "tflops": best["gflops"] / 1e3, "pct_of_hbm": hbm, "pct_of_peak": math,
                     "vendor": vendor["method"] if vendor is not None else "",
                     "vendor_tflops": vendor["gflops"] / 1e3 if vendor is not None else np.nan,
                     "vendor_pct_of_hbm": v_hbm, "vendor_pct_of_peak": v_math})
    return pd.DataFrame(rows, columns=COLUMNS)


def decode_cells(cases: list[dict], tbps: float) -> pd.DataFrame:
    """bench/compare.py's cases (the rows of its --json) by dtype and shape: the fastest kernel of ours whose output
    passed both checks, its ratio to the vendor line of its class timed in the same process, and its and the
    vendor's share of the HBM bandwidth `tbps` (ideal bytes over the time), in the order the cases first name them."""
    rows = []
    for case in cases:
        checks = case.get("checks", {})
        if not isinstance(case.get("ms"), float) or not all(c.get("passed") for c in checks.values()) or not checks:
            continue
        m, n, k = map(int, case["m x n x k"].split("x"))
        traffic = ideal_bytes(m, k, n, case["dtype"])
        rows.append({"dtype": case["dtype"], "shape": case["m x n x k"], "method": case["method"],
                     "variant": case["variant"], "us": 1e3 * case["ms"], "ratio": case["ratio"],
                     "pct_of_hbm": pct_of_hbm(traffic, case["ms"] * 1e-3, tbps),
                     "vendor_pct_of_hbm": pct_of_hbm(traffic, case["cuBLAS ms"] * 1e-3, tbps)})
    columns = ["dtype", "shape", "method", "variant", "us", "ratio", "pct_of_hbm", "vendor_pct_of_hbm"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows, columns=columns)
    fastest = table.loc[table.groupby(["dtype", "shape"], sort=False)["us"].idxmin()]
    return fastest.reset_index(drop=True)
