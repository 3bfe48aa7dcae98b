"""The errors of the results: every job's verification error against its tolerance, and what precision costs (each
element type's rate against its error, beside the vendor library and the datasheet peaks)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from matmul_study.analysis.ladder import datasheet_tflops
from matmul_study.analysis.precision import precision_table
from matmul_study.present.figures.style import (
    DTYPE_SHORT, ERROR_LABEL, SIZE_LABEL, PlainLogFormatter, col_wrap, dtype_order, dtype_palette, empty_figure,
    finish_grid, label_gap, log_y, mark_noisy, method_order, method_palette, noisy_flags, noisy_handle, ordered,
    place_label, shape_title, side_legend, themed, vendor_names,
)


def _tolerance_lines(grid, df: pd.DataFrame, tol: pd.Series, floor: float) -> None:
    """In each dtype's panel, its tolerances as dashed lines and, where a job was exact, the floor it is drawn on."""
    for dtype, ax in grid.axes_dict.items():
        for value in sorted(set(tol[df["dtype"] == dtype].dropna())):
            if value > 0:
                ax.axhline(value, color="firebrick", linestyle="--", linewidth=1.2, zorder=0)
                ax.annotate(
                    f"tolerance {value:.0e}",
                    xy=(0.02, value),
                    xycoords=("axes fraction", "data"),
                    xytext=(0, 3),
                    textcoords="offset points",
                    color="firebrick",
                    fontsize=8,
                )
        if (df.loc[df["dtype"] == dtype, "verification_rel_fro_error"] <= floor).any():
            ax.axhline(floor, color="grey", linestyle=":", linewidth=0.8, zorder=0)
            ax.annotate(
                "exact (error 0)",
                xy=(0.02, floor),
                xycoords=("axes fraction", "data"),
                xytext=(0, 4),
                textcoords="offset points",
                color="dimgrey",
                fontsize=8,
            )


def _legend_with_lines(fig: Figure, grid, exact: bool) -> None:
    """The relplot's legend with the tolerance line (and the floor of exact results, where one is drawn) added: the
    lines belong in the legend too."""
    handles = list(grid.legend.legend_handles)
    labels = [t.get_text() for t in grid.legend.texts]
    handles.append(Line2D([], [], color="firebrick", linestyle="--"))
    labels.append("tolerance")
    if exact:
        handles.append(Line2D([], [], color="grey", linestyle=":"))
        labels.append("exact (error 0)")
    grid.legend.remove()
    fig.legend(handles, labels, loc="center right", frameon=False)


