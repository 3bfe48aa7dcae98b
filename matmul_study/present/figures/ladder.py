"""Bars at the largest shape: the ladder's rungs beside the vendor line and the datasheet peak, and each kernel on
each GPU device at the largest shape the devices share."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from matmul_study.analysis.ladder import VENDOR_NAMES, ladder_table, vendor_line
from matmul_study.analysis.noise import MARK
from matmul_study.analysis.result_devices import devices_long, gpu_devices
from matmul_study.core import dtypes
from matmul_study.present.figures.style import (
    KERNEL_LABEL, NOISY_LABEL, ONE_DEVICE, TFLOPS_LABEL, PlainLogFormatter, dtype_order, empty_figure, make_room,
    mark_noisy, method_order, method_palette, noisy_flags, noisy_handle, ordered, shape_title, themed, vendor_names,
)


@themed
def plot_devices(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s of each kernel on each GPU device at the largest shape all devices ran, one panel per dtype."""
    from matmul_study.present.report.text import tf  # the report's rate format; lazy: present.report imports figures
    title = "Devices compared at the largest common shape"
    gpus = gpu_devices(results[results["status"] == "passed"]) if "status" in results else []
    if len(gpus) < 2:
        return empty_figure(title, ONE_DEVICE if gpus else
                             "Devices compared is not drawn: no verified GPU job in these results.")
    long = devices_long(results)
    long = long.assign(tflops=long["gflops"] / 1e3, noisy=noisy_flags(long, results, device="device", dtype="dtype",
                                                                      shape="shape", label="label"))
    if long.empty:
        return empty_figure(title, "Devices compared is not drawn: the devices share no shape with verified jobs.")
    dtypes = ordered(long["dtype"], dtype_order())
    devices = [d for d in gpus if d in set(long["device"])]
    colours = dict(zip(devices, [sns.color_palette("colorblind")[i % 10] for i in (0, 3, 2, 4, 1, 9, 5, 6)]))
    labels_of = {}
    for dtype in dtypes:
        sub = long[long["dtype"] == dtype]
        order = sub.assign(_m=sub["method"].map(lambda m: method_order().index(m) if m in method_order() else 99))
        labels_of[dtype] = list(dict.fromkeys(order.sort_values(["_m", "method", "block"])["label"]))
    heights = [len(labels_of[d]) * (0.2 * len(devices) + 0.12) + 0.9 for d in dtypes]
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(9.5, sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights}, sharex=True)
    bar = 0.8 / len(devices)
    for ax, dtype in zip(axes[:, 0], dtypes):
        sub = long[long["dtype"] == dtype]
        labels = labels_of[dtype]
        for k, device in enumerate(devices):
            values = sub[sub["device"] == device].set_index("label")["tflops"].reindex(labels)
            # the first device on top within each group
            ys = np.arange(len(labels)) - 0.4 + bar * (k + 0.5)
            ax.barh(ys, values.to_numpy(), height=bar * 0.92, color=colours[device], label=device)
            flagged = sub[sub["device"] == device].set_index("label")["noisy"].reindex(labels, fill_value=False)
            mark_noisy(ax, values.to_numpy(), ys, flagged.to_numpy())
            for y, v in zip(ys, values):
                if np.isfinite(v):
                    ax.annotate(tf(v), xy=(v, y), xytext=(3, 0), textcoords="offset points", va="center",
                                fontsize=7, color="#333333")
        ax.set_yticks(np.arange(len(labels)), labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_title(f"{dtype}, {sub['shape'].iloc[0]}")
    lo, hi = long["tflops"].min(), long["tflops"].max()
    for ax in axes[:, 0]:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(PlainLogFormatter())
        ax.set_xlim(10 ** np.floor(np.log10(lo)), hi * 4)  # room for the value labels
        ax.grid(True, axis="x", which="major", alpha=0.4)
        ax.set_xlabel(TFLOPS_LABEL)
        ax.set_ylabel(KERNEL_LABEL)
        ax.tick_params(labelbottom=True)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout(h_pad=1.5)
    noisy = bool(long["noisy"].any())
    legend = fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[d]) for d in devices]
                        + ([noisy_handle()] if noisy else []), labels=devices + ([NOISY_LABEL] if noisy else []),
                        title="device", loc="center right", frameon=False)
    make_room(fig, legend)
    return fig


def plot_ladder(results: pd.DataFrame, calibration: pd.DataFrame):
    """TF/s per rung at the largest shape, one panel per dtype (two panels a row): bars in ladder order, the vendor
    line (cuBLAS; cuBLASLt for FP8) as a dashed line and the datasheet peak as a dotted one, each named at the
    panel's top edge beside its line (the lower value to the left of its line, the higher to the right, so the two
    never overlap). Each rung's rate and its ratio to the vendor line stand in a column right of the panel, clear
    of the bars and the lines."""
    from matmul_study.present.report.text import tf  # the report's rate format; lazy: present.report imports figures
    title = "The ladder: each rung at the largest shape"
    table = ladder_table(results)
    if table.empty:
        return empty_figure(title, "The ladder is not drawn: no verified GPU job in these results.")
    table = table.assign(noisy=noisy_flags(table, results, device="device", dtype="dtype", shape="shape",
                                           label="label"))
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    panels = sorted(table.groupby(["device", "dtype"], sort=False), key=lambda kv: (kv[0][0], rank.get(kv[0][1], 99)))
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    # a row of panels as tall as its longest ladder, and one bar thickness everywhere
    n_rungs = [max(int((part["method"] != vendor_line(dtype)).sum()), 2) for (_, dtype), part in panels]
    per_row = [max(n_rungs[r * cols:(r + 1) * cols]) for r in range(rows)]
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, sum(0.3 * n + 1.5 for n in per_row) + 0.9),
                             squeeze=False, gridspec_kw={"height_ratios": [0.3 * n + 1.5 for n in per_row]})
    palette = method_palette(list(dict.fromkeys(table["method"])))
    several = table["device"].nunique() > 1
    for i, (ax, ((device, dtype), part)) in enumerate(zip(axes.flat, panels)):
        most = per_row[i // cols]
        vendor = vendor_line(dtype)
        rungs = part[part["method"] != vendor]
        ys = np.arange(len(rungs))
        ax.barh(ys, rungs["tflops"], color=[palette[m] for m in rungs["method"]], height=0.7)
        mark_noisy(ax, rungs["tflops"], ys, rungs["noisy"])
        ax.set_yticks(ys, rungs["label"])
        ax.set_ylim(most - 0.5, -0.5)  # ladder order reads top to bottom; one bar thickness in every panel
        for y, (rate, ratio) in zip(ys, zip(rungs["tflops"], rungs["vs_cublas"])):
            label = f"{tf(rate)} TF/s" + (f", {ratio:.2f}×" if np.isfinite(ratio) else "")
            ax.annotate(label, xy=(1, y), xycoords=("axes fraction", "data"), xytext=(6, 0),
                        textcoords="offset points", va="center", ha="left", fontsize=8, annotation_clip=False)
        lines = []
        cublas = part[part["method"] == vendor]["tflops"]
        if not cublas.empty:
            ax.axvline(cublas.iloc[0], color="dimgrey", linestyle="--", linewidth=1.2)
            flag = f" {MARK}" if part.loc[part["method"] == vendor, "noisy"].iloc[0] else ""
            lines.append((cublas.iloc[0], f"{VENDOR_NAMES.get(vendor, vendor)} {tf(cublas.iloc[0])}{flag}",
                          "dimgrey"))
        peak = part["datasheet_tflops"].iloc[0]
        if peak is not None and np.isfinite(peak):
            ax.axvline(peak, color="black", linestyle=":", linewidth=1.4)
            lines.append((peak, f"datasheet {tf(peak)}", "black"))
        for i, (x, text, colour) in enumerate(sorted(lines)):
            lower = i == 0 and len(lines) > 1
            ax.annotate(text, xy=(x, 1), xycoords=("data", "axes fraction"), xytext=(-3 if lower else 3, 2),
                        textcoords="offset points", ha="right" if lower else "left", va="bottom", fontsize=8,
                        color=colour, annotation_clip=False)
        if rungs.empty:
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no kernel of ours for this dtype", transform=ax.transAxes, ha="center",
                    color="dimgrey")
        ax.set_xlabel("throughput (TF/s, burst, verified)")
        ax.set_ylabel("rung (in ladder order)")
        ax.set_title(f"{dtype}, {shape_title(part['shape'].iloc[0])}" + (f", {device}" if several else ""),
                     fontsize=10, pad=16)
        ax.set_xlim(0, max(part["tflops"].max(), peak or 0) * 1.06)
        ax.grid(True, axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color="dimgrey", linestyle="--",
                      label=f"{vendor_names(table)}, measured in the same run")]
    if table["datasheet_tflops"].notna().any():
        handles.append(Line2D([], [], color="black", linestyle=":", linewidth=1.4,
                              label="datasheet dense peak (vendor)"))
    if table["noisy"].any():
        handles.append(noisy_handle())  # a flagged vendor line is named with MARK instead
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout(h_pad=1.6, w_pad=2.0, rect=(0, 0.6 / fig.get_figheight(), 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    return fig
