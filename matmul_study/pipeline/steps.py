"""The file-level steps behind the collate, figure and report rules (the rules' scripts only call these)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from matmul_study.analysis import collate
from matmul_study.pipeline.recovery import pause_for_tests


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Whole or not at all: a step stopped mid-write leaves no table under its final name (results.replaced_whole),
    so that the same command resumes."""
    from matmul_study.core import results

    with results.replaced_whole(path) as tmp:
        df.to_csv(tmp, index=False)


def write_tables(run_files, calibration_csvs, results_csv, summary_csvs, table_names, pruned_records,
                 pruned_csv) -> pd.DataFrame:
    df = collate.load(list(run_files), list(calibration_csvs))
    write_csv(df, results_csv)
    pause_for_tests("collate")
    fastest = collate.best_variants(df)  # a sweep's configurations of one job: the summaries take the fastest
    for name, path in zip(table_names, summary_csvs):
        write_csv(collate.SUMMARIES[name](fastest), path)
    write_csv(pd.DataFrame(pruned_records, columns=["method", "dtype", "block", "reason"]), pruned_csv)
    failed = df[df["status"] != "passed"]
    print(f"collated {len(df)} jobs, {len(failed)} failed verification")
    return df


# Version-like fields must stay text: "9.0" is a compute capability, not the number 9.
TEXT_COLUMNS = ["env_compute_capability", "env_cuda_driver_api", "env_cuda_version", "env_driver_version",
                "env_git_commit", "env_config_hash", "env_pycuda", "env_cupy", "env_numpy", "env_python"]


def read_results(path) -> pd.DataFrame:
    # Consolidated (copy): pandas 3 reads a CSV into one block per column, and every column that a figure or table
    # then adds to a frame of 150 blocks draws a PerformanceWarning into the step's log.
    return pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS}).copy()


def write_figure(name: str, results_csv, calibration_csvs, png, svg) -> None:
    from matmul_study.present.figures import FIGURES, save_figure

    calibration = collate.load_calibration(list(calibration_csvs))
    # A sweep's several configurations of one job are drawn as the fastest verified one.
    save_figure(FIGURES[name].plot(collate.best_variants(read_results(results_csv)), calibration), png, svg)


def write_figures(names, results_csv, calibration_csvs, pngs, svgs, processes: int = 1) -> None:
    """Every figure of the run, in one job: matplotlib and the tables load once, not once per figure. With more
    than one of `processes` (the cores the job holds), the figures are drawn side by side in forked copies of this
    process, which have both loaded already: a figure's drawing, not its loading, is what takes the time."""
    figures = list(zip(names, pngs, svgs))
    if processes <= 1 or len(figures) <= 1:
        for name, png, svg in figures:
            write_figure(name, results_csv, calibration_csvs, png, svg)
            print(f"drew {name}: {png}")
            pause_for_tests("figures")
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import matplotlib.pyplot  # noqa: F401  (loaded once, here, for the copies)

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(min(processes, len(figures)), mp_context=context) as pool:
        drawn = {pool.submit(write_figure, name, results_csv, calibration_csvs, png, svg): (name, png)
                 for name, png, svg in figures}
        for future in drawn:  # in the run's order; a figure that raised raises here
            future.result()
            print(f"drew {drawn[future][0]}: {drawn[future][1]}")
            pause_for_tests("figures")


def calibration_size(config) -> int:
    """The cube cuBLAS's ceilings are measured at: the study's largest dimension, between 1024 and 8192 (a quick
    look at 4096³ need not pay for 8192³ runs of every dtype)."""
    from matmul_study.pipeline.config import shapes

    largest = max(max(s.m, s.k, s.n) for s in shapes(config))
    return min(8192, max(1024, largest))


def calibration_jobs(jobs: pd.DataFrame, config) -> pd.DataFrame:
    """The study's cuBLAS jobs that are also ceilings: at calibration_size cubed, in the dtypes cuBLAS runs."""
    size = calibration_size(config)
    return jobs[(jobs["method"] == "cublas") & (jobs["m"] == size) & (jobs["k"] == size)
                & (jobs["n"] == size)].reset_index(drop=True)


def write_calibration(config, output, job_results=()) -> None:
    """The ceilings at calibration_size, taken from `job_results` (the study's cuBLAS results at that size, see
    calibration_jobs) where they have them, timed where not."""
    from matmul_study.core import results
    from matmul_study.measure.calibrate import calibrate, ceilings_from_jobs

    size = calibration_size(config)
    table = calibrate(config, size, ceilings_from_jobs([results.read(p) for p in job_results], size))
    print(table.to_string())
    write_csv(table, output)


def write_report(output, results: pd.DataFrame, tables: dict[str, pd.DataFrame], pruned: pd.DataFrame,
                 figures: dict, config: dict, runs, calibration: pd.DataFrame | None = None,
                 not_drawn: dict[str, str] | None = None, compiles: list[str] | None = None) -> None:
    """The self-contained HTML report of `results`, written to `output`: the one way it is assembled, by the report
    rule and by report/rerender.py alike.

    The configuration is stated as the result files `runs` were measured with it (report_inputs.config_as_measured:
    e.g. --config threads=2 under --cores 1 still measures with one thread); summary `tables` with no rows are left
    out (a CPU-only run has no speedup over naive, no block sizes); `figures` maps each figure drawn to its PNG,
    and `not_drawn` each figure this run cannot have data for to the sentence the report shows instead
    (figures.left_out). `compiles`: the compile steps' benchmark files (Snakemake's: seconds in column s) of the
    cubins the jobs load, whose sum the report gives beside the jobs' own time."""
    from markupsafe import escape

    from matmul_study.core import results as result_files
    from matmul_study.pipeline.report_inputs import config_as_measured
    from matmul_study.present.report import render_report

    config = config_as_measured(dict(config), [result_files.read(path) for path in runs])
    tables = {name: df for name, df in tables.items() if not df.empty}
    extra = []
    if not_drawn:
        extra.append(("Figures not drawn", "".join(f"<p>{escape(text)}</p>" for text in not_drawn.values())))
    compile_s = [float(pd.read_csv(path, sep="\t")["s"].iloc[0]) for path in compiles or () if Path(path).exists()]
    html = render_report(results, tables, pruned, {name: Path(png) for name, png in figures.items()}, config,
                         extra_sections=extra, calibration=calibration, compile_seconds=compile_s)
    result_files.write_text_atomic(output, html)  # whole or absent: a stop mid-write leaves no half report
    pause_for_tests("report")
