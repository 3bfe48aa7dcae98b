"""The ladder: each rung's rate at the largest shape, against cuBLAS measured in the same run and the datasheet.

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


def plot_ladder(results: pd.DataFrame, calibration: pd.DataFrame):
    """TF/s per rung at the largest shape, one panel per dtype: bars in ladder order, cuBLAS as a dashed line and
    the datasheet peak as a dotted one."""
    import matplotlib.pyplot as plt

    from .figures import _empty_figure, _method_palette

    title = "The ladder: each rung at the largest shape"
    table = ladder_table(results)
    if table.empty:
        return _empty_figure(title, "method", "TF/s", log2_x=False)
    from . import dtypes

    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    panels = sorted(table.groupby(["device", "dtype"], sort=False), key=lambda kv: (kv[0][0], rank.get(kv[0][1], 99)))
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    palette = _method_palette(list(dict.fromkeys(table["method"])))
    several = table["device"].nunique() > 1
    for ax, ((device, dtype), part) in zip(axes.flat, panels):
        rungs = part[part["method"] != "cublas"]
        ax.barh(rungs["method"], rungs["tflops"], color=[palette[m] for m in rungs["method"]])
        for y, (rate, ratio) in enumerate(zip(rungs["tflops"], rungs["vs_cublas"])):
            label = f"{rate:.3g}" + (f"  ({ratio:.3f}×)" if np.isfinite(ratio) else "")
            ax.text(rate, y, " " + label, va="center", fontsize=8)
        cublas = part[part["method"] == "cublas"]["tflops"]
        if not cublas.empty:
            ax.axvline(cublas.iloc[0], color="dimgrey", linestyle="--", label=f"cuBLAS {cublas.iloc[0]:.3g}")
        peak = part["datasheet_tflops"].iloc[0]
        if peak is not None and np.isfinite(peak):
            ax.axvline(peak, color="black", linestyle=":", label=f"datasheet {peak:.4g}")
        if rungs.empty:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no kernel of ours for this dtype", transform=ax.transAxes, ha="center",
                    color="dimgrey")
        ax.invert_yaxis()  # ladder order reads top to bottom
        ax.set_xlabel("TF/s (burst, verified)")
        ax.set_title(f"{dtype}, {part['shape'].iloc[0]}" + (f"\n{device}" if several else ""), fontsize=10)
        ax.set_xlim(0, max(part["tflops"].max(), peak or 0) * 1.35)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig
