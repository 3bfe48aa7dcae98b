"""The roofline: each verified GPU job's modelled arithmetic intensity against its measured rate, under the roof of
the device's calibrated ceilings and beside the datasheet peak, one panel per device and element type."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from matmul_study.analysis.ladder import datasheet_tflops
from matmul_study.analysis.result_devices import device_kind, device_name, gpu_devices
from matmul_study.analysis.spread import verified
from matmul_study.present.figures.style import (
    INTENSITY_LABEL, NO_BLOCK_STYLE, REFERENCE_STYLE, TFLOPS_LABEL, col_wrap, dtype_order, empty_figure, log2_x,
    label_gap, log_y, mark_noisy, method_order, method_palette, noisy_column, noisy_handle, ordered, place_label,
    side_legend, style_maps, themed, with_style_column,
)


def _roof_panel(ax, memory: float | None, peak: float | None, x_lo: float, x_hi: float) -> list:
    """Draw min(memory × I, peak) over [x_lo, x_hi] (named once the layout is final: _name_lines); returns the y
    values drawn."""
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
    if memory:
        ridge = peak / memory if peak else x_hi
        if peak and x_lo < ridge < x_hi:
            ax.axvline(ridge, color="grey", linestyle=":", linewidth=0.8, zorder=0)
    return [ys.min(), ys.max()]


def _spots(xys: list, dy: tuple, ha: str) -> list:
    """place_label's spots: beside each point of `xys` (nearest the line first), above the line (dy > 0) or below
    it, `ha`-aligned (a right-aligned name ends 4 points short of its point: the panel's edge), every point at the
    first dy before the next dy."""
    return [((-4 if ha == "right" else 0, d), ha, "bottom" if d > 0 else "top", xy) for d in dy for xy in xys]


# How far above (below) its line a horizontal line's name may stand, in points, nearest first: right on the line,
# then clear of the points that sit on it (a kernel at the roof), then of those just above or under it.
_LINE_DY = (3, -3, 8, -8, 13, -13, 18, -18, 23, -23)
# A name's backing: a dotted datasheet line a few pixels above the roof passes behind the roof's name.
_BACKING = {"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none", "alpha": 0.75}


def _boxes_along(ax, x, y) -> list:
    """The boxes (in pixels, a pixel past the line on each side) of the segments of the line through (x, y)."""
    pts = ax.transData.transform(np.column_stack([x, y]))
    return [Bbox.from_extents(min(a[0], b[0]) - 1, min(a[1], b[1]) - 1, max(a[0], b[0]) + 1, max(a[1], b[1]) + 1)
            for a, b in zip(pts[:-1], pts[1:])]


def _marker_boxes(ax) -> list:
    """The box of every marker in the panel (the points and the rings round the noisy ones), in pixels, with a
    margin of a pixel."""
    boxes = []
    for c in ax.collections:
        centres = c.get_offset_transform().transform(c.get_offsets())
        halves = np.broadcast_to(np.sqrt(c.get_sizes()) / 2 * ax.figure.dpi / 72 + 1, len(centres))
        boxes += [Bbox.from_extents(x - h, y - h, x + h, y + h) for (x, y), h in zip(centres, halves)]
    return boxes


def _name_lines(ax, memory: float | None, peak: float | None, sheet: float | None, dtype: str, x_lo: float,
                x_hi: float) -> None:
    """Name the datasheet peak, the calibrated peak and the bandwidth along the roof's slope, each at the first of
    its spots (style.place_label) where it overlaps no other name, no marker and no line but its own (the roof's name
    may lie over the datasheet line, which passes behind it), inside the panel; called once the figure's layout is
    final, since the test is in display units."""
    from matmul_study.present.report.text import tf  # the report's rate format; lazy: present.report imports figures
    renderer = ax.figure.canvas.get_renderer()
    pad, panel = label_gap(ax.figure), ax.get_window_extent(renderer)
    texts = [t.get_window_extent(renderer) for t in ax.texts if t.get_text()]
    roof = next((ln for ln in ax.get_lines() if ln.get_label() == "_roof"), None)
    x, y = (np.asarray(roof.get_xdata()), np.asarray(roof.get_ydata())) if roof else (np.zeros(0), np.zeros(0))
    slope = y < peak * (1 - 1e-9) if peak else np.ones(len(x), dtype=bool)
    markers, flat, slope = _marker_boxes(ax), _boxes_along(ax, x[~slope], y[~slope]), _boxes_along(ax, x[slope], y[slope])
    sheet_line = _boxes_along(ax, [x_lo, x_hi], [sheet] * 2) if sheet else []
    style = {"xytext": (0, 3), "textcoords": "offset points", "fontsize": 8, "bbox": _BACKING}
    if sheet:
        note = ax.annotate(f"datasheet {tf(sheet)} TF/s", xy=(0.02, sheet), xycoords=("axes fraction", "data"), **style)
        place_label(note, _spots([(0.02, sheet)], _LINE_DY, "left") + _spots([(0.98, sheet)], _LINE_DY, "right"),
                    renderer, texts, markers + flat + slope + sheet_line, panel, pad)
    if peak:
        note = ax.annotate(f"{dtype} calibrated {tf(peak)} TF/s", xy=(x_hi, peak), **style)
        # right-aligned at the panel's right edge, then further left along the flat roof (where every point lies
        # left of the ridge, the edge alone: the flat roof is out of the panel)
        ridge = max(peak / memory, x_lo) if memory else x_lo
        along = [(x_hi / 2 ** k, peak) for k in range(max(int(np.log2(x_hi / ridge)), 0) + 1)]
        place_label(note, _spots(along, _LINE_DY, "right"), renderer, texts, markers + flat + slope, panel, pad)
    if memory:
        _label_slope(ax, memory, x_lo, x_hi, peak, renderer, texts, markers + flat + sheet_line, panel, pad)


def _label_slope(ax, memory: float, x_lo: float, x_hi: float, peak: float | None, renderer, texts: list,
                 avoid: list, panel, pad: float) -> None:
    """Write the bandwidth along the roof's slope, above it (else under it), a third of the way up the slope or, where
    that is taken, at the first free place further down or up it."""
    ridge = min(peak / memory, x_hi) if peak else x_hi
    (px0, py0), (px1, py1) = ax.transData.transform([(x_lo, memory * x_lo), (ridge, memory * ridge)])
    note = ax.annotate(f"memory {memory:.3g} TB/s", xy=(x_lo, memory * x_lo), xytext=(-4, 4),
                       textcoords="offset points", rotation=np.degrees(np.arctan2(py1 - py0, px1 - px0)),
                       rotation_mode="anchor", ha="left", va="bottom", fontsize=8, bbox=_BACKING)
    xs = [x_lo * (ridge / x_lo) ** f for f in (0.35, 0.25, 0.45, 0.15, 0.55, 0.05, 0.65, 0.75)]
    spots = [(offset, "left", va, (x0, memory * x0)) for offset, va in (((-4, 4), "bottom"), ((4, -4), "top"))
             for x0 in xs]
    place_label(note, spots, renderer, texts, avoid, panel, pad)


def _points(results: pd.DataFrame, calibration: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The points to draw: per GPU device, method, dtype and block, the median modelled intensity and rate (gflops
    and tflops) at the largest size it ran, where the kernel is furthest from launch overheads. Empty, with the
    reason, where there are none."""
    df = verified(results, "gflops")
    if df.empty or calibration.empty or "model_intensity" not in df:
        return df.iloc[0:0], ("no verified job" if df.empty else "no calibrated ceiling in these results"
                              if calibration.empty else "these results have no modelled intensity")
    intensity = pd.to_numeric(df["model_intensity"], errors="coerce")
    df = df.assign(noisy=noisy_column(df))
    df = df[(device_kind(df) == "gpu") & np.isfinite(intensity) & (intensity > 0)]
    df = df.assign(model_intensity=intensity[df.index], device=device_name(df))
    if df.empty:
        return df, "no verified GPU job with a modelled intensity"
    df = df.assign(block=df["block"].fillna(0).astype(int))
    keys = ["device", "method", "dtype", "block"]
    df = df[df["size"] == df.groupby(keys)["size"].transform("max")]
    df = df.groupby(keys, as_index=False).agg(model_intensity=("model_intensity", "median"),
                                              gflops=("gflops", "median"), noisy=("noisy", "max"))
    return df.assign(tflops=df["gflops"] / 1e3), None


def _panels(devices: list, dtypes: list) -> tuple[Figure, dict]:
    """The figure and the axes of each (device, dtype), spare axes hidden. Up to three panels a row (the report
    shows the figure at its full width): each device's dtypes wrap onto as many rows as they need, and a device
    never shares a row with another."""
    n_cols = col_wrap(len(dtypes)) or len(dtypes)
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
    return fig, panel_of


def _draw_panel(ax, points: pd.DataFrame, device: str, dtype: str, ceilings: dict, x_range: tuple[float, float],
                palette: dict, markers: dict, several: bool) -> list:
    """One device's and dtype's panel: the calibrated roof, the datasheet peak and the points (`points` styled by
    with_style_column). Returns the y values drawn besides the points."""
    memory, peak = ceilings.get((device, "memory")), ceilings.get((device, dtype))
    y_seen = _roof_panel(ax, memory, peak, *x_range)
    sheet = datasheet_tflops(device, dtype)
    if sheet:  # named, with the roof, once the layout is final (_name_lines)
        ax.axhline(sheet, color="black", linestyle=(0, (1, 1.5)), linewidth=1.2, zorder=1)
        y_seen.append(sheet)
    if memory is None and peak is None:
        ax.text(0.5, 0.04, "no calibrated ceiling", transform=ax.transAxes, ha="center", fontsize=8,
                color="dimgrey")
    panel = points[(points["device"] == device) & (points["dtype"] == dtype)]
    for (method, style), g in panel.groupby(["method", "block"]):
        ax.scatter(g["model_intensity"], g["tflops"], color=palette[method], marker=markers[style], s=55,
                   edgecolor="white", linewidth=0.6, zorder=3)
    mark_noisy(ax, panel["model_intensity"], panel["tflops"], panel["noisy"])
    ax.set_title(f"{device} · {dtype}" if several or device else dtype)
    return y_seen


def _format_axes(axes: np.ndarray, x_range: tuple[float, float], y_seen: list) -> None:
    """Log axes, grid and labels on every panel; the (shared) limits: the intensities' powers of two, and room
    above the highest line for its label."""
    for ax in axes.flat:
        log2_x(ax)
        log_y(ax, plain=True)
        ax.grid(True, which="major", alpha=0.4)
        ax.set_xlabel(INTENSITY_LABEL)
        ax.set_ylabel(TFLOPS_LABEL)
        ax.tick_params(which="both", labelbottom=True, labelleft=True)
    ax.set_xlim(*x_range)
    ax.set_ylim(min(y_seen) / 2, max(y_seen) * 2.5)


def _legend(styled: pd.DataFrame, methods: list, palette: dict, markers: dict, style_order: list, axes: np.ndarray,
            datasheet: bool) -> list:
    """As in the throughput figure: a method without a block axis in its own marker, block sizes by marker; then
    the ceilings drawn (the datasheet peak where one is, the ridge point where a panel shows it)."""
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
    if datasheet:
        handles.append(Line2D([], [], color="black", linestyle=(0, (1, 1.5)), linewidth=1.2, label="datasheet peak"))
    if any(ln.get_linestyle() == ":" for a in axes.flat for ln in a.get_lines()):
        handles.append(Line2D([], [], color="grey", linestyle=":", label="ridge point"))
    if styled["noisy"].any():
        handles.append(noisy_handle())
    return handles


@themed
def plot_roofline(results: pd.DataFrame, calibration: pd.DataFrame) -> Figure:
    """Roofline per GPU device and dtype: modelled intensity against measured TF/s, under the calibrated roof and
    beside the datasheet peak."""
    title = "Roofline: throughput against arithmetic intensity"
    df, why = _points(results, calibration)
    if why:
        return empty_figure(title, f"Roofline is not drawn: {why}.")
    devices = [d for d in gpu_devices(results) if d in set(df["device"])]
    dtypes = ordered(df["dtype"], dtype_order())
    methods = ordered(df["method"], method_order())
    palette = method_palette(methods)
    styled = with_style_column(df)
    style_order, markers, _ = style_maps(set(styled["block"]))
    # in TF/s (a memory ceiling in TB/s: TB/s × FLOP/byte = TF/s)
    ceilings = {(d, c): v / 1e3 for d, c, v in calibration[["device_name", "ceiling", "value"]].itertuples(index=False)}
    x_range = (2.0 ** np.floor(np.log2(df["model_intensity"].min() / 1.5)),
               2.0 ** np.ceil(np.log2(df["model_intensity"].max() * 1.5)))
    fig, panel_of = _panels(devices, dtypes)
    axes = np.array(list(panel_of.values()))
    y_seen = list(df["tflops"])
    for (device, dtype), ax in panel_of.items():
        y_seen += _draw_panel(ax, styled, device, dtype, ceilings, x_range, palette, markers, len(devices) > 1)
    _format_axes(axes, x_range, y_seen)
    handles = _legend(styled, methods, palette, markers, style_order, axes,
                      datasheet=any(datasheet_tflops(d, t) for d in devices for t in dtypes))
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    side_legend(fig, handles)
    fig.draw_without_rendering()
    for (device, dtype), ax in panel_of.items():
        _name_lines(ax, ceilings.get((device, "memory")), ceilings.get((device, dtype)),
                    datasheet_tflops(device, dtype), dtype, *x_range)
    return fig