@themed
def plot_verification_error(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Relative error against size for every job (failed ones too), one panel per dtype, tolerance dashed."""
    title = "Verification error against the fp64 reference"
    need = {"verification_rel_fro_error", "status", "dtype", "size", "method"}
    if results.empty or not need <= set(results.columns):
        return empty_figure(title, "Verification error is not drawn: no job in these results recorded its error.")
    err = pd.to_numeric(results["verification_rel_fro_error"], errors="coerce")
    df = results[np.isfinite(err)].assign(verification_rel_fro_error=err[np.isfinite(err)])
    if df.empty:
        return empty_figure(title, "Verification error is not drawn: no job in these results recorded its error.")
    tol = pd.to_numeric(df.get("verification_tolerance"), errors="coerce") if "verification_tolerance" in df else None
    # an exact result (error 0, e.g. int32) has no place on a log axis: draw it on a floor below everything else
    positive = pd.concat([df["verification_rel_fro_error"], tol if tol is not None else pd.Series(dtype=float)])
    positive = positive[positive > 0]
    floor = positive.min() / 10 if not positive.empty else 1e-16
    df = df.assign(
        verification_rel_fro_error=df["verification_rel_fro_error"].clip(lower=floor),
        status=np.where(df["status"] == "passed", "passed", "failed"),
    )
    methods = ordered(df["method"], method_order())
    dtypes = ordered(df["dtype"], dtype_order())
    grid = sns.relplot(
        data=df,
        kind="scatter",
        x="size",
        y="verification_rel_fro_error",
        col="dtype",
        col_order=dtypes,
        col_wrap=col_wrap(len(dtypes)),
        hue="method",
        hue_order=methods,
        palette=method_palette(methods),
        style="status",
        style_order=["passed", "failed"],
        markers={"passed": "o", "failed": "X"},
        s=55,
        alpha=0.85,
        height=3.2,
        aspect=1.2,
        facet_kws={"sharey": False},  # fp16 and fp64 errors are ten orders of magnitude apart
    )
    grid.set_titles(col_template="{col_name}")
    if tol is not None:
        _tolerance_lines(grid, df, tol, floor)
    fig = finish_grid(grid, title, SIZE_LABEL, ERROR_LABEL, plain_y=False)
    if grid.legend is not None and tol is not None:
        _legend_with_lines(fig, grid, (df["verification_rel_fro_error"] <= floor).any())
    return fig


def _datasheet_lines(ax, device: str, names: list, palette: dict) -> bool:
    """Each dtype's datasheet dense peak on `device` as a vertical dotted line in the dtype's colour; dtypes that
    share a peak (fp16 and bf16, fp8 and int8) share one line whose dots take their colours in turn. Each line is
    named ("fp16/bf16 989") upright beside it at the top. Returns whether any was drawn."""
    peaks: dict[float, list] = {}
    for name in names:
        sheet = datasheet_tflops(device, name)
        if sheet:
            peaks.setdefault(sheet, []).append(name)
    for value, sharing in peaks.items():
        n = len(sharing)
        for i, name in enumerate(sharing):
            # dots 2 long, 2 apart: line i starts its dash in slot i of n, so the colours alternate
            ax.axvline(value, color=palette[name], linewidth=1.5, zorder=1, linestyle=((4 * n - 4 * i) % (4 * n),
                                                                                      (2, 4 * n - 2)))
        ax.annotate("/".join(DTYPE_SHORT.get(d, d) for d in sharing) + f" {value:.0f}", xy=(value, 1),
                    xycoords=("data", "axes fraction"), xytext=(3, -4), textcoords="offset points", rotation=90,
                    ha="left", va="top", fontsize=8, color=palette[sharing[0]])
    return bool(peaks)


def _draw_device(ax, part: pd.DataFrame, device: str, names: list, palette: dict, floor: float) -> bool:
    """One device's panel: the vendor's and our points, FP8's quantization error above its GEMM's, the datasheet
    peaks and the floor of exact results (our kernels are named once the layout is final: _name_kernels). Returns
    whether a datasheet peak was drawn."""
    for vendor, marker, size in ((True, "s", 120), (False, "o", 60)):
        pts = part[part["vendor"] == vendor]
        colours = [palette[d] for d in pts["dtype"]]
        # the vendor hollow and larger, so that ours at the same place reads as a dot inside its square
        ax.scatter(pts["tflops"], pts["y"], marker=marker, s=size, zorder=3 if vendor else 4,
                   facecolors="none" if vendor else colours, edgecolors=colours if vendor else "white",
                   linewidths=1.8 if vendor else 0.6)
    fp8 = part[part["quant"].notna()]
    if not fp8.empty:
        colours = [palette[d] for d in fp8["dtype"]]
        ax.vlines(fp8["tflops"], fp8["y"], fp8["quant"], colors=colours, linewidth=1, alpha=0.6, zorder=2)
        ax.scatter(fp8["tflops"], fp8["quant"], marker="D", s=45, facecolors="none", edgecolors=colours,
                   linewidths=1.4, zorder=3)
    mark_noisy(ax, part["tflops"], part["y"], part["noisy"])
    roofs = _datasheet_lines(ax, device, names, palette)
    if (part["y"] <= floor).any():
        ax.axhline(floor, color="grey", linestyle=":", linewidth=0.8, zorder=0)
        ax.annotate("exact (error 0)", xy=(0.01, floor), xycoords=("axes fraction", "data"), xytext=(0, 4),
                    textcoords="offset points", color="dimgrey", fontsize=8)
    ax.set_title(device)
    return roofs


def _kernel_labels(part: pd.DataFrame, palette: dict) -> list[tuple[float, float, str, object]]:
    """(x, y, text, colour) of the name of each kernel of ours in a panel. One kernel's points that nearly coincide
    (its fp16 and bf16 builds, say) share one name that lists their element types, in grey."""
    labels = []
    for name, group in part[~part["vendor"].astype(bool)].groupby("label", sort=False):
        logs = np.log10(group[["tflops", "y"]].astype(float).to_numpy())
        clusters: list[list[int]] = []
        for i, (lx, ly) in enumerate(logs):
            near = next((c for c in clusters if abs(logs[c[0], 0] - lx) < 0.1 and abs(logs[c[0], 1] - ly) < 0.5),
                        None)
            near.append(i) if near is not None else clusters.append([i])
        for cluster in clusters:
            rows = group.iloc[cluster]
            dtypes = list(dict.fromkeys(rows["dtype"]))
            text = name if len(dtypes) == 1 else f"{name}\n({', '.join(DTYPE_SHORT.get(d, d) for d in dtypes)})"
            labels.append((float(rows["tflops"].max()), float(10 ** logs[cluster, 1].mean()), text,
                           palette[dtypes[0]] if len(dtypes) == 1 else "#444444"))
    return labels


# Where a kernel's name may stand beside its point, in order of preference: (dx, dy) in points, ha, va; from the
# third ring on, a thin line leads from the name to its point.
_LABEL_SPOTS = [((7, 0), "left", "center"), ((-7, 0), "right", "center"), ((0, 7), "center", "bottom"),
                ((0, -7), "center", "top"), ((6, 8), "left", "bottom"), ((6, -8), "left", "top"),
                ((-6, 8), "right", "bottom"), ((-6, -8), "right", "top"), ((0, 17), "center", "bottom"),
                ((0, -17), "center", "top")]
_LABEL_SPOTS += [((dx, dy), ha, "bottom" if dy > 0 else "top") for dy in (26, -26, 40, -40)
                 for dx, ha in ((0, "center"), (20, "left"), (-20, "right"))]
_LEADER_FROM = 10  # the first spot that takes a leader line


def _name_kernels(ax, part: pd.DataFrame, palette: dict, floor: float) -> None:
    """Name each kernel of ours beside its point, at the first spot of _LABEL_SPOTS where the name overlaps no
    other name, no point (a marker's box), no text already in the panel and not the floor of exact results, and
    lies inside the panel (where none is free, the spot that overlaps least: style.place_label); called once the
    figure's layout is final, since the test is in display units."""
    fig = ax.figure
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    half = 5.5 * fig.dpi / 72  # half the side of the largest marker (the vendor's square), in pixels
    points = ax.transData.transform(np.column_stack([
        np.concatenate([part["tflops"], part.loc[part["quant"].notna(), "tflops"]]).astype(float),
        np.concatenate([part["y"], part["quant"].dropna()]).astype(float)]))
    texts = [t.get_window_extent(renderer) for t in ax.texts if t.get_text()]
    markers = [Bbox.from_extents(x - half, y - half, x + half, y + half) for x, y in points]
    panel = ax.get_window_extent(renderer)
    if (part["y"] <= floor).any():  # the floor's dotted line, as thick as a name is tall
        y_floor = ax.transData.transform((1, floor))[1]
        markers.append(Bbox.from_extents(panel.x0, y_floor - 1, panel.x1, y_floor + 1))
    for x, y, text, colour in sorted(_kernel_labels(part, palette), key=lambda label: -label[0]):
        note = ax.annotate(text, xy=(x, y), xytext=(0, 0), textcoords="offset points", fontsize=7, color=colour,
                           bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none",
                                 "alpha": 0.75},  # a dotted peak line crossing a name stays behind it
                           arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.6, "shrinkA": 1,
                                       "shrinkB": 5})
        best = place_label(note, _LABEL_SPOTS, renderer, texts, markers, panel, pad=label_gap(fig))
        note.arrow_patch.set_visible(best >= _LEADER_FROM)


