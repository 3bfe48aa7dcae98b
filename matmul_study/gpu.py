"""GPU backend: PyCUDA loads the compiled kernels and times them with CUDA events; CuPy calls cuBLAS on the
same device buffers (zero-copy through __cuda_array_interface__). Both are imported lazily: nothing here is
needed for a CPU-only run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import registry
from .verify import Verification, compare, poison_value, verify_on_host


class GpuUnavailable(RuntimeError):
    """No usable CUDA device or PyCUDA; the message says what is missing and how to run without a GPU."""


CPU_ONLY_COMMAND = "snakemake --cores 1 --config 'methods=[\"numpy\"]'"


def require_pycuda():
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        raise GpuUnavailable(
            f"PyCUDA is not installed ({exc}); GPU methods need it: pip install -e '.[gpu]' on a machine with an "
            f"NVIDIA driver. Without a GPU, run the CPU baseline only: {CPU_ONLY_COMMAND}") from None
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise GpuUnavailable("no CUDA device found")
    except Exception as exc:  # pycuda raises its own types (e.g. LogicError) for a missing driver
        raise GpuUnavailable(
            f"no usable CUDA device: {exc}. GPU methods need an NVIDIA GPU with its driver. "
            f"Without a GPU, run the CPU baseline only: {CPU_ONLY_COMMAND}") from None
    return cuda


def device_arch(device=None) -> str:
    """The device's architecture as nvcc names it (sm_90 for an H200); device 0 by default."""
    major, minor = (device if device is not None else require_pycuda().Device(0)).compute_capability()
    return f"sm_{major}{minor}"


def nvml_handle(pci_bus_id: str):
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    except Exception:
        return None


def nvidia_driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        return ""


def gpu_state(handle, keys: tuple[str, ...] | None = None) -> dict:
    """SM/memory clocks, temperature and power through NVML, or only `keys` of them (empty when NVML is
    unavailable)."""
    if handle is None:
        return {}
    import pynvml

    readers = {
        "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
    }
    state = {}
    for key, read in readers.items():
        if keys is not None and key not in keys:
            continue
        try:
            state[key] = read()
        except Exception:
            pass
    return state


def device_environment(cuda, device) -> dict:
    import pycuda

    attrs = cuda.device_attribute
    major, minor = device.compute_capability()
    env = {
        "device_name": device.name(),
        "device_kind": "gpu",
        "compute_capability": f"{major}.{minor}",
        "sm_count": device.get_attribute(attrs.MULTIPROCESSOR_COUNT),
        "l2_bytes": device.get_attribute(attrs.L2_CACHE_SIZE),
        "memory_bytes": device.total_memory(),
        "driver_version": nvidia_driver_version(),
        # CUDA version the driver supports (e.g. 13000 -> "13.0") and the one PyCUDA was built against.
        "cuda_driver_api": f"{cuda.get_driver_version() // 1000}.{cuda.get_driver_version() % 1000 // 10}",
        "cuda_version": ".".join(map(str, cuda.get_version())),
        "pycuda": pycuda.VERSION_TEXT,
    }
    try:
        import cupy

        env["cupy"] = cupy.__version__
    except ImportError:
        env["cupy"] = ""
    return env


@dataclass
class GpuRun:
    times: list[float] | None
    verifications: list[Verification]
    env: dict
    state: dict = field(default_factory=dict)
    launches_per_sample: int = 0  # back-to-back launches averaged into each timed sample (0: not timed)


def _kernel_launcher(cuda, method: registry.Method, dtype: str, block: int, cubin: str, a_gpu, b_gpu, c_gpu,
                     m: int, k: int, n: int) -> Callable[[], None]:
    from .kernels import symbol, template_block

    module = cuda.module_from_file(cubin)
    func = module.get_function(symbol(method.name, dtype, template_block(method.name, block)))
    func.prepare("PPPiii")
    launch = method.launch(m, n, block, np.dtype(dtype).itemsize)
    if launch.shared_bytes > 48 * 1024:
        func.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
    args = (a_gpu.gpudata, b_gpu.gpudata, c_gpu.gpudata, np.int32(m), np.int32(n), np.int32(k))

    def launch_once():
        func.prepared_call(launch.grid, launch.threads, *args, shared_size=launch.shared_bytes)

    return launch_once


def _cublas_launcher(dtype: str, a_gpu, b_gpu, c_gpu, m: int, k: int, n: int) -> Callable[[], None]:
    import cupy

    a, b, c = cupy.asarray(a_gpu), cupy.asarray(b_gpu), cupy.asarray(c_gpu)
    if dtype in ("float32", "float64"):
        # SGEMM / DGEMM; CuPy leaves TF32 off unless CUPY_TF32=1, and the fp32 tolerance would catch it.
        return lambda: cupy.matmul(a, b, out=c)
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    r16f, r32f = cupy.cuda.runtime.CUDA_R_16F, cupy.cuda.runtime.CUDA_R_32F

    def gemm_ex():
        # cuBLAS is column-major: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so pass B first.
        cublas.gemmEx(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k, one.ctypes.data,
                      b.data.ptr, r16f, n, a.data.ptr, r16f, k, zero.ctypes.data,
                      c.data.ptr, r32f, n, cublas.CUBLAS_COMPUTE_32F, -1)  # -1: CUBLAS_GEMM_DEFAULT

    return gemm_ex


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
                "queue is probably full; time fewer launches per sample (gpu.MAX_LAUNCHES_PER_SAMPLE)")


