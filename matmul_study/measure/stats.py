"""Repetition policy and statistics, shared by the CPU and GPU runners."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Policy:
    warmup: int = 2
    min_reps: int = 5
    max_reps: int = 200
    min_time_s: float = 0.5
    max_time_s: float = 1.0
    noise_target: float = 0.01
    min_launches_per_sample: int = 5  # GPU, hot mode: launches averaged into one sample (see the schema)

    @classmethod
    def from_config(cls, measurement: dict) -> "Policy":
        return cls(**{k: measurement[k] for k in cls.__dataclass_fields__ if k in measurement})


@dataclass(frozen=True)
class Measurement:
    """The config's measurement section, as one object: the stopping criterion and everything else a job reads
    (inputs, verification scope, cold or hot, the throttle threshold)."""
    stopping: Policy
    mode: str = "hot"
    seed: int = 12345
    low: float = -5
    high: float = 5
    full_verify_max_flops: int = 1 << 30
    sample_rows: int = 64
    throttle_fraction: float = 0.9
    # Burst: before a GPU job wait (at most settle_max_s) until the card draws at most this fraction of its
    # power limit; while fewer than burst_plateau_samples samples ran within burst_band of the fastest, cool
    # down (at most recovery_max_s) after a sample that fell off it ...
    settle_power_fraction: float = 0.3
    settle_max_s: float = 5.0
    # ... by NVML's instantaneous reading with the SM clock back at its top ("instant": the cool-down's own rule,
    # which ends the wait as soon as the last load has stopped), or by its one-second average ("average").
    settle_reading: str = "instant"
    recovery_max_s: float = 0.5
    # ... and of the full-clock samples keep those within burst_band of the burst_plateau_samples-th fastest.
    burst_plateau_samples: int = 5
    burst_band: float = 0.02
    # Sustained: a continuous window of this many seconds, for jobs of at least sustained_min_size^3 multiply-adds.
    sustained_s: float = 2.0
    sustained_min_size: int = 4096
    # CPU jobs time in this many fresh processes (BLAS rates move from process to process on a shared host).
    cpu_processes: int = 3
    # ... and verify and time within about this many seconds (fewer processes, warm-ups and samples at large sizes).
    cpu_max_s: float = 3.0

    @classmethod
    def from_config(cls, section: dict) -> "Measurement":
        dist = section.get("distribution", {})
        plain = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        return cls(stopping=Policy.from_config(section), low=dist.get("low", -5), high=dist.get("high", 5), **plain)

    @property
    def cold(self) -> bool:
        return self.mode == "cold"


def rsd(times) -> float:
    """Relative standard deviation (sample std over mean)."""
    t = np.asarray(times, dtype=float)
    if t.size < 2 or t.mean() == 0:
        return float("nan")
    return float(t.std(ddof=1) / t.mean())


# Samples needed where each sample alone has run max_time_s (reps_needed).
LONG_SAMPLE_REPS = 3


def reps_needed(times: list[float], policy: Policy, launches: int = 1) -> int:
    """min_reps; but where every sample alone has run max_time_s (naive fp64 at 8192^3: five 0.3 s launches, 1.5 s
    a sample), LONG_SAMPLE_REPS of them: such samples are long runs of launches already, and min_reps of them
    cost the job several seconds that add nothing to the median."""
    if times and min(times) * launches >= policy.max_time_s:
        return min(policy.min_reps, LONG_SAMPLE_REPS)
    return policy.min_reps


def done(times: list[float], policy: Policy, launches: int = 1) -> bool:
    """Stop after reps_needed samples (min_reps) once the timed launches add up to min_time_s and are quiet
    enough, or at a cap. Each time is one sample's mean over `launches` launches, so the time spent is their sum
    times `launches`."""
    n, total = len(times), sum(times) * launches
    if n < reps_needed(times, policy, launches):
        return False
    if n >= policy.max_reps or total >= policy.max_time_s:
        return True
    return total >= policy.min_time_s and rsd(times) <= policy.noise_target


def sample(time_once: Callable[[], float], policy: Policy, before_each: Callable[[], None] | None = None,
           launches: int = 1) -> list[float]:
    """Warm up, then call time_once (seconds per launch of a `launches`-launch sample) until the policy is
    satisfied. The warm-up is `warmup` samples, but ends once it has run max_time_s: a kernel whose samples take
    seconds (naive fp64 at 8192^3: five 0.3 s launches each) is warm after one of them, and a second would only
    add to the job's time."""
    warmed_s = 0.0
    for _ in range(policy.warmup):
        if warmed_s >= policy.max_time_s:
            break
        if before_each:
            before_each()
        warmed_s += time_once() * launches
    times: list[float] = []
    while not done(times, policy, launches):
        if before_each:
            before_each()
        times.append(float(time_once()))
    return times


def summarize(times: list[float], launches: int = 1) -> dict:
    """Statistics of per-launch sample times; total_s is the time spent timing (`launches` per sample)."""
    t = np.asarray(times, dtype=float)
    q1, q3 = np.percentile(t, [25, 75])
    return {
        "reps": int(t.size),
        "median_s": float(np.median(t)),
        "min_s": float(t.min()),
        "max_s": float(t.max()),
        "iqr_s": float(q3 - q1),
        "rsd": rsd(t),
        "total_s": float(t.sum() * launches),
        "times_s": [float(x) for x in t],
    }

