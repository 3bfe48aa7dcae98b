"""Figures of the study, drawn from the tidy results table (one row per benchmark job).

`FIGURES` maps a figure name to its caption and plot function; the report takes the captions from here, so a
figure and the words that explain it live side by side. Every plot function is `plot(results, calibration)`: it
takes the whole results table and picks the rows it needs itself (throughput figures only ever use jobs that passed
verification), and the calibration table of device ceilings (columns device_name, ceiling, value, unit, detail;
possibly empty or None), which only the roofline uses. When the results hold more than one GPU device, no line
ever joins jobs of two devices: the figures over size get a row of panels per device.
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

from matmul_study.core import dtypes, registry  # noqa: E402
from matmul_study.analysis.ladder import VENDOR_NAMES, datasheet_tflops, ladder_table, vendor_line  # noqa: E402
from matmul_study.analysis.precision import precision_table  # noqa: E402
from matmul_study.analysis.result_devices import device_kind, device_name, devices_long, gpu_devices, with_device  # noqa: E402

SIZE_LABEL = "matrix size (∛(m·k·n), log2 scale)"
TFLOPS_LABEL = "throughput (TF/s, log scale)"
SPEEDUP_LABEL = "speedup over naive (×, log scale)"
ERROR_LABEL = "relative Frobenius error (log scale)"
INTENSITY_LABEL = "arithmetic intensity\n(FLOP/byte, model, log2 scale)"  # two lines: panels sit three a row
KERNEL_LABEL = "kernel (method and block size)"
NO_DATA = "no data for this figure in this run"
PLACEHOLDER = "placeholder"  # the label (Figure.get_label) of a figure that only says why it has nothing to show
SPREAD_LABEL = "spread of the samples"
ONE_DEVICE = "one device in this result set; copy another device's results into results/imported/ to compare"
CALIBRATION_COLUMNS = ["device_name", "ceiling", "value", "unit", "detail"]

REFERENCE_COLORS = {"numpy": "black", "cublas": "dimgrey"}
REFERENCE_METHODS = frozenset(n for n, m in registry.METHODS.items() if m.reference_line) | frozenset(REFERENCE_COLORS)


def method_order() -> tuple[str, ...]:
    """The registry's order (simple to fast) reads best in legends; methods it does not know go last."""
    return tuple(registry.METHODS)


def dtype_order() -> tuple[str, ...]:
    return dtypes.NAMES

# Style levels of the throughput-like figures: reference lines are the only dashed ones.
REFERENCE_STYLE = "reference line"
NO_BLOCK_STYLE = "no block axis"
BLOCK_MARKERS = ("o", "^", "v", "P", "<", ">", "h", "p", "*")


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    caption: str
    plot: Callable[[pd.DataFrame, pd.DataFrame], Figure]


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


# One colour per element type wherever a figure colours by it (colour-blind-safe; grey and yellow left out): fp32
# and fp64 blue and vermillion, tf32 the light blue of its fp32 storage, the 16- and 8-bit types apart from both.
DTYPE_COLOURS = {"float32": 0, "float64": 3, "tf32": 9, "float16": 2, "bfloat16": 4, "float8_e4m3": 1, "int8": 5,
                 "int32": 6, "float8_e4m3_block": 8}
