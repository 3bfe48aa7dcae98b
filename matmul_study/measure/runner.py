"""One benchmark job: generate inputs, run the method, verify, time, write one result file."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from matmul_study.measure import environment, input_cache

from matmul_study.core import configs, dtypes, registry, results, specs
from matmul_study.core.records import config_hash
from matmul_study.core.records import gflops
from matmul_study.measure.stats import Measurement, summarize


@dataclass(frozen=True)
class Job:
    """One job of the grid. Its method, variant and dtype records are resolved here, once, and handed on: nothing
    downstream looks a name up again. `variant` names the method's configuration (a registry variant, or the
    default build); an unknown name raises KeyError naming the method's variants."""
    method: str
    dtype: str
    block: int
    m: int
    k: int
    n: int
    variant: str = configs.DEFAULT
    method_record: specs.Method = field(init=False, repr=False, compare=False)
    variant_record: specs.Variant = field(init=False, repr=False, compare=False)
    dtype_record: dtypes.DType = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "method_record", registry.get(self.method))
        object.__setattr__(self, "variant_record", self.method_record.variant(self.variant))
        object.__setattr__(self, "dtype_record", dtypes.get(self.dtype))

    @classmethod
    def from_wildcards(cls, wc) -> "Job":
        """From a result path's wildcards; paths without a variant (older workflows) are the default build."""
        return cls(wc["method"], wc["dtype"], int(wc["block"]), int(wc["m"]), int(wc["k"]), int(wc["n"]),
                   wc.get("variant") or configs.DEFAULT)

    def problem(self, sm_count: int | None = None) -> specs.Problem:
        """The job as the configuration heuristics see it, on a device with `sm_count` SMs (None: the registry
        Problem's default)."""
        extra = {"sm_count": int(sm_count)} if sm_count else {}
        return specs.Problem(self.m, self.n, self.k, self.block, self.dtype_record, **extra)


def variant_fields(job: Job, config: dict, sm_count: int | None) -> dict:
    """The result's configuration: the variant that ran, why (configs.reason_for: the heuristic's sentence on the
    device that ran it, "forced by config" or "swept"), and the heuristic's pick for the same problem and device,
    which the report's configuration regret compares with the fastest variant a sweep measured."""
    problem = job.problem(sm_count)
    setting = config.get("variants", configs.AUTO)
    return {"variant": job.variant_record.name,
            "variant_reason": configs.reason_for(job.method_record, problem, setting, job.variant_record.name),
            "variant_pick": configs.choose(job.method_record, problem).variant}


def _utc_now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def run_job(job: Job, config: dict, output: str, cubin: str | None = None, threads: int | None = None,
            inputs_dir: str | None = None) -> dict:
    """Run one job on the GPU it holds (gpu_pool.job_slot) and write its result file; `threads` (Snakemake's grant)
    defaults to config's threads; `inputs_dir`: where the run's jobs share their large inputs (input_cache)."""
    from matmul_study.measure.gpu_slots import job_slot

    with job_slot(job.method_record.on_gpu) as gpu_index:
        record = _run_job(job, config, output, cubin, threads, gpu_index, inputs_dir)
    return record


def _run_job(job: Job, config: dict, output: str, cubin: str | None, threads: int | None, gpu_index,
             inputs_dir: str | None = None) -> dict:
    t_start = time.perf_counter()
    started = _utc_now()  # inside the GPU slot: the GPU is this job's from here to `finished`
    method, dtype = job.method_record, job.dtype_record
    meas = Measurement.from_config(config["measurement"])
    if method.on_gpu:
        from matmul_study.measure.gpu_job import ensure_fits

        ensure_fits(method, dtype, job.m, job.k, job.n)
    operands = input_cache.load_or_generate(job.m, job.k, job.n, dtype, meas.seed, meas.low, meas.high, inputs_dir)
    a, b = operands
    t_inputs = time.perf_counter()

    # The CPU job may be granted every core (so that nothing shares them); BLAS uses the configured threads.
    from matmul_study.measure.cpu_job import resolve_threads

    wanted = resolve_threads(config["threads"])  # "auto": every core this process may use
    threads = min(threads, wanted) if threads else wanted
    env = environment.host_environment(meas.seed, config_hash(config))
    state, launches, rates = {}, 1, {}  # the CPU times one call per sample
    if not method.on_gpu:
        from matmul_study.measure import cpu_job as cpu

        spec = cpu.InputSpec(job.m, job.k, job.n, job.dtype, meas.seed, meas.low, meas.high)
        times, verifications, process_medians = cpu.run(a, b, dtype, meas, threads, spec)
        # What measurement.cpu_max_s did (capped, reps and warm-ups per process, ...), then the processes' medians.
        rates["cpu"] = cpu.last_run_budget()
        if process_medians:
            rates["cpu"].update({"processes": len(process_medians), "medians_s": process_medians,
                                 "spread": cpu.process_spread(process_medians)})
    else:
        from matmul_study.measure import gpu_job as gpu

        run = gpu.run(method, dtype, job.block, a, b, meas, cubin, variant=job.variant_record.name,
                      scales=operands.scales)
        times, verifications, state, launches = run.times, run.verifications, run.state, run.launches_per_sample
        rates = run.rates
        env.update(run.env)
        env["device_index"] = gpu_index  # the host's index (NVML order) of the GPU the job held; None: device 0
    passed = all(v.passed for v in verifications)
    timing = summarize(times, launches) if times else {"reps": 0}
    all_samples = gflops(job.m, job.k, job.n, timing["median_s"]) if passed and times else None
    if passed and "cpu" in rates:  # the median of the fresh processes' medians
        all_samples = gflops(job.m, job.k, job.n, float(np.median(rates["cpu"]["medians_s"])))
    burst = rates.get("burst")
    if burst is not None:
        burst["gflops"] = gflops(job.m, job.k, job.n, burst["median_s"]) if passed and burst["median_s"] else None
    timing.update({"warmup": meas.stopping.warmup, "mode": meas.mode if method.on_gpu else "hot",
                   "noise_target": meas.stopping.noise_target, "launches_per_sample": launches})
    record = {
        "schema_version": results.SCHEMA_VERSION,
        "method": job.method, "dtype": job.dtype, "block": job.block, "m": job.m, "k": job.k, "n": job.n,
        **variant_fields(job, config, env.get("sm_count")),
        "threads": threads if not method.on_gpu else 1,
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
        "verification": max((v.as_dict() for v in verifications), key=lambda v: (not v["passed"], v["rel_fro_error"])),
        # A scaled dtype's inputs: their scales and the error that rounding them to 8 bits puts into the product.
        "quantization": operands.quantization or {},
        "gpu": state,
        "env": env,
        "overhead": {"inputs_s": t_inputs - t_start, "job_s": time.perf_counter() - t_start,
                     "timed_s": timing.get("total_s", 0.0), "started_utc": started, "finished_utc": _utc_now()},
    }
    results.write_atomic(output, record)
    return record
