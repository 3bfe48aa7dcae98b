"""One GPU job: upload, verify (poisoned output against fp64), time with CUDA events, verify again.

The launch itself comes from the method's backend (matmul_study.launch.launchers); the device facts from
matmul_study.measure.gpu_device; the batching and stream hold from matmul_study.measure.timing. PyCUDA and CuPy are imported
lazily: nothing here is needed for a CPU-only run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from matmul_study.core import dtypes as dt
from matmul_study.core.backends import CUBLAS, module_available
from matmul_study.core.records import BURST_SAMPLE_MAX_S
from matmul_study.core.specs import Method, Problem
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


def ensure_fits(method: Method, record: dt.DType, m: int, k: int, n: int) -> None:
    """Refuse, before allocating anything, a job whose buffers cannot fit in free GPU memory."""
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401

    record = dt.get(record)  # a record passes through; a name (bench/, tests) is resolved here
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


def run(method: Method, record: dt.DType, block: int, a: np.ndarray, b: np.ndarray, measurement: Measurement,
        cubin: str | None, variant: str | None = None, scales=None) -> GpuRun:
    """Verify and time one GPU job; `variant` names the method's registered build that `cubin` holds (None: the
    default build); `scales`: a scaled dtype's (inputs.Operands.scales)."""
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, shared with CuPy and cuda-bindings)
    from matmul_study.launch import launchers

    record = dt.get(record)  # a record passes through; a name (bench/, tests) is resolved here
    m, k = a.shape
    n = b.shape[1]
    device = pycuda.autoprimaryctx.device
    env = device_environment(cuda, device)
    full = m * k * n <= measurement.full_verify_max_flops
    device_reference = checked_on_device(method, record, bool(env["cupy"]), m * k * n, measurement)
    buffers = upload(a, b, record, scales)
    a_gpu, b_gpu, c_gpu = buffers.a, buffers.b, buffers.c
    block_scales = scales if record.block_scaled else None  # the reference dequantizes each block
    scale = float(np.prod(scales, dtype=np.float64)) if record.scaled and block_scales is None else 1.0
    problem = Problem(m, n, k, block, record, env["sm_count"],
                      device.get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    launch = launchers.make(method, problem, buffers, cubin, variant)

    def verified_run() -> Verification:
        poisoned_launch(cuda, launch, c_gpu, record)
        if device_reference:
            return verify_on_device(a_gpu, b_gpu, c_gpu, record, scale, block_scales)
        return verify_on_host(a, b, c_gpu.get(), record, full, measurement.sample_rows, measurement.seed, scale,
                              block_scales)

    handle = nvml_handle(device.pci_bus_id())
    before = gpu_state(handle)
    verifications = [verified_run()]
    times = None
    clocks_after: list[float] = []
    batch = 0
    rates: dict = {}
    if verifications[0].passed:
        start, end = cuda.Event(), cuda.Event()
        flush = l2_flusher(cuda, env["l2_bytes"]) if measurement.cold else None
        stream_hold = StreamHold(cuda, device_arch(device))

        load = {"launches": 0, "seconds": 0.0}  # every launch the sampling runs, timed or not, and its time

        def elapsed(launches: int) -> float:
            seconds = held_seconds(stream_hold, start, end, launch, launches)
            load["launches"] += launches
            load["seconds"] += seconds
            return seconds

        def sm_clock() -> float:
            return gpu_state(handle, ("sm_clock_mhz",)).get("sm_clock_mhz", math.nan) if handle else math.nan

        top = before.get("sm_clock_max_mhz")
        threshold = measurement.throttle_fraction * top if top else None
        limit_w = before.get("power_limit_w")
        # Burst: start from an idle card (NVML's 1 s average power low: the slow limiter has nothing to remember).
        settled = wait_until(lambda: idle(gpu_state(handle, ("power_w",)).get("power_w"), limit_w,
                                          measurement.settle_power_fraction), measurement.settle_max_s)

        def cooled() -> bool:
            # Idle power by the instantaneous reading (the 1 s average lags by a second), and the clock back at
            # its top (at its threshold where the top is unknown).
            reading = gpu_state(handle, ("power_instant_w", "sm_clock_mhz"))
            return (idle(reading.get("power_instant_w"), limit_w, measurement.settle_power_fraction)
                    and at_full_clock(reading.get("sm_clock_mhz", math.nan), top or threshold))

        def before_each() -> None:
            if flush:
                flush()

        # A sample is a batch of launches long enough for the events' resolution, divided by its size, and
        # short enough to run before the limiter acts (launches_per_sample). Cold mode flushes L2 before every
        # sample, so it times one launch at a time.
        one_launch_s = elapsed(1)
        batch = 1 if measurement.cold else launches_per_sample(one_launch_s, measurement.stopping.min_launches_per_sample)
        energy_before = gpu_state(handle, ("energy_mj",)).get("energy_mj")
        load.update(launches=0, seconds=0.0)
        sampled = sample_burst(Card(elapsed, sm_clock, cooled, clock_readable=handle is not None), batch, measurement,
                               threshold, before_each)
        times, burst, clocks_after = sampled.times, sampled.burst, sampled.clocks_after
        rates["burst"] = {**burst.as_dict(), "settle_s": settled.waited_s, "settled": settled.reached,
                          "recovery_s": sampled.cool_down_s, "cool_downs": sampled.cool_downs}
        found = modes(times)
        rates["burst"]["modes_s"] = [mode["median_s"] for mode in found]
        rates["burst"]["mode_shares"] = [mode["share"] for mode in found]
        if m * k * n >= measurement.sustained_min_size ** 3:
            if one_launch_s >= BURST_SAMPLE_MAX_S and load["seconds"] >= measurement.sustained_s and not flush:
                # Each launch outlasts the limiter's window, so the burst samples already ran at the power limit
                # for longer than a sustained window: their load is the sustained state, and a second window
                # would only repeat it.
                rates["sustained"] = sustained_from_load(load["launches"], load["seconds"], 2 * m * k * n,
                                                         energy_before, clocks_after, handle)
            else:
                rates["sustained"] = sustained(launch, one_launch_s, 2 * m * k * n, measurement.sustained_s,
                                               handle, cuda, start, end)
        verifications.append(verified_run())  # the kernel must still be right after being timed
    state = summarize_state(before, gpu_state(handle), clocks_after, measurement.throttle_fraction)
    return GpuRun(times, verifications, env, state, batch, rates)


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
