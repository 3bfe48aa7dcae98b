# The GPU matrix-multiplication study: config.yaml -> one job per combination -> tables -> figures -> report.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/compile.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/collate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        get_final_output(),