# Short names where a label has little room (the precision figure's datasheet lines).
DTYPE_SHORT = {"float8_e4m3": "fp8", "float8_e4m3_block": "fp8 block", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


def _dtype_palette(names) -> dict:
    """DTYPE_COLOURS for the dtypes it knows; the others hues of their own (husl)."""
    base = sns.color_palette("colorblind", 10)
    unknown = [d for d in names if d not in DTYPE_COLOURS]
    palette = {d: base[DTYPE_COLOURS[d]] for d in names if d in DTYPE_COLOURS}
    palette.update(zip(unknown, sns.color_palette("husl", len(unknown)) if unknown else []))
    return palette


def _passed(results: pd.DataFrame, column: str = "gflops") -> pd.DataFrame:
    """Verified jobs with a positive, finite `column` (log axes cannot show zero or NaN)."""
    if results.empty or column not in results or "status" not in results:
        return results.iloc[0:0]
    values = pd.to_numeric(results[column], errors="coerce")
    keep = (results["status"] == "passed") & np.isfinite(values) & (values > 0)
    return results[keep].assign(**{column: values[keep]})


def _floats(values) -> np.ndarray:
    """A list of numbers given as a list or a ';'-joined string (as the results table keeps them); empty if
    neither."""
    if isinstance(values, str):
        try:
            return np.asarray([float(x) for x in values.split(";") if x.strip()], dtype=float)
        except ValueError:
            return np.empty(0)
    if isinstance(values, (list, tuple, np.ndarray)):
        return np.asarray(values, dtype=float)
    return np.empty(0)


def _spread(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the factors (low, high) by which the rate's spread reaches below and above the rate: the
    interquartile range of the job's timed samples around their median (timing_times_s, else timing_iqr_s), and
    for a CPU job timed in several fresh processes also the range of the processes' medians (cpu_medians_s).
    1 where the results do not say."""
    lo, hi = np.ones(len(df)), np.ones(len(df))
    nan = pd.Series(np.nan, index=df.index)
    median = pd.to_numeric(df.get("timing_median_s", nan), errors="coerce").to_numpy()
    iqr = pd.to_numeric(df.get("timing_iqr_s", nan), errors="coerce").to_numpy()
    times = df["timing_times_s"].to_numpy() if "timing_times_s" in df else [None] * len(df)
    processes = df["cpu_medians_s"].to_numpy() if "cpu_medians_s" in df else [None] * len(df)
    for i in range(len(df)):
        t = _floats(times[i])
        t = t[np.isfinite(t) & (t > 0)]
        if t.size >= 2:
            q1, med, q3 = np.percentile(t, [25, 50, 75])
        elif np.isfinite(median[i]) and median[i] > 0 and np.isfinite(iqr[i]) and 0 < iqr[i] < median[i]:
            q1, med, q3 = median[i] - iqr[i] / 2, median[i], median[i] + iqr[i] / 2
        else:
            q1 = med = q3 = np.nan
        if np.isfinite(med):  # a longer time is a lower rate
            lo[i], hi[i] = med / q3, med / q1
        p = _floats(processes[i])
        p = p[np.isfinite(p) & (p > 0)]
        if p.size >= 2:
            mid = np.median(p)
            lo[i], hi[i] = min(lo[i], mid / p.max()), max(hi[i], mid / p.min())
    return lo, hi


def _rates(results: pd.DataFrame) -> pd.DataFrame:
    """Verified jobs with a positive rate, with 'tflops' (the headline rate in TF/s) and its spread
    'tflops_lo' and 'tflops_hi' (see _spread)."""
    df = _passed(results, "gflops")
    if df.empty:
        return df.assign(tflops=pd.Series(dtype=float), tflops_lo=pd.Series(dtype=float),
                         tflops_hi=pd.Series(dtype=float))
    tf = df["gflops"].to_numpy() / 1e3
    lo, hi = _spread(df)
    return df.assign(tflops=tf, tflops_lo=tf * lo, tflops_hi=tf * hi)


def _draw_spread(ax, df: pd.DataFrame, colours: dict, x: str = "size") -> None:
    """The spread of each point as a thick translucent bar in its method's colour, behind the markers."""
    if df.empty or "tflops_lo" not in df:
        return
    for method, g in df.groupby("method", sort=False):
        wide = g[g["tflops_hi"] > g["tflops_lo"]]
        if not wide.empty:
            ax.vlines(wide[x], wide["tflops_lo"], wide["tflops_hi"], colors=[colours.get(method, "grey")],
                      linewidth=3.5, alpha=0.3, zorder=1, label="_spread")


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


def _finish_grid(grid: sns.FacetGrid, title: str, xlabel: str, ylabel: str, plain_y: bool = True,
                 handles: list | None = None) -> Figure:
    for ax in grid.axes.flat:
        _log2_x(ax)
        _log_y(ax, plain_y)
        ax.grid(True, which="major", alpha=0.4)
    # set_axis_labels only labels the outer axes; label every one so each panel reads alone
    for ax in grid.axes.flat:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.tick_params(which="both", labelbottom=True, labelleft=True)
    grid.figure.suptitle(title, fontweight="bold")
    grid.figure.tight_layout(w_pad=2.0)
    if handles:
        _side_legend(grid.figure, handles)
    elif grid.legend is not None:
        _make_room(grid.figure, grid.legend)
    return grid.figure


def _side_legend(fig: Figure, handles: list) -> None:
    """The figure's legend right of the panels; a handle with colour "none" is a section title, set in bold."""
    legend = fig.legend(handles=handles, loc="center right", frameon=False)
    for text, handle in zip(legend.get_texts(), handles):
        if handle.get_color() == "none":
            text.set_fontweight("bold")
    _make_room(fig, legend)


def _make_room(fig: Figure, legend) -> None:
    """tight_layout ignores a figure legend: narrow the panels so that the legend right of them fits."""
    fig.canvas.draw()
    width = legend.get_window_extent().width / fig.dpi
    fig.subplots_adjust(right=max(0.5, 1 - (width + 0.2) / fig.get_figwidth()))


def _empty_figure(title: str, message: str = NO_DATA) -> Figure:
    """No axes to misread: the figure's title and one line saying why there is nothing to show, so the pipeline
    and the report still work. Its label is PLACEHOLDER."""
    fig = plt.figure(figsize=(9, 1.1), label=PLACEHOLDER)
    fig.suptitle(title, fontweight="bold", y=0.9)
    fig.text(0.5, 0.35, message, ha="center", va="center", fontsize=11, color="dimgrey")
    return fig


def _col_wrap(n_cols: int) -> int | None:
    """Panels per row: up to three (a landscape figure that fills the report's width), two for four panels."""
    return None if n_cols <= 3 else 2 if n_cols == 4 else 3


def _calibration(calibration: pd.DataFrame | None) -> pd.DataFrame:
    """The calibration table with usable rows only (a finite, positive value); empty when there is none."""
    if calibration is None or calibration.empty or not {"device_name", "ceiling", "value"} <= set(calibration):
        return pd.DataFrame(columns=CALIBRATION_COLUMNS)
    value = pd.to_numeric(calibration["value"], errors="coerce")
    keep = np.isfinite(value) & (value > 0)
    return calibration[keep].assign(value=value[keep], device_name=calibration["device_name"].astype(str).str.strip())


def _themed(plot: Callable[[pd.DataFrame, pd.DataFrame], Figure]) -> Callable[..., Figure]:
    """Draw under one seaborn theme without changing the caller's global matplotlib settings; `calibration` may
    be left out or None (read as empty)."""

    def wrapped(results: pd.DataFrame, calibration: pd.DataFrame | None = None) -> Figure:
        with sns.axes_style("ticks"), sns.plotting_context("notebook", font_scale=0.9):
            # merged result sets may repeat index labels; the plots align columns on the index
            return plot(results.reset_index(drop=True), _calibration(calibration))

    wrapped.__name__ = plot.__name__
    wrapped.__doc__ = plot.__doc__
    return wrapped


def _device_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, list | None]:
    """With more than one device (GPU models, and CPUs of hosts without a GPU, keyed by model and host): `df`
    with a 'device' column (CPU jobs go with the GPU of their host) and the row order, GPU devices first. With
    one device or none: `df` unchanged and None."""
    if df.empty:
        return df, None
    with_dev = with_device(df)
    devices = list(dict.fromkeys(with_dev["device"]))
    if len(devices) < 2:
        return df, None
    gpus = gpu_devices(df)
    return with_dev, gpus + [d for d in devices if d not in gpus]


def _method_lines(df: pd.DataFrame, y: str, col: str, title: str, ylabel: str, spread: bool = False) -> Figure:
    """Shared body of the throughput and speedup figures: hue=method, style=block, one panel per `col`, and a row
    of panels per device when there are several. With `spread`, each point's spread (columns y_lo and y_hi) is
    drawn as a bar behind it."""
    df, rows = _device_rows(df)
    df = _with_style_column(df)
    # a job run twice (merged result sets) is one point, the median; distinct shapes of one size stay apart
    keys = (["device"] if rows else []) + [col, "method", "block", "shape", "size"]
    extra = [c for c in (f"{y}_lo", f"{y}_hi") if spread and c in df]
    df = df.groupby(keys, as_index=False, sort=False)[[y] + extra].median()
    methods = _ordered(df["method"], method_order())
    cols = _ordered(df[col], dtype_order())
    style_order, markers, dashes = _style_maps(set(df["block"]))
    palette = _method_palette(methods)
    grid = sns.relplot(
        data=df,
        kind="line",
        x="size",
        y=y,
        col=col,
        col_order=cols,
        col_wrap=_col_wrap(len(cols)) if rows is None else None,
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
    _set_titles(grid, bool(rows))
    if extra:
        for key, ax in grid.axes_dict.items():
            row_key, col_key = key if rows else (None, key)
            panel = df[df[col] == col_key] if not rows else df[(df["device"] == row_key) & (df[col] == col_key)]
            _draw_spread(ax, panel.rename(columns={y: "tflops", f"{y}_lo": "tflops_lo", f"{y}_hi": "tflops_hi"}),
                         palette)
    return _finish_grid(grid, title, SIZE_LABEL, ylabel, handles=_method_legend(df, methods, palette, markers,
                                                                                  spread=bool(extra)))


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


def _set_titles(grid, per_device_rows: bool) -> None:
    """Panels read "device · dtype" when devices are faceted into rows, else just the column's name."""
    if per_device_rows:
        grid.set_titles(template="{row_name} · {col_name}")
    else:
        grid.set_titles(col_template="{col_name}")


# --------------------------------------------------------------------------------------------------------------
# the figures


@_themed
def plot_throughput(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s against size, one panel per dtype; hue = method, marker = block size, a bar for each point's spread."""
    title = "Throughput of each method"
    df = _rates(results)
    if df.empty:
        return _empty_figure(title, "Throughput is not drawn: no job in these results passed verification.")
    return _method_lines(df, "tflops", "dtype", title, TFLOPS_LABEL, spread=True)


@_themed
def plot_speedup(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """speedup_over_naive against size, one panel per dtype; hue = method, marker = block size."""
    title = "Speedup over the naive kernel"
    df = _passed(results, "speedup_over_naive")
    if df.empty:
        return _empty_figure(title, "Speedup over naive is not drawn: no verified job has a verified naive job "
                                    "to compare with.")
    fig = _method_lines(df, "speedup_over_naive", "dtype", title, SPEEDUP_LABEL)
    for ax in fig.axes:
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":", zorder=0)  # the naive kernel itself
    return fig


@_themed
def plot_blocks(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s against size for each block size, one panel per (dtype, method with a block axis)."""
    title = "Effect of the thread-block size"
    df = _rates(results)
    if not df.empty:
        df = df[df["block"].fillna(0).astype(int) > 0]
    if df.empty:
        return _empty_figure(title, "Thread-block size is not drawn: no verified job of a method with a "
                                    "thread-block axis.")
    blocks = sorted(df["block"].astype(int).unique())
    df = df.assign(block=df["block"].astype(int).astype(str))
    hue_order = [str(b) for b in blocks]
    dtypes = _ordered(df["dtype"], dtype_order())
    methods = _ordered(df["method"], method_order())
    df, devices = _device_rows(df)
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
    return _finish_grid(grid, title, SIZE_LABEL, TFLOPS_LABEL)


@_themed
def plot_float_vs_double(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Best TF/s over block sizes, float32 against float64, one panel per method that ran both."""
    title = "float32 against float64"
    df = _rates(results)
    if not df.empty:
        df = df[df["dtype"].isin(["float32", "float64"])]
        both = df.groupby("method")["dtype"].nunique()
        df = df[df["method"].isin(both[both == 2].index)]
    if df.empty:
        return _empty_figure(title, "float32 against float64 is not drawn: no method ran both float32 and "
                                    "float64 with verified jobs.")
    df, devices = _device_rows(df)
    # one line per precision (and device): the best block size of each job shape
    keys = (["device"] if devices else []) + ["method", "dtype", "shape", "size"]
    best = df.groupby(keys, as_index=False)["tflops"].max()
    methods = _ordered(best["method"], method_order())
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
        palette=_dtype_palette(["float32", "float64"]),
        style="dtype",
        markers={"float32": "o", "float64": "s"},
        dashes=False,
        errorbar=None,
        height=3.2,
        aspect=1.2,
        facet_kws={"sharey": True},
    )
    _set_titles(grid, bool(devices))
    return _finish_grid(grid, title, SIZE_LABEL, TFLOPS_LABEL)


@_themed
def plot_verification_error(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Relative error against size for every job (failed ones too), one panel per dtype, tolerance dashed."""
    title = "Verification error against the fp64 reference"
    need = {"verification_rel_fro_error", "status", "dtype", "size", "method"}
    if results.empty or not need <= set(results.columns):
        return _empty_figure(title, "Verification error is not drawn: no job in these results recorded its error.")
    err = pd.to_numeric(results["verification_rel_fro_error"], errors="coerce")
    df = results[np.isfinite(err)].assign(verification_rel_fro_error=err[np.isfinite(err)])
    if df.empty:
        return _empty_figure(title, "Verification error is not drawn: no job in these results recorded its error.")
    tol = pd.to_numeric(df.get("verification_tolerance"), errors="coerce") if "verification_tolerance" in df else None
    # an exact result (error 0, e.g. int32) has no place on a log axis: draw it on a floor below everything else
    positive = pd.concat([df["verification_rel_fro_error"], tol if tol is not None else pd.Series(dtype=float)])
    positive = positive[positive > 0]
    floor = positive.min() / 10 if not positive.empty else 1e-16
    df = df.assign(
        verification_rel_fro_error=df["verification_rel_fro_error"].clip(lower=floor),
        status=np.where(df["status"] == "passed", "passed", "failed"),
    )
    methods = _ordered(df["method"], method_order())
    dtypes = _ordered(df["dtype"], dtype_order())
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
        height=3.2,
        aspect=1.2,
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


def _roof_panel(ax, memory: float | None, peak: float | None, dtype: str, x_lo: float, x_hi: float) -> list:
    """Draw min(memory × I, peak) over [x_lo, x_hi] with its labels; returns the y values drawn."""
    xs = np.geomspace(x_lo, x_hi, 400)
    if memory and peak:
        ys = np.minimum(memory * xs, peak)
    elif memory:
        ys = memory * xs
    elif peak:
        ys = np.full_like(xs, peak)
    else:
        return []
    ax.plot(xs, ys, color="black", linewidth=1.6, zorder=1, label="_roof")
    if peak:
        ax.annotate(
            f"{dtype} calibrated {peak:.3g} TF/s",
            xy=(x_hi, peak),
            xytext=(-4, 4),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=8,
        )
    if memory:
        ridge = peak / memory if peak else x_hi
        if peak and x_lo < ridge < x_hi:
            ax.axvline(ridge, color="grey", linestyle=":", linewidth=0.8, zorder=0)
    return [ys.min(), ys.max()]


def _label_slope(ax, memory: float, x_lo: float, x_hi: float, peak: float | None) -> None:
    """Write the bandwidth along the roof's slope, above it, once the axes have their final size and limits."""
    ridge = min(peak / memory, x_hi) if peak else x_hi
    x0 = x_lo * 2 ** (0.35 * np.log2(ridge / x_lo))  # a third of the way up the slope
    x1 = x0 * 1.5
    if x1 >= ridge:
        return
    (px0, py0), (px1, py1) = ax.transData.transform([(x0, memory * x0), (x1, memory * x1)])
    angle = np.degrees(np.arctan2(py1 - py0, px1 - px0))
    ax.annotate(f"memory {memory:.3g} TB/s", xy=(x0, memory * x0), xytext=(-4, 4), textcoords="offset points",
                rotation=angle, rotation_mode="anchor", ha="left", va="bottom", fontsize=8)


@_themed
def plot_roofline(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Roofline per GPU device and dtype: modelled intensity against measured TF/s, under the calibrated roof and
    beside the datasheet peak."""
    title = "Roofline: throughput against arithmetic intensity"
    df = _passed(results, "gflops")
    if df.empty or calibration.empty or "model_intensity" not in df:
        why = ("no verified job" if df.empty else "no calibrated ceiling in these results" if calibration.empty
               else "these results have no modelled intensity")
        return _empty_figure(title, f"Roofline is not drawn: {why}.")
    intensity = pd.to_numeric(df["model_intensity"], errors="coerce")
    df = df[(device_kind(df) == "gpu") & np.isfinite(intensity) & (intensity > 0)]
    df = df.assign(model_intensity=intensity[df.index], device=device_name(df))
    if df.empty:
        return _empty_figure(title, "Roofline is not drawn: no verified GPU job with a modelled intensity.")
    # the largest size each (device, method, dtype, block) ran, where the kernel is furthest from launch overheads
    df = df.assign(block=df["block"].fillna(0).astype(int))
    keys = ["device", "method", "dtype", "block"]
    df = df[df["size"] == df.groupby(keys)["size"].transform("max")]
    df = df.groupby(keys, as_index=False).agg(model_intensity=("model_intensity", "median"),
                                              gflops=("gflops", "median"))
    df = df.assign(tflops=df["gflops"] / 1e3)
    devices = [d for d in gpu_devices(results) if d in set(df["device"])]
    dtypes = _ordered(df["dtype"], dtype_order())
    methods = _ordered(df["method"], method_order())
    palette = _method_palette(methods)
    styled = _with_style_column(df)
    style_order, markers, _ = _style_maps(set(styled["block"]))
    # in TF/s (a memory ceiling in TB/s: TB/s × FLOP/byte = TF/s)
    ceilings = {(d, c): v / 1e3 for d, c, v in calibration[["device_name", "ceiling", "value"]].itertuples(index=False)}

    x_lo = 2.0 ** np.floor(np.log2(df["model_intensity"].min() / 1.5))
    x_hi = 2.0 ** np.ceil(np.log2(df["model_intensity"].max() * 1.5))
    # Up to three panels a row (the report shows the figure at its full width): each device's dtypes wrap onto
    # as many rows as they need, and a device never shares a row with another.
    n_cols = _col_wrap(len(dtypes)) or len(dtypes)
    per_device = -(-len(dtypes) // n_cols)
    fig, grid = plt.subplots(len(devices) * per_device, n_cols, figsize=(3.9 * n_cols + 2.6,
                                                                          3.3 * len(devices) * per_device),
                             squeeze=False, sharex=True, sharey=True)
    panel_of = {(device, dtype): grid[i * per_device + j // n_cols, j % n_cols]
                for i, device in enumerate(devices) for j, dtype in enumerate(dtypes)}
    used = set(map(id, panel_of.values()))
    for spare in grid.flat:
        if id(spare) not in used:
            spare.set_visible(False)
    axes = np.array(list(panel_of.values()))
    y_seen = list(df["tflops"])
    for i, device in enumerate(devices):
        for j, dtype in enumerate(dtypes):
            ax = panel_of[(device, dtype)]
            memory, peak = ceilings.get((device, "memory")), ceilings.get((device, dtype))
            y_seen += _roof_panel(ax, memory, peak, dtype, x_lo, x_hi)
            sheet = datasheet_tflops(device, dtype)
            if sheet:
                ax.axhline(sheet, color="black", linestyle=(0, (1, 1.5)), linewidth=1.2, zorder=1)
                ax.annotate(f"datasheet {sheet:.3g} TF/s", xy=(0.02, sheet), xycoords=("axes fraction", "data"),
                            xytext=(0, 3), textcoords="offset points", fontsize=8)
                y_seen.append(sheet)
            if memory is None and peak is None:
                ax.text(0.5, 0.04, "no calibrated ceiling", transform=ax.transAxes, ha="center", fontsize=8,
                        color="dimgrey")
            panel = styled[(styled["device"] == device) & (styled["dtype"] == dtype)]
            for (method, style), g in panel.groupby(["method", "block"]):
                ax.scatter(g["model_intensity"], g["tflops"], color=palette[method], marker=markers[style], s=55,
                           edgecolor="white", linewidth=0.6, zorder=3)
            ax.set_title(f"{device} · {dtype}" if len(devices) > 1 or device else dtype)
    for ax in axes.flat:
        _log2_x(ax)
        _log_y(ax, plain=True)
        ax.grid(True, which="major", alpha=0.4)
        ax.set_xlabel(INTENSITY_LABEL)
        ax.set_ylabel(TFLOPS_LABEL)
        ax.tick_params(which="both", labelbottom=True, labelleft=True)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(y_seen) / 2, max(y_seen) * 2.5)

    # as in the throughput figure: a method without a block axis in its own marker, block sizes by marker
    handles = [Line2D([], [], color="none", label="method")]
    for m in methods:
        levels = set(styled.loc[styled["method"] == m, "block"])
        single = next(iter(levels)) if len(levels) == 1 and not levels - {REFERENCE_STYLE, NO_BLOCK_STYLE} else None
        handles.append(Line2D([], [], color=palette[m], marker=markers[single] if single else "o", linestyle="",
                              label=m))
    blocks = [lv for lv in style_order if lv not in (REFERENCE_STYLE, NO_BLOCK_STYLE)]
    if blocks:
        handles.append(Line2D([], [], color="none", label="block"))
        handles += [Line2D([], [], color="dimgrey", marker=markers[lv], linestyle="", label=lv) for lv in blocks]
    handles.append(Line2D([], [], color="none", label="ceiling"))
    handles.append(Line2D([], [], color="black", linewidth=1.6, label="calibrated roof"))
    if any(datasheet_tflops(d, t) for d in devices for t in dtypes):
        handles.append(Line2D([], [], color="black", linestyle=(0, (1, 1.5)), linewidth=1.2, label="datasheet peak"))
    if any(ln.get_linestyle() == ":" for a in axes.flat for ln in a.get_lines()):
        handles.append(Line2D([], [], color="grey", linestyle=":", label="ridge point"))
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    _side_legend(fig, handles)
    for (device, dtype), ax in panel_of.items():
        memory = ceilings.get((device, "memory"))
        if memory:
            _label_slope(ax, memory, x_lo, x_hi, ceilings.get((device, dtype)))
    return fig


@_themed
def plot_devices(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """TF/s of each kernel on each GPU device at the largest shape all devices ran, one panel per dtype."""
    title = "Devices compared at the largest common shape"
    gpus = gpu_devices(results[results["status"] == "passed"]) if "status" in results else []
    if len(gpus) < 2:
        return _empty_figure(title, ONE_DEVICE if gpus else
                             "Devices compared is not drawn: no verified GPU job in these results.")
    long = devices_long(results)
    long = long.assign(tflops=long["gflops"] / 1e3)
    if long.empty:
        return _empty_figure(title, "Devices compared is not drawn: the devices share no shape with verified jobs.")
    dtypes = _ordered(long["dtype"], dtype_order())
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
            for y, v in zip(ys, values):
                if np.isfinite(v):
                    ax.annotate(f"{v:.3g}", xy=(v, y), xytext=(3, 0), textcoords="offset points", va="center",
                                fontsize=7, color="#333333")
        ax.set_yticks(np.arange(len(labels)), labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_title(f"{dtype}, {sub['shape'].iloc[0]}")
    lo, hi = long["tflops"].min(), long["tflops"].max()
    for ax in axes[:, 0]:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_PlainLogFormatter())
        ax.set_xlim(10 ** np.floor(np.log10(lo)), hi * 4)  # room for the value labels
        ax.grid(True, axis="x", which="major", alpha=0.4)
        ax.set_xlabel(TFLOPS_LABEL)
        ax.set_ylabel(KERNEL_LABEL)
        ax.tick_params(labelbottom=True)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout(h_pad=1.5)
    legend = fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[d]) for d in devices], labels=devices,
                        title="device", loc="center right", frameon=False)
    _make_room(fig, legend)
    return fig


def _vendor_names(table: pd.DataFrame) -> str:
    """The vendor libraries among the rows of `table` (columns dtype and method), as named in text: "cuBLAS",
    "cuBLAS, cuBLASLt"; cuBLAS where none is."""
    vendor = table["method"] == table["dtype"].map(vendor_line)
    return ", ".join(VENDOR_NAMES.get(m, m) for m in dict.fromkeys(table.loc[vendor, "method"])) or "cuBLAS"


def _shape_title(shape: str) -> str:
    parts = str(shape).split("x")
    return f"{parts[0]}³" if len(parts) == 3 and len(set(parts)) == 1 else str(shape)


def plot_ladder(results: pd.DataFrame, calibration: pd.DataFrame):
    """TF/s per rung at the largest shape, one panel per dtype (two panels a row): bars in ladder order, the vendor
    line (cuBLAS; cuBLASLt for FP8) as a dashed line and the datasheet peak as a dotted one, each named at the
    panel's top edge beside its line (the lower value to the left of its line, the higher to the right, so the two
    never overlap). Each rung's rate and its ratio to the vendor line stand in a column right of the panel, clear
    of the bars and the lines."""
    title = "The ladder: each rung at the largest shape"
    table = ladder_table(results)
    if table.empty:
        return _empty_figure(title, "The ladder is not drawn: no verified GPU job in these results.")
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    panels = sorted(table.groupby(["device", "dtype"], sort=False), key=lambda kv: (kv[0][0], rank.get(kv[0][1], 99)))
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    # a row of panels as tall as its longest ladder, and one bar thickness everywhere
    n_rungs = [max(int((part["method"] != vendor_line(dtype)).sum()), 2) for (_, dtype), part in panels]
    per_row = [max(n_rungs[r * cols:(r + 1) * cols]) for r in range(rows)]
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, sum(0.3 * n + 1.5 for n in per_row) + 0.9),
                             squeeze=False, gridspec_kw={"height_ratios": [0.3 * n + 1.5 for n in per_row]})
    palette = _method_palette(list(dict.fromkeys(table["method"])))
    several = table["device"].nunique() > 1
    for i, (ax, ((device, dtype), part)) in enumerate(zip(axes.flat, panels)):
        most = per_row[i // cols]
        vendor = vendor_line(dtype)
        rungs = part[part["method"] != vendor]
        ys = np.arange(len(rungs))
        ax.barh(ys, rungs["tflops"], color=[palette[m] for m in rungs["method"]], height=0.7)
        ax.set_yticks(ys, rungs["label"])
        ax.set_ylim(most - 0.5, -0.5)  # ladder order reads top to bottom; one bar thickness in every panel
        for y, (rate, ratio) in zip(ys, zip(rungs["tflops"], rungs["vs_cublas"])):
            label = f"{rate:.3g} TF/s" + (f", {ratio:.2f}×" if np.isfinite(ratio) else "")
            ax.annotate(label, xy=(1, y), xycoords=("axes fraction", "data"), xytext=(6, 0),
                        textcoords="offset points", va="center", ha="left", fontsize=8, annotation_clip=False)
        lines = []
        cublas = part[part["method"] == vendor]["tflops"]
        if not cublas.empty:
            ax.axvline(cublas.iloc[0], color="dimgrey", linestyle="--", linewidth=1.2)
            lines.append((cublas.iloc[0], f"{VENDOR_NAMES.get(vendor, vendor)} {cublas.iloc[0]:.3g}", "dimgrey"))
        peak = part["datasheet_tflops"].iloc[0]
        if peak is not None and np.isfinite(peak):
            ax.axvline(peak, color="black", linestyle=":", linewidth=1.4)
            lines.append((peak, f"datasheet {peak:.4g}", "black"))
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
        ax.set_title(f"{dtype}, {_shape_title(part['shape'].iloc[0])}" + (f", {device}" if several else ""),
                     fontsize=10, pad=16)
        ax.set_xlim(0, max(part["tflops"].max(), peak or 0) * 1.06)
        ax.grid(True, axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color="dimgrey", linestyle="--",
                      label=f"{_vendor_names(table)}, measured in the same run")]
    if table["datasheet_tflops"].notna().any():
        handles.append(Line2D([], [], color="black", linestyle=":", linewidth=1.4,
                              label="datasheet dense peak (vendor)"))
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout(h_pad=1.6, w_pad=2.0, rect=(0, 0.6 / fig.get_figheight(), 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
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


@_themed
def plot_precision(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Relative error against TF/s, one point per (dtype, kernel) at the dtype's largest square shape (the fastest
    two verified kernels of ours, named, and the vendor line, analysis.precision), one panel per GPU device; the datasheet
    peaks as dotted lines, exact results on a floor, FP8's quantization error above its GEMM's."""
    title = "What precision costs: throughput against error"
    table = precision_table(results)
    table = table[np.isfinite(table["rel_error"].astype(float))]
    if table.empty:
        return _empty_figure(title, "Precision and speed is not drawn: no verified GPU job with a recorded error in "
                                    "these results.")
    names = _ordered(table["dtype"], dtype_order())
    palette = _dtype_palette(names)
    quant = table["quantization_rel_error"].astype(float)
    quant = quant.where(np.isfinite(quant) & (quant > 0))
    positive = pd.concat([table["rel_error"], quant]).astype(float)
    positive = positive[positive > 0]
    floor = positive.min() / 10 if not positive.empty else 1e-16
    table = table.assign(y=table["rel_error"].astype(float).clip(lower=floor), quant=quant)
    devices = list(dict.fromkeys(table["device"]))
    fig, axes = plt.subplots(len(devices), 1, figsize=(11, 5.2 * len(devices)), squeeze=False, sharex=True)
    roofs = False
    for ax, device in zip(axes[:, 0], devices):
        part = table[table["device"] == device]
        for vendor, marker, size in ((True, "s", 120), (False, "o", 60)):
            pts = part[part["vendor"] == vendor]
            colours = [palette[d] for d in pts["dtype"]]
            # the vendor hollow and larger, so that ours at the same place reads as a dot inside its square
            ax.scatter(pts["tflops"], pts["y"], marker=marker, s=size, zorder=3 if vendor else 4,
                       facecolors="none" if vendor else colours, edgecolors=colours if vendor else "white",
                       linewidths=1.8 if vendor else 0.6)
        for _, point in part[~part["vendor"]].iterrows():  # which kernel of ours each dot is
            ax.annotate(point["label"], xy=(point["tflops"], point["y"]), xytext=(6, -3), textcoords="offset points",
                        fontsize=7, color=palette[point["dtype"]])
        fp8 = part[part["quant"].notna()]
        if not fp8.empty:
            colours = [palette[d] for d in fp8["dtype"]]
            ax.vlines(fp8["tflops"], fp8["y"], fp8["quant"], colors=colours, linewidth=1, alpha=0.6, zorder=2)
            ax.scatter(fp8["tflops"], fp8["quant"], marker="D", s=45, facecolors="none", edgecolors=colours,
                       linewidths=1.4, zorder=3)
        roofs = _datasheet_lines(ax, device, names, palette) or roofs
        if (part["y"] <= floor).any():
            ax.axhline(floor, color="grey", linestyle=":", linewidth=0.8, zorder=0)
            ax.annotate("exact (error 0)", xy=(0.01, floor), xycoords=("axes fraction", "data"), xytext=(0, 4),
                        textcoords="offset points", color="dimgrey", fontsize=8)
        ax.set_title(device)
    top = max(positive.max() if not positive.empty else floor, floor * 10)
    sheets = [datasheet_tflops(d, n) or 0 for d in devices for n in names]
    for ax in axes[:, 0]:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_PlainLogFormatter())
        ax.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(3, 1)))
        _log_y(ax, plain=False)
        # a quarter of the height free above the highest point, for the datasheet lines' names
        ax.set_ylim(floor / 3, top * (top / (floor / 3)) ** (1 / 3))
        ax.set_xlim(table["tflops"].min() / 2, max(table["tflops"].max(), *sheets) * 1.8)
        ax.grid(True, which="major", alpha=0.4)
        ax.set_xlabel("throughput (TF/s, burst, verified; log scale)")
        ax.set_ylabel(ERROR_LABEL)
        ax.tick_params(labelbottom=True)
    shapes = table.groupby("dtype")["shape"].agg(lambda s: set(s))
    handles = [Line2D([], [], color="none", label="element type (shape)")]
    handles += [Line2D([], [], color=palette[d], marker="o", linestyle="",
                       label=f"{d}, {_shape_title(next(iter(shapes[d])))}" if len(shapes[d]) == 1 else d)
                for d in names]
    handles.append(Line2D([], [], color="none", label="kernel"))
    if (~table["vendor"].astype(bool)).any():
        handles.append(Line2D([], [], color="dimgrey", marker="o", linestyle="", label="ours (the two fastest, verified)"))
    if table["vendor"].any():
        handles.append(Line2D([], [], color="dimgrey", marker="s", markerfacecolor="none", markersize=8,
                              markeredgewidth=1.8, linestyle="", label=f"vendor ({_vendor_names(table)})"))
    lines = []
    if quant.notna().any():
        lines.append(Line2D([], [], color="dimgrey", marker="D", markerfacecolor="none", linewidth=1,
                            label="quantizing fp32 inputs\n(measured apart)"))
    if roofs:
        lines.append(Line2D([], [], color="dimgrey", linestyle=(0, (2, 2)), linewidth=1.5,
                            label="datasheet dense peak"))
    if (table["y"] <= floor).any():
        lines.append(Line2D([], [], color="grey", linestyle=":", linewidth=0.8, label="exact (error 0)"))
    if lines:
        handles += [Line2D([], [], color="none", label="also drawn"), *lines]
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    _side_legend(fig, handles)
    return fig


FIGURES: dict[str, FigureSpec] = {
    spec.name: spec
    for spec in [
        FigureSpec(
            "throughput",
            "Throughput",
            "Measured throughput (TF/s, 2·m·k·n per second, verified jobs only) against matrix size, one panel "
            "per element type; colour is the method and the marker its thread-block size. The dashed black/grey "
            "lines are the reference lines (numpy on the CPU, cuBLAS on the GPU): higher is better. The pale bar "
            "behind each point is its spread: the interquartile range of the job's timed samples (for numpy also "
            "the range of its fresh processes' medians); a dip or step no wider than the bars is noise, not an "
            "effect.",
            plot_throughput,
        ),
        FigureSpec(
            "speedup",
            "Speedup over naive",
            "Speedup of each method over the naive kernel (ratio of throughputs, verified jobs only) against matrix "
            "size, one panel per element type; the dotted line at 1× is the naive kernel itself, and the dashed "
            "black/grey lines are the numpy and cuBLAS reference lines.",
            plot_speedup,
        ),
        FigureSpec(
            "blocks",
            "Thread-block size",
            "Throughput (TF/s, verified jobs only) of each method that has a thread-block axis, one line per "
            "block edge length (a block is BLOCK×BLOCK threads), one panel per method and element type; "
            "lines that lie apart show how much the block size matters.",
            plot_blocks,
        ),
        FigureSpec(
            "float_vs_double",
            "float32 against float64",
            "Throughput (TF/s, verified jobs only) in single and double precision for each method that ran "
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
        FigureSpec(
            "roofline",
            "Roofline",
            "Measured throughput (TF/s, verified GPU jobs at the largest size each kernel ran) against the "
            "kernel's arithmetic intensity, one panel per device and element type; the intensity is the analytic "
            "model's FLOP per byte of global memory the kernel touches as written, caches ignored. The black roof "
            "is min(calibrated copy bandwidth × intensity, calibrated cuBLAS rate for that type), and the dotted "
            "line the datasheet's dense peak for the device where it is known (H100/H200 SXM): a point near "
            "the flat part is compute-bound, one near the slope memory-bound, and a point above the slope gets "
            "reuse from the caches that the model does not count.",
            plot_roofline,
        ),
        FigureSpec(
            "devices",
            "Devices compared",
            "Throughput (TF/s, verified jobs only) of each kernel on each GPU device, at the largest shape that "
            "every device ran for that element type (named in each panel's title), one panel per element type; "
            "bars of one kernel sit together, one colour per device, with the value at the end of each bar.",
            plot_devices,
        ),
        FigureSpec(
            "ladder",
            "The ladder",
            "Each rung's burst rate (TF/s, verified jobs only) at the largest shape of each element type, in the "
            "ladder's order (a kernel with a block-size axis at its faster block size); right of each panel, each "
            "rung's rate is followed by its ratio to cuBLAS measured in the same run. The dashed line is "
            "cuBLAS and the dotted one the datasheet's dense peak for this GPU (H100/H200 SXM; none for other "
            "devices). The section \"Why each rung is faster\" gives each step's technique and modelled traffic.",
            _themed(plot_ladder),
        ),
        FigureSpec(
            "precision",
            "Precision and speed",
            "What each element type buys in speed and costs in accuracy: per element type at its largest square "
            "shape (in the legend), the burst rate (TF/s, verified jobs only) against the relative Frobenius error "
            "against the fp64 reference, both on log scales. Colour is the element type; a dot is the fastest "
            "kernel of ours, a hollow square the vendor library (cuBLAS; cuBLASLt for float8_e4m3). The dotted "
            "vertical lines are the datasheet's dense peaks (H100/H200 SXM), in the colours of the element types "
            "that share them. The error is the GEMM's own, against the fp64 product of the inputs as the element "
            "type stores them, except tf32's: its tensor cores round fp32 inputs, so that rounding is in it. "
            "Rounding fp32 data to fp16 or bf16 beforehand is not in their errors; for float8_e4m3 the hollow "
            "diamond above the point is that cost, the error of quantizing fp32 inputs to e4m3 (measured apart). "
            "Results with error 0 (int8 is exact) sit on the dotted floor.",
            plot_precision,
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


# --------------------------------------------------------------------------------------------------------------
# Figures a run cannot have data for: left out of the run (and the report), with one sentence each saying why.

def _block_methods() -> list[str]:
    from matmul_study.core import registry

    return [name for name, method in registry.METHODS.items() if method.block_axis]


def _on_gpu(method: str) -> bool:
    from matmul_study.core import registry

    return method in registry.METHODS and registry.get(method).on_gpu


def left_out(jobs: pd.DataFrame, gpu_sources: int | None = None) -> dict[str, str]:
    """The figures that `jobs` (columns method and dtype: this run's grid plus any imported results) cannot
    have data for, each with the sentence the report shows instead. `gpu_sources` counts the result sets with
    GPU jobs (this machine's and each imported one); the device comparison needs two."""
    methods = set(jobs["method"])
    gpu = any(_on_gpu(m) for m in methods)
    both = jobs[jobs["dtype"].isin(["float32", "float64"])].groupby("method")["dtype"].nunique()
    out = {}
    if "naive" not in methods:
        out["speedup"] = ("Speedup over naive is not drawn: it divides by the naive GPU kernel, and this run has "
                          "no naive jobs.")
    if not methods & set(_block_methods()):
        out["blocks"] = ("Thread-block size is not drawn: no method in this run has a thread-block axis ("
                         + ", ".join(_block_methods()) + " have one).")
    if not (both >= 2).any():
        out["float_vs_double"] = ("float32 against float64 is not drawn: no method in this run ran both float32 "
                                  "and float64.")
    if not gpu:
        out["ladder"] = ("The ladder is not drawn: it compares GPU kernels with cuBLAS, and this run has no GPU "
                         "jobs.")
        out["roofline"] = ("Roofline is not drawn: it places GPU kernels under the GPU's calibrated ceilings, and "
                           "this run has no GPU jobs.")
        out["precision"] = ("Precision and speed is not drawn: it sets GPU kernels' rates against their errors, and "
                            "this run has no GPU jobs.")
    if (gpu_sources if gpu_sources is not None else int(gpu)) < 2:
        out["devices"] = ("Devices compared is not drawn: it needs GPU results from two devices (import another "
                          "machine's results into results/imported/<name>/).")
    return {name: out[name] for name in FIGURES if name in out}
