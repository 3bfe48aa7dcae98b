"""One benchmark job: generate inputs, run the method, verify, time, write one result file.

The job resolves its records once (Job: the method, its variant and the dtype) and hands them down: the input
generation, the CPU and GPU measurements, the launchers and the verification take records, not names. The GPU
job's Problem (configs.job_problem, with the device's facts) comes back with its run, and the configuration fields
of the result (variant_fields) are computed on that same Problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from matmul_study.core import configs, registry, results, specs
from matmul_study.core.records import JobKey, config_hash, gflops
from matmul_study.measure import environment, input_cache
from matmul_study.measure.environment import process_age_s
from matmul_study.measure.stats import Measurement, summarize


@dataclass(frozen=True)
class Job(JobKey, registry.JobRecords):
    """One job of the grid (its key: method, dtype, block, shape and variant, the method's configuration: a registry
    variant, or the default build). Its method, variant and dtype records are resolved here, once, and handed on:
    nothing downstream looks a name up again; an unknown variant raises KeyError naming the method's variants."""

    def problem(self, sm_count: int | None = None, max_shared_bytes: int | None = None) -> specs.Problem:
        """The job as the configuration heuristics and the launchers see it, on a device with `sm_count` SMs and
        `max_shared_bytes` of opt-in shared memory per block (None: the registry Problem's defaults)."""
        return configs.job_problem(self.dtype_record, self.block, self.m, self.k, self.n, sm_count=sm_count,
                                   max_shared_bytes=max_shared_bytes)


def variant_fields(job: Job, config: dict, problem: specs.Problem) -> dict:
    """The result's configuration on `problem` (the job on the device that ran it): the variant that ran, why
    (configs.reason_for: the heuristic's sentence, "forced by config" or "swept"), and the heuristic's pick, which
    the report's configuration regret compares with the fastest variant a sweep measured. The pick is made once
    and gives the reason too. A method that chooses B's L2 policy at launch (specs.Method.stream_b) adds that
    choice to the reason."""
    method = job.method_record
    pick = configs.choose(method, problem)
    setting = config.get("variants", configs.AUTO)
    reason = configs.reason_for(method, problem, setting, job.variant_record.name, pick)
    if method.stream_b is not None:
        reason += "; " + method.stream_b.reason(problem, method.launch_for(problem, job.variant_record.name))
    return {"variant": job.variant_record.name, "variant_reason": reason, "variant_pick": pick.variant}


def _utc_now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def run_job(job: Job, config: dict, output: str, cubin: str | None = None, threads: int | None = None,
            inputs_dir: str | None = None) -> dict:
    """Run one job on the GPU it holds (gpu_slots.job_slot) and write its result file; `threads` (Snakemake's
    grant) defaults to config's threads; `inputs_dir`: where the run's jobs share their large inputs
    (input_cache)."""
    from pathlib import Path

    from matmul_study.measure.gpu_slots import job_slot

    startup_s = process_age_s()  # the job process's start-up: Python, imports, Snakemake's script preamble
    # Before the job waits for a GPU or measures: a result it could not write would waste its whole time.
    results.check_can_write(Path(output).parent)
    t_wait = time.perf_counter()
    with job_slot(job.method_record.on_gpu) as gpu_index:
        waited = {"startup_s": startup_s, "slot_wait_s": time.perf_counter() - t_wait}
        record = _run_job(job, config, output, cubin, threads, gpu_index, inputs_dir, waited)
    return record


@dataclass
class Measured:
    """What measuring a job gave, on the CPU or a GPU."""
    times: list[float] | None  # seconds per launch of each timed sample; None: not timed
    verifications: list
    problem: specs.Problem  # the job on the device that ran it
    launches: int = 1  # back-to-back launches per timed sample (the CPU times one call per sample)
    rates: dict = field(default_factory=dict)  # "burst" and "sustained" (GPU), or "cpu" (the budget's record)
    state: dict = field(default_factory=dict)  # the GPU's clocks, power and throttling
    env: dict = field(default_factory=dict)  # the GPU's environment (device, driver, CUDA)
    steps_s: dict = field(default_factory=dict)  # a GPU job's set-up, checks and timing (gpu_job.GpuRun.steps_s)


