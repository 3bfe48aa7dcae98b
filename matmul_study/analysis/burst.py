"""The burst and sustained rates, from the results: which GPU jobs were burst-sampled, what waiting for a cool
card cost, the verified jobs the burst rule left without a rate, the jobs with a sustained rate (clock, power and
energy beside the burst rate), the jobs whose samples fall into two modes, and how far apart a CPU job's fresh
processes landed."""

from __future__ import annotations

import pandas as pd

from matmul_study.analysis.columns import numeric
from matmul_study.analysis.result_devices import device_kind


def burst_jobs(results: pd.DataFrame) -> pd.DataFrame | None:
    """The GPU jobs (rows of `results`); None where nothing was burst-sampled (no GPU job, or results without
    burst_samples_total)."""
    if "burst_samples_total" not in results or not (device_kind(results) == "gpu").any():
        return None
    return results[device_kind(results) == "gpu"]


def waits(results: pd.DataFrame) -> tuple[float, float, float]:
    """Seconds spent waiting for the card to settle before the GPU jobs and to cool down between their samples,
    and the seconds all jobs took."""
    gpu = results[device_kind(results) == "gpu"]
    return (numeric(gpu, "burst_settle_s").sum(), numeric(gpu, "burst_recovery_s").sum(),
            numeric(results, "overhead_job_s").sum())


def without_burst(gpu: pd.DataFrame) -> pd.DataFrame:
    """The verified jobs of `gpu` (burst_jobs) that the burst rule left without a rate."""
    if "status" not in gpu:
        return gpu.iloc[0:0]
    return gpu[(gpu["status"] == "passed") & numeric(gpu, "gflops").isna()]


def sustained(gpu: pd.DataFrame) -> pd.DataFrame:
    """The jobs of `gpu` (burst_jobs) with a sustained rate."""
    return gpu[numeric(gpu, "sustained_gflops").notna()]


def two_modes(gpu: pd.DataFrame) -> pd.DataFrame:
    """The jobs of `gpu` (burst_jobs) whose samples fall into two modes (burst_modes_s holds several, ';'-joined)."""
    if "burst_modes_s" not in gpu:
        return gpu.iloc[0:0]
    return gpu[gpu["burst_modes_s"].astype(str).str.contains(";")]


def cpu_process_spread(results: pd.DataFrame) -> dict | None:
    """How far apart the fresh processes of a CPU job landed (cpu_spread): the 'median' and 'worst' over the jobs,
    and the most 'processes' a job timed in. None where no job says."""
    spread = numeric(results, "cpu_spread").dropna()
    if spread.empty:
        return None
    return {"median": spread.median(), "worst": spread.max(),
            "processes": numeric(results, "cpu_processes").dropna().max()}
