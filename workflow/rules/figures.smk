# One seaborn figure per entry of matmul_study.figures.FIGURES, as PNG (embedded in the report) and SVG.
from matmul_study.figures import FIGURES


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
