# The GPU matrix-multiplication study: config.yaml -> one job per combination -> tables -> figures -> report.
from snakemake.utils import min_version

min_version("9.0")

from snakemake.exceptions import WorkflowError

from matmul_study.pipeline.config import ConfigError, check_yaml_syntax

# Snakemake's own message for a YAML syntax error names neither the file nor the line.
try:
    check_yaml_syntax("config.yaml")
except ConfigError as exc:
    raise WorkflowError(f"Invalid configuration: {exc}") from None


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
