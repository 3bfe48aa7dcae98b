"""The catalog of figures: `FIGURES` maps a figure's name to its title, caption and plot function, so a figure and
the words that explain it live side by side; `save_figure` writes one as PNG and SVG; `left_out` names the figures a
run cannot have data for, each with the sentence the report shows instead."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from matmul_study.core import registry, results
from matmul_study.present.figures.errors import plot_precision, plot_verification_error
from matmul_study.present.figures.ladder import plot_devices, plot_ladder
from matmul_study.present.figures.roofline import plot_roofline
from matmul_study.present.figures.style import themed
from matmul_study.present.figures.study_time import plot_study_time
from matmul_study.present.figures.throughput import plot_blocks, plot_float_vs_double, plot_speedup, plot_throughput


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    caption: str
    plot: Callable[[pd.DataFrame, pd.DataFrame], Figure]


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
            "reuse from the caches that the model does not count. A kernel that runs its type on other arithmetic "
            "(fp32 on the tf32 or fp16 tensor cores: 3xTF32, 3xFP16) sits under that arithmetic's roof, not this "
            "panel's, and may stand above it.",
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
            themed(plot_ladder),
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
        FigureSpec(
            "study_time",
            "Where the study's time went",
            "The run's time from its first job's start to its last job's end, one bar per device, in seconds: "
            "what the jobs recorded of their own time (each job process's start-up, its wait for a GPU slot, its "
            "inputs, its timed samples, its sustained window, its waits for the card to settle and cool, its checks "
            "against fp64, and the rest: the CUDA context, uploads and warm-ups; results that did not time their "
            "checks count them in the rest), then the time no job covers, less those start-ups and waits: Snakemake's "
            "scheduling and the compiles that a job waited for. Jobs that run side "
            "by side count in full, so with several cores the bar can be longer than the run. The collate, "
            "figure and report steps, after the last job, are not in it.",
            themed(plot_study_time),
        ),
    ]
}


def save_figure(fig: Figure, png_path: str | Path, svg_path: str | Path) -> None:
    """Write `fig` as PNG and SVG (creating folders) and close it; metadata pinned so reruns give equal files."""
    try:
        # One layout and one tight box for both files. bbox_inches="tight", or a layout engine left on the figure
        # (subplots_adjust leaves a placeholder), would have savefig lay the figure out again before drawing each
        # file: text layout is most of a figure's time.
        fig.draw_without_rendering()
        bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
        fig.set_layout_engine(None)  # laid out above, for good
        for path, fmt, metadata in (
            (Path(png_path), "png", {"Software": None}),
            (Path(svg_path), "svg", {"Date": None, "Creator": None}),
        ):
            # Whole or absent: a figure step stopped mid-write leaves no half PNG under the final name.
            with plt.rc_context({"svg.hashsalt": "matmul_study"}), results.replaced_whole(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=150, bbox_inches=bbox, metadata=metadata)
    finally:
        plt.close(fig)


def _block_methods() -> list[str]:
    return [name for name, method in registry.METHODS.items() if method.block_axis]


def _on_gpu(method: str) -> bool:
    return method in registry.METHODS and registry.get(method).on_gpu


def left_out(jobs: pd.DataFrame, gpu_sources: int | None = None) -> dict[str, str]:
    """The figures that `jobs` (columns method and dtype: this run's grid plus any imported results) cannot
    have data for, each with the sentence the report shows instead: the run and the report leave them out.
    `gpu_sources` counts the result sets with GPU jobs (this machine's and each imported one); the device
    comparison needs two."""
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
