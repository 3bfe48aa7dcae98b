"""Figures of the study, drawn from the tidy results table (one row per benchmark job).

`FIGURES` maps a figure name to its caption and plot function; the report takes the captions from here, so a
figure and the words that explain it live side by side. Every plot function takes the whole results table and
picks the rows it needs itself: throughput figures only ever use jobs that passed verification.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # figures are written by batch jobs with no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator, NullFormatter  # noqa: E402

SIZE_LABEL = "matrix size (∛(m·k·n), log2 scale)"
GFLOPS_LABEL = "throughput (GFLOP/s, log scale)"
SPEEDUP_LABEL = "speedup over naive (×, log scale)"
ERROR_LABEL = "relative Frobenius error (log scale)"
NO_DATA = "no data for this figure in this run"

DTYPE_ORDER = ("float16", "float32", "float64", "int32")
# The registry's order (simple to fast) reads best in legends; methods it does not know go last.
METHOD_ORDER = ("numpy", "naive", "tiled", "tiled_unrolled", "register_tiled", "wmma", "wmma_tiled", "cublas")
REFERENCE_COLORS = {"numpy": "black", "cublas": "dimgrey"}

try:  # the registry knows which methods are reference lines; fall back to the two we know of
    from matmul_study.registry import METHODS as _REGISTRY

    REFERENCE_METHODS = frozenset(n for n, m in _REGISTRY.items() if m.reference_line) | frozenset(REFERENCE_COLORS)
except Exception:  # pragma: no cover - the registry is optional for plotting
    REFERENCE_METHODS = frozenset(REFERENCE_COLORS)

# Style levels of the throughput-like figures: reference lines are the only dashed ones.
REFERENCE_STYLE = "reference line"
NO_BLOCK_STYLE = "no block axis"
BLOCK_MARKERS = ("o", "^", "v", "P", "<", ">", "h", "p", "*")


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    caption: str
    plot: Callable[[pd.DataFrame], Figure]


# --------------------------------------------------------------------------------------------------------------
# helpers


def _ordered(values, order) -> list:
    """Distinct values, those in `order` first in that order, the rest sorted."""
    present = list(dict.fromkeys(v for v in values if pd.notna(v)))
    return [v for v in order if v in present] + sorted((v for v in present if v not in order), key=str)


def _method_palette(methods) -> dict:
    """Reference methods in black/grey, the others in colour-blind-safe hues (grey and yellow left out)."""
    colours = [c for i, c in enumerate(sns.color_palette("colorblind", 10)) if i not in (7, 8)]
    others = [m for m in methods if m not in REFERENCE_METHODS]
    if len(others) > len(colours):
        colours = sns.color_palette("husl", len(others))
    palette = dict(zip(others, colours))
    for m in methods:
        if m in REFERENCE_METHODS:
            palette[m] = REFERENCE_COLORS.get(m, "grey")
    return palette


def _passed(results: pd.DataFrame, column: str = "gflops") -> pd.DataFrame:
    """Verified jobs with a positive, finite `column` (log axes cannot show zero or NaN)."""
    if results.empty or column not in results or "status" not in results:
        return results.iloc[0:0]
    values = pd.to_numeric(results[column], errors="coerce")
    keep = (results["status"] == "passed") & np.isfinite(values) & (values > 0)
    return results[keep].assign(**{column: values[keep]})


def _with_style_column(df: pd.DataFrame) -> pd.DataFrame:
    """Add 'block': the line style level (reference line / no block axis / the block size as text)."""
    blocks = df["block"].fillna(0).astype(int)
    style = np.where(
        df["method"].isin(REFERENCE_METHODS),
        REFERENCE_STYLE,
        np.where(blocks > 0, blocks.astype(str), NO_BLOCK_STYLE),
    )
    return df.assign(block=style)


def _style_maps(levels) -> tuple[list, dict, dict]:
    """Order, markers and dashes for the style levels made by `_with_style_column`."""
    blocks = sorted((lv for lv in levels if lv not in (REFERENCE_STYLE, NO_BLOCK_STYLE)), key=int)
    order = blocks + [lv for lv in (NO_BLOCK_STYLE, REFERENCE_STYLE) if lv in levels]
    markers = {b: BLOCK_MARKERS[i % len(BLOCK_MARKERS)] for i, b in enumerate(blocks)}
    markers.update({NO_BLOCK_STYLE: "D", REFERENCE_STYLE: "s"})
    dashes = {lv: "" for lv in order}
    dashes[REFERENCE_STYLE] = (5, 2)
    return order, {lv: markers[lv] for lv in order}, dashes


def _log2_x(ax) -> None:
    """Log base 2 x axis with plain-number tick labels (512 reads better than 2^9)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


