# Compile each CUDA kernel instance to a cubin once; benchmark jobs load it. A registry variant of a method is a
# build of its own (its -D definitions), named after it; the default build keeps the plain name.


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
    conda:
        "../../envs/gpu.yaml"
    script:
        "../scripts/compile_kernel.py"


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
