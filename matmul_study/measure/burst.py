"""The burst sampling loop of a GPU job: time samples, cool down while too few ran at the fastest level, top up,
select. Pure logic: the card comes in as a few callables (gpu_job.time_launches wires them to CUDA events and
NVML), so the loop runs against a simulated power limiter in the tests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from matmul_study.measure.stats import Measurement, reps_needed, sample
from matmul_study.measure.timing import Burst, at_full_clock, off_fastest, select_burst, wait_until

COOL_DOWN_BUDGET = 10  # at most this many full cool-down waits (recovery_max_s each) per job


@dataclass(frozen=True)
class Card:
    """What the loop reads and does on the card."""
    time_batch: Callable[[int], float]  # seconds for this many back-to-back launches (timed by events)
    sm_clock: Callable[[], float]  # the SM clock now (MHz), NaN when unreadable
    cooled: Callable[[], bool]  # idle power and the clock back at its top: the limiter has let go
    clock_readable: bool = True  # False without NVML: the clock rule is skipped, the plateau rule alone applies
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], float] = time.perf_counter


@dataclass
class Sampled:
    times: list[float]  # seconds per launch of each timed sample
    clocks_before: list[float] = field(default_factory=list)  # SM clock before and after each timed sample
    clocks_after: list[float] = field(default_factory=list)
    burst: Burst | None = None
    cool_down_s: float = 0.0
    cool_downs: int = 0


def sample_burst(card: Card, batch: int, measurement: Measurement, threshold_mhz: float | None,
                 before_each: Callable[[], None] | None = None) -> Sampled:
    """Samples of `batch` launches until the stopping policy is met, then until burst_plateau_samples of them
    ran within burst_band of the fastest (within one more max_time_s and max_reps), and the burst selection.

    From idle the limiter lets a heavy kernel run at full clock for only tens of milliseconds. While fewer
    than burst_plateau_samples samples ran at the fastest level, a sample that fell off it (or read a throttled
    clock) is followed by a cool-down: wait until card.cooled() (at most recovery_max_s; at most
    COOL_DOWN_BUDGET such waits' worth per job), then one untimed sample to bring the clock up from idle."""
    policy = measurement.stopping
    plateau_samples, band = measurement.burst_plateau_samples, measurement.burst_band
    seen: list[float] = []  # every sample's time, the policy's warm-up samples first
    out = Sampled([])
    before, after = out.clocks_before, out.clocks_after  # in step with seen until the warm-up is dropped

    def needed(first: int) -> int:  # min_reps, fewer where every sample is a long run (stats.reps_needed)
        return reps_needed(seen[first:], policy, batch)

    def burst_of(first: int) -> Burst:
        # at_fastest against the fastest sample seen: timed samples that all ran slower than a warm-up sample
        # are throttled, however many of them agree.
        return select_burst(seen[first:], before[first:] if card.clock_readable else [], after[first:],
                            threshold_mhz, needed(first), min(plateau_samples, needed(first)), band,
                            fastest_s=min(seen))

    def cool_down_if_needed() -> None:
        if not seen or out.cool_down_s >= COOL_DOWN_BUDGET * measurement.recovery_max_s:
            return
        first = min(policy.warmup, len(seen) - 1)
        if burst_of(first).at_fastest >= min(plateau_samples, needed(first)):
            return
        throttled = bool(after) and not at_full_clock(after[-1], threshold_mhz)
        if throttled or off_fastest(seen[-1], min(seen), band):
            waited = wait_until(card.cooled, measurement.recovery_max_s, 0.01, card.sleep, card.now)
            out.cool_down_s += waited.waited_s
            out.cool_downs += 1
            card.time_batch(batch)

    def time_once() -> float:
        cool_down_if_needed()
        before.append(card.sm_clock())
        seconds = card.time_batch(batch) / batch
        after.append(card.sm_clock())
        seen.append(seconds)
        return seconds

    times = sample(time_once, policy, before_each=before_each, launches=batch)
    warmup = len(seen) - len(times)
    # Throttled samples count toward the caps but not toward the burst rate: top up (within one more max_time_s
    # of timed launches and max_reps samples) until plateau_samples samples ran at the fastest level (min_reps
    # of them at full clock by NVML's reading).
    burst, extra_s = burst_of(warmup), 0.0
    while ((burst.median_s is None or burst.at_fastest < min(plateau_samples, needed(warmup)))
           and len(times) < policy.max_reps and extra_s < policy.max_time_s):
        if before_each:
            before_each()
        times.append(time_once())
        extra_s += times[-1] * batch
        burst = burst_of(warmup)
    del before[:warmup], after[:warmup]  # keep the clock readings of the timed samples only
    out.times, out.burst = times, burst
    return out
