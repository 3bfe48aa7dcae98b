# Compile each CUDA kernel instance to a cubin once; benchmark jobs load it. A registry variant of a method is a
# build of its own (its -D definitions), named after it; the default build keeps the plain name.
#
# A compile is a plain command (workflow/scripts/compile_job.py, common.smk's compile_command), not a `script:`,
# for the reason the GPU job is one: it starts without loading Snakemake's modules.
#
# Under --cores 1 a compile holds no core but the compile slot (resources.one_core_host): Snakemake starts no job
# while one holds its only core, so a compile that held it would keep the GPU idle from the end of one GPU job to
# the end of the compile. A numpy job holds the compile slot too (no compile beside it), so compiles go first
# (priority): a numpy job that took the slot while cubins were missing would keep the GPU idle for its minute.


rule compile_kernel:
    input:
        source=kernel_source,
        includes=kernel_includes,
    output:
        cubin="results/kernels/{arch}/{method}/{dtype}_b{block}.cubin",
    log:
        "logs/compile/{arch}/{method}_{dtype}_b{block}.log",
    # Its wall time, for the report's account of where the study's time went.
    benchmark:
        "results/benchmarks/compile/{arch}/{method}/{dtype}_b{block}.tsv"
    wildcard_constraints:
        method="|".join(COMPILED_METHODS),
    params:
        arch=lambda wc: wc.arch,
        recipe=build_recipe,
        build=build_words,
    threads: resources.slot_job_threads(workflow)
    resources:
        compile=resources.compile_slots(workflow),
    priority: 1
    conda:
        "../../envs/gpu.yaml"
    shell:
        compile_command()


# A registry variant's build: the same step, its cubin, log and wall time named after the variant too.
use rule compile_kernel as compile_kernel_variant with:
    output:
        cubin="results/kernels/{arch}/{method}/{dtype}_b{block}_{variant}.cubin",
    log:
        "logs/compile/{arch}/{method}_{dtype}_b{block}_{variant}.log",
    benchmark:
        "results/benchmarks/compile/{arch}/{method}/{dtype}_b{block}_{variant}.tsv"
    wildcard_constraints:
        method="|".join(COMPILED_METHODS),
        variant=one_of(VARIANT_NAMES),
