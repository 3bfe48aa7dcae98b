"""What a job holds of the host: the cores a numpy job is granted and the BLAS threads it uses (with GPU jobs
beside it), and the check, before any job, that every pending job fits in the host's memory."""

from __future__ import annotations

import json
import os


def _granted_cores(workflow) -> int | None:
    """--cores, or None in modes that run nothing (--report and the like: Snakemake raises a WorkflowError)."""
    try:
        return workflow.cores
    except Exception:
        return None


def gpu_slots(workflow) -> int:
    """The run's GPU slots (--resources gpu=N, or default_slots'), 0 where it has none."""
    slots = workflow.global_resources.get("gpu")
    return int(getattr(slots, "value", slots) or 0)  # Snakemake 9 wraps it in a Resource


def cpu_job_cores(workflow) -> int:
    """The cores a numpy job holds on this host: every core but one per GPU slot (--resources gpu=N). The N GPU
    jobs, one core each, run beside it on cores BLAS does not use, and nothing else does; with no GPU slots, or
    under a cluster executor, every core."""
    cores = _granted_cores(workflow)
    if cores is None:
        return 1
    if not workflow.local_exec or workflow.remote_exec:
        return cores  # a cluster executor: the job has a node of its own (see the Slurm profile), GPU jobs others
    return max(1, cores - gpu_slots(workflow))


def one_core_host(workflow) -> bool:
    """--cores 1 on this host. Snakemake selects no job while one holds its only core, so there the jobs that run
    beside each other hold none: a GPU job mostly waits for its GPU, and a compile beside it would otherwise keep
    the GPU idle until the compile ended. Slots (default_slots) keep each kind apart instead: one GPU job and one
    compile at a time."""
    return _granted_cores(workflow) == 1 and workflow.local_exec and not workflow.remote_exec


def slot_job_threads(workflow) -> int:
    """The cores a GPU job or a compile holds of the run: one; none under --cores 1 on this host (one_core_host),
    where its slot keeps its kind apart (default_slots). A numpy job then holds the compile slot (compile_slots),
    so that no compile runs beside it, and the core and GPU slots only where the machine has no core for their
    jobs (numpy_beside_gpu_jobs)."""
    return 0 if one_core_host(workflow) else 1


def compile_slots(workflow) -> int:
    """The compile slots a compile holds (and a numpy job, so that no compile runs beside it): one under --cores 1
    on this host, else none (there the cores keep compiles apart)."""
    return 1 if one_core_host(workflow) else 0


def default_slots(workflow) -> None:
    """Under --cores 1 on this host (one_core_host), one GPU slot (as --resources gpu=1) and one compile slot (as
    --resources compile=1) where the command named none: GPU jobs and compiles hold no core there, and the slots
    keep two GPU jobs from timing each other and two compiles from sharing the core."""
    if not one_core_host(workflow):
        return
    from snakemake.resources import Resource

    for name in ("gpu", "compile"):
        if name not in workflow.global_resources:
            workflow.global_resources[name] = Resource(name, 1)  # as Snakemake stores --resources NAME=1


def machine_cores() -> int:
    """The machine's logical cores this process may run on (the numpy job's own count: cpu_job.resolve_threads)."""
    from matmul_study.measure.cpu_job import resolve_threads

    return resolve_threads("all")


def blas_threads(config: dict, workflow) -> int:
    """The BLAS threads a numpy job uses: every core it holds (config `threads: auto`, the default), or config
    `threads`, at most the cores it holds (run_job takes the same minimum); `threads: all`, every core of the
    machine (the job then holds the whole run: cpu_job_cores, cpu_job_gpu_slots). Without --cores (nothing runs)
    the config's number, or 1 for auto."""
    asked = config["threads"]
    if asked == "all":
        return machine_cores()
    if _granted_cores(workflow) is None:
        return 1 if asked == "auto" else asked
    held = cpu_job_cores(workflow)
    return held if asked == "auto" else min(asked, held)


