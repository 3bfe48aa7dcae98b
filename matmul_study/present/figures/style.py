"""What every figure shares: axis labels and the placeholder texts, the orders and colours of methods and element
types, the marker and dash of each block size, log axes with plain tick labels, the legend right of the panels, the
placeholder figure that says why a figure has nothing to show, the ring around a rate whose job missed its noise
target (mark_noisy), the placing of a label where it overlaps nothing (place_label), and the theme every figure is
drawn under."""

from __future__ import annotations

from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator, NullFormatter
from matplotlib.transforms import Bbox

from matmul_study.analysis.ladder import VENDOR_NAMES, vendor_line
from matmul_study.analysis.noise import MARK, NoisyJobs, noise_flags
from matmul_study.analysis.result_devices import gpu_devices, with_device
from matmul_study.core import dtypes, registry


SIZE_LABEL = "matrix size (∛(m·k·n), log2 scale)"
TFLOPS_LABEL = "throughput (TF/s, log scale)"
SPEEDUP_LABEL = "speedup over naive (×, log scale)"
ERROR_LABEL = "relative Frobenius error (log scale)"
INTENSITY_LABEL = "arithmetic intensity\n(FLOP/byte, model, log2 scale)"  # two lines: panels sit three a row
KERNEL_LABEL = "kernel (method and block size)"
NO_DATA = "no data for this figure in this run"
PLACEHOLDER = "placeholder"  # the label (Figure.get_label) of a figure that only says why it has nothing to show
SPREAD_LABEL = "spread of the samples"
NOISY_LABEL = f"missed its noise target ({MARK})"
NOISY_COLOUR = "crimson"
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


def ordered(values, order) -> list:
    """Distinct values, those in `order` first in that order, the rest sorted."""
    present = list(dict.fromkeys(v for v in values if pd.notna(v)))
    return [v for v in order if v in present] + sorted((v for v in present if v not in order), key=str)


def method_palette(methods) -> dict:
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
DTYPE_SHORT = {"float8_e4m3": "fp8", "float8_e4m3_block": "fp8 block", "float16": "fp16", "bfloat16": "bf16",
               "float32": "fp32", "float64": "fp64"}


def dtype_palette(names) -> dict:
    """DTYPE_COLOURS for the dtypes it knows; the others hues of their own (husl)."""
    base = sns.color_palette("colorblind", 10)
    unknown = [d for d in names if d not in DTYPE_COLOURS]
    palette = {d: base[DTYPE_COLOURS[d]] for d in names if d in DTYPE_COLOURS}
    palette.update(zip(unknown, sns.color_palette("husl", len(unknown)) if unknown else []))
    return palette


def draw_spread(ax, df: pd.DataFrame, colours: dict, x: str = "size") -> None:
    """The spread of each point as a thick translucent bar in its method's colour, behind the markers."""
    if df.empty or "tflops_lo" not in df:
        return
    for method, g in df.groupby("method", sort=False):
        wide = g[g["tflops_hi"] > g["tflops_lo"]]
        if not wide.empty:
            ax.vlines(wide[x], wide["tflops_lo"], wide["tflops_hi"], colors=[colours.get(method, "grey")],
                      linewidth=3.5, alpha=0.3, zorder=1, label="_spread")


def mark_noisy(ax, x, y, noisy) -> bool:
    """Ring each point (or bar end) at (x, y) whose job missed its noise target (`noisy`: a flag per point, as
    analysis.noise.noise_flags or NoisyJobs give it); returns whether any was ringed, for the legend's
    noisy_handle. Every figure that shows a job's rate marks its flagged jobs through this."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    flags = np.asarray([bool(v) and v == v for v in noisy], dtype=bool) if len(x) else np.zeros(0, dtype=bool)
    keep = flags & np.isfinite(x) & np.isfinite(y)
    if not keep.any():
        return False
    ax.scatter(x[keep], y[keep], s=170, facecolors="none", edgecolors=NOISY_COLOUR, linewidths=1.6, zorder=6,
               label="_noisy", clip_on=False)
    return True


def noisy_handle() -> Line2D:
    """The legend entry of mark_noisy's ring."""
    return Line2D([], [], marker="o", markersize=12, markerfacecolor="none", markeredgecolor=NOISY_COLOUR,
                  markeredgewidth=1.6, linestyle="", label=NOISY_LABEL)


