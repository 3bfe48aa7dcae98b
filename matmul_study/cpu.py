"""CPU baseline: numpy's matmul (BLAS) with the job's thread count, verified like every GPU method."""

from __future__ import annotations

import time

import numpy as np

from .measure import sample
from .verify import poison_value, verify_on_host


def run(a: np.ndarray, b: np.ndarray, dtype: str, measurement, threads: int):
    """Return (times or None, [verifications]). Timing runs only after a passed verification."""
    from threadpoolctl import threadpool_limits

    m, k = a.shape
    out = np.empty((m, b.shape[1]), dtype=a.dtype)
    full = m * k * b.shape[1] <= measurement.full_verify_max_flops

    def verified_run():
        out.fill(poison_value(out.dtype))
        np.matmul(a, b, out=out)
        return verify_on_host(a, b, out, dtype, full, measurement.sample_rows, measurement.seed)

    def time_once() -> float:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        return time.perf_counter() - t0

    with threadpool_limits(limits=threads, user_api="blas"):
        verifications = [verified_run()]
        if not verifications[0].passed:
            return None, verifications
        times = sample(time_once, measurement.stopping)
        verifications.append(verified_run())
    return times, verifications
