from matmul_study.pipeline import write_tables
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    write_tables(snakemake.input.runs, snakemake.input.calibration, snakemake.output.results, snakemake.output.summaries,
                 snakemake.params.tables, snakemake.params.pruned, snakemake.output.pruned)
