"""Where the study's time went: one bar per device, split into the jobs' phases and the time between jobs
(analysis.job_time.study_time)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from matmul_study.analysis.job_time import BETWEEN, PHASES, study_time
from matmul_study.present.figures.style import empty_figure, side_legend

TITLE = "Where the study's time went"


def plot_study_time(results: pd.DataFrame, calibration: pd.DataFrame | None = None) -> Figure:
    """A stacked horizontal bar of seconds per device: the jobs' phases, then the time between jobs."""
    table = study_time(results)
    if table is None or table["seconds"].sum() <= 0:
        return empty_figure(TITLE, "Study time is not drawn: no job in these results recorded its own time.")
    phases = [*PHASES, BETWEEN]
    colours = dict(zip(phases, sns.color_palette("colorblind", len(phases))))
    devices = list(dict.fromkeys(table["device"]))
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(devices) + 1.6))
    for y, device in enumerate(devices):
        seconds = table[table["device"] == device].set_index("phase")["seconds"]
        left = 0.0
        for phase in phases:
            width = float(seconds.get(phase, 0.0))
            if width > 0:
                ax.barh(y, width, left=left, height=0.6, color=colours[phase],
                        label=phase if y == 0 else None)
            left += width
        ax.text(left, y, f" {left:,.0f} s", va="center", ha="left", fontsize=9)
    ax.set_yticks(range(len(devices)), devices)
    ax.invert_yaxis()
    ax.set_xlim(0, table.groupby("device")["seconds"].sum().max() * 1.12)
    ax.set_xlabel("time from the first job's start to the last job's end (s)")
    ax.set_ylabel("run (device)")
    ax.set_title(TITLE, fontweight="bold")
    sns.despine(ax=ax)
    handles = [Line2D([], [], color=colours[p], marker="s", markersize=10, linestyle="none", label=p) for p in phases
               if (table["phase"] == p).any() and table.loc[table["phase"] == p, "seconds"].sum() > 0]
    side_legend(fig, handles)
    return fig
