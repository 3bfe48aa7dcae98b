import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.core.results import ResultFileError
from matmul_study.pipeline.steps import write_tables
from matmul_study.pipeline.stops import logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    try:
        with logged(snakemake.log[0]):
            write_tables(snakemake.input.runs, snakemake.input.calibration, snakemake.output.results,
                         snakemake.output.summaries, snakemake.params.tables, snakemake.params.pruned,
                         snakemake.output.pruned)
    except ResultFileError:
        # `logged` has printed the one line naming the file (the traceback is in the log): no second one here.
        raise SystemExit(1) from None
