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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

LOCK_DIR_ENV = "MATMUL_STUDY_GPU_LOCK_DIR"
# The host's GPU count as the run's Snakemake process found it ("host:count", announce_host_gpus), so that each job
# need not start NVML to count them.
HOST_GPUS_ENV = "MATMUL_STUDY_HOST_GPUS"
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
    return as_device(devices[0])


def as_device(entry: str) -> int | str:
    return int(entry) if entry.isdigit() else entry


def host_gpu_count() -> int:
    """The GPUs of this host: as the run announced them for this host (announce_host_gpus), else from NVML, which
    (unlike cuInit) neither reads nor fixes CUDA_VISIBLE_DEVICES: call it before `acquire_gpu`. 0 where NVML
    (nvidia-ml-py, the driver) is unavailable."""
    host, _, count = os.environ.get(HOST_GPUS_ENV, "").rpartition(":")
    if host == os.uname().nodename and count.isdigit():
        return int(count)
    return _nvml_gpu_count()


def announce_host_gpus() -> int:
    """Count this host's GPUs once (NVML) and say so to the processes this one starts (HOST_GPUS_ENV, with the host's
    name: a job that runs on another host counts its own). The workflow calls it before any job starts."""
    count = _nvml_gpu_count()
    os.environ[HOST_GPUS_ENV] = f"{os.uname().nodename}:{count}"
    return count


def _nvml_gpu_count() -> int:
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


def try_lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on `path`, or None when another open file holds it; the file says who
    holds it (a GPU slot's lock, a measurement worker's)."""
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
                poll_s: float = 0.2, devices: list[int | str] | None = None) -> Iterator[int | str]:
    """Hold one GPU of this host for the block; yields its index on the host.

    Where the device was chosen before the job started (`visible_device()`: Slurm), yields it and takes no lock;
    CUDA_VISIBLE_DEVICES is narrowed to it for the block. Otherwise locks the first free of devices 0 .. count-1
    (count: the GPUs of this host, `host_gpu_count()`), or of the devices CUDA_VISIBLE_DEVICES lists where it
    lists several (count is then not used), and sets CUDA_VISIBLE_DEVICES to it for the block. While all are held
    (by jobs of another run on this host) it waits until one is free, or until `timeout_s` has passed
    (TimeoutError). `devices` narrows the choice to those host indices (the calibration holds each GPU in turn).
    The lock is released when the block ends or the process dies."""
    chosen = visible_device()
    if chosen is not None:
        with _visible(str(chosen)):
            yield chosen
        return
    listed = scheduler_devices()
    candidates = [as_device(d) for d in listed] if listed else list(range(count))
    if devices is not None:
        candidates = [d for d in candidates if d in devices]
    if not candidates:
        raise GpuPoolError(f"no GPU to choose from (count={count})")
    directory = pool_dir(lock_dir)
    _prepare(directory)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        for device in candidates:
            fd = try_lock(lock_path(device, directory))
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


def job_slot(on_gpu: bool):
    """The GPU a job holds for its lifetime: the scheduler's, or the first free one of the host's lock pool, so
    that `--resources gpu=N` on an N-GPU host never puts two jobs on one GPU. CPU jobs hold none; where NVML
    cannot count the GPUs and no scheduler chose, CUDA's device 0 is used as it always was."""
    if not on_gpu:
        return contextlib.nullcontext(None)
    count = host_gpu_count()
    if count == 0 and scheduler_devices() is None:
        return contextlib.nullcontext(None)
    return acquire_gpu(count)


def _held_spans(results) -> "pd.DataFrame | None":
    """The GPU jobs of a results table with their UUID and the span they held their GPU (start, end: UTC), or
    None where the table lacks env_device_uuid or overhead_started_utc / overhead_finished_utc."""
    import pandas as pd

    need = {"env_device_uuid", "overhead_started_utc", "overhead_finished_utc"}
    if not need <= set(results):
        return None
    df = results.dropna(subset=sorted(need)).copy()  # a compact copy: the collated table is built column by column
    return df[df["env_device_uuid"].astype(str) != ""].assign(
        start=lambda d: pd.to_datetime(d["overhead_started_utc"], utc=True, format="ISO8601"),
        end=lambda d: pd.to_datetime(d["overhead_finished_utc"], utc=True, format="ISO8601"))


def shared_gpus(results) -> "pd.DataFrame":
    """Pairs of GPU jobs that ran on the same GPU (device UUID) at overlapping times, from a results table with
    env_device_uuid and overhead_started_utc / overhead_finished_utc (the span in which the job held its GPU).
    Empty when no two jobs shared a GPU; jobs without those columns are left out."""
    import pandas as pd

    from matmul_study.core.results import job_names

    cols = ["device_uuid", "first", "second", "overlap_s"]
    df = _held_spans(results)
    if df is None:
        return pd.DataFrame(columns=cols)
    rows = []
    for uuid, group in df.assign(label=job_names(df)).groupby("env_device_uuid"):
        group = group.sort_values("start")
        latest_end, latest_label = None, None
        for job in group.itertuples():
            if latest_end is not None and job.start < latest_end:
                rows.append((uuid, latest_label, job.label, (min(job.end, latest_end) - job.start).total_seconds()))
            if latest_end is None or job.end > latest_end:
                latest_end, latest_label = job.end, job.label
    return pd.DataFrame(rows, columns=cols)


def gpu_usage(results) -> "pd.DataFrame":
    """Per GPU (UUID): its host index, the jobs it ran, the seconds it was held, and the first and last start."""
    import pandas as pd

    df = _held_spans(results)
    if df is None:
        return pd.DataFrame(columns=["device_uuid", "device_index", "jobs", "held_s", "first_start", "last_end"])
    index = df["env_device_index"] if "env_device_index" in df else pd.Series(None, index=df.index)
    df = df.assign(device_index=index, held_s=(df["end"] - df["start"]).dt.total_seconds())
    return (df.groupby("env_device_uuid")
            .agg(device_index=("device_index", "first"), jobs=("method", "size"), held_s=("held_s", "sum"),
                 first_start=("start", "min"), last_end=("end", "max"))
            .reset_index().rename(columns={"env_device_uuid": "device_uuid"}))
