"""Timing helpers for GPU jobs: the stream hold that queues a batch before it runs, the batch size, the L2 flush
of cold mode, the per-sample clock summary, and the logic of burst and sustained rates (settle before the job,
keep full-clock samples, summarize a continuous window, energy from NVML's counter)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from matmul_study.core.records import BURST_SAMPLE_MAX_S


class StreamHold:
    """Holds the legacy stream while a batch is queued, then lets it run back to back (nvbench's blocking kernel).

    Queuing a launch costs the host microseconds (a cuBLAS call through Python more than a small GEMM takes on
    the GPU): timed as queued, a batch of short launches measures the host. Queued behind this kernel and
    released at once, it measures the GPU.
    """

    def __init__(self, cuda, arch: str, timeout_s: float = 2.0):
        from matmul_study.launch.kernels import HOLD_STREAM_SOURCE, compile_with_pycuda

        self._cuda = cuda
        self._kernel = cuda.module_from_buffer(compile_with_pycuda(HOLD_STREAM_SOURCE, arch)).get_function(
            "hold_stream")
        self._kernel.prepare("PPQ")
        # [release, timed_out], read and written by the kernel through mapped page-locked memory.
        self._flags = cuda.pagelocked_zeros(2, np.int32, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        device_flags = self._flags.base.get_device_pointer()
        self._args = (device_flags, device_flags + 4, np.uint64(timeout_s * 1e9))
        self.timeout_s = timeout_s

    def hold(self) -> None:
        self._flags[:] = 0
        self._kernel.prepared_call((1, 1), (1, 1, 1), *self._args)

    def release(self) -> None:
        self._flags[0] = 1
        self._cuda.Context.synchronize()
        if self._flags[1]:
            raise RuntimeError(
                f"the stream was held {self.timeout_s} s, longer than queuing the batch should take: the launch "
                "queue is probably full; time fewer launches per sample (timing.MAX_LAUNCHES_PER_SAMPLE)")


def summarize_state(before: dict, after: dict, clocks: list[float], throttle_fraction: float) -> dict:
    """GPU state around a job, flat: clocks, temperature and power before/after, and throttled samples
    (SM clock below throttle_fraction of its maximum while the sample ran)."""
    out = {f"{key}_before": value for key, value in before.items() if key != "sm_clock_max_mhz"}
    out.update({f"{key}_after": value for key, value in after.items() if key != "sm_clock_max_mhz"})
    top = before.get("sm_clock_max_mhz") or after.get("sm_clock_max_mhz")
    out["sm_clock_max_mhz"] = top
    out["sm_clock_per_sample_mhz"] = clocks
    known = [c for c in clocks if not math.isnan(c)]
    out["sm_clock_min_sample_mhz"] = min(known) if known else None
    out["throttled_samples"] = sum(c < throttle_fraction * top for c in known) if top and known else None
    return out


SAMPLE_TARGET_S = 1e-3  # a sample long enough that event resolution (~0.5 us) and launch gaps vanish
MAX_LAUNCHES_PER_SAMPLE = 256  # well inside the launch queue, which must hold a whole batch behind the hold


def launches_per_sample(one_launch_s: float, minimum: int = 1, longest_s: float = BURST_SAMPLE_MAX_S) -> int:
    """How many back-to-back launches make one sample last SAMPLE_TARGET_S, and at least `minimum`: some
    kernels' launches take one of two durations (naive fp64 at 8192 on the H200: 281 or 298 ms, at random), and
    a median over single launches then jumps between the two from run to run. But a sample that `minimum`
    launches would stretch past longest_s holds as many as fit (at least one), so that it can still run before
    the power limiter acts; only launches longer than longest_s, which no sample can time at full clock, keep
    the minimum."""
    one = max(one_launch_s, 1e-9)
    wanted = max(minimum, math.ceil(SAMPLE_TARGET_S / one))
    if wanted * one > longest_s and one <= longest_s:
        wanted = max(1, math.floor(longest_s / one))
    return int(min(MAX_LAUNCHES_PER_SAMPLE, wanted))


def l2_flusher(cuda, l2_bytes: int) -> Callable[[], None]:
    """Cold mode: write a buffer twice the L2 size before each sample, evicting A, B and C from L2."""
    words = 2 * l2_bytes // 4
    buf = cuda.mem_alloc(words * 4)

    def flush():
        cuda.memset_d32(buf, 0, words)

    return flush


# --------------------------------------------------------------------------------------------------------------
# Burst and sustained rates (pure logic; the GPU side feeds it readings)


@dataclass(frozen=True)
class Wait:
    waited_s: float
    reached: bool  # False: the bounded wait ran out first


def wait_until(ready: Callable[[], bool], max_wait_s: float, poll_s: float = 0.05,
               sleep: Callable[[float], None] = time.sleep, now: Callable[[], float] = time.perf_counter) -> Wait:
    """Poll `ready` until it holds or max_wait_s has passed. Nothing is changed on the card; this only waits."""
    start = now()
    while not ready():
        if now() - start >= max_wait_s:
            return Wait(now() - start, False)
        sleep(poll_s)
    return Wait(now() - start, True)


def idle(power_w: float | None, power_limit_w: float | None, fraction: float) -> bool:
    """The settle rule: the card draws at most `fraction` of its power limit, so the power limiter has no load
    to remember and the SM clock is back at its top. Without readings (no NVML) there is nothing to wait for."""
    return power_w is None or power_limit_w is None or power_w <= fraction * power_limit_w


def at_full_clock(clock_mhz: float | None, threshold_mhz: float | None) -> bool:
    return clock_mhz is None or threshold_mhz is None or math.isnan(clock_mhz) or clock_mhz >= threshold_mhz


@dataclass(frozen=True)
class Burst:
    """The rate at full clock: the samples whose SM clock was at or above the threshold before and after, and
    of those, the ones on the fastest plateau (see select_burst)."""
    median_s: float | None
    kept: int
    total: int
    threshold_mhz: float | None
    note: str = ""
    off_plateau: int = 0  # samples at full clock by NVML's reading that still ran slower than the plateau
    at_fastest: int = 0  # samples within the band of the fastest one: fewer than the plateau needs -> sample on
    plateau: int | None = None  # the samples the plateau asked for (fewer where each sample is a long run)

    def as_dict(self) -> dict:
        return {"median_s": self.median_s, "samples_kept": self.kept, "samples_total": self.total,
                "threshold_mhz": self.threshold_mhz, "samples_off_plateau": self.off_plateau,
                "samples_at_fastest": self.at_fastest, "plateau_samples": self.plateau, "note": self.note}


def within(times: list[float], reference_s: float, band: float) -> list[float]:
    return [t for t in times if t <= reference_s * (1 + band)]


def fastest_plateau(times: list[float], samples: int, band: float) -> list[float]:
    """The samples within `band` of the `samples`-th fastest one: the fastest level that at least `samples`
    samples reached.

    The power limiter slows a sample inside itself, between NVML's clock readings (they lag it: on the H200,
    samples after which NVML read its maximum clock ran up to 15 % slower than the fastest ones). Each sample's
    own time is the finer signal: throttled samples fall off the plateau the full-clock samples form, however
    few of those there are. A band wider than the run-to-run noise (about 1 %) keeps every sample of a steady
    kernel."""
    if not times:
        return []
    return within(times, sorted(times)[min(samples, len(times)) - 1], band)


def off_fastest(last_s: float, fastest_s: float, band: float) -> bool:
    """A sample slower than the band around the fastest one so far: the limiter has caught up with the job."""
    return last_s > fastest_s * (1 + band)


def select_burst(times: list[float], clocks_before: list[float], clocks_after: list[float],
                 threshold_mhz: float | None, min_kept: int, plateau_samples: int = 5, band: float = 0.02,
                 fastest_s: float | None = None) -> Burst:
    """Keep the samples that ran at full clock (nvbench skips those below its throttle threshold), then those on
    the fastest plateau of plateau_samples (fastest_plateau). Without clock readings every sample passes the
    first step, and the note says the clock was not read. at_fastest counts the full-clock samples within band
    of fastest_s (the fastest sample the job saw, warm-up included), or of the fastest of them."""
    if threshold_mhz is None or not clocks_before:
        if not times:
            return Burst(None, 0, 0, None, "no samples")
        at_clock, note = list(times), "SM clock not readable (no NVML): the plateau rule alone"
    else:
        at_clock, note = [t for t, b, a in zip(times, clocks_before, clocks_after)
                          if not math.isnan(b) and not math.isnan(a) and min(b, a) >= threshold_mhz], ""
        if len(at_clock) < min_kept:
            return Burst(None, len(at_clock), len(times), threshold_mhz,
                         f"only {len(at_clock)} of {len(times)} samples ran at or above {threshold_mhz:.0f} MHz "
                         f"(fewer than {min_kept}): no burst rate")
    kept = fastest_plateau(at_clock, plateau_samples, band)
    at_fastest = len(within(at_clock, min(at_clock) if fastest_s is None else min(fastest_s, min(at_clock)), band))
    if at_fastest < plateau_samples:
        note = "; ".join(filter(None, [note, f"only {at_fastest} samples within {band:.0%} of the fastest (fewer "
                                              f"than {plateau_samples}): the plateau of the fastest "
                                              f"{plateau_samples}"]))
    return Burst(float(np.median(kept)), len(kept), len(times), threshold_mhz, note, len(at_clock) - len(kept),
                 at_fastest, plateau_samples)


def modes(times: list[float], min_gap: float = 0.03, min_share: float = 0.2) -> list[dict]:
    """One mode, or two where the sorted times split at a gap wider than min_gap (relative) with at least
    min_share of the samples on each side: a bimodal kernel reports both instead of a median that jumps."""
    t = np.sort(np.asarray(times, dtype=float))
    if t.size < 4:
        return [{"median_s": float(np.median(t)), "share": 1.0}] if t.size else []
    gaps = np.diff(t) / t[:-1]
    cut = int(np.argmax(gaps))
    low, high = t[: cut + 1], t[cut + 1:]
    if gaps[cut] > min_gap and min(low.size, high.size) >= min_share * t.size:
        return [{"median_s": float(np.median(part)), "share": part.size / t.size} for part in (low, high)]
    return [{"median_s": float(np.median(t)), "share": 1.0}]


@dataclass(frozen=True)
class Batch:
    """One batch of a sustained window: its launches, their seconds, and the readings taken right after it."""
    launches: int
    seconds: float
    sm_clock_mhz: float
    power_w: float
    energy_mj: float  # NVML's total-energy counter after the batch (millijoules since the driver loaded)


def summarize_sustained(batches: list[Batch], flops_per_launch: int, window_s: float,
                        energy_before_mj: float | None) -> dict:
    """Rate, clock, power and energy over the second half of a continuous window (the first half is the climb
    to the power limit). Energy is the counter's rise over those batches."""
    elapsed, settled = 0.0, []
    previous_energy = energy_before_mj
    first_energy = None
    for batch in batches:
        if elapsed >= window_s / 2:
            if first_energy is None:
                first_energy = previous_energy
            settled.append(batch)
        elapsed += batch.seconds
        previous_energy = batch.energy_mj
    if not settled:
        settled, first_energy = batches[-1:], (batches[-2].energy_mj if len(batches) > 1 else energy_before_mj)
    launches = sum(b.launches for b in settled)
    seconds = sum(b.seconds for b in settled)
    out = {"window_s": elapsed, "measured_s": seconds, "launches": launches,
           "gflops": flops_per_launch * launches / seconds / 1e9 if seconds > 0 else None,
           "sm_clock_mhz": _median([b.sm_clock_mhz for b in settled]),
           "power_w": _median([b.power_w for b in settled])}
    out.update(energy(first_energy, settled[-1].energy_mj, launches, flops_per_launch))
    return out


def energy(before_mj: float | None, after_mj: float | None, launches: int, flops_per_launch: int) -> dict:
    """Joules per launch and GFLOP per joule from two readings of NVML's total-energy counter (millijoules)."""
    if before_mj is None or after_mj is None or math.isnan(before_mj) or math.isnan(after_mj) or launches <= 0:
        return {"energy_j_per_launch": None, "gflop_per_j": None}
    joules = (after_mj - before_mj) / 1e3
    if joules <= 0:  # the counter did not tick over the window: too short to say
        return {"energy_j_per_launch": None, "gflop_per_j": None}
    return {"energy_j_per_launch": joules / launches, "gflop_per_j": flops_per_launch * launches / joules / 1e9}


def _median(values: list[float]) -> float | None:
    known = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.median(known)) if known else None
