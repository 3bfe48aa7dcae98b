from matmul_study.pipeline import write_figure
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    write_figure(snakemake.wildcards.figure, snakemake.input.results, snakemake.input.calibration, snakemake.output.png, snakemake.output.svg)
