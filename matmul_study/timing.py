"""Timing helpers for GPU jobs: the stream hold that queues a batch before it runs, the batch size, the L2 flush
of cold mode, and the per-sample clock summary."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np


class StreamHold:
    """Holds the legacy stream while a batch is queued, then lets it run back to back (nvbench's blocking kernel).

    Queuing a launch costs the host microseconds (a cuBLAS call through Python more than a small GEMM takes on
    the GPU): timed as queued, a batch of short launches measures the host. Queued behind this kernel and
    released at once, it measures the GPU.
    """

    def __init__(self, cuda, arch: str, timeout_s: float = 2.0):
        from .kernels import HOLD_STREAM_SOURCE, compile_with_pycuda

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


def launches_per_sample(one_launch_s: float, minimum: int = 1) -> int:
    """How many back-to-back launches make one sample last SAMPLE_TARGET_S, and at least `minimum`: some
    kernels' launches take one of two durations (naive fp64 at 8192 on the H200: 281 or 298 ms, at random), and
    a median over single launches then jumps between the two from run to run."""
    wanted = max(minimum, math.ceil(SAMPLE_TARGET_S / max(one_launch_s, 1e-9)))
    return int(min(MAX_LAUNCHES_PER_SAMPLE, wanted))


def l2_flusher(cuda, l2_bytes: int) -> Callable[[], None]:
    """Cold mode: write a buffer twice the L2 size before each sample, evicting A, B and C from L2."""
    words = 2 * l2_bytes // 4
    buf = cuda.mem_alloc(words * 4)

    def flush():
        cuda.memset_d32(buf, 0, words)

    return flush
