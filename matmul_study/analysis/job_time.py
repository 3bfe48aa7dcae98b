"""Where the jobs' time went, from what each result records of its own time (runner: `overhead`, `timing`,
`burst`): the job process's start-up, its wait for a GPU slot, its inputs, its timed samples, its waits for the
card to settle and cool, and the rest (checks against fp64, warm-ups, the CUDA context and handles). The time
between jobs and the compiles are Snakemake's, not a job's, and are not in a result."""

from __future__ import annotations

import pandas as pd

from matmul_study.analysis.columns import numeric

PHASES = ("start-up (Python and imports)", "waiting for a GPU slot", "inputs", "timed samples",
          "settling and cool-down", "checks, warm-ups and set-up")


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
    waits = total("burst_settle_s") + total("burst_recovery_s")
    rest = max(0.0, float(job[timed].sum()) - inputs - samples - waits)
    seconds = [startup, slot, inputs, samples, waits, rest]
    whole = sum(seconds)
    return pd.DataFrame({"phase": PHASES, "seconds": seconds,
                         "share": [s / whole if whole > 0 else 0.0 for s in seconds]})
