"""CPU baseline: numpy's matmul (BLAS) with the job's thread count, verified like every GPU method.

One process's BLAS rate on a shared VM moves from process to process (thread placement, memory, neighbours), so
the timing runs in several fresh processes and the job reports the median of their medians and their spread.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass

import numpy as np

from matmul_study.measure.stats import sample
from matmul_study.measure.verify import poison_value, verify_on_host


@dataclass(frozen=True)
class InputSpec:
    """What a fresh process needs to rebuild the job's inputs (the same seed gives the same matrices)."""
    m: int
    k: int
    n: int
    dtype: str
    seed: int
    low: float
    high: float


def _time_matmul(a: np.ndarray, b: np.ndarray, measurement, threads: int) -> list[float]:
    from threadpoolctl import threadpool_limits

    out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)

    def time_once() -> float:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        return time.perf_counter() - t0

    with threadpool_limits(limits=threads, user_api="blas"):
        return sample(time_once, measurement.stopping)


def _time_in_fresh_process(spec: InputSpec, measurement, threads: int) -> list[float]:
    from matmul_study.measure import inputs

    a, b = inputs.generate(spec.m, spec.k, spec.n, spec.dtype, spec.seed, spec.low, spec.high)
    return _time_matmul(a, b, measurement, threads)


def run(a: np.ndarray, b: np.ndarray, dtype: str, measurement, threads: int, spec: InputSpec | None = None):
    """Return (times or None, [verifications], per-process medians). Timing runs only after a passed
    verification; with `spec` and measurement.cpu_processes > 1 it runs in that many fresh processes."""
    from threadpoolctl import threadpool_limits

    m, k = a.shape
    out = np.empty((m, b.shape[1]), dtype=a.dtype)
    full = m * k * b.shape[1] <= measurement.full_verify_max_flops

    def verified_run():
        out.fill(poison_value(out.dtype))
        with threadpool_limits(limits=threads, user_api="blas"):
            np.matmul(a, b, out=out)
        return verify_on_host(a, b, out, dtype, full, measurement.sample_rows, measurement.seed)

    verifications = [verified_run()]
    if not verifications[0].passed:
        return None, verifications, []
    if spec is None or measurement.cpu_processes <= 1:
        per_process = [_time_matmul(a, b, measurement, threads)]
    else:
        context = multiprocessing.get_context("spawn")  # fresh interpreters: nothing inherited from this one
        per_process = []
        for _ in range(measurement.cpu_processes):
            with context.Pool(1) as pool:
                per_process.append(pool.apply(_time_in_fresh_process, (spec, measurement, threads)))
    verifications.append(verified_run())
    times = [t for process in per_process for t in process]
    return times, verifications, [float(np.median(p)) for p in per_process]


def process_spread(medians: list[float]) -> float | None:
    """(slowest - fastest) / median of the per-process medians: how far apart fresh processes landed."""
    if len(medians) < 2:
        return None
    return float((max(medians) - min(medians)) / np.median(medians))
