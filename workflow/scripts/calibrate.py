from matmul_study.pipeline import write_calibration
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    write_calibration(snakemake.config, snakemake.output[0])
