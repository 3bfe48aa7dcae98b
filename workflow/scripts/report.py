from matmul_study.pipeline import write_report
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    write_report(snakemake.input.results, snakemake.input.summaries, snakemake.params.tables,
                 snakemake.input.pruned, snakemake.input.figures, snakemake.params.figures,
                 snakemake.input.calibration, snakemake.params.config, snakemake.output[0])
