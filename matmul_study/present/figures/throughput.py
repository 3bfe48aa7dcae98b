"""Rates over matrix size, one panel per element type and a row of panels per device: the throughput of each
method (with each point's spread), its speedup over the naive kernel, the effect of the thread-block size, and
float32 against float64."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from matmul_study.analysis.spread import rates_with_spread, verified
from matmul_study.present.figures.style import (
    NO_BLOCK_STYLE, REFERENCE_METHODS, REFERENCE_STYLE, SIZE_LABEL, SPEEDUP_LABEL, SPREAD_LABEL, TFLOPS_LABEL,
    col_wrap, device_rows, draw_spread, dtype_order, dtype_palette, empty_figure, finish_grid, mark_noisy,
    method_order, method_palette, noisy_column, ordered, set_titles, style_maps, themed, with_style_column,
)


def _method_lines(df: pd.DataFrame, y: str, col: str, title: str, ylabel: str, spread: bool = False) -> Figure:
    """Shared body of the throughput and speedup figures: hue=method, style=block, one panel per `col`, and a row
    of panels per device when there are several. With `spread`, each point's spread (columns y_lo and y_hi) is
    drawn as a bar behind it."""
    df, rows = device_rows(df)
    df = with_style_column(df)
    # a job run twice (merged result sets) is one point, the median; distinct shapes of one size stay apart
    keys = (["device"] if rows else []) + [col, "method", "block", "shape", "size"]
    extra = [c for c in (f"{y}_lo", f"{y}_hi") if spread and c in df]
    df = df.assign(noisy=noisy_column(df)).groupby(keys, as_index=False, sort=False).agg(
        **{c: (c, "median") for c in [y] + extra}, noisy=("noisy", "max"))
    methods = ordered(df["method"], method_order())
    cols = ordered(df[col], dtype_order())
    style_order, markers, dashes = style_maps(set(df["block"]))
    palette = method_palette(methods)
    grid = sns.relplot(
        data=df,
        kind="line",
        x="size",
        y=y,
        col=col,
        col_order=cols,
        col_wrap=col_wrap(len(cols)) if rows is None else None,
        row="device" if rows else None,
        row_order=rows,
        hue="method",
        hue_order=methods,
        palette=palette,
        style="block",
        style_order=style_order,
        markers=markers,
        dashes=dashes,
        # every job is its own point: two shapes with the same ∛(m·k·n) are both shown, not averaged
        estimator=None,
        markersize=6,
        height=3.1,
        aspect=1.2,
        facet_kws={"sharey": True},
        legend=False,
    )
    set_titles(grid, bool(rows))
    noisy = False
    for key, ax in grid.axes_dict.items():
        row_key, col_key = key if rows else (None, key)
        panel = df[df[col] == col_key] if not rows else df[(df["device"] == row_key) & (df[col] == col_key)]
        if extra:
            draw_spread(ax, panel.rename(columns={y: "tflops", f"{y}_lo": "tflops_lo", f"{y}_hi": "tflops_hi"}),
                        palette)
        noisy |= mark_noisy(ax, panel["size"], panel[y], panel["noisy"])
    return _room_for_labels(finish_grid(grid, title, SIZE_LABEL, ylabel, noisy=noisy,
                                        handles=_method_legend(df, methods, palette, markers, spread=bool(extra))))


def _labels_overlap(fig: Figure) -> bool:
    """Whether any two axis labels or tick labels (of ticks in view) of different panels overlap or touch (laid out,
    not rasterised: the boxes are all it needs)."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for i, ax in enumerate(a for a in fig.axes if a.get_visible()):
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        texts = [ax.xaxis.label, ax.yaxis.label, *(t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1),
                 *(t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1)]
        # a gap of a twelfth of an inch at least: labels that touch read as one
        boxes += [(i, t.get_window_extent(renderer).padded(fig.dpi / 24)) for t in texts
                  if t.get_visible() and t.get_text()]
    return any(a.overlaps(b) for k, (i, a) in enumerate(boxes) for j, b in boxes[k + 1:] if i != j)


def _room_for_labels(fig: Figure) -> Figure:
    """finish_grid makes room for the legend right of the panels by narrowing them; where that runs one panel's
    labels into the next one's (two panels a row: the x labels), widen the figure by the legend's width and lay
    the panels out again beside it, so that each keeps the width its labels need."""
    for _ in range(2):
        if not fig.legends or not _labels_overlap(fig):
            break
        legend = fig.legends[-1].get_window_extent().width / fig.dpi + 0.2
        width = fig.get_figwidth() + legend
        fig.set_figwidth(width)
        fig.tight_layout(w_pad=2.0, rect=(0, 0, 1 - legend / width, 1))
    return fig


def _method_legend(df: pd.DataFrame, methods: list, palette: dict, markers: dict, spread: bool) -> list:
    """Legend handles drawn as the lines are: each method in its colour and its own line style (the reference
    lines dashed), then the block sizes by marker (only real block sizes), then the spread bar."""
    handles = [Line2D([], [], color="none", label="method")]
    for m in methods:
        levels = set(df.loc[df["method"] == m, "block"])
        reference = m in REFERENCE_METHODS
        single = next(iter(levels)) if len(levels) == 1 and not levels - {REFERENCE_STYLE, NO_BLOCK_STYLE} else None
        handles.append(Line2D([], [], color=palette[m], linestyle=(0, (5, 2)) if reference else "-",
                              marker=markers[single] if single else None, markersize=6,
                              label=f"{m} (reference)" if reference else m))
    blocks = [lv for lv in markers if lv not in (REFERENCE_STYLE, NO_BLOCK_STYLE)]
    if blocks:
        handles.append(Line2D([], [], color="none", label="block"))
        handles += [Line2D([], [], color="dimgrey", marker=markers[b], linestyle="", label=b) for b in blocks]
    if spread:
        handles.append(Line2D([], [], color="grey", linewidth=3.5, alpha=0.3, label=SPREAD_LABEL))
    return handles


