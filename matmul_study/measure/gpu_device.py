"""The GPU as a device: is there one, what is it, which arch does it take, and its clocks and power (NVML).

Nothing here launches work. PyCUDA and NVML are imported lazily: a CPU-only install never touches them.
"""

from __future__ import annotations

import re

from matmul_study.core.backends import CPU_ONLY_COMMAND


class GpuUnavailable(RuntimeError):
    """No usable CUDA device or PyCUDA; the message says what is missing and how to run without a GPU."""


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


def compute_capability(arch: str) -> tuple[int, int] | None:
    """(9, 0) for sm_90 or sm_90a; None for "auto"."""
    match = re.fullmatch(r"sm_(\d+?)(\d)a?", arch)
    return (int(match.group(1)), int(match.group(2))) if match else None


def resolve_arch(arch: str) -> str:
    """The config's arch, with "auto" read from GPU 0 where one is usable; "auto" stays where none is (then no
    GPU job can run, and the check before the first one says why)."""
    if arch != "auto":
        return arch
    try:
        return device_arch()
    except GpuUnavailable:
        return "auto"


def hbm_bytes_per_s(cuda, device) -> float | None:
    """The device's memory bandwidth in bytes a second, as its datasheet counts it: the bus width times the memory
    clock, two transfers a clock (an H100 SXM's 5120 bits at 2619 MHz, 3.35 TB/s; an H200's 6144 at 3201 MHz,
    4.9 TB/s): what the FP8 promoted class's rule for its clusters weighs (configs.PROMOTED_SLOW_MEMORY). None where
    the driver does not report either (or reports 0): the heuristics then plan as for an H200."""
    attrs = cuda.device_attribute
    try:
        clock_khz = device.get_attribute(attrs.MEMORY_CLOCK_RATE)
        bus_bits = device.get_attribute(attrs.GLOBAL_MEMORY_BUS_WIDTH)
    except (AttributeError, cuda.Error):  # an attribute this PyCUDA or driver does not know
        return None
    return 2.0 * clock_khz * 1e3 * bus_bits / 8 if clock_khz and bus_bits else None


def device_facts(cuda, device) -> dict:
    """What the per-problem configuration heuristics and launch-time choices plan for on `device`
    (configs.job_problem's keywords): its SM count, its memory bandwidth and its L2's bytes."""
    return {"sm_count": device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT),
            "hbm_bytes_per_s": hbm_bytes_per_s(cuda, device),
            "l2_bytes": device.get_attribute(cuda.device_attribute.L2_CACHE_SIZE)}


def planning_facts() -> dict:
    """GPU 0's device_facts, or none where no GPU is usable (the heuristics then take the registry's defaults)."""
    try:
        cuda = require_pycuda()
        return device_facts(cuda, cuda.Device(0))
    except GpuUnavailable:
        return {}


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
        "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
        # NVML's power_w is a 1 s average on Ampere and later; the instantaneous reading shows within ~0.1 s
        # that a load has stopped (what the cool-down between burst samples waits for).
        "power_instant_w": lambda: _power_instant_w(pynvml, handle),
        # Millijoules since the driver loaded; differences over a window give its energy.
        "energy_mj": lambda: float(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)),
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


def _power_instant_w(pynvml, handle) -> float:
    field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)  # NVML 12.0+; older bindings lack the name
    value = pynvml.nvmlDeviceGetFieldValues(handle, [field])[0]
    if value.nvmlReturn != 0:
        raise RuntimeError("no instantaneous power reading")
    return value.value.uiVal / 1000.0


def gpu_uuid(device) -> str:
    """The GPU's UUID through NVML (stable across reboots and CUDA_VISIBLE_DEVICES), '' without NVML."""
    handle = nvml_handle(device.pci_bus_id())
    if handle is None:
        return ""
    import pynvml

    try:
        uuid = pynvml.nvmlDeviceGetUUID(handle)
    except Exception:
        return ""
    return uuid.decode() if isinstance(uuid, bytes) else str(uuid)


def device_environment(cuda, device) -> dict:
    import pycuda

    from matmul_study.core.backends import CUBLAS, module_available

    major, minor = device.compute_capability()
    env = {
        "device_name": device.name(),
        "device_kind": "gpu",
        "compute_capability": f"{major}.{minor}",
        **device_facts(cuda, device),  # sm_count, hbm_bytes_per_s, l2_bytes
        "memory_bytes": device.total_memory(),
        "driver_version": nvidia_driver_version(),
        # CUDA version the driver supports (e.g. 13000 -> "13.0") and the one PyCUDA was built against.
        "cuda_driver_api": f"{cuda.get_driver_version() // 1000}.{cuda.get_driver_version() % 1000 // 10}",
        "cuda_version": ".".join(map(str, cuda.get_version())),
        "pycuda": pycuda.VERSION_TEXT,
        "cupy": "",
        "device_uuid": gpu_uuid(device),
    }
    if module_available(CUBLAS.module):
        env["cupy"] = cupy_version()
    return env


def cupy_version() -> str:
    """CuPy's version, without importing CuPy where the job has not (0.3 s that a job verified on the host
    need not spend): from its distribution's metadata (cupy, or a wheel built for one CUDA major version)."""
    import sys
    from importlib import metadata

    if "cupy" in sys.modules:
        return sys.modules["cupy"].__version__
    for name in ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "installed (version unknown)"
