# One job per (method, dtype, block, shape): run, verify against fp64, time, write one JSON. Both rules run the same
# plain command (common.smk's benchmark_command, workflow/scripts/benchmark_job.py).
import sys

from matmul_study.pipeline import recovery, resources, stops

# After a crash or a stop (Snakemake killed or told to stop, in any rule), remove the locks, temporary files and
# incomplete flags of outputs written whole that it left, where no Snakemake process or job of a run in this
# directory is still alive: the same command resumes.
for _left in recovery.clear_stale_locks():
    print(f"Removed {_left}, left by a run that is no longer running.", file=sys.stderr)

# A result file that is cut short, has the wrong fields or holds another job's result is set aside (renamed, with a
# line saying why) before Snakemake plans, so that this run measures its job again instead of collating it.
from matmul_study.pipeline.result_check import set_aside_bad_results

for _line in set_aside_bad_results(zip(run_files(), JOBS[grid.GRID_COLUMNS].to_dict("records"))):
    print(_line, file=sys.stderr)

# Stop before any job when a pending job cannot fit in this machine's memory.
try:
    resources.check_host_memory(
        config, JOBS[[not Path(f).exists() for f in run_files()]].reset_index(drop=True)
    )
except study_config.ConfigError as exc:
    stops.fail(f"Invalid configuration: {exc}")


rule benchmark_cpu:
    output:
        f"results/runs/{RUN_PATTERN}.json",
    log:
        f"logs/runs/{RUN_PATTERN}.log",
    benchmark:
        f"results/benchmarks/{RUN_PATTERN}.tsv"
    wildcard_constraints:
        method="|".join(CPU_METHODS),
    params:
        # What the jobs measure with: Snakemake reruns a job whose params changed. measured_settings leaves out the
        # keys that only choose the process a job runs in (measurement.worker).
        measurement=measured_settings(config["measurement"]),
        # numpy's BLAS threads (every core the job holds, or config threads, at most that): a param, so that
        # changing either reruns the CPU jobs (Snakemake's default rerun triggers include params).
        threads=lambda wildcards: resources.blas_threads(config, workflow),
    # Every core but one per GPU slot: CPU steps would slow BLAS down by a different amount in every run, so
    # none runs beside it; the GPU jobs (one core each) do, so that the GPUs do not idle while numpy runs. Under
    # --cores 1 the same where the machine has a core for each GPU job. With `threads: all`, every core and GPU
    # slot: the job uses the whole machine, and nothing runs beside it.
    threads: lambda wildcards: resources.cpu_job_threads(config, workflow)
    resources:
        gpu=lambda wildcards: resources.cpu_job_gpu_slots(config, workflow),
        compile=resources.compile_slots(workflow),  # under --cores 1, no compile beside it either
    conda:
        "../../envs/study.yaml"
    shell:
        benchmark_command("--cpu")


rule benchmark_gpu:
    input:
        cubin=cubin_for,
    output:
        f"results/runs/{RUN_PATTERN}.json",
    log:
        f"logs/runs/{RUN_PATTERN}.log",
    benchmark:
        f"results/benchmarks/{RUN_PATTERN}.tsv"
    wildcard_constraints:
        method="|".join(GPU_METHODS),
    params:
        measurement=measured_settings(config["measurement"]),
    threads: resources.slot_job_threads(workflow)  # none under --cores 1: a compile runs beside the GPU job
    resources:
        gpu=1,
    conda:
        "../../envs/gpu.yaml"
    shell:
        benchmark_command("--cubin={input.cubin:q}")
