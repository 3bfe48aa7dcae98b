"""Device ceilings, measured once per run and per GPU: device-to-device copy bandwidth and cuBLAS's rate per
precision.

These are the roofline's roof and the "% of peak" denominators; a job is divided by the ceilings of the GPU it ran
on (its UUID), so that on a host of several GPUs each job uses its own card's. The cuBLAS rates come from ordinary
verified cuBLAS jobs (same runner, same verification), so a ceiling is never an unverified number: where the study
itself has a verified cuBLAS job at the calibration size on that GPU, its result is the ceiling and nothing is timed
again (ceilings_from_jobs). Each GPU is held through the host's lock pool while it is calibrated, never beside a
benchmark job.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from matmul_study.measure import inputs

from matmul_study.core import dtypes, registry
from matmul_study.core.backends import CUBLAS, module_available
from matmul_study.core.records import CALIBRATION_COLUMNS, gflops
from matmul_study.measure.stats import Measurement, Policy

COPY_BYTES = 4 << 30


def copy_bandwidth(cuda, policy: Policy, nbytes: int = COPY_BYTES) -> tuple[float, str]:
    """Median GB/s of a device-to-device copy, counting bytes read plus bytes written."""
    from matmul_study.measure.stats import sample, summarize

    free, _ = cuda.mem_get_info()
    nbytes = min(nbytes, int(free * 0.4)) // 4 * 4
    src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    cuda.memset_d32(src, 0x3F800000, nbytes // 4)  # ones, not zeros: nothing may shortcut the copy
    start, end = cuda.Event(), cuda.Event()

    def once() -> float:
        start.record()
        cuda.memcpy_dtod(dst, src, nbytes)
        end.record()
        end.synchronize()
        return start.time_till(end) / 1e3

    stats = summarize(sample(once, policy))
    return 2 * nbytes / stats["median_s"] / 1e9, (
        f"cuMemcpyDtoD of {nbytes / 2**30:.1f} GiB, read + write bytes over the median of {stats['reps']} "
        f"copies (rsd {stats['rsd']:.2%})")


def ceilings_from_jobs(records: list[dict], size: int) -> pd.DataFrame:
    """Ceiling rows taken from the study's own cuBLAS results at size^3: each verified one with a burst rate gives
    its GPU's (UUID's) ceiling for its dtype, so that calibration does not time the same GEMM again."""
    rows = []
    for r in records:
        burst = r.get("burst") or {}
        if (r.get("method") != "cublas" or (r.get("m"), r.get("k"), r.get("n")) != (size, size, size)
                or r.get("status") != "passed" or not burst.get("median_s")):
            continue
        env = r.get("env") or {}
        rows.append((env.get("device_name"), env.get("device_uuid"), env.get("device_index"), r["dtype"],
                     gflops(size, size, size, burst["median_s"]), "GFLOP/s",
                     f"cuBLAS {size}^3 through CuPy, burst rate as the jobs' ({burst.get('samples_kept')} of "
                     f"{burst.get('samples_total')} verified samples on the fastest plateau): this study's own job"))
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)


def calibrate(config: dict, size: int = 8192, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ceilings of every GPU this run may use. A scheduler's GPU (CUDA_VISIBLE_DEVICES naming one), or the
    only GPU, is calibrated in this process; several GPUs of the host are calibrated at once, each in a fresh
    process that holds that GPU's lock (CUDA_VISIBLE_DEVICES must be set before CUDA starts). `known`: ceilings
    the study's jobs already measured (ceilings_from_jobs), kept for their GPU instead of being timed again."""
    from matmul_study.measure import gpu_slots

    count = gpu_slots.host_gpu_count()
    listed = gpu_slots.scheduler_devices()
    if gpu_slots.visible_device() is not None or (listed is None and count <= 1):
        with gpu_slots.job_slot(True) as index:
            return calibrate_device(config, size, index, known)
    indices = [gpu_slots.as_device(d) for d in listed] if listed else list(range(count))
    frames = in_fresh_processes(_calibrate_held, [(config, size, count, index, known) for index in indices])
    return pd.concat(frames, ignore_index=True)


def in_fresh_processes(function, argument_tuples: list[tuple]) -> list:
    """function(*args) for each tuple, all at once, each in a fresh (spawned) process; results in order."""
    import concurrent.futures
    import multiprocessing

    with concurrent.futures.ProcessPoolExecutor(len(argument_tuples),
                                                mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(function, *zip(*argument_tuples)))


def _calibrate_held(config: dict, size: int, count: int, index, known: pd.DataFrame | None) -> pd.DataFrame:
    from matmul_study.measure import gpu_slots

    with gpu_slots.acquire_gpu(count, devices=[index]) as held:
        return calibrate_device(config, size, held, known)


def calibrate_device(config: dict, size: int, index, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ceilings of CUDA device 0 of this process (the GPU the caller holds, `index` on the host): its copy
    bandwidth, and cuBLAS's rate in each dtype, taken from `known` where that has this GPU's (UUID's) row."""
    from matmul_study.measure import gpu_job as gpu
    from matmul_study.measure.gpu_device import gpu_uuid, require_pycuda

    cuda = require_pycuda()
    import pycuda.autoprimaryctx

    device = pycuda.autoprimaryctx.device
    ids = (device.name(), gpu_uuid(device), index)
    # A ceiling is a burst rate: no sustained window (the study's jobs at this size measure that state).
    meas = dataclasses.replace(Measurement.from_config(config["measurement"]), sustained_min_size=size + 1)
    rows = []
    bandwidth, detail = copy_bandwidth(cuda, meas.stopping)
    rows.append((*ids, "memory", bandwidth, "GB/s", detail))
    # The study's rows for this GPU, named by this process's index and name for it.
    mine = {} if known is None else {row.ceiling: (*ids, row.ceiling, row.value, row.unit, row.detail)
                                     for row in known[known["device_uuid"] == ids[1]].itertuples()}
    cublas = registry.get("cublas")  # this job's method, resolved once; each dtype's record below likewise
    if module_available(CUBLAS.module):
        for dtype in cublas.dtypes:
            if dtype in mine:
                rows.append(mine[dtype])
                continue
            record = dtypes.get(dtype)
            a, b = inputs.generate(size, size, size, record, meas.seed, meas.low, meas.high)
            run = gpu.run(cublas, record, 0, a, b, meas, None)
            rows.append((*ids, dtype, *cublas_ceiling(run, size)))
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)


def cublas_ceiling(run, size: int) -> tuple[float, str, str]:
    """(value, unit, detail) of a cuBLAS run at size^3: its burst rate, by the same rule as every job's headline
    rate, so that "% of peak" divides burst by burst (an all-sample median sits below the burst rates of the
    jobs at the power limit and put them above 100 %). Without a burst rate, the median of all samples, and the
    detail says so; a run that failed verification gives no ceiling."""
    if not run.times or not all(v.passed for v in run.verifications):
        return np.nan, "GFLOP/s", "cuBLAS failed verification: no ceiling"
    burst = (run.rates or {}).get("burst") or {}
    if burst.get("median_s"):
        return (gflops(size, size, size, burst["median_s"]), "GFLOP/s",
                f"cuBLAS {size}^3 through CuPy, burst rate as the jobs' ({burst['samples_kept']} of "
                f"{burst['samples_total']} verified samples on the fastest plateau)")
    return (gflops(size, size, size, float(np.median(run.times))), "GFLOP/s",
            f"cuBLAS {size}^3 through CuPy, median of all {len(run.times)} verified samples (no burst rate: "
            f"{burst.get('note') or 'not measured'})")
