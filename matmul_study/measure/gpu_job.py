"""One GPU job: upload, verify (poisoned output against fp64), time with CUDA events, verify again.

run reads top-down: the device and its facts, the buffers, the job's Problem on this device (configs.job_problem),
the launcher, the check (verifier), the burst and sustained timing (time_launches), the check again. The launch
itself comes from the method's backend (launch.launchers), given the records the job resolved; the device facts
from measure.gpu_device; the burst loop from measure.burst; the batching and stream hold from measure.timing.
PyCUDA and CuPy are imported lazily: nothing here is needed for a CPU-only run.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from matmul_study.core import configs
from matmul_study.core import dtypes as dt
from matmul_study.core.backends import CUBLAS, module_available
from matmul_study.core.records import BURST_SAMPLE_MAX_S
from matmul_study.core.specs import Method, Problem, Variant, shared_opt_in_bytes
from matmul_study.measure.burst import Card, sample_burst
from matmul_study.measure.gpu_device import device_arch, device_environment, gpu_state, nvml_handle, require_pycuda
from matmul_study.measure.stats import Measurement
from matmul_study.measure.timing import (Batch, StreamHold, at_full_clock, energy, idle, l2_flusher,
                                         launches_per_sample, modes, summarize_state, summarize_sustained,
                                         wait_until)
from matmul_study.measure.verify import Verification, compare, dequantized, poison_value, verify_on_host

SUSTAINED_BATCH_S = 0.05  # readings every ~50 ms of continuous load


@dataclass
class GpuRun:
    times: list[float] | None
    verifications: list[Verification]
    env: dict
    state: dict = field(default_factory=dict)
    launches_per_sample: int = 0  # back-to-back launches averaged into each timed sample (0: not timed)
    rates: dict = field(default_factory=dict)  # "burst" and, for large enough jobs, "sustained"
    problem: Problem | None = None  # what was launched: the job's shape, block and dtype on this device
    # Where the run's time went: "setup_s" (context, uploads, the launcher, NVML: up to the first check),
    # "checks_s" (the poisoned launches and their fp64 checks, before and after timing), "timing_s" (time_launches:
    # the settle, the burst samples with their warm-ups and cool-downs, the sustained window).
    steps_s: dict = field(default_factory=dict)


def verify_on_device(a_gpu, b_gpu, c_gpu, dtype: dt.DType, scale: float = 1.0, block_scales=None) -> Verification:
    """Full fp64 reference through cuBLAS DGEMM, compared on the device; `scale` and `block_scales` as in
    verify_on_host."""
    import cupy

    if dtype.block_scaled:
        a64, b64 = dequantized(cupy.asarray(a_gpu), cupy.asarray(b_gpu), dtype, block_scales, cupy)
        ref = a64 @ b64
        del a64, b64
        return compare(cupy.asarray(c_gpu), ref, dtype, "full", "cuBLAS DGEMM (CuPy)", xp=cupy)
    a64 = dt.to_float64(cupy.asarray(a_gpu), dtype, cupy)
    b64 = dt.to_float64(cupy.asarray(b_gpu), dtype, cupy)
    if scale != 1.0:
        # A ufunc call, not `b64 * scale`: CuPy's operators given a Python scalar import cupyx.scipy (0.3-0.5 s
        # of every job's start on the H200's image; verify.py says the same of the other device-side checks).
        cupy.multiply(b64, scale, out=b64)
    ref = a64 @ b64
    del a64, b64
    return compare(cupy.asarray(c_gpu), ref, dtype, "full", "cuBLAS DGEMM (CuPy)", xp=cupy)


def bytes_needed(m: int, k: int, n: int, dtype: dt.DType, device_reference: bool) -> int:
    need = (m * k + k * n) * dtype.itemsize + m * n * dtype.output.itemsize
    if device_reference:
        need += (m * k + k * n + 2 * m * n) * 8  # fp64 copies of A and B, the reference and the difference
    return need


def poisoned_launch(cuda, launch, c_gpu, record: dt.DType) -> None:
    """C poisoned (every element NaN, or the integer sentinel), one launch, and a synchronize that surfaces launch
    failures and illegal addresses here, with their message: the run every verification checks."""
    cuda.memset_d32(c_gpu.gpudata, poison_word(record.output), c_gpu.size * record.output.itemsize // 4)
    launch()
    cuda.Context.synchronize()


def poison_word(out_dtype) -> int:
    """32-bit pattern for memset: all ones is a NaN in fp32 and (as two words) in fp64; ints get the sentinel."""
    value = poison_value(out_dtype)
    return int(np.array(value, np.int32).view(np.uint32)) if np.dtype(out_dtype).kind == "i" else 0xFFFFFFFF


def uses_device_reference(method: Method, dtype: dt.DType, have_cupy: bool) -> bool:
    # cuBLAS DGEMM would check cuBLAS's own float64 result against itself: use the host reference there.
    return have_cupy and not (method.backend is CUBLAS and dtype.name == "float64")


def checked_on_device(method: Method, dtype: dt.DType, have_cupy: bool, multiply_adds: int,
                      measurement: Measurement) -> bool:
    """Whether a job's reference is computed on the device (CuPy's DGEMM) rather than on the host. A product small
    enough to be checked whole on the host (full_verify_max_flops; numpy's fp64 GEMM takes milliseconds there) is
    checked on the host: the device reference would cost the job CuPy's import and kernel loads, about 0.3 s."""
    return multiply_adds > measurement.full_verify_max_flops and uses_device_reference(method, dtype, have_cupy)


def ensure_fits(method: Method, record: dt.DType, m: int, k: int, n: int, variant: str | None = None) -> None:
    """Refuse, before allocating anything, a problem the method's build does not serve (Method.max_rows, a
    variant's own) or a job whose buffers cannot fit in free GPU memory."""
    unmet = method.unmet_shape_requirement(m, variant)
    if unmet:
        raise ValueError(f"{unmet}: {m}x{k}x{n} is a problem for another method; give {method.name} shapes with "
                         f"m <= {method.rows_served(variant)}")
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401

    need = bytes_needed(m, k, n, record, uses_device_reference(method, record, module_available(CUBLAS.module)))
    free, total = cuda.mem_get_info()
    if need > 0.95 * free:
        raise MemoryError(
            f"{method.name} {record.name} {m}x{k}x{n} needs {need / 2**30:.1f} GiB of GPU memory but only "
            f"{free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB is free; remove this size from config.yaml 'sizes'.")


def held_seconds(stream_hold: StreamHold, start, end, launch, launches: int) -> float:
    """Seconds for `launches` back-to-back launches, queued behind the hold and timed by events start and end."""
    stream_hold.hold()
    start.record()
    for _ in range(launches):
        launch()
    end.record()
    stream_hold.release()
    return start.time_till(end) / 1e3


def upload(a: np.ndarray, b: np.ndarray, record: dt.DType, scales=None):
    """The job's device buffers: A and B as stored (raw bits for ml_dtypes' types), C uninitialised, and a scaled
    dtype's scales (inputs.Operands.scales: float32 scale_a, scale_b, or the block scales' one buffer, whose size
    is checked against its layout here: a kernel would read past a short one), else None."""
    import pycuda.gpuarray as gpuarray

    from matmul_study.launch.launchers import DeviceBuffers

    if record.block_scaled:
        dt.block_scale_layout(record, a.shape[0], a.shape[1], b.shape[1]).split(np.asarray(scales))
    a_gpu, b_gpu = (gpuarray.to_gpu(x.view(record.device_view)) for x in (a, b))
    c_gpu = gpuarray.empty((a.shape[0], b.shape[1]), record.output)
    scales_gpu = gpuarray.to_gpu(np.asarray(scales, np.float32)) if record.scaled else None
    return DeviceBuffers(a_gpu, b_gpu, c_gpu, scales_gpu)


def run(method: Method, dtype: dt.DType, block: int, a: np.ndarray, b: np.ndarray, measurement: Measurement,
        cubin: str | None, variant: Variant | None = None, scales=None) -> GpuRun:
    """Verify and time one GPU job, from the records the job resolved (its method, dtype and variant: None for the
    default build), its block, its host inputs, the cubin of the variant's build and a scaled dtype's scales
    (inputs.Operands.scales). The Problem it launched, with this device's facts, comes back in GpuRun.problem."""
    t_start = time.perf_counter()
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, shared with CuPy and cuda-bindings)
    from matmul_study.launch import launchers

    device = pycuda.autoprimaryctx.device
    env = device_environment(cuda, device)
    buffers = upload(a, b, dtype, scales)
    problem = configs.job_problem(dtype, block, a.shape[0], a.shape[1], b.shape[1], sm_count=env["sm_count"],
                                  max_shared_bytes=shared_opt_in_bytes(device.compute_capability()),
                                  hbm_bytes_per_s=env["hbm_bytes_per_s"], l2_bytes=env["l2_bytes"])
    launch = launchers.make(method, problem, buffers, cubin, variant)
    verified_run = verifier(cuda, launch, buffers, (a, b), scales, method, dtype, measurement, bool(env["cupy"]))
    handle = nvml_handle(device.pci_bus_id())
    before = gpu_state(handle)
    steps = {"setup_s": time.perf_counter() - t_start, "checks_s": 0.0, "timing_s": 0.0}

    def checked() -> Verification:
        t = time.perf_counter()
        try:
            return verified_run()
        finally:
            steps["checks_s"] += time.perf_counter() - t

    verifications = [checked()]
    timed = Timed()
    if verifications[0].passed:
        t_timing = time.perf_counter()
        timed = time_launches(cuda, device, env, launch, handle, before, measurement, problem)
        steps["timing_s"] = time.perf_counter() - t_timing
        verifications.append(checked())  # the kernel must still be right after being timed
    state = summarize_state(before, gpu_state(handle), timed.clocks_after, measurement.throttle_fraction)
    return GpuRun(timed.times, verifications, env, state, timed.batch, timed.rates, problem, steps)


