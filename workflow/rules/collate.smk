# All result files (this machine's and imported ones) -> the tidy table and the summary tables.


rule calibrate:
    # The study's cuBLAS results at the calibration size are ceilings already: calibration reuses them (and so
    # runs after them) and times cuBLAS only in the dtypes they leave out.
    input:
        jobs=calibration_job_files,
    output:
        report(
            "results/tables/calibration.csv",
            caption="../report/calibration.rst",
            category="Tables",
        ),
    log:
        "logs/calibrate.log",
    params:
        measurement=measured_settings(config["measurement"]),
    # Counts one GPU, but measures every GPU of the host, each while holding its lock (matmul_study.measure.gpu_slots): it
    # only ever waits for a GPU a benchmark job holds, never shares one.
    resources:
        gpu=1,
    conda:
        "../../envs/gpu.yaml"
    script:
        "../scripts/calibrate.py"


TABLES = ["best", "speedup", "blocks", "float_vs_double"]


rule collate:
    input:
        runs=run_files() + IMPORTED_RUNS,
        calibration=calibration_files(),
    output:
        results=report(
            "results/tables/results.csv",
            caption="../report/results.rst",
            category="Tables",
        ),
        summaries=[
            report(
                f"results/tables/{name}.csv",
                caption="../report/summary.rst",
                category="Tables",
            )
            for name in TABLES
        ],
        pruned="results/tables/pruned.csv",
    log:
        "logs/collate.log",
    params:
        pruned=PRUNED.to_dict("records"),
        tables=TABLES,
    conda:
        "../../envs/study.yaml"
    script:
        "../scripts/collate.py"
