# The GPU matrix-multiplication study: config.yaml -> one job per combination -> tables -> figures -> report.
from snakemake.utils import min_version

min_version("9.0")

from matmul_study.pipeline.config import ConfigError, check_config_file, check_yaml_syntax
from matmul_study.pipeline.stops import fail

# Snakemake's own message for a YAML syntax error names neither the file nor the line, and it keeps the last of a
# key given twice. It reads --configfile files before this file runs (a syntax error there is its message; add
# --verbose to see the line); their keys given twice are caught here.
for _path in ["config.yaml", *workflow.overwrite_configfiles]:
    try:
        check_yaml_syntax(_path)
        check_config_file(_path)
    except ConfigError as exc:
        fail(f"Invalid configuration: {exc}")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/compile.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/collate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


# The results are targets too: a deleted result is measured again by the plain command (otherwise Snakemake would
# keep the newer report and tables as they are).
# So are the tables: a deleted table is written again (Snakemake rebuilds a missing input of an up-to-date report
# only when asked for it).
rule all:
    input:
        get_final_output(),
        run_files(),
        "results/tables/results.csv",
        expand("results/tables/{name}.csv", name=TABLES),
        "results/tables/pruned.csv",
