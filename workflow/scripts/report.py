import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

import pandas as pd

from matmul_study.analysis import collate
from matmul_study.pipeline.steps import read_results, write_report
from matmul_study.pipeline.stops import logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        p, i = snakemake.params, snakemake.input
        # The configuration is stated as this run's own results (i.runs, not imported ones) were measured with it;
        # figures this run cannot have data for were not drawn, and the report says in one sentence each why.
        write_report(
            snakemake.output[0], read_results(i.results),
            {name: pd.read_csv(path) for name, path in zip(p.tables, i.summaries)},
            pd.read_csv(i.pruned, dtype=str, keep_default_na=False), dict(zip(p.figures, i.figures)), p.config,
            i.runs, calibration=collate.load_calibration(list(i.calibration)), not_drawn=dict(p.figures_left_out),
            compiles=list(p.compiles))
