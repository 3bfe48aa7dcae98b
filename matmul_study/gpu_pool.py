"""Which GPU a job uses: the one a scheduler gave it, or the first free one of a small lock pool on the host.

A scheduler (Slurm with `--gpus`, or any that sets CUDA_VISIBLE_DEVICES to the job's device) has already chosen:
the job uses that device, and no lock is taken. Otherwise several jobs of one host (Snakemake with
`--resources gpu=N`) share the host's GPUs through one lock file per device in a lock folder: a job holds an
exclusive `flock` on the file of its device for as long as it runs. The kernel releases the lock when the process
ends in any way (a crash, SIGKILL, the OOM killer), so a dead job never keeps a GPU. Where the user limited the
run to some GPUs (CUDA_VISIBLE_DEVICES=2,3 snakemake ...), the pool chooses among those.

Call `acquire_gpu` before anything initialises CUDA in the process (pycuda's `cuda.init()`, a CuPy array): inside
it CUDA_VISIBLE_DEVICES names only the chosen device, so that device is CUDA device 0 of the process and of its
children, and the index it yields is the device's index on the host (NVML's index).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_DIR_ENV = "MATMUL_STUDY_GPU_LOCK_DIR"
DEFAULT_LOCK_DIR = Path("/tmp/matmul_study_gpus")


class GpuPoolError(RuntimeError):
    pass


def pool_dir(path: str | os.PathLike | None = None) -> Path:
    """The lock folder: `path`, else $MATMUL_STUDY_GPU_LOCK_DIR, else /tmp/matmul_study_gpus. It must be on a
    local file system of the host whose GPUs it guards (flock on a network file system may not exclude)."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR)


def scheduler_devices() -> list[str] | None:
    """The devices a scheduler gave this job (CUDA_VISIBLE_DEVICES, split at commas), or None when it is unset."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return [d.strip() for d in value.split(",") if d.strip()]


def visible_device() -> int | str | None:
    """The device chosen for this job before it started, or None when the lock pool must choose.

    Chosen: CUDA_VISIBLE_DEVICES names one device (what Slurm sets for a job that asked for one GPU), or names
    several inside a Slurm job (SLURM_JOB_ID set: the job owns all of them; the first is used). The device is
    returned as an int when it is an index, as the string when it is a UUID (GPU-..., MIG-...). None when
    CUDA_VISIBLE_DEVICES is unset, or names several devices outside a scheduler (a user limiting the run to some
    GPUs: the pool chooses among those). Raises GpuPoolError when it is set but names no device."""
    devices = scheduler_devices()
    if devices is None:
        return None
    if not devices or devices[0] == "-1":
        raise GpuPoolError(f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r} names no GPU: the scheduler "
                           "gave this job none (ask for one, e.g. the gpu resource)")
    if len(devices) > 1 and not os.environ.get("SLURM_JOB_ID"):
        return None
    return _as_device(devices[0])


def _as_device(entry: str) -> int | str:
    return int(entry) if entry.isdigit() else entry


def host_gpu_count() -> int:
    """The GPUs of this host, from NVML, which (unlike cuInit) neither reads nor fixes CUDA_VISIBLE_DEVICES: call it
    before `acquire_gpu`. 0 where NVML (nvidia-ml-py, the driver) is unavailable."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def lock_path(index: int | str, directory: str | os.PathLike | None = None) -> Path:
    return pool_dir(directory) / f"gpu{index}.lock"


def holder(index: int | str, directory: str | os.PathLike | None = None) -> str | None:
    """What the lock file of device `index` says about its last holder ("pid 123 on host"), or None; for messages.
    The file outlives its holder: only a failed flock shows that the device is taken."""
    try:
        return lock_path(index, directory).read_text().strip() or None
    except OSError:
        return None


def _try_lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on `path`, or None when another open file holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    with contextlib.suppress(OSError):  # who holds it, for humans and `holder`
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename} since {time.strftime('%Y-%m-%dT%H:%M:%S')}\n"
                  .encode(), 0)
    return fd


def _prepare(directory: Path) -> None:
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # every user's jobs share the host's GPUs
            directory.chmod(0o1777)


@contextlib.contextmanager
def _visible(device: str) -> Iterator[None]:
    """CUDA_VISIBLE_DEVICES=device (in PCI bus order, NVML's) for the block; the previous values after it."""
    saved = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.environ["CUDA_VISIBLE_DEVICES"] = device
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def acquire_gpu(count: int, lock_dir: str | os.PathLike | None = None, *, timeout_s: float | None = None,
                poll_s: float = 0.2) -> Iterator[int | str]:
    """Hold one GPU of this host for the block; yields its index on the host.

    Where the device was chosen before the job started (`visible_device()`: Slurm), yields it and takes no lock;
    CUDA_VISIBLE_DEVICES is narrowed to it for the block. Otherwise locks the first free of devices 0 .. count-1
    (count: the GPUs of this host, `host_gpu_count()`), or of the devices CUDA_VISIBLE_DEVICES lists where it
    lists several (count is then not used), and sets CUDA_VISIBLE_DEVICES to it for the block. While all are held
    (by jobs of another run on this host) it waits until one is free, or until `timeout_s` has passed
    (TimeoutError). The lock is released when the block ends or the process dies."""
    chosen = visible_device()
    if chosen is not None:
        with _visible(str(chosen)):
            yield chosen
        return
    listed = scheduler_devices()
    candidates = [_as_device(d) for d in listed] if listed else list(range(count))
    if not candidates:
        raise GpuPoolError(f"no GPU to choose from (count={count})")
    directory = pool_dir(lock_dir)
    _prepare(directory)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        for device in candidates:
            fd = _try_lock(lock_path(device, directory))
            if fd is not None:
                try:
                    with _visible(str(device)):
                        yield device
                finally:
                    os.close(fd)  # releases the flock
                return
        if deadline is not None and time.monotonic() >= deadline:
            held = "; ".join(f"GPU {d}: {holder(d, directory) or 'held'}" for d in candidates)
            raise TimeoutError(f"all {len(candidates)} GPU(s) of this host stayed held for {timeout_s} s ({held}); "
                               f"lock folder {directory}")
        time.sleep(poll_s)
