import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.pipeline.steps import write_figures
from matmul_study.pipeline.stops import logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        write_figures(snakemake.params.names, snakemake.input.results, snakemake.input.calibration,
                      snakemake.output.png, snakemake.output.svg, processes=snakemake.threads)