def _format_axes(axes, table: pd.DataFrame, sheets: list, floor: float, top: float) -> None:
    """Log axes with plain rate labels, one x range for every panel (the points and the datasheet peaks), and a
    quarter of the height free above the highest point, for the datasheet lines' names."""
    for ax in axes:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(PlainLogFormatter())
        ax.xaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(3, 1)))
        log_y(ax, plain=False)
        ax.set_ylim(floor / 3, top * (top / (floor / 3)) ** (1 / 3))
        ax.set_xlim(table["tflops"].min() / 2, max(table["tflops"].max(), *sheets) * 1.8)
        ax.grid(True, which="major", alpha=0.4)
        ax.set_xlabel("throughput (TF/s, burst, verified; log scale)")
        ax.set_ylabel(ERROR_LABEL)
        ax.tick_params(labelbottom=True)


def _precision_legend(table: pd.DataFrame, names: list, palette: dict, roofs: bool, floor: float) -> list:
    """The element types (with their shape where it is one), the kinds of kernel, then the lines also drawn."""
    shapes = table.groupby("dtype")["shape"].agg(lambda s: set(s))
    handles = [Line2D([], [], color="none", label="element type (shape)")]
    handles += [Line2D([], [], color=palette[d], marker="o", linestyle="",
                       label=f"{d}, {shape_title(next(iter(shapes[d])))}" if len(shapes[d]) == 1 else d)
                for d in names]
    handles.append(Line2D([], [], color="none", label="kernel"))
    if (~table["vendor"].astype(bool)).any():
        handles.append(Line2D([], [], color="dimgrey", marker="o", linestyle="",
                              label="ours (the two fastest, verified)"))
    if table["vendor"].any():
        handles.append(Line2D([], [], color="dimgrey", marker="s", markerfacecolor="none", markersize=8,
                              markeredgewidth=1.8, linestyle="", label=f"vendor ({vendor_names(table)})"))
    lines = []
    if table["quant"].notna().any():
        lines.append(Line2D([], [], color="dimgrey", marker="D", markerfacecolor="none", linewidth=1,
                            label="quantizing fp32 inputs\n(measured apart)"))
    if roofs:
        lines.append(Line2D([], [], color="dimgrey", linestyle=(0, (2, 2)), linewidth=1.5,
                            label="datasheet dense peak"))
    if (table["y"] <= floor).any():
        lines.append(Line2D([], [], color="grey", linestyle=":", linewidth=0.8, label="exact (error 0)"))
    if table["noisy"].any():
        lines.append(noisy_handle())
    if lines:
        handles += [Line2D([], [], color="none", label="also drawn"), *lines]
    return handles