class _PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of which ticks to label, written as plain numbers (50, 100, 20000)."""

    def __call__(self, x, pos=None):
        return f"{x:g}" if super().__call__(x, pos) else ""


def _log_y(ax, plain: bool) -> None:
    """Log y axis; `plain` labels ticks 50, 100, 2000 rather than 5×10^1 (not for errors like 1e-15)."""
    ax.set_yscale("log")
    if plain:
        ax.yaxis.set_major_formatter(_PlainLogFormatter())
        # label a few minor ticks when the data span less than about a decade, so the axis never goes bare
        ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def _finish_grid(grid: sns.FacetGrid, title: str, xlabel: str, ylabel: str, plain_y: bool = True) -> Figure:
    for ax in grid.axes.flat:
        _log2_x(ax)
        _log_y(ax, plain_y)
        ax.grid(True, which="major", alpha=0.4)
    # set_axis_labels only labels the outer axes; label every one so each panel reads alone
    for ax in grid.axes.flat:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.tick_params(labelbottom=True, labelleft=True)
    grid.figure.suptitle(title, fontweight="bold")
    grid.figure.tight_layout()
    if grid.legend is not None:
        # tight_layout ignores the figure legend; leave room for it on the right
        grid.figure.canvas.draw()
        width = grid.legend.get_window_extent().width / grid.figure.dpi
        fig_w = grid.figure.get_figwidth()
        grid.figure.subplots_adjust(right=max(0.5, 1 - (width + 0.2) / fig_w))
    return grid.figure


def _empty_figure(title: str, xlabel: str, ylabel: str) -> Figure:
    """A labelled, empty axes saying there is nothing to show, so the pipeline and the report still work."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    _log2_x(ax)
    ax.set_xlim(1, 2**14)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_yticks([])  # no data, no scale to read
    ax.set_title(title, fontweight="bold")
    ax.text(0.5, 0.5, NO_DATA, transform=ax.transAxes, ha="center", va="center", fontsize=12, color="dimgrey")
    ax.legend(handles=[], title="no data", loc="upper left")
    fig.tight_layout()
    return fig


def _col_wrap(n_cols: int) -> int | None:
    return 2 if n_cols > 3 else None


def _themed(plot: Callable[[pd.DataFrame], Figure]) -> Callable[[pd.DataFrame], Figure]:
    """Draw under one seaborn theme without changing the caller's global matplotlib settings."""

    def wrapped(results: pd.DataFrame) -> Figure:
        with sns.axes_style("ticks"), sns.plotting_context("notebook", font_scale=0.9):
            return plot(results)

    wrapped.__name__ = plot.__name__
    wrapped.__doc__ = plot.__doc__
    return wrapped


def _method_lines(df: pd.DataFrame, y: str, col: str, title: str, ylabel: str) -> Figure:
    """Shared body of the throughput and speedup figures: hue=method, style=block, one panel per `col`."""
    df = _with_style_column(df)
    methods = _ordered(df["method"], METHOD_ORDER)
    cols = _ordered(df[col], DTYPE_ORDER)
    style_order, markers, dashes = _style_maps(set(df["block"]))
    grid = sns.relplot(
        data=df,
        kind="line",
        x="size",
        y=y,
        col=col,
        col_order=cols,
        col_wrap=_col_wrap(len(cols)),
        hue="method",
        hue_order=methods,
        palette=_method_palette(methods),
        style="block",
        style_order=style_order,
        markers=markers,
        dashes=dashes,
        # every job is its own point: two shapes with the same ∛(m·k·n) are both shown, not averaged
        estimator=None,
        markersize=6,
        height=3.6,
        aspect=1.25,
        facet_kws={"sharey": True},
    )
    grid.set_titles(col_template="{col_name}")
    return _finish_grid(grid, title, SIZE_LABEL, ylabel)


# --------------------------------------------------------------------------------------------------------------
# the figures


@_themed
def plot_throughput(results: pd.DataFrame) -> Figure:
    """GFLOP/s against size, one panel per dtype; hue = method, marker = block size."""
    title = "Throughput of each method"
    df = _passed(results, "gflops")
    if df.empty:
        return _empty_figure(title, SIZE_LABEL, GFLOPS_LABEL)
    return _method_lines(df, "gflops", "dtype", title, GFLOPS_LABEL)


