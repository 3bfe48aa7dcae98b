"""How well each job was measured, from its results: the measurement settings it was measured with, the caps on
its repetitions and which of them ended its timing, the CPU jobs whose time budget shaped their number, the GPU
jobs whose clock fell during timing, the repetition noise achieved against its target, and the launches per GPU
sample.

`meas` is the config's measurement section: a job's own record (measured_config, flattened with "_" in the results
table) wins over it, so results measured under other settings are read as they were measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.columns import numeric
from matmul_study.analysis.noise import noise_flags
from matmul_study.analysis.result_devices import device_kind


def measured_setting(results: pd.DataFrame, meas: dict, key: str) -> pd.Series:
    """Per job, the measurement setting `key` as the job was measured with (its measured_config), else the
    config's value, else NaN."""
    value = numeric(results, f"measured_config_measurement_{key}")
    fallback = pd.to_numeric(pd.Series([meas.get(key)]), errors="coerce").iloc[0]
    return value.fillna(fallback) if np.isfinite(fallback) else value


def cpu_capped(results: pd.DataFrame) -> pd.Series:
    """The result field cpu_capped as True, False or None per job (None where the results do not say: the field
    is absent from results measured before the CPU time budget, or the job is a GPU job)."""
    if "cpu_capped" not in results:
        return pd.Series(None, index=results.index, dtype=object)
    words = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}
    return results["cpu_capped"].map(
        lambda v: bool(v) if isinstance(v, (bool, np.bool_)) else words.get(str(v).strip().lower())).astype(object)


def job_caps(results: pd.DataFrame, meas: dict) -> pd.DataFrame:
    """Per job: how many processes it timed in (CPU jobs time in several fresh ones, each with its own caps), the
    per-process caps and minimum, the job's caps in all, and which cap ended the timing ('time', 'repetitions' or
    ''). A `cpu_capped` field, where the results have one, says whether a cap ended a CPU job's timing; elsewhere
    the cap is inferred from the job's repetitions and timed seconds."""
    cpu = (device_kind(results) == "cpu").to_numpy()
    processes = numeric(results, "cpu_processes").fillna(measured_setting(results, meas, "cpu_processes"))
    processes = processes.where(cpu & (processes >= 1), 1.0)
    out = pd.DataFrame({
        "processes": processes,
        "max_reps": measured_setting(results, meas, "max_reps"),
        "max_time_s": measured_setting(results, meas, "max_time_s"),
        "min_reps": measured_setting(results, meas, "min_reps"),
    }, index=results.index)
    out["reps_cap"] = out["max_reps"] * out["processes"]
    out["time_cap"] = out["max_time_s"] * out["processes"]
    reps, total = numeric(results, "timing_reps"), numeric(results, "timing_total_s")
    stopped = np.where(total >= out["time_cap"], "time", np.where(reps >= out["reps_cap"], "repetitions", ""))
    flag = cpu_capped(results)
    known = (flag.notna() & pd.Series(cpu, index=results.index)).to_numpy()
    said = np.where(flag.fillna(False).astype(bool), np.where(stopped == "", "time", stopped), "")
    out["stopped_by"] = np.where(known, said, stopped)
    out["capped"] = flag.where(pd.Series(cpu, index=results.index))
    out["budget_s"] = numeric(results, "cpu_max_s").fillna(measured_setting(results, meas, "cpu_max_s"))
    return out


def recorded_budgets(results: pd.DataFrame) -> pd.Series:
    """The CPU jobs' time budgets (measurement.cpu_max_s) as their results record them: the job's own cpu_max_s,
    else its measured_config's; jobs that record neither are left out."""
    cpu_rows = results[(device_kind(results) == "cpu").to_numpy()]
    return numeric(cpu_rows, "cpu_max_s").fillna(numeric(cpu_rows, "measured_config_measurement_cpu_max_s")).dropna()


def budget_capped(results: pd.DataFrame, caps: pd.DataFrame) -> pd.DataFrame:
    """The CPU jobs (rows of `results`) whose time budget shaped the number: the result field cpu_capped says so
    (`caps` is job_caps of `results`). Empty where no job says (the field is absent, or no CPU job was capped)."""
    return results[caps["capped"].fillna(False).astype(bool).to_numpy()]


def throttled(results: pd.DataFrame) -> pd.DataFrame | None:
    """The jobs (rows of `results`) whose SM clock fell below the throttle fraction in some samples; None where
    the results cannot say: no gpu_throttled_samples column, or no GPU job (a CPU-only run has no GPU clock to
    have fallen)."""
    if "gpu_throttled_samples" not in results or not (device_kind(results) == "gpu").any():
        return None
    return results[numeric(results, "gpu_throttled_samples") > 0]


def noise_achieved(results: pd.DataFrame) -> dict | None:
    """The repetition noise achieved (timing_rsd, the relative standard deviation of a job's samples) over the jobs
    that have one: its 'median' and 'worst', the 'noisiest' job's row, and 'by_kind', the median and worst per
    device kind ({"gpu": (median, worst), "cpu": ...}) where the results hold jobs of both kinds, else {}. None
    where no job has one."""
    rsd = numeric(results, "timing_rsd")
    finite = rsd[np.isfinite(rsd)]
    if finite.empty:
        return None
    kind = device_kind(results)[finite.index]
    by_kind = {k: (finite[kind == k].median(), finite[kind == k].max())
               for k in ("gpu", "cpu") if (kind == k).any()} if kind.nunique() > 1 else {}
    return {"median": finite.median(), "worst": finite.max(), "noisiest": results.loc[finite.idxmax()],
            "by_kind": by_kind}


def missed_target(results: pd.DataFrame) -> pd.DataFrame:
    """The jobs (rows of `results`) whose repetition noise stayed above its target (noise.noise_flags'
    over_target), noisiest first."""
    missed = results[noise_flags(results)["over_target"].to_numpy()]
    rsd = numeric(missed, "timing_rsd")
    return missed.assign(_rsd=rsd).sort_values("_rsd", ascending=False).drop(columns="_rsd")


def launches_per_sample(results: pd.DataFrame) -> tuple[float, float] | None:
    """The fewest and the most kernel launches one timed GPU sample held; None without a GPU job that says."""
    per_sample = numeric(results, "timing_launches_per_sample")[device_kind(results) == "gpu"].dropna()
    per_sample = per_sample[per_sample > 0]
    return (per_sample.min(), per_sample.max()) if not per_sample.empty else None