def _run_job(job: Job, config: dict, output: str, cubin: str | None, threads: int | None, gpu_index,
             inputs_dir: str | None = None, waited: dict | None = None) -> dict:
    t_start = time.perf_counter()
    started = _utc_now()  # inside the GPU slot: the GPU is this job's from here to `finished`
    meas = Measurement.from_config(config["measurement"])
    if job.method_record.on_gpu:
        from matmul_study.measure.gpu_job import ensure_fits

        ensure_fits(job.method_record, job.dtype_record, job.m, job.k, job.n)
    operands = input_cache.load_or_generate(job.m, job.k, job.n, job.dtype_record, meas.seed, meas.low, meas.high,
                                            inputs_dir)
    t_inputs = time.perf_counter()
    threads = _blas_threads(config, threads)
    env = environment.host_environment(meas.seed, config_hash(config))
    if job.method_record.on_gpu:
        measured = _measure_gpu(job, operands, meas, cubin)
        env.update(measured.env)
        env["device_index"] = gpu_index  # the host's index (NVML order) of the GPU the job held; None: device 0
    else:
        measured = _measure_cpu(job, operands, meas, threads)
    record = _result(job, config, meas, measured, env, threads, operands.quantization)
    # `waited`: the process's start-up and its wait for a GPU slot, before t_start (run_job).
    record["overhead"] = {**(waited or {}), "inputs_s": t_inputs - t_start, "job_s": time.perf_counter() - t_start,
                          "timed_s": record["timing"].get("total_s", 0.0), **measured.steps_s,
                          "started_utc": started, "finished_utc": _utc_now()}
    results.write_atomic(output, record)
    return record


def _blas_threads(config: dict, granted: int | None) -> int:
    """The BLAS threads of a CPU job: config `threads` ("auto": every core this process may use), at most what
    Snakemake granted; the CPU job may be granted every core (so that nothing shares them). `threads: all`: every
    core of the machine, whatever was granted (the job then holds the whole run, so nothing runs beside it)."""
    from matmul_study.measure.cpu_job import resolve_threads

    wanted = resolve_threads(config["threads"])
    if config["threads"] == "all":
        return wanted
    return min(granted, wanted) if granted else wanted


def _measure_cpu(job: Job, operands, meas: Measurement, threads: int) -> Measured:
    from matmul_study.measure import cpu_job as cpu

    # The fresh timing processes rebuild the inputs from this (the same seed gives the same matrices): a name
    # crosses the process boundary, the record does not need to.
    spec = cpu.InputSpec(job.m, job.k, job.n, job.dtype, meas.seed, meas.low, meas.high)
    a, b = operands
    times, verifications, process_medians = cpu.run(a, b, job.dtype_record, meas, threads, spec)
    # What measurement.cpu_max_s did (capped, reps and warm-ups per process, ...), then the processes' medians.
    budget = cpu.last_run_budget()
    if process_medians:
        budget.update({"processes": len(process_medians), "medians_s": process_medians,
                       "spread": cpu.process_spread(process_medians)})
    return Measured(times, verifications, job.problem(), rates={"cpu": budget})


def _measure_gpu(job: Job, operands, meas: Measurement, cubin: str | None) -> Measured:
    from matmul_study.measure import gpu_job as gpu

    a, b = operands
    run = gpu.run(job.method_record, job.dtype_record, job.block, a, b, meas, cubin, variant=job.variant_record,
                  scales=operands.scales)
    return Measured(run.times, run.verifications, run.problem, run.launches_per_sample, run.rates, run.state,
                    run.env, run.steps_s)


def _result(job: Job, config: dict, meas: Measurement, measured: Measured, env: dict, threads: int,
            quantization: dict | None) -> dict:
    """The result record (the overhead is added by the caller, last, so that it covers this too)."""
    on_gpu = job.method_record.on_gpu
    times, rates, launches = measured.times, measured.rates, measured.launches
    passed = all(v.passed for v in measured.verifications)
    timing = summarize(times, launches) if times else {"reps": 0}
    all_samples = gflops(job.m, job.k, job.n, timing["median_s"]) if passed and times else None
    if passed and "cpu" in rates:  # the median of the fresh processes' medians
        all_samples = gflops(job.m, job.k, job.n, float(np.median(rates["cpu"]["medians_s"])))
    burst = rates.get("burst")
    if burst is not None:
        burst["gflops"] = gflops(job.m, job.k, job.n, burst["median_s"]) if passed and burst["median_s"] else None
    timing.update({"warmup": meas.stopping.warmup, "mode": meas.mode if on_gpu else "hot",
                   "noise_target": meas.stopping.noise_target, "launches_per_sample": launches})
    return {
        "schema_version": results.SCHEMA_VERSION,
        "method": job.method, "dtype": job.dtype, "block": job.block, "m": job.m, "k": job.k, "n": job.n,
        **variant_fields(job, config, measured.problem),
        "threads": threads if not on_gpu else 1,
        "status": "passed" if passed else "failed",
        # The headline rate: a GPU job's burst rate (full-clock samples only), the CPU's median.
        "gflops": burst["gflops"] if burst is not None else all_samples,
        "rate": "burst" if burst is not None else "median",
        "gflops_all_samples": all_samples,
        "timing": timing,
        "burst": burst or {},
        "sustained": rates.get("sustained", {}),
        "cpu": rates.get("cpu", {}),
        # The worst of the checks (before and after timing) is the one reported.
        "verification": max((v.as_dict() for v in measured.verifications),
                            key=lambda v: (not v["passed"], v["rel_fro_error"])),
        # A scaled dtype's inputs: their scales and the error that rounding them to 8 bits puts into the product.
        "quantization": quantization or {},
        "gpu": measured.state,
        "env": env,
    }