def verifier(cuda, launch, buffers, host: tuple[np.ndarray, np.ndarray], scales, method: Method, record: dt.DType,
             measurement: Measurement, have_cupy: bool) -> Callable[[], Verification]:
    """The run every verification checks (poisoned_launch) and its check: on the device (CuPy's DGEMM) where
    checked_on_device says so, else on the host, whole up to full_verify_max_flops, sampled beyond."""
    a, b = host
    multiply_adds = a.shape[0] * a.shape[1] * b.shape[1]
    full = multiply_adds <= measurement.full_verify_max_flops
    device_reference = checked_on_device(method, record, have_cupy, multiply_adds, measurement)
    block_scales = scales if record.block_scaled else None  # the reference dequantizes each block
    scale = float(np.prod(scales, dtype=np.float64)) if record.scaled and block_scales is None else 1.0

    def verified_run() -> Verification:
        poisoned_launch(cuda, launch, buffers.c, record)
        if device_reference:
            return verify_on_device(buffers.a, buffers.b, buffers.c, record, scale, block_scales)
        return verify_on_host(a, b, buffers.c.get(), record, full, measurement.sample_rows, measurement.seed, scale,
                              block_scales)

    return verified_run


@dataclass
class Timed:
    """What timing a verified job gave: seconds per launch of each sample (None: not timed), the launches per
    sample, the burst and sustained rates, and the SM clock after each sample."""
    times: list[float] | None = None
    batch: int = 0
    rates: dict = field(default_factory=dict)
    clocks_after: list[float] = field(default_factory=list)


