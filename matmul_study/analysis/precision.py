"""What precision costs: per GPU device and element type, the fastest two verified kernels of ours and the vendor line
(cuBLAS; cuBLASLt for FP8) at the dtype's largest square shape, each with its burst rate and its relative error
against the fp64 reference, the ratio to the vendor line, and for FP8 the error of quantizing fp32 inputs (the
table behind figures.plot_precision and the report's "Precision and speed" section).

An error is what the job recorded, and what it measures depends on the element type:
- float16, bfloat16, float32, float64: the GEMM's own error, against the fp64 product of the inputs as stored in
  the type (rounding data to the type beforehand is not in it);
- tf32: the inputs are fp32 and the tensor cores round them, so the error includes that rounding;
- float8_e4m3: against the fp64 product of the dequantized inputs, the GEMM's own error; quantizing the fp32
  inputs to e4m3 is measured apart (result field quantization.rel_fro_error, column quantization_rel_error here);
- int8: exact, error 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import vendor_rows, with_classes
from matmul_study.analysis.ladder import datasheet_tflops, vendor_line, verified_gpu_rates
from matmul_study.analysis.why import reference_lines
from matmul_study.core import dtypes

# Kernels of ours per dtype: the fastest two methods, so that a dtype with two kinds of rung shows both (fp32: the
# tensor-core 3xFP16 beside 3xTF32, or 3xTF32 beside the SIMT warptiled where 3xFP16 did not run; fp64: DMMA beside
# warptiled). A third point a dtype crowds the figure's labels.
OURS_PER_DTYPE = 2
COLUMNS = ["device", "dtype", "shape", "method", "label", "vendor", "tflops", "rel_error", "vendor_method",
           "vendor_tflops", "vendor_rel_error", "vs_vendor", "quantization_rel_error", "datasheet_tflops"]
# Each element type against the more precise one it stands in for, where the two errors measure the same thing
# (see above): FP8 and int8 against fp16 (both the GEMM's own error), tf32 against fp32 (both against the fp32
# inputs), fp32 against fp64.
COMPARED_WITH = {"float8_e4m3": "float16", "float8_e4m3_block": "float16", "int8": "float16", "tf32": "float32",
                 "float32": "float64"}
COMPARISON_COLUMNS = ["device", "dtype", "against", "method", "against_method", "shape", "against_shape", "tflops",
                      "against_tflops", "rate_ratio", "rel_error", "against_rel_error", "error_ratio",
                      "quantization_rel_error"]


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def _dtype_rank(name: str) -> int:
    """Display order of the dtype records; a dtype the records do not know sorts last."""
    return dtypes.NAMES.index(name) if name in dtypes.NAMES else len(dtypes.NAMES)


def _at_shape(group: pd.DataFrame) -> pd.DataFrame:
    """The rows of the dtype's largest square shape (m = k = n); the largest shape where none is square."""
    square = group[(group["m"] == group["k"]) & (group["k"] == group["n"])]
    pool = square if not square.empty else group
    top = pool.loc[pool["size3"].idxmax()]
    return group[(group["m"] == top["m"]) & (group["k"] == top["k"]) & (group["n"] == top["n"])]


