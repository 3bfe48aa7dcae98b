# Compile each CUDA kernel instance to a cubin once; benchmark jobs load it.


rule compile_kernel:
    input:
        source=lambda wc: REPO / "kernels" / registry.get(wc.method).source,
    output:
        cubin="results/kernels/{method}/{dtype}_b{block}.cubin",
    log:
        "logs/compile/{method}_{dtype}_b{block}.log",
    params:
        arch=config["arch"],
    conda:
        "../../envs/gpu.yaml"
    script:
        "../scripts/compile_kernel.py"