class HeldLaunches:
    """Back-to-back launches queued behind the stream hold and timed by a pair of events; counts every launch it
    runs, timed or not, and their seconds: the load the sampling put on the card."""

    def __init__(self, cuda, arch: str, launch: Callable[[], None]):
        self.start, self.end = cuda.Event(), cuda.Event()
        self.hold = StreamHold(cuda, arch)
        self.launch = launch
        self.launches, self.seconds = 0, 0.0

    def __call__(self, launches: int) -> float:
        seconds = held_seconds(self.hold, self.start, self.end, self.launch, launches)
        self.launches += launches
        self.seconds += seconds
        return seconds


def card_readings(handle, before: dict, measurement: Measurement) -> tuple[Callable[[], float], Callable[[], bool],
                                                                             float | None]:
    """What the burst loop reads on the card through NVML: the SM clock now (NaN without NVML), whether the card
    has cooled down (idle power by the instantaneous reading, which the 1 s average lags by a second, and the clock
    back at its top, or at the throttle threshold where the top is unknown), and that threshold (None: unknown)."""
    top = before.get("sm_clock_max_mhz")
    threshold = measurement.throttle_fraction * top if top else None

    def sm_clock() -> float:
        return gpu_state(handle, ("sm_clock_mhz",)).get("sm_clock_mhz", math.nan) if handle else math.nan

    def cooled() -> bool:
        reading = gpu_state(handle, ("power_instant_w", "sm_clock_mhz"))
        return (idle(reading.get("power_instant_w"), before.get("power_limit_w"), measurement.settle_power_fraction)
                and at_full_clock(reading.get("sm_clock_mhz", math.nan), top or threshold))

    return sm_clock, cooled, threshold


def settle_rule(handle, before: dict, measurement: Measurement, cooled: Callable[[], bool]) -> Callable[[], bool]:
    """Whether the card is idle enough for a job's burst samples to start (measurement.settle_reading): by default
    ("instant") `cooled` (card_readings: the instantaneous reading and the SM clock at its top), which holds as
    soon as the last load has stopped and leaves what the limiter still remembers to the burst loop's cool-downs;
    with "average", NVML's one-second average power at most settle_power_fraction of the limit, so that the slow
    limiter has nothing to remember."""
    if measurement.settle_reading == "instant":
        return cooled
    return lambda: idle(gpu_state(handle, ("power_w",)).get("power_w"), before.get("power_limit_w"),
                        measurement.settle_power_fraction)