@themed
def plot_precision(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Relative error against TF/s, one point per (dtype, kernel) at the dtype's largest square shape (the fastest
    two verified kernels of ours, named, and the vendor line, analysis.precision), one panel per GPU device; the
    datasheet peaks as dotted lines, exact results on a floor, FP8's quantization error above its GEMM's."""
    title = "What precision costs: throughput against error"
    table = precision_table(results)
    table = table[np.isfinite(table["rel_error"].astype(float))]
    if table.empty:
        return empty_figure(title, "Precision and speed is not drawn: no verified GPU job with a recorded error in "
                                    "these results.")
    names = ordered(table["dtype"], dtype_order())
    palette = dtype_palette(names)
    quant = table["quantization_rel_error"].astype(float)
    quant = quant.where(np.isfinite(quant) & (quant > 0))
    positive = pd.concat([table["rel_error"], quant]).astype(float)
    positive = positive[positive > 0]
    floor = positive.min() / 10 if not positive.empty else 1e-16
    table = table.assign(y=table["rel_error"].astype(float).clip(lower=floor), quant=quant,
                         noisy=noisy_flags(table, results, device="device", dtype="dtype", shape="shape",
                                           method="method", label="label"))
    devices = list(dict.fromkeys(table["device"]))
    fig, axes = plt.subplots(len(devices), 1, figsize=(11, 5.2 * len(devices)), squeeze=False, sharex=True)
    roofs = False
    for ax, device in zip(axes[:, 0], devices):
        roofs = _draw_device(ax, table[table["device"] == device], device, names, palette, floor) or roofs
    top = max(positive.max() if not positive.empty else floor, floor * 10)
    _format_axes(axes[:, 0], table, [datasheet_tflops(d, n) or 0 for d in devices for n in names], floor, top)
    handles = _precision_legend(table, names, palette, roofs, floor)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    side_legend(fig, handles)
    for ax, device in zip(axes[:, 0], devices):
        _name_kernels(ax, table[table["device"] == device], palette, floor)
    return fig