def precision_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (GPU device, dtype), at the dtype's largest square shape: a row for each of the OURS_PER_DTYPE fastest
    verified methods of ours and one for the vendor line (where each ran and verified there; vendor True), each with
    its best burst rate over blocks and configurations (tflops), the relative Frobenius error of that job
    (rel_error), the vendor line's rate and error, the ratio of the two rates (vs_vendor), the quantization error
    where the results carry one (quantization_rel_error; NaN otherwise) and the datasheet peak. Failed jobs never
    enter: a wrong kernel is never shown as fast. Devices in order of appearance, dtypes in the records' display
    order."""
    ok = verified_gpu_rates(results)
    if ok.empty or not {"method", "dtype", "m", "k", "n"} <= set(ok.columns):
        return pd.DataFrame(columns=COLUMNS)
    ok = with_classes(ok).assign(size3=ok["m"].astype(float) * ok["k"] * ok["n"],
                                 rel_error=_column(ok, "verification_rel_fro_error"),
                                 quantization_rel_error=_column(ok, "quantization_rel_fro_error"))
    if "label" not in ok:
        ok = ok.assign(label=ok["method"])
    if "shape" not in ok:
        ok = ok.assign(shape=[f"{m}x{k}x{n}" for m, k, n in zip(ok["m"], ok["k"], ok["n"])])
    reference = reference_lines()
    rows = []
    for (device, dtype), group in ok.groupby(["device", "dtype"], sort=False):
        at = _at_shape(group)
        vendor_method = vendor_line(dtype)
        vendors = at[at["method"] == vendor_method]
        # The vendor line of each accuracy class (cuBLASLt's FP8: promoted and fast accumulation), each a point.
        vendors = vendors.loc[vendors.groupby("accuracy_class")["gflops"].idxmax()] if not vendors.empty else vendors
        ours = at[~at["method"].isin(reference | {vendor_method})]
        fastest = ours.loc[ours.groupby("method")["gflops"].idxmax()].nlargest(OURS_PER_DTYPE, "gflops")
        picks = [(row, False) for _, row in fastest.iterrows()] + [(row, True) for _, row in vendors.iterrows()]
        for row, is_vendor in picks:
            # Like with like: the vendor line of the row's class, else the vendor's own class.
            pool = vendor_rows(vendors, row["accuracy_class"])[0]
            vendor = pool.iloc[0] if not pool.empty else None
            vendor_tf = vendor["gflops"] / 1e3 if vendor is not None else np.nan
            rows.append({"device": device, "dtype": dtype, "shape": row["shape"], "method": row["method"],
                         "label": row["label"], "vendor": is_vendor, "tflops": row["gflops"] / 1e3,
                         "rel_error": row["rel_error"], "vendor_method": vendor_method if vendor is not None else "",
                         "vendor_tflops": vendor_tf,
                         "vendor_rel_error": vendor["rel_error"] if vendor is not None else np.nan,
                         "vs_vendor": row["gflops"] / 1e3 / vendor_tf,
                         "quantization_rel_error": row["quantization_rel_error"],
                         "datasheet_tflops": datasheet_tflops(device, dtype) or np.nan})
    out = pd.DataFrame(rows, columns=COLUMNS)
    devices = list(dict.fromkeys(out["device"]))
    order = out.assign(_d=out["device"].map(devices.index), _t=out["dtype"].map(_dtype_rank), _r=-out["tflops"])
    return out.loc[order.sort_values(["_d", "_t", "dtype", "vendor", "_r"]).index].reset_index(drop=True)


def comparisons(table: pd.DataFrame) -> pd.DataFrame:
    """Per device, each pair of COMPARED_WITH that ran: the fastest verified point of each dtype (ours or the
    vendor's) in precision_table, the ratio of their rates and of their errors (NaN where the more precise one's
    error is 0 or either is unknown), and the quantization error of the first where recorded."""
    rows = []
    for device, part in table.groupby("device", sort=False):
        fastest = part.loc[part.groupby("dtype")["tflops"].idxmax()].set_index("dtype")
        for dtype, against in COMPARED_WITH.items():
            if dtype not in fastest.index or against not in fastest.index:
                continue
            a, b = fastest.loc[dtype], fastest.loc[against]
            rows.append({"device": device, "dtype": dtype, "against": against, "method": a["label"],
                         "against_method": b["label"], "shape": a["shape"], "against_shape": b["shape"],
                         "tflops": a["tflops"], "against_tflops": b["tflops"], "rate_ratio": a["tflops"] / b["tflops"],
                         "rel_error": a["rel_error"], "against_rel_error": b["rel_error"],
                         "error_ratio": a["rel_error"] / b["rel_error"] if b["rel_error"] > 0 else np.nan,
                         "quantization_rel_error": a["quantization_rel_error"]})
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
