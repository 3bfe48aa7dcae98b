# One seaborn figure per entry of matmul_study.present.figures.FIGURES, as PNG (embedded in the report) and SVG.
from matmul_study.present.figures import FIGURES
from matmul_study.present.figures import left_out as figures_left_out

# Figures this run cannot have data for (a CPU-only run has no naive kernel, no block axis, no GPU) are not
# drawn; the report says in one sentence each why.
_RUN_KEYS = scripting.run_keys(JOBS, IMPORTED_RUNS)
FIGURES_LEFT_OUT = figures_left_out(_RUN_KEYS, scripting.gpu_sources(_RUN_KEYS))
DRAWN_FIGURES = [name for name in FIGURES if name not in FIGURES_LEFT_OUT]


rule figure:
    input:
        results="results/tables/results.csv",
        calibration=calibration_files(),
    output:
        png=report(
            "results/figures/{figure}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"figure": "{figure}"},
        ),
        svg="results/figures/{figure}.svg",
    log:
        "logs/figures/{figure}.log",
    params:
        caption=lambda wc: FIGURES[wc.figure].caption,
    conda:
        "../../envs/study.yaml"
    script:
        "../scripts/figure.py"
