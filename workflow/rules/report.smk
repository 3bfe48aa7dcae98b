# The self-contained HTML report: configuration, environment, failures, figures, tables, pruned jobs.
from matmul_study.pipeline import report_inputs, stops


rule report:
    input:
        results="results/tables/results.csv",
        summaries=expand("results/tables/{name}.csv", name=TABLES),
        pruned="results/tables/pruned.csv",
        figures=expand("results/figures/{figure}.png", figure=DRAWN_FIGURES),
        calibration=calibration_files(),
        # This run's own results (not imported ones): the report states the config they were measured with.
        runs=run_files(),
    output:
        "report/report.html",
    log:
        "logs/report.log",
    params:
        config=config,
        tables=TABLES,
        figures=DRAWN_FIGURES,
        figures_left_out=FIGURES_LEFT_OUT,
        # The compile steps' wall times, read where they exist: not inputs, so that a build compiled before its
        # step kept a benchmark file is never compiled again (nor its jobs measured again) to make one.
        compiles=compile_benchmarks(),
    conda:
        "../../envs/study.yaml"
    script:
        "../scripts/report.py"


# Snakemake's own report (--report FILE) needs a finished run of the same config: say so, and what to type.
if report_inputs.report_mode():
    _hint = report_inputs.report_needs_a_finished_run(config, run_files(), settings=workflow.config_settings)
    if _hint:
        stops.fail(_hint)
