"""Where the jobs' time went, from what each result records of its own time (runner: `overhead`, `timing`,
`burst`, `sustained`): the job process's start-up, its wait for a GPU slot, its inputs, its timed samples, its
sustained window, its waits for the card to settle and cool, its checks against fp64 (the poisoned launches and
their comparisons, before and after timing), and the rest (the CUDA context, uploads, the launcher, warm-ups). The
time between jobs and the compiles are Snakemake's, not a job's, and are not in a result: study_time counts them as
what the jobs' spans (overhead_started_utc to overhead_finished_utc) leave uncovered. Results recorded before the
checks were timed count them in the rest."""

from __future__ import annotations

import pandas as pd

from matmul_study.analysis.columns import numeric
from matmul_study.analysis.result_devices import with_device

PHASES = ("start-up (Python and imports)", "waiting for a GPU slot", "inputs", "timed samples", "sustained windows",
          "settling and cool-down", "checks against fp64", "set-up, warm-ups and the rest")


def job_time(results: pd.DataFrame) -> pd.DataFrame | None:
    """Seconds per phase (PHASES) summed over the jobs that recorded their time (overhead_job_s), and each phase's
    share of their total: columns phase, seconds, share. None where no job recorded it. Results written before
    start-up was recorded count none."""
    job = numeric(results, "overhead_job_s")
    timed = job.notna()
    if not timed.any():
        return None
    rows = results[timed]

    def total(column: str) -> float:
        return float(numeric(rows, column).fillna(0.0).sum())

    startup, slot = total("overhead_startup_s"), total("overhead_slot_wait_s")
    inputs, samples = total("overhead_inputs_s"), total("overhead_timed_s")
    # A window of its own; a job whose burst samples were the sustained load (`sustained_source` says so) ran none.
    source = rows["sustained_source"] if "sustained_source" in rows else pd.Series("", index=rows.index)
    own_window = source.fillna("").astype(str).str.strip() == ""
    windows = float(numeric(rows[own_window], "sustained_window_s").fillna(0.0).sum())
    waits = total("burst_settle_s") + total("burst_recovery_s")
    checks = total("overhead_checks_s")
    rest = max(0.0, float(job[timed].sum()) - inputs - samples - windows - waits - checks)
    seconds = [startup, slot, inputs, samples, windows, waits, checks, rest]
    whole = sum(seconds)
    return pd.DataFrame({"phase": PHASES, "seconds": seconds,
                         "share": [s / whole if whole > 0 else 0.0 for s in seconds]})


BETWEEN = "between jobs (Snakemake, compiles)"
# A gap between two jobs longer than this is a pause between runs (a study resumed later), not the run's own time.
PAUSE_S = 300.0


def study_time(results: pd.DataFrame) -> pd.DataFrame | None:
    """Where a run's time went, per device (analysis.result_devices.with_device: a GPU and the CPU jobs of its
    host): the jobs' phases (job_time), and BETWEEN, the time from the first job's start to the last one's end that
    no job's span covers, less the jobs' start-ups and slot waits, which fall in it too. Columns device, phase,
    seconds; None where no job recorded its time."""
    if results.empty or "overhead_job_s" not in results:
        return None
    rows = []
    for device, group in with_device(results).groupby("device", sort=False):
        phases = job_time(group)
        if phases is None:
            continue
        rows += [(device, p, s) for p, s in zip(phases["phase"], phases["seconds"])]
        hosts = group["env_host"].fillna("").astype(str) if "env_host" in group else pd.Series("", index=group.index)
        gaps = [g for g in (_uncovered_s(jobs) for _, jobs in group.groupby(hosts, sort=False)) if g is not None]
        if gaps:
            between = sum(gaps)
            waits = phases.set_index("phase")["seconds"][list(PHASES[:2])].sum()
            rows.append((device, BETWEEN, max(0.0, between - float(waits))))
    return pd.DataFrame(rows, columns=["device", "phase", "seconds"]) if rows else None


def _uncovered_s(jobs: pd.DataFrame) -> float | None:
    """Seconds between the first job's start and the last one's end that no job's span covers, gaps of more than
    PAUSE_S left out; None without spans."""
    if not {"overhead_started_utc", "overhead_finished_utc"} <= set(jobs):
        return None
    start = pd.to_datetime(jobs["overhead_started_utc"], utc=True, format="ISO8601", errors="coerce")
    end = pd.to_datetime(jobs["overhead_finished_utc"], utc=True, format="ISO8601", errors="coerce")
    spans = sorted((a.timestamp(), b.timestamp()) for a, b in zip(start, end) if pd.notna(a) and pd.notna(b))
    if not spans:
        return None
    uncovered, reach = 0.0, spans[0][1]
    for a, b in spans:
        if a > reach and a - reach <= PAUSE_S:
            uncovered += a - reach
        reach = max(reach, b)
    return uncovered
