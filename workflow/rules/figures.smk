# The seaborn figures of matmul_study.present.figures.FIGURES, as PNG (embedded in the report) and SVG, all drawn by
# one job: each figure in a job of its own paid for starting Python and matplotlib seven times. The job draws them
# side by side on the cores it holds: every core of the run (nothing else runs at this point), one per figure.
from matmul_study.present.figures import FIGURES
from matmul_study.present.figures import left_out as figures_left_out
from matmul_study.pipeline import report_inputs

# Figures this run cannot have data for (a CPU-only run has no naive kernel, no block axis, no GPU) are not
# drawn; the report says in one sentence each why.
_RUN_KEYS = report_inputs.run_keys(JOBS, IMPORTED_RUNS)
FIGURES_LEFT_OUT = figures_left_out(_RUN_KEYS, report_inputs.gpu_sources(_RUN_KEYS))
DRAWN_FIGURES = [name for name in FIGURES if name not in FIGURES_LEFT_OUT]


rule figures:
    input:
        results="results/tables/results.csv",
        calibration=calibration_files(),
    output:
        png=[
            report(
                f"results/figures/{name}.png",
                caption="../report/figure.rst",
                category="Figures",
                labels={"figure": name},
            )
            for name in DRAWN_FIGURES
        ],
        svg=[f"results/figures/{name}.svg" for name in DRAWN_FIGURES],
    log:
        "logs/figures.log",
    params:
        names=DRAWN_FIGURES,
    threads: len(DRAWN_FIGURES)  # Snakemake gives a job no more than --cores
    conda:
        "../../envs/study.yaml"
    script:
        "../scripts/figure.py"
