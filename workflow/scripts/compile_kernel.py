import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.launch.kernels import compile_cubin
from matmul_study.measure.gpu_device import device_arch
from matmul_study.pipeline.stops import logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        w = snakemake.wildcards
        arch = device_arch() if snakemake.params.arch == "auto" else snakemake.params.arch
        # compile_kernel_variant's cubins carry the variant; compile_kernel's are the default build.
        compile_cubin(w.method, w.dtype, int(w.block), arch, snakemake.output.cubin, variant=w.get("variant"))
