# One job per (method, dtype, block, shape): run, verify against fp64, time, write one JSON.


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
        measurement=config["measurement"],
    # Every core, so that the job runs alone: the host threads of other jobs would slow BLAS down by a
    # different amount in every run. BLAS itself uses config["threads"] of them.
    threads: lambda wildcards: workflow.cores
    conda:
        "../../envs/study.yaml"
    script:
        "../scripts/benchmark.py"


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
        measurement=config["measurement"],
    resources:
        gpu=1,
    conda:
        "../../envs/gpu.yaml"
    script:
        "../scripts/benchmark.py"