def noisy_column(rows: pd.DataFrame) -> pd.Series:
    """Per row of the results (as the figures get them: `themed` adds 'noisy'), whether its job missed its noise
    target."""
    if "noisy" in rows:
        return rows["noisy"].fillna(False).astype(bool)
    return noise_flags(rows)["noisy"] if not rows.empty else pd.Series(False, index=rows.index, dtype=bool)


def noisy_flags(rows: pd.DataFrame, results: pd.DataFrame, **columns) -> pd.Series:
    """Per row of a derived table (the ladder, the devices compared, the precision points): whether its job in
    `results` missed its noise target; `columns` as NoisyJobs.reasons takes them."""
    return NoisyJobs(results).reasons(rows, **columns).astype(bool)


def add_noisy_entry(fig: Figure, legend) -> None:
    """Rebuild the figure legend `legend` (seaborn's, say) with the noisy_handle entry last."""
    handles, labels = list(legend.legend_handles), [t.get_text() for t in legend.get_texts()]
    title = legend.get_title().get_text()
    legend.remove()
    new = fig.legend(handles + [noisy_handle()], labels + [NOISY_LABEL], title=title or None, loc="center right",
                     frameon=False)
    make_room(fig, new)


def with_style_column(df: pd.DataFrame) -> pd.DataFrame:
    """Add 'block': the line style level (reference line / no block axis / the block size as text)."""
    blocks = df["block"].fillna(0).astype(int)
    style = np.where(
        df["method"].isin(REFERENCE_METHODS),
        REFERENCE_STYLE,
        np.where(blocks > 0, blocks.astype(str), NO_BLOCK_STYLE),
    )
    return df.assign(block=style)


def style_maps(levels) -> tuple[list, dict, dict]:
    """Order, markers and dashes for the style levels made by `with_style_column`."""
    blocks = sorted((lv for lv in levels if lv not in (REFERENCE_STYLE, NO_BLOCK_STYLE)), key=int)
    order = blocks + [lv for lv in (NO_BLOCK_STYLE, REFERENCE_STYLE) if lv in levels]
    markers = {b: BLOCK_MARKERS[i % len(BLOCK_MARKERS)] for i, b in enumerate(blocks)}
    markers.update({NO_BLOCK_STYLE: "D", REFERENCE_STYLE: "s"})
    dashes = {lv: "" for lv in order}
    dashes[REFERENCE_STYLE] = (5, 2)
    return order, {lv: markers[lv] for lv in order}, dashes


def log2_x(ax) -> None:
    """Log base 2 x axis with plain-number tick labels (512 reads better than 2^9)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


class PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of which ticks to label, written as plain numbers (50, 100, 20000)."""

    def __call__(self, x, pos=None):
        return f"{x:g}" if super().__call__(x, pos) else ""


def log_y(ax, plain: bool) -> None:
    """Log y axis; `plain` labels ticks 50, 100, 2000 rather than 5×10^1 (not for errors like 1e-15)."""
    ax.set_yscale("log")
    if plain:
        ax.yaxis.set_major_formatter(PlainLogFormatter())
        # label a few minor ticks when the data span less than about a decade, so the axis never goes bare
        ax.yaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def finish_grid(grid: sns.FacetGrid, title: str, xlabel: str, ylabel: str, plain_y: bool = True,
                 handles: list | None = None, noisy: bool = False) -> Figure:
    """Log axes, labels on every panel, the title and the legend right of the panels (`handles`, else the grid's
    own); with `noisy`, the legend ends with mark_noisy's entry."""
    for ax in grid.axes.flat:
        log2_x(ax)
        log_y(ax, plain_y)
        ax.grid(True, which="major", alpha=0.4)
    # set_axis_labels only labels the outer axes; label every one so each panel reads alone
    for ax in grid.axes.flat:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.tick_params(which="both", labelbottom=True, labelleft=True)
    grid.figure.suptitle(title, fontweight="bold")
    grid.figure.tight_layout(w_pad=2.0)
    if handles:
        side_legend(grid.figure, handles + ([noisy_handle()] if noisy else []))
    elif grid.legend is not None:
        if noisy:
            add_noisy_entry(grid.figure, grid.legend)
        else:
            make_room(grid.figure, grid.legend)
    return grid.figure