@themed
def plot_throughput(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s against size, one panel per dtype; hue = method, marker = block size, a bar for each point's spread."""
    title = "Throughput of each method"
    df = rates_with_spread(results)
    if df.empty:
        return empty_figure(title, "Throughput is not drawn: no job in these results passed verification.")
    return _method_lines(df, "tflops", "dtype", title, TFLOPS_LABEL, spread=True)


@themed
def plot_speedup(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """speedup_over_naive against size, one panel per dtype; hue = method, marker = block size."""
    title = "Speedup over the naive kernel"
    df = verified(results, "speedup_over_naive")
    if df.empty:
        return empty_figure(title, "Speedup over naive is not drawn: no verified job has a verified naive job "
                                    "to compare with.")
    fig = _method_lines(df, "speedup_over_naive", "dtype", title, SPEEDUP_LABEL)
    for ax in fig.axes:
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":", zorder=0)  # the naive kernel itself
    return fig


@themed
def plot_blocks(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s against size for each block size, one panel per (dtype, method with a block axis)."""
    title = "Effect of the thread-block size"
    df = rates_with_spread(results)
    if not df.empty:
        df = df[df["block"].fillna(0).astype(int) > 0]
    if df.empty:
        return empty_figure(title, "Thread-block size is not drawn: no verified job of a method with a "
                                    "thread-block axis.")
    blocks = sorted(df["block"].astype(int).unique())
    df = df.assign(block=df["block"].astype(int).astype(str))
    hue_order = [str(b) for b in blocks]
    dtypes = ordered(df["dtype"], dtype_order())
    methods = ordered(df["method"], method_order())
    df, devices = device_rows(df)
    row, row_order = ("dtype", dtypes) if len(dtypes) > 1 else (None, None)
    if devices:  # a row of panels per (device, dtype): devices never share a line
        df = df.assign(panel=df["device"] + " · " + df["dtype"])
        row, row_order = "panel", [f"{d} · {t}" for d in devices for t in dtypes if f"{d} · {t}" in set(df["panel"])]
    grid = sns.relplot(
        data=df,
        kind="line",
        x="size",
        y="tflops",
        row=row,
        row_order=row_order,
        col="method",
        col_order=methods,
        hue="block",
        hue_order=hue_order,
        # a sequential palette: neighbouring block sizes get neighbouring colours
        palette=sns.color_palette("viridis_r" if len(blocks) > 2 else "colorblind", len(blocks)),
        marker="o",
        errorbar=None,
        height=3.2,
        aspect=1.2,
        facet_kws={"sharey": "row"},
    )
    grid.set_titles(row_template="{row_name}", col_template="{col_name}")
    if len(dtypes) == 1 and not devices:
        grid.set_titles(col_template=f"{{col_name}}, {dtypes[0]}")
    noisy = _mark_panels(grid, df.assign(noisy=noisy_column(df)), row, "method")
    return _room_for_labels(finish_grid(grid, title, SIZE_LABEL, TFLOPS_LABEL, noisy=noisy))


def _mark_panels(grid, df: pd.DataFrame, row: str | None, col: str) -> bool:
    """mark_noisy in each panel of a relplot faceted by `row` (or none) and `col`, over size and TF/s."""
    noisy = False
    for key, ax in grid.axes_dict.items():
        row_key, col_key = key if row else (None, key)
        panel = df[(df[col] == col_key) & ((df[row] == row_key) if row else True)]
        noisy |= mark_noisy(ax, panel["size"], panel["tflops"], panel["noisy"])
    return noisy


@themed
def plot_float_vs_double(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Best TF/s over block sizes, float32 against float64, one panel per method that ran both."""
    title = "float32 against float64"
    df = rates_with_spread(results)
    if not df.empty:
        df = df[df["dtype"].isin(["float32", "float64"])]
        both = df.groupby("method")["dtype"].nunique()
        df = df[df["method"].isin(both[both == 2].index)]
    if df.empty:
        return empty_figure(title, "float32 against float64 is not drawn: no method ran both float32 and "
                                    "float64 with verified jobs.")
    df, devices = device_rows(df)
    # one line per precision (and device): the best block size of each job shape
    keys = (["device"] if devices else []) + ["method", "dtype", "shape", "size"]
    df = df.assign(noisy=noisy_column(df)).reset_index(drop=True)
    best = df.loc[df.groupby(keys)["tflops"].idxmax(), keys + ["tflops", "noisy"]]
    methods = ordered(best["method"], method_order())
    grid = sns.relplot(
        data=best,
        kind="line",
        x="size",
        y="tflops",
        col="method",
        col_order=methods,
        col_wrap=3 if len(methods) > 3 and not devices else None,
        row="device" if devices else None,
        row_order=[d for d in devices if d in set(best["device"])] if devices else None,
        hue="dtype",
        hue_order=["float32", "float64"],
        palette=dtype_palette(["float32", "float64"]),
        style="dtype",
        markers={"float32": "o", "float64": "s"},
        dashes=False,
        errorbar=None,
        height=3.2,
        aspect=1.2,
        facet_kws={"sharey": True},
    )
    set_titles(grid, bool(devices))
    noisy = _mark_panels(grid, best, "device" if devices else None, "method")
    return _room_for_labels(finish_grid(grid, title, SIZE_LABEL, TFLOPS_LABEL, noisy=noisy))
