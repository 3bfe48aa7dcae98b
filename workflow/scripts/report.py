import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study import results
from matmul_study.pipeline import write_report
from matmul_study.scripting import config_as_measured, logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        # The Configuration section states what this run's results were measured with, not only what the
        # config asks for now (e.g. --config threads=2 under --cores 1 still measures with 1 thread).
        config = config_as_measured(dict(snakemake.params.config), [results.read(p) for p in snakemake.input.runs])
        write_report(snakemake.input.results, snakemake.input.summaries, snakemake.params.tables,
                     snakemake.input.pruned, snakemake.input.figures, snakemake.params.figures,
                     snakemake.input.calibration, config, snakemake.output[0])