def _verify_on_device(a_gpu, b_gpu, c_gpu, dtype: str) -> Verification:
    """Full fp64 reference through cuBLAS DGEMM, compared on the device."""
    import cupy

    a64 = cupy.asarray(a_gpu).astype(cupy.float64)
    b64 = cupy.asarray(b_gpu).astype(cupy.float64)
    ref = a64 @ b64
    del a64, b64
    return compare(cupy.asarray(c_gpu), ref, dtype, "full", "cuBLAS DGEMM (CuPy)", xp=cupy)


def bytes_needed(m: int, k: int, n: int, dtype: str, device_reference: bool) -> int:
    item = np.dtype(dtype).itemsize
    out = np.dtype(registry.output_dtype(dtype)).itemsize
    need = (m * k + k * n) * item + m * n * out
    if device_reference:
        need += (m * k + k * n + 2 * m * n) * 8  # fp64 copies of A and B, the reference and the difference
    return need


def poison_word(out_dtype: str) -> int:
    """32-bit pattern for memset: all ones is a NaN in fp32 and (as two words) in fp64; ints get the sentinel."""
    value = poison_value(out_dtype)
    return int(np.array(value, np.int32).view(np.uint32)) if np.dtype(out_dtype).kind == "i" else 0xFFFFFFFF


def uses_device_reference(method: registry.Method, dtype: str, have_cupy: bool) -> bool:
    # cuBLAS DGEMM would check cuBLAS's own float64 result against itself: use the host reference there.
    return have_cupy and not (method.backend == "cupy" and dtype == "float64")


def ensure_fits(method: registry.Method, dtype: str, m: int, k: int, n: int) -> None:
    """Refuse, before allocating anything, a job whose buffers cannot fit in free GPU memory."""
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401

    from .grid import available

    need = bytes_needed(m, k, n, dtype, uses_device_reference(method, dtype, available("cupy")))
    free, total = cuda.mem_get_info()
    if need > 0.95 * free:
        raise MemoryError(
            f"{method.name} {dtype} {m}x{k}x{n} needs {need / 2**30:.1f} GiB of GPU memory but only "
            f"{free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB is free; remove this size from config.yaml 'sizes'.")


def run(method: registry.Method, dtype: str, block: int, a: np.ndarray, b: np.ndarray, policy, measurement: dict,
        cubin: str | None) -> GpuRun:
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, shared with CuPy)
    import pycuda.gpuarray as gpuarray

    from .measure import sample

    m, k = a.shape
    n = b.shape[1]
    device = pycuda.autoprimaryctx.device
    env = device_environment(cuda, device)
    have_cupy = bool(env["cupy"])
    device_reference = uses_device_reference(method, dtype, have_cupy)
    a_gpu, b_gpu = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    out_dtype = registry.output_dtype(dtype)
    c_gpu = gpuarray.empty((m, n), out_dtype)
    if method.backend == "cupy":
        launch = _cublas_launcher(dtype, a_gpu, b_gpu, c_gpu, m, k, n)
    else:
        launch = _kernel_launcher(cuda, method, dtype, block, cubin, a_gpu, b_gpu, c_gpu, m, k, n)

    full = m * k * n <= measurement["full_verify_max_flops"]

    def verified_run() -> Verification:
        cuda.memset_d32(c_gpu.gpudata, poison_word(out_dtype), c_gpu.size)
        launch()
        cuda.Context.synchronize()  # surfaces launch failures and illegal addresses here, with their message
        if device_reference:
            return _verify_on_device(a_gpu, b_gpu, c_gpu, dtype)
        return verify_on_host(a, b, c_gpu.get(), dtype, full, measurement["sample_rows"], measurement["seed"])

    handle = nvml_handle(device.pci_bus_id())
    before = gpu_state(handle)
    verifications = [verified_run()]
    times = None
    if verifications[0].passed:
        start, end = cuda.Event(), cuda.Event()
        cold = measurement["mode"] == "cold"
        flush = _l2_flusher(cuda, env["l2_bytes"]) if cold else None
        stream_hold = StreamHold(cuda, device_arch(device))

        def elapsed(launches: int) -> float:
            """Seconds for `launches` back-to-back launches, queued behind the hold and timed by events."""
            stream_hold.hold()
            start.record()
            for _ in range(launches):
                launch()
            end.record()
            stream_hold.release()
            return start.time_till(end) / 1e3

        # A sample is a batch of launches long enough for the events' resolution, divided by its size. Cold
        # mode flushes L2 before every sample, so it times one launch at a time.
        batch = 1 if cold else launches_per_sample(elapsed(1), policy.min_launches_per_sample)
        clocks: list[float] = []

        def time_once() -> float:
            seconds = elapsed(batch) / batch
            if handle is not None:
                clocks.append(gpu_state(handle, ("sm_clock_mhz",)).get("sm_clock_mhz", math.nan))
            return seconds

        times = sample(time_once, policy, before_each=flush, launches=batch)
        # Warm-up samples also appended a clock reading; keep those of the timed samples only.
        clocks = clocks[-len(times):] if clocks else []
        verifications.append(verified_run())  # the kernel must still be right after being timed
    state = summarize_state(before, gpu_state(handle), clocks if times else [],
                            measurement["throttle_fraction"])
    return GpuRun(times, verifications, env, state, batch if times else 0)


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


def _l2_flusher(cuda, l2_bytes: int) -> Callable[[], None]:
    """Cold mode: write a buffer twice the L2 size before each sample, evicting A, B and C from L2."""
    words = 2 * l2_bytes // 4
    buf = cuda.mem_alloc(words * 4)

    def flush():
        cuda.memset_d32(buf, 0, words)

    return flush
