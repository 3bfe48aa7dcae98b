# Compile each CUDA kernel instance to a cubin once; benchmark jobs load it.


rule compile_kernel:
    input:
        source=lambda wc: REPO / "kernels" / registry.get(wc.method).source,
    output:
        cubin="results/kernels/{arch}/{method}/{dtype}_b{block}.cubin",
    log:
        "logs/compile/{arch}/{method}_{dtype}_b{block}.log",
    wildcard_constraints:
        method="|".join(COMPILED_METHODS),
    params:
        arch=lambda wc: wc.arch,
    conda:
        "../../envs/gpu.yaml"
    script:
        "../scripts/compile_kernel.py"
