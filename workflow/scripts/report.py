import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from pathlib import Path

import pandas as pd
from markupsafe import escape

from matmul_study.analysis import collate

from matmul_study.core import results
from matmul_study.pipeline.steps import read_results
from matmul_study.present.report import render_report
from matmul_study.pipeline.scripting import config_as_measured, logged

# Guarded: a process the job spawns imports this file as __mp_main__.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        p, i = snakemake.params, snakemake.input
        # The Configuration section states what this run's results were measured with, not only what the
        # config asks for now (e.g. --config threads=2 under --cores 1 still measures with 1 thread).
        config = config_as_measured(dict(p.config), [results.read(path) for path in i.runs])
        # Tables with no rows (a CPU-only run has no speedup over naive, no block sizes) are left out.
        tables = {name: pd.read_csv(path) for name, path in zip(p.tables, i.summaries)}
        tables = {name: df for name, df in tables.items() if not df.empty}
        # Figures this run cannot have data for were not drawn: one sentence each says why.
        left_out = dict(p.figures_left_out)
        extra = []
        if left_out:
            extra.append(("Figures not drawn", "".join(f"<p>{escape(text)}</p>" for text in left_out.values())))
        html = render_report(
            read_results(i.results), tables, pd.read_csv(i.pruned, dtype=str, keep_default_na=False),
            {name: Path(png) for name, png in zip(p.figures, i.figures)}, config, extra_sections=extra,
            calibration=collate.load_calibration(list(i.calibration)))
        Path(snakemake.output[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(snakemake.output[0]).write_text(html, encoding="utf-8")
