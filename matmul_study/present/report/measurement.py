"""The report's account of the measurement itself: GPU clocks that fell during timing, the repetition noise
against its target and the caps that ended a job's timing, the CPU jobs whose time budget shaped their number, and
how the burst and sustained rates were measured. The numbers come from analysis.measurement and analysis.burst;
this module puts them in words and tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from matmul_study.analysis.job_time import job_time
from matmul_study.analysis.burst import burst_jobs, cpu_process_spread, sustained, two_modes, waits, without_burst
from matmul_study.analysis.columns import distinct, has_configurations, numeric, several_gpus
from matmul_study.analysis.measurement import (
    budget_capped, job_caps, launches_per_sample, missed_target, noise_achieved, recorded_budgets, throttled,
)
from matmul_study.analysis.result_devices import device_kind
from matmul_study.core.records import BURST_SAMPLE_MAX_S
from matmul_study.present.report.noise import MARK, job_reasons, mark_column, marked
from matmul_study.present.report.text import html_table, table_text

TIMING_MODES = {
    "hot": "hot: repetitions back to back on the same buffers (caches warm)",
    "cold": "cold: the GPU's L2 cache flushed before each timed sample",
}


def job_keys(results: pd.DataFrame, df: pd.DataFrame, mark: bool = True) -> pd.DataFrame:
    """label, dtype, shape (the variant where a method with variants ran, and the device when the results hold
    several) of the rows of `df`; with `mark`, a label whose job is flagged (analysis.noise) carries MARK."""
    keys = [c for c in ("label", "variant", "dtype", "shape")
            if c in df and (c != "variant" or has_configurations(results))]
    if several_gpus(results) and "env_device_name" in df:
        keys.append("env_device_name")
    table = mark_column(df[keys], "label", job_reasons(df)) if mark else df[keys]
    return table.rename(columns={"env_device_name": "device"})


def throttling(results: pd.DataFrame, config: dict) -> dict | None:
    """Jobs whose SM clock fell below the throttle fraction in some samples; None without the column."""
    hit = throttled(results)
    if hit is None:
        return None
    fraction = ((config or {}).get("measurement") or {}).get("throttle_fraction")
    out = {"n": len(hit), "fraction": f"{float(fraction):.0%}" if fraction is not None else None, "table": None}
    if hit.empty:
        return out
    lo, top = numeric(hit, "gpu_sm_clock_min_sample_mhz"), numeric(hit, "gpu_sm_clock_max_mhz")
    reps = numeric(hit, "timing_reps")
    table = job_keys(results, hit).assign(**{
        "throttled samples": numeric(hit, "gpu_throttled_samples").astype(int).astype(str)
        + (" of " + reps.astype("Int64").astype(str)).where(reps.notna(), ""),
        "min SM clock / max (MHz)": [
            f"{a:.0f} / {b:.0f} ({a / b:.0%})" if np.isfinite(a) and np.isfinite(b) and b > 0
            else (f"{a:.0f} / ?" if np.isfinite(a) else "")
            for a, b in zip(lo, top)
        ],
        "temperature before → after (°C)": [
            f"{a:.0f} → {b:.0f}" if np.isfinite(a) and np.isfinite(b) else ""
            for a, b in zip(numeric(hit, "gpu_temperature_c_before"), numeric(hit, "gpu_temperature_c_after"))
        ],
        "power before → after (W)": [
            f"{a:.0f} → {b:.0f}" if np.isfinite(a) and np.isfinite(b) else ""
            for a, b in zip(numeric(hit, "gpu_power_w_before"), numeric(hit, "gpu_power_w_after"))
        ],
    })
    out["table"] = marked(html_table(table))
    return out


def _setting_text(values: pd.Series, unit: str = "") -> str:
    return " or ".join(f"{v}{unit}" for v in distinct(values)) or "?"


def _cap_sentences(results: pd.DataFrame, caps: pd.DataFrame) -> list[str]:
    """How the repetitions were capped, in the numbers the jobs were measured with, per device kind."""
    kind = device_kind(results)
    out = []
    gpu = caps[(kind == "gpu").to_numpy()]
    if not gpu.empty and gpu[["max_reps", "max_time_s"]].notna().any().any():
        out.append(f"GPU jobs sample until the noise target is met, or at most {_setting_text(gpu['max_reps'])} "
                   f"samples or {_setting_text(gpu['max_time_s'], ' s')} of timing (at least "
                   f"{_setting_text(gpu['min_reps'])} samples).")
    cpu = caps[(kind == "cpu").to_numpy()]
    if not cpu.empty and cpu[["max_reps", "max_time_s"]].notna().any().any():
        several = (cpu["processes"] > 1).any()
        if several:
            out.append(f"CPU jobs time in {_setting_text(cpu['processes'])} fresh processes each; a process "
                       f"repeats until the noise target is met, or at most {_setting_text(cpu['max_reps'])} "
                       f"repetitions or {_setting_text(cpu['max_time_s'], ' s')} of timing (after at least "
                       f"{_setting_text(cpu['min_reps'])}). A CPU job therefore has up to "
                       f"{_setting_text(cpu['reps_cap'])} repetitions and about {_setting_text(cpu['time_cap'], ' s')}"
                       f" of timing in all, and more time when one repetition alone outlasts the time cap (then "
                       f"{_setting_text(cpu['min_reps'] * cpu['processes'])} repetitions).")
        else:
            out.append(f"CPU jobs repeat until the noise target is met, or at most {_setting_text(cpu['max_reps'])}"
                       f" repetitions or {_setting_text(cpu['max_time_s'], ' s')} of timing (at least "
                       f"{_setting_text(cpu['min_reps'])} repetitions).")
    recorded = recorded_budgets(results)
    if not recorded.empty:
        out.append(f"Each CPU job has at most {_setting_text(recorded, ' s')} for verifying and timing in all "
                   "(measurement.cpu_max_s); a job whose measurement does not fit is planned down to fewer "
                   "processes, warm-ups or samples and recorded as capped.")
    return out


def _budget(results: pd.DataFrame, caps: pd.DataFrame) -> dict | None:
    """CPU jobs whose time budget (measurement.cpu_max_s) shaped the number: the result field cpu_capped says so.
    None where no job says (the field is absent, or no CPU job was capped)."""
    hit = budget_capped(results, caps)
    if hit.empty:
        return None
    budget = caps.loc[hit.index, "budget_s"]
    asked = numeric(hit, "cpu_processes_asked")
    ran = numeric(hit, "cpu_processes")
    table = job_keys(results, hit).assign(**{
        "processes": [f"{r:.0f} of {a:.0f}" if np.isfinite(r) and np.isfinite(a) else
                      (f"{r:.0f}" if np.isfinite(r) else "") for r, a in zip(ran, asked)],
        "repetitions": numeric(hit, "timing_reps").astype("Int64"),
        "timed (s)": numeric(hit, "timing_total_s"),
        "job (s)": numeric(hit, "cpu_seconds"),
        "budget (s)": budget,
        "rsd": [f"{x:.2%}" if np.isfinite(x) else "" for x in numeric(hit, "timing_rsd")],
    })
    table = table.loc[:, [c for c in table.columns if not table[c].isna().all()]]
    budgets = _setting_text(budget, " s")
    return {"n": len(hit), "of": int((device_kind(results) == "cpu").sum()),
            "text": f"the time budget of {budgets} per job (measurement.cpu_max_s) shaped their number: the "
                    "timing was planned to fit it, with fewer processes, warm-ups or samples than the measurement "
                    "policy asks, so each rests on less than a full measurement and reads with its spread.",
            "table": marked(html_table(table))}


def _capped_sentence(stopped: pd.Series) -> str | None:
    """Of the jobs that missed the noise target, those a cap stopped (`stopped`: job_caps' stopped_by of them)."""
    by_time, by_reps = int((stopped == "time").sum()), int((stopped == "repetitions").sum())
    if not (by_time or by_reps):
        return None
    parts = [f"{n} at the {what} cap" for n, what in ((by_time, "time"), (by_reps, "repetition")) if n]
    return (f"Of these, {' and '.join(parts).replace(' at', ' stopped at', 1)}, before their samples "
            "were quiet enough: the cap, not the noise target, decided how many samples their "
            "median is of, so their rate carries the spread shown (rsd below; for CPU jobs also "
            "cpu_spread, the spread between processes).")


def _missed_table(results: pd.DataFrame, missed: pd.DataFrame, caps: pd.DataFrame) -> Markup:
    """The jobs that missed the noise target (missed_target), with their noise, repetitions, caps and the cap hit."""
    rsd, target = numeric(missed, "timing_rsd"), numeric(missed, "timing_noise_target")
    table = job_keys(results, missed, mark=False).assign(
        rsd=[f"{x:.2%}" for x in rsd],
        target=[f"{x:.1%}" for x in target],
        repetitions=numeric(missed, "timing_reps").astype("Int64"),
        **{"timed (s)": numeric(missed, "timing_total_s")},
    )
    missed_caps = caps.loc[missed.index]
    if missed_caps[["reps_cap", "time_cap"]].notna().any().any():
        table["caps (repetitions / s)"] = [
            f"{r:g} / {t:g}" + (f" ({p:.0f} processes)" if p > 1 else "")
            for r, t, p in zip(missed_caps["reps_cap"], missed_caps["time_cap"], missed_caps["processes"])]
    burst = missed["rate"] == "burst" if "rate" in missed else pd.Series(False, index=missed.index)
    table["rate flagged"] = ["yes" if r else "no: its burst rate is the median of its fastest samples" if b else "no"
                             for r, b in zip(job_reasons(missed), burst)]
    table["cap hit"] = missed_caps["stopped_by"].to_numpy()
    return marked(html_table(table))


def measurement(results: pd.DataFrame, config: dict, compile_seconds: list[float] | None = None) -> dict | None:
    """Timing modes, the noise target and the repetition noise achieved, the caps as the jobs were measured with
    them, the jobs that missed the target (with the cap that ended their timing), and where the jobs' own time
    went, beside the kernel builds' (`compile_seconds`)."""
    if results.empty or not {"timing_mode", "timing_rsd", "timing_noise_target"} & set(results.columns):
        return None
    meas = (config or {}).get("measurement") or {}
    caps = job_caps(results, meas)
    noise = noise_achieved(results)
    missed = missed_target(results)
    launches = launches_per_sample(results)
    worst = None
    if noise:
        where = ", ".join(str(noise["noisiest"].get(c, "")) for c in ("label", "dtype", "shape"))
        worst = f"{noise['worst']:.2%} ({where})"
    return {
        "modes": [TIMING_MODES.get(m, m) for m in (distinct(results["timing_mode"]) if "timing_mode" in results
                                                   else [])],
        "targets": [f"{float(t):.1%}" for t in distinct(numeric(results, "timing_noise_target"))],
        "median": f"{noise['median']:.2%}" if noise else None,
        "worst": worst,
        "n": len(results),
        "n_missed": len(missed),
        "missed": _missed_table(results, missed, caps) if not missed.empty else None,
        "caps": _cap_sentences(results, caps),
        "capped": _capped_sentence(caps.loc[missed.index, "stopped_by"]) if not missed.empty else None,
        "by_kind": [f"{k.upper()} jobs: median {median:.2%}, worst {most:.2%}"
                    for k, (median, most) in noise["by_kind"].items()] if noise else [],
        "launches": f"{launches[0]:.0f}–{launches[1]:.0f}" if launches else None,
        "min_launches": meas.get("min_launches_per_sample") if launches else None,
        "budget": _budget(results, caps),
        "flagged": _flagged_sentence(results, len(missed)),
        "job_time": _job_time_sentence(results, compile_seconds),
    }


def _job_time_sentence(results: pd.DataFrame, compile_seconds: list[float] | None = None) -> str | None:
    """Where the jobs' own time went (analysis/job_time.py), phases of none left out, largest first; then the
    kernel builds' time, where the run compiled any."""
    phases = job_time(results)
    if phases is None:
        return None
    shown = phases[phases["seconds"].round(1) > 0].sort_values("seconds", ascending=False)  # none of 0.0 s
    total = phases["seconds"].sum()
    parts = "; ".join(f"{row.phase} {row.seconds:.1f} s ({row.share:.0%})" for row in shown.itertuples())
    builds = (f" Compiling the {len(compile_seconds)} kernel builds they load took {sum(compile_seconds):.1f} s "
              "(each build's last compile)." if compile_seconds else "")
    return (f"Where the jobs' own time went, {total:.1f} s over {len(results)} jobs: {parts}.{builds} The time "
            "between jobs is Snakemake's, not a job's, and is not counted here.")


def _flagged_sentence(results: pd.DataFrame, n_missed: int) -> str | None:
    """How many jobs the noise flag marks across the report, and the rule (analysis.noise) in words; None where
    no job missed its target and none is flagged."""
    n = int(job_reasons(results).astype(bool).sum())
    if not n and not n_missed:
        return None
    return (f"{n} job{'s are' if n != 1 else ' is'} flagged ({MARK} after its rate in every table and in the answer, "
            "a red ring in the figures): a rate that is the median of its samples (CPU jobs, over all their "
            "processes' samples) is flagged when their relative standard deviation is above the target; a GPU burst "
            "rate only when, besides, fewer samples than the burst rule asks ran at the fastest level (otherwise it "
            "is the median of samples within the burst band of one another, and the wider spread is the power "
            "limiter's, which the burst rule sets aside); and any rate from a single timed sample.")


def _percent(fraction) -> str:
    return f"{float(fraction):.0%}" if isinstance(fraction, (int, float)) else "?"


# How the settle before a job reads the card's power (measurement.settle_reading), in the report's words.
_SETTLE_READINGS = {"average": "NVML's one-second average",
                    "instant": "NVML's instantaneous reading, with the SM clock back at its top"}


def _burst_rule(meas: dict) -> str:
    """How a GPU job's burst and sustained rates are measured, in the settings of `meas`."""

    def setting(key: str) -> str:
        return escape(str(meas.get(key, "?")))

    return (
        "<p>Every GPU job's headline rate (the GFLOP/s and the ratios to cuBLAS and to the peaks in the tables and "
        "figures) is its "
        "<b>burst</b> rate: the job starts once the card draws at most "
        f"{setting('settle_power_fraction')} of its power limit by "
        f"{_SETTLE_READINGS.get(meas.get('settle_reading', 'average'), setting('settle_reading'))} (a wait of "
        f"at most {setting('settle_max_s')} s), and only samples whose SM clock, read before and after, "
        f"stayed at or above {setting('throttle_fraction')} of its maximum count. From idle, "
        "the power limiter lets a heavy kernel run at full clock for only tens of milliseconds, and NVML's clock "
        "readings lag it, so the samples' own times are the finer signal. A sample lasts at most "
        f"{BURST_SAMPLE_MAX_S * 1e3:.0f} ms where a launch allows, and until {setting('burst_plateau_samples')} "
        "samples ran within "
        f"{_percent(meas.get('burst_band'))} of the fastest, a sample that fell off that level is followed by a "
        f"cool-down (up to {setting('recovery_max_s')} s, until the card draws idle power "
        "again). The burst rate is the median of the full-clock samples within "
        f"{_percent(meas.get('burst_band'))} of the time the "
        f"{setting('burst_plateau_samples')} fastest beat (the fastest plateau; a steady "
        "kernel keeps every sample). "
        "The median of all samples is kept too (<code>gflops_all_samples</code>). The <b>sustained</b> rate is "
        "the second half of a continuous window of "
        f"{setting('sustained_s')} s of back-to-back launches (jobs of at least "
        f"{setting('sustained_min_size')}³ multiply-adds), where the power limiter has settled; "
        "its clock, power and <b>energy</b> (NVML's total-energy counter, as GFLOP per joule) are recorded. "
        "Ratios compare burst with burst and sustained with sustained, never one with the other. Clocks and power "
        "limits are never changed: the study only waits.</p>")


def _rate_tables(results: pd.DataFrame, gpu: pd.DataFrame) -> str:
    """The GPU jobs (burst_jobs) the burst rule left without a rate, the sustained rate beside the burst one, and
    the jobs whose samples fall into two modes: each table with its sentence, where it has rows."""
    html = ""
    no_burst = without_burst(gpu)
    if not no_burst.empty:
        table = job_keys(results, no_burst).assign(why=no_burst.get("burst_note", ""))
        html += "<p>Verified jobs without a burst rate:</p>" + table_text(table)
    steady = sustained(gpu)
    if not steady.empty:
        burst, sus = numeric(steady, "gflops"), numeric(steady, "sustained_gflops")
        table = job_keys(results, steady).assign(**{
            "burst GFLOP/s": burst, "sustained GFLOP/s": sus, "sustained / burst": sus / burst,
            "% of cuBLAS (burst)": numeric(steady, "pct_of_cublas"),
            "% of cuBLAS (sustained)": numeric(steady, "pct_of_cublas_sustained"),
            "settled SM clock (MHz)": numeric(steady, "sustained_sm_clock_mhz"),
            "power (W)": numeric(steady, "sustained_power_w"),
            "GFLOP/J": numeric(steady, "sustained_gflop_per_j")})
        html += "<p>Sustained rate, clock, power and energy per job:</p>" + table_text(table)
    bimodal = two_modes(gpu)
    if not bimodal.empty:
        table = job_keys(results, bimodal).assign(**{
            "modes (ms per launch)": [" and ".join(f"{float(x) * 1e3:.4g}" for x in str(v).split(";"))
                                      for v in bimodal["burst_modes_s"]],
            "shares": [" / ".join(f"{float(x):.0%}" for x in str(v).split(";")) for v in bimodal["burst_mode_shares"]]})
        html += "<p>Jobs whose samples fall into two modes (both are reported; the median may sit on either):</p>"
        html += table_text(table)
    return html


def rates(results: pd.DataFrame, config: dict) -> Markup | None:
    """How the headline (burst) rate, the sustained rate and the energy were measured, what the waits cost, and
    the jobs the burst rule or a bimodal kernel leaves without a plain median."""
    gpu = burst_jobs(results)
    if gpu is None:
        return _cpu_processes(results)  # no GPU job: nothing was burst-sampled
    settle_s, recovery_s, job_s = waits(results)
    html = _burst_rule((config or {}).get("measurement") or {})
    if job_s > 0:
        html += (f"<p>Waiting cost {settle_s:.0f} s of settling and {recovery_s:.0f} s of cool-downs, "
                 f"{(settle_s + recovery_s) / job_s:.0%} of the {job_s:.0f} s the jobs took.</p>")
    html += _rate_tables(results, gpu)
    return marked(Markup(html + str(_cpu_processes(results) or "")))


def _cpu_processes(results: pd.DataFrame) -> Markup | None:
    """The CPU line's reproducibility within the run: how far apart its fresh processes landed."""
    spread = cpu_process_spread(results)
    if spread is None:
        return None
    return Markup(
        f"<p>CPU (numpy) jobs time in {spread['processes']:.0f} fresh processes each and report the median of their "
        f"medians. The spread between a job's processes was {spread['median']:.1%} at the median and "
        f"{spread['worst']:.1%} at worst: the CPU line reproduces to about that, not to the GPU's few percent.</p>")
