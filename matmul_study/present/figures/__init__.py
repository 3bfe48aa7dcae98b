"""Figures of the study, drawn from the tidy results table (one row per benchmark job).

`FIGURES` (figures.catalog) maps a figure name to its caption and plot function; the report takes the captions from
there. Every plot function is `plot(results, calibration)`: it takes the whole results table and picks the rows it
needs itself (throughput figures only ever use jobs that passed verification), and the calibration table of device
ceilings (columns device_name, ceiling, value, unit, detail; possibly empty or None), which only the roofline uses.
When the results hold more than one GPU device, no line ever joins jobs of two devices: the figures over size get a
row of panels per device.

Modules: style (what every figure shares), throughput (rates over size), ladder (bars at the largest shape: the
ladder, the devices compared), roofline, errors (verification error, precision and speed), study_time (where the run's time went) and catalog (the
figures' names, captions and files).
"""

import matplotlib

matplotlib.use("Agg")  # figures are written by batch jobs with no display; before any pyplot import

from matmul_study.present.figures.catalog import FIGURES, FigureSpec, left_out, save_figure  # noqa: E402
from matmul_study.present.figures.errors import plot_precision, plot_verification_error  # noqa: E402
from matmul_study.present.figures.ladder import plot_devices, plot_ladder  # noqa: E402
from matmul_study.present.figures.roofline import plot_roofline  # noqa: E402
from matmul_study.present.figures.study_time import plot_study_time  # noqa: E402
from matmul_study.present.figures.style import (  # noqa: E402
    NO_DATA, ONE_DEVICE, PLACEHOLDER, SPREAD_LABEL, dtype_order, method_order,
)
from matmul_study.present.figures.throughput import (  # noqa: E402
    plot_blocks, plot_float_vs_double, plot_speedup, plot_throughput,
)

__all__ = [
    "FIGURES", "FigureSpec", "NO_DATA", "ONE_DEVICE", "PLACEHOLDER", "SPREAD_LABEL", "dtype_order", "left_out",
    "method_order", "plot_blocks", "plot_devices", "plot_float_vs_double", "plot_ladder", "plot_precision",
    "plot_roofline", "plot_speedup", "plot_study_time", "plot_throughput", "plot_verification_error", "save_figure",
]