def side_legend(fig: Figure, handles: list) -> None:
    """The figure's legend right of the panels; a handle with colour "none" is a section title, set in bold."""
    legend = fig.legend(handles=handles, loc="center right", frameon=False)
    for text, handle in zip(legend.get_texts(), handles):
        if handle.get_color() == "none":
            text.set_fontweight("bold")
    make_room(fig, legend)


def make_room(fig: Figure, legend) -> None:
    """tight_layout ignores a figure legend: narrow the panels so that the legend right of them fits. The legend's
    width needs a renderer to measure its text, not a drawing of the figure."""
    width = legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    fig.subplots_adjust(right=max(0.5, 1 - (width + 0.2) / fig.get_figwidth()))


def empty_figure(title: str, message: str = NO_DATA) -> Figure:
    """No axes to misread: the figure's title and one line saying why there is nothing to show, so the pipeline
    and the report still work. Its label is PLACEHOLDER."""
    fig = plt.figure(figsize=(9, 1.1), label=PLACEHOLDER)
    fig.suptitle(title, fontweight="bold", y=0.9)
    fig.text(0.5, 0.35, message, ha="center", va="center", fontsize=11, color="dimgrey")
    return fig


def col_wrap(n_cols: int) -> int | None:
    """Panels per row: up to three (a landscape figure that fills the report's width), two for four panels."""
    return None if n_cols <= 3 else 2 if n_cols == 4 else 3


def usable_calibration(calibration: pd.DataFrame | None) -> pd.DataFrame:
    """The calibration table with usable rows only (a finite, positive value); empty when there is none."""
    if calibration is None or calibration.empty or not {"device_name", "ceiling", "value"} <= set(calibration):
        return pd.DataFrame(columns=CALIBRATION_COLUMNS)
    value = pd.to_numeric(calibration["value"], errors="coerce")
    keep = np.isfinite(value) & (value > 0)
    return calibration[keep].assign(value=value[keep], device_name=calibration["device_name"].astype(str).str.strip())


def themed(plot: Callable[[pd.DataFrame, pd.DataFrame], Figure]) -> Callable[..., Figure]:
    """Draw under one seaborn theme without changing the caller's global matplotlib settings; `calibration` may
    be left out or None (read as empty)."""

    def wrapped(results: pd.DataFrame, calibration: pd.DataFrame | None = None) -> Figure:
        with sns.axes_style("ticks"), sns.plotting_context("notebook", font_scale=0.9):
            # merged result sets may repeat index labels; the plots align columns on the index
            results = results.reset_index(drop=True)
            # 'noisy': the job missed its noise target (analysis.noise), ringed by mark_noisy
            noisy = noise_flags(results)["noisy"] if not results.empty else pd.Series(dtype=bool)
            return plot(results.assign(noisy=noisy), usable_calibration(calibration))

    wrapped.__name__ = plot.__name__
    wrapped.__doc__ = plot.__doc__
    return wrapped


def device_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, list | None]:
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


def set_titles(grid, per_device_rows: bool) -> None:
    """Panels read "device · dtype" when devices are faceted into rows, else just the column's name."""
    if per_device_rows:
        grid.set_titles(template="{row_name} · {col_name}")
    else:
        grid.set_titles(col_template="{col_name}")