@_themed
def plot_speedup(results: pd.DataFrame) -> Figure:
    """speedup_over_naive against size, one panel per dtype; hue = method, marker = block size."""
    title = "Speedup over the naive kernel"
    df = _passed(results, "speedup_over_naive")
    if df.empty:
        return _empty_figure(title, SIZE_LABEL, SPEEDUP_LABEL)
    fig = _method_lines(df, "speedup_over_naive", "dtype", title, SPEEDUP_LABEL)
    for ax in fig.axes:
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":", zorder=0)  # the naive kernel itself
    return fig


@_themed
def plot_blocks(results: pd.DataFrame) -> Figure:
    """GFLOP/s against size for each block size, one panel per (dtype, method with a block axis)."""
    title = "Effect of the thread-block size"
    df = _passed(results, "gflops")
    if not df.empty:
        df = df[df["block"].fillna(0).astype(int) > 0]
    if df.empty:
        return _empty_figure(title, SIZE_LABEL, GFLOPS_LABEL)
    blocks = sorted(df["block"].astype(int).unique())
    df = df.assign(block=df["block"].astype(int).astype(str))
    hue_order = [str(b) for b in blocks]
    dtypes = _ordered(df["dtype"], DTYPE_ORDER)
    methods = _ordered(df["method"], METHOD_ORDER)
    grid = sns.relplot(
        data=df,
        kind="line",
        x="size",
        y="gflops",
        row="dtype" if len(dtypes) > 1 else None,
        row_order=dtypes if len(dtypes) > 1 else None,
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
    if len(dtypes) == 1:
        grid.set_titles(col_template=f"{{col_name}}, {dtypes[0]}")
    return _finish_grid(grid, title, SIZE_LABEL, GFLOPS_LABEL)


@_themed
def plot_float_vs_double(results: pd.DataFrame) -> Figure:
    """Best GFLOP/s over block sizes, float32 against float64, one panel per method that ran both."""
    title = "float32 against float64"
    df = _passed(results, "gflops")
    if not df.empty:
        df = df[df["dtype"].isin(["float32", "float64"])]
        both = df.groupby("method")["dtype"].nunique()
        df = df[df["method"].isin(both[both == 2].index)]
    if df.empty:
        return _empty_figure(title, SIZE_LABEL, GFLOPS_LABEL)
    # one line per precision: the best block size of each job shape
    best = df.groupby(["method", "dtype", "shape", "size"], as_index=False)["gflops"].max()
    methods = _ordered(best["method"], METHOD_ORDER)
    grid = sns.relplot(
        data=best,
        kind="line",
        x="size",
        y="gflops",
        col="method",
        col_order=methods,
        col_wrap=3 if len(methods) > 3 else None,
        hue="dtype",
        hue_order=["float32", "float64"],
        palette={"float32": sns.color_palette("colorblind")[0], "float64": sns.color_palette("colorblind")[3]},
        style="dtype",
        markers={"float32": "o", "float64": "s"},
        dashes=False,
        errorbar=None,
        height=3.2,
        aspect=1.2,
        facet_kws={"sharey": True},
    )
    grid.set_titles(col_template="{col_name}")
    return _finish_grid(grid, title, SIZE_LABEL, GFLOPS_LABEL)


@_themed
def plot_verification_error(results: pd.DataFrame) -> Figure:
    """Relative error against size for every job (failed ones too), one panel per dtype, tolerance dashed."""
    title = "Verification error against the fp64 reference"
    need = {"verification_rel_fro_error", "status", "dtype", "size", "method"}
    if results.empty or not need <= set(results.columns):
        return _empty_figure(title, SIZE_LABEL, ERROR_LABEL)
    err = pd.to_numeric(results["verification_rel_fro_error"], errors="coerce")
    df = results[np.isfinite(err)].assign(verification_rel_fro_error=err[np.isfinite(err)])
    if df.empty:
        return _empty_figure(title, SIZE_LABEL, ERROR_LABEL)
    tol = pd.to_numeric(df.get("verification_tolerance"), errors="coerce") if "verification_tolerance" in df else None
    # an exact result (error 0, e.g. int32) has no place on a log axis: draw it on a floor below everything else
    positive = pd.concat([df["verification_rel_fro_error"], tol if tol is not None else pd.Series(dtype=float)])
    positive = positive[positive > 0]
    floor = positive.min() / 10 if not positive.empty else 1e-16
    df = df.assign(
        verification_rel_fro_error=df["verification_rel_fro_error"].clip(lower=floor),
        status=np.where(df["status"] == "passed", "passed", "failed"),
    )
    methods = _ordered(df["method"], METHOD_ORDER)
    dtypes = _ordered(df["dtype"], DTYPE_ORDER)
    grid = sns.relplot(
        data=df,
        kind="scatter",
        x="size",
        y="verification_rel_fro_error",
        col="dtype",
        col_order=dtypes,
        col_wrap=_col_wrap(len(dtypes)),
        hue="method",
        hue_order=methods,
        palette=_method_palette(methods),
        style="status",
        style_order=["passed", "failed"],
        markers={"passed": "o", "failed": "X"},
        s=55,
        alpha=0.85,
        height=4.0,
        aspect=1.25,
        facet_kws={"sharey": False},  # fp16 and fp64 errors are ten orders of magnitude apart
    )
    grid.set_titles(col_template="{col_name}")
    for dtype, ax in grid.axes_dict.items():
        if tol is None:
            break
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
    fig = _finish_grid(grid, title, SIZE_LABEL, ERROR_LABEL, plain_y=False)
    if grid.legend is not None and tol is not None:
        # the tolerance line belongs in the legend too
        handles = list(grid.legend.legend_handles)
        labels = [t.get_text() for t in grid.legend.texts]
        handles.append(Line2D([], [], color="firebrick", linestyle="--"))
        labels.append("tolerance")
        if (df["verification_rel_fro_error"] <= floor).any():
            handles.append(Line2D([], [], color="grey", linestyle=":"))
            labels.append("exact (error 0)")
        grid.legend.remove()
        fig.legend(handles, labels, loc="center right", frameon=False)
    return fig


FIGURES: dict[str, FigureSpec] = {
    spec.name: spec
    for spec in [
        FigureSpec(
            "throughput",
            "Throughput",
            "Measured throughput (GFLOP/s, 2·m·k·n per second, verified jobs only) against matrix size, one panel "
            "per element type; colour is the method and the marker its thread-block size. The dashed black/grey "
            "lines are the reference lines (numpy on the CPU, cuBLAS on the GPU): higher is better.",
            plot_throughput,
        ),
        FigureSpec(
            "speedup",
            "Speedup over naive",
            "Speedup of each method over the naive kernel (ratio of GFLOP/s, verified jobs only) against matrix "
            "size, one panel per element type; the dotted line at 1× is the naive kernel itself, and the dashed "
            "black/grey lines are the numpy and cuBLAS reference lines.",
            plot_speedup,
        ),
        FigureSpec(
            "blocks",
            "Thread-block size",
            "Throughput (GFLOP/s, verified jobs only) of each method that has a thread-block axis, one line per "
            "block edge length (a block is BLOCK×BLOCK threads), one panel per method and element type; "
            "lines that lie apart show how much the block size matters.",
            plot_blocks,
        ),
        FigureSpec(
            "float_vs_double",
            "float32 against float64",
            "Throughput (GFLOP/s, verified jobs only) in single and double precision for each method that ran "
            "both, taking the best block size at each shape; the gap between the two lines is the cost of "
            "double precision on this device.",
            plot_float_vs_double,
        ),
        FigureSpec(
            "verification_error",
            "Verification error",
            "Relative Frobenius error ‖C − C_ref‖ / ‖C_ref‖ of every job's result against the fp64 reference "
            "(failed jobs included, "
            "drawn as crosses) against matrix size, one panel per element type on a log scale; a job fails "
            "when its error lies above the dashed tolerance line, and exact results (error 0) sit on the "
            "dotted floor.",
            plot_verification_error,
        ),
    ]
}


def save_figure(fig: Figure, png_path: str | Path, svg_path: str | Path) -> None:
    """Write `fig` as PNG and SVG (creating folders) and close it; metadata pinned so reruns give equal files."""
    try:
        for path, fmt, metadata in (
            (Path(png_path), "png", {"Software": None}),
            (Path(svg_path), "svg", {"Date": None, "Creator": None}),
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            with plt.rc_context({"svg.hashsalt": "matmul_study"}):
                fig.savefig(path, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)
    finally:
        plt.close(fig)
