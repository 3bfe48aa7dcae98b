from matmul_study.kernels import compile_cubin
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    w = snakemake.wildcards
    compile_cubin(w.method, w.dtype, int(w.block), snakemake.params.arch, snakemake.output.cubin)