def vendor_names(table: pd.DataFrame) -> str:
    """The vendor libraries among the rows of `table` (columns dtype and method), as named in text: "cuBLAS",
    "cuBLAS, cuBLASLt"; cuBLAS where none is."""
    vendor = table["method"] == table["dtype"].map(vendor_line)
    return ", ".join(VENDOR_NAMES.get(m, m) for m in dict.fromkeys(table.loc[vendor, "method"])) or "cuBLAS"


def shape_title(shape: str) -> str:
    parts = str(shape).split("x")
    return f"{parts[0]}³" if len(parts) == 3 and len(set(parts)) == 1 else str(shape)


def label_gap(fig) -> float:
    """The pad, in pixels, that keeps a name placed by place_label a twenty-fourth of an inch (and a pixel) from
    every other name: two names closer than that read as one."""
    return fig.dpi / 24 + 1


def place_label(note, spots: list, renderer, texts: list, markers: list, panel: Bbox, pad: float = 0.0) -> int:
    """Move the annotation `note` to the first of `spots` ((dx, dy) offset in points, ha, va, and optionally the
    point xy it is written beside) where its box, `pad` pixels wider on each side, overlaps none of the boxes
    `texts`, its own box no box of `markers`, and it lies inside `panel` (all in pixels); where none is free, to the
    spot that overlaps least (a text weighing three times a marker). Appends its box to `texts` and returns the
    spot's index. Call it once the figure's layout is final: the test is in display units. A rotated name (along a
    slope) meets the markers with label_pieces, not with its whole box."""
    costs = []
    for spot in spots:
        box = put_label(note, spot, renderer)
        costs.append(box_overlap(box.padded(pad), texts) * 3
                     + sum(box_overlap(piece, markers) for piece in label_pieces(note, box, renderer))
                     + (0 if box_inside(box, panel) else 1e9))
        if costs[-1] == 0:
            break
    best = int(np.argmin(costs))
    texts.append(put_label(note, spots[best], renderer))
    return best


def put_label(note, spot: tuple, renderer) -> Bbox:
    """Move the annotation `note` to `spot` (as place_label takes it); returns the box of its text (a leader line
    left out), in pixels."""
    note.xyann = spot[0]
    note.set_ha(spot[1])
    note.set_va(spot[2])
    if len(spot) > 3:
        note.xy = spot[3]
    note.update_positions(renderer)
    return Text.get_window_extent(note, renderer)


def label_pieces(note, box: Bbox, renderer) -> list:
    """Boxes that cover the text of `note` (its box `box`, in pixels) closely: `box` itself where it is upright;
    where it is rotated, the boxes of pieces of it about as long as it is tall, so that a point beside a slanted
    name is not taken for one under it."""
    angle = np.radians(note.get_rotation())
    if np.isclose(np.sin(angle), 0):
        return [box]
    note.set_rotation(0)
    flat = Text.get_window_extent(note, renderer)  # the text aligned about its anchor, before it is turned
    note.set_rotation(np.degrees(angle))
    cx, cy = note.get_transform().transform(note.get_unitless_position())
    edges = np.linspace(flat.x0, flat.x1, max(1, int(np.ceil(flat.width / max(flat.height, 1)))) + 1)
    pieces = []
    for a, b in zip(edges[:-1], edges[1:]):
        xs, ys = np.array([a, b, b, a]) - cx, np.array([flat.y0, flat.y0, flat.y1, flat.y1]) - cy
        rx, ry = cx + xs * np.cos(angle) - ys * np.sin(angle), cy + xs * np.sin(angle) + ys * np.cos(angle)
        pieces.append(Bbox.from_extents(rx.min(), ry.min(), rx.max(), ry.max()))
    return pieces


def box_overlap(box: Bbox, others: list) -> float:
    """The area `box` shares with the boxes `others`, in square pixels."""
    return sum(max(0.0, min(box.x1, o.x1) - max(box.x0, o.x0)) * max(0.0, min(box.y1, o.y1) - max(box.y0, o.y0))
               for o in others)


def box_inside(box: Bbox, panel: Bbox) -> bool:
    return panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1
