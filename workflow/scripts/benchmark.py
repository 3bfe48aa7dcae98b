import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.core import registry
from matmul_study.measure import input_cache
from matmul_study.pipeline import job_script

# The CPU job times numpy in fresh "spawn" processes, which import this file as __mp_main__: only the job itself
# (run as __main__) may touch the `snakemake` object.
if __name__ == "__main__":
    on_gpu = registry.get(snakemake.wildcards.method).on_gpu
    job_script.run(snakemake.output[0], snakemake.log[0], snakemake.wildcards, snakemake.config,
                   snakemake.params.measurement, on_gpu=on_gpu, cubin=snakemake.input.get("cubin") or None,
                   threads=snakemake.threads, inputs_dir=input_cache.RUN_DIRECTORY)