def numpy_beside_gpu_jobs(config: dict, workflow) -> bool:
    """Under --cores 1 on this host (one_core_host), whether a numpy job runs beside the GPU jobs: where the
    machine has a core for its BLAS thread and one for each GPU slot's job, as with more cores, so that the GPU
    does not idle while numpy runs. It then holds no core of the run either: Snakemake starts no job while one
    holds its only core. The compile slot (compile_slots) keeps compiles and other numpy jobs from beside it."""
    if config["threads"] == "all" or not one_core_host(workflow):
        return False
    return machine_cores() >= blas_threads(config, workflow) + gpu_slots(workflow)


def cpu_job_threads(config: dict, workflow) -> int:
    """The cores a numpy job holds of the run (the rule's threads): cpu_job_cores, or with `threads: all` every
    core the run was given, so that no other job runs beside it; none where it runs beside the GPU jobs under
    --cores 1 (numpy_beside_gpu_jobs)."""
    if config["threads"] == "all":
        return _granted_cores(workflow) or 1
    return 0 if numpy_beside_gpu_jobs(config, workflow) else cpu_job_cores(workflow)


def cpu_job_gpu_slots(config: dict, workflow) -> int:
    """The GPU slots a numpy job holds: none, or with `threads: all` every slot of --resources gpu=N, so that no GPU
    job (nor its core) runs beside a CPU line that uses the whole machine. Under --cores 1 on this host, where GPU
    jobs hold no core (slot_job_threads), none where the machine has cores for them (numpy_beside_gpu_jobs), else
    every slot, so that no GPU job runs on the core the numpy job uses."""
    if config["threads"] == "all" or (one_core_host(workflow) and not numpy_beside_gpu_jobs(config, workflow)):
        return gpu_slots(workflow)
    return 0


def host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def host_bytes_needed(m: int, k: int, n: int, dtype: str, on_gpu: bool) -> int:
    """A lower bound on the host memory one job needs: its inputs A and B, float64 copies of them for the
    reference, and for a CPU job its output C twice (the verified run's and the timed run's)."""
    from matmul_study.core import dtypes

    record = dtypes.get(dtype)
    need = (m * k + k * n) * (record.itemsize + 8)
    if not on_gpu:
        need += 2 * m * n * record.output.itemsize
    return need


def _size_key(config: dict, m: int, k: int, n: int) -> tuple[str, object]:
    from matmul_study.pipeline.config import parse_size

    for i, entry in enumerate(config["sizes"]):
        shape = parse_size(entry)
        if (shape.m, shape.k, shape.n) == (m, k, n):
            return f"sizes[{i}]", entry
    return "sizes", f"{m}x{k}x{n}"


def _gib(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB" if x < 2**40 else f"{x / 2**40:,.2f} TiB"


def check_host_memory(config: dict, jobs, memory: int | None = None) -> None:
    """Stop before any job when a job cannot fit in this machine's memory: names the size's config key, its
    value, what the job needs and the limit."""
    from matmul_study.core import registry
    from matmul_study.pipeline.config import ConfigError

    memory = host_memory_bytes() if memory is None else memory
    if not memory:
        return
    worst = None
    for job in jobs.itertuples():
        need = host_bytes_needed(job.m, job.k, job.n, job.dtype, registry.get(job.method).on_gpu)
        if need > memory and (worst is None or need > worst[0]):
            worst = (need, job)
    if worst is None:
        return
    need, job = worst
    key, value = _size_key(config, job.m, job.k, job.n)
    raise ConfigError(
        f"config key '{key}': value {json.dumps(value)} is too large for this machine: the {job.method} "
        f"{job.dtype} job at {job.m}x{job.k}x{job.n} needs at least {_gib(need)} of host memory (inputs, their "
        f"float64 copies for verification and the output), and this machine has {_gib(memory)}; allowed: sizes "
        f"whose jobs fit in {_gib(memory)}.")