def time_launches(cuda, device, env: dict, launch: Callable[[], None], handle, before: dict,
                  measurement: Measurement, problem: Problem) -> Timed:
    """Burst samples from an idle card (burst.sample_burst), then, for a product of at least sustained_min_size³,
    the sustained state at the power limit."""
    flush = l2_flusher(cuda, env["l2_bytes"]) if measurement.cold else None
    held = HeldLaunches(cuda, device_arch(device), launch)
    sm_clock, cooled, threshold = card_readings(handle, before, measurement)
    settled = wait_until(settle_rule(handle, before, measurement, cooled), measurement.settle_max_s)
    # A sample is a batch of launches long enough for the events' resolution, divided by its size, and short
    # enough to run before the limiter acts (launches_per_sample). Cold mode flushes L2 before every sample, so
    # it times one launch at a time.
    one_launch_s = held(1)
    batch = 1 if measurement.cold else launches_per_sample(one_launch_s, measurement.stopping.min_launches_per_sample)
    energy_before = gpu_state(handle, ("energy_mj",)).get("energy_mj")
    held.launches, held.seconds = 0, 0.0
    sampled = sample_burst(Card(held, sm_clock, cooled, clock_readable=handle is not None), batch, measurement,
                           threshold, flush)
    found = modes(sampled.times)
    rates = {"burst": {**sampled.burst.as_dict(), "settle_s": settled.waited_s, "settled": settled.reached,
                       "recovery_s": sampled.cool_down_s, "cool_downs": sampled.cool_downs,
                       "modes_s": [mode["median_s"] for mode in found],
                       "mode_shares": [mode["share"] for mode in found]}}
    multiply_adds = problem.m * problem.k * problem.n
    if multiply_adds >= measurement.sustained_min_size ** 3:
        if one_launch_s >= BURST_SAMPLE_MAX_S and held.seconds >= measurement.sustained_s and not flush:
            # Each launch outlasts the limiter's window, so the burst samples already ran at the power limit for
            # longer than a sustained window: their load is the sustained state, and a second window would only
            # repeat it.
            rates["sustained"] = sustained_from_load(held.launches, held.seconds, 2 * multiply_adds, energy_before,
                                                     sampled.clocks_after, handle)
        else:
            rates["sustained"] = sustained(launch, one_launch_s, 2 * multiply_adds, measurement.sustained_s, handle,
                                           cuda, held.start, held.end)
    return Timed(sampled.times, batch, rates, sampled.clocks_after)


def sustained_from_load(launches: int, seconds: float, flops_per_launch: int, energy_before_mj: float | None,
                        clocks: list[float], handle) -> dict:
    """The sustained record of a job whose burst samples were themselves a sustained load (every launch longer
    than the limiter's window): rate, clock, power and energy over all of their launches."""
    reading = gpu_state(handle, ("power_w", "energy_mj"))
    known = [c for c in clocks if not math.isnan(c)]
    out = {"window_s": seconds, "measured_s": seconds, "launches": launches,
           "gflops": flops_per_launch * launches / seconds / 1e9 if seconds > 0 else None,
           "sm_clock_mhz": float(np.median(known)) if known else None, "power_w": reading.get("power_w"),
           "source": "the burst samples: each launch outlasts the power limiter's window"}
    out.update(energy(energy_before_mj, reading.get("energy_mj"), launches, flops_per_launch))
    return out


def sustained(launch, one_launch_s: float, flops_per_launch: int, window_s: float, handle, cuda, start, end) -> dict:
    """Back-to-back launches for window_s seconds, in batches of about 50 ms with readings after each; the rate,
    clock, power and energy of the second half are the sustained state at the power limit."""
    per_batch = max(1, min(4096, math.ceil(SUSTAINED_BATCH_S / max(one_launch_s, 1e-9))))
    energy_before = gpu_state(handle, ("energy_mj",)).get("energy_mj")
    batches, total = [], 0.0
    while total < window_s:
        start.record()
        for _ in range(per_batch):
            launch()
        end.record()
        end.synchronize()
        seconds = start.time_till(end) / 1e3
        total += seconds
        reading = gpu_state(handle, ("sm_clock_mhz", "power_w", "energy_mj"))
        batches.append(Batch(per_batch, seconds, reading.get("sm_clock_mhz", math.nan),
                             reading.get("power_w", math.nan), reading.get("energy_mj", math.nan)))
    return summarize_sustained(batches, flops_per_launch, window_s, energy_before)
