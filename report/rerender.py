#!/usr/bin/env python
"""Render a study's report again from its committed tables and result files, without a GPU: the figures are
redrawn and the report assembled by the same functions as the pipeline's figure and report rules
(workflow/scripts/figure.py and report.py; the report by pipeline.steps.write_report).

    python report/rerender.py results/reference/NVIDIA_H200 --palette 256 --set threads=all
    python report/rerender.py results/reference/NVIDIA_H200 --methods numpy --out results/reference/cpu-only

RESULT_DIR holds tables/ (results.csv, the summaries, pruned.csv, calibration.csv) and runs/ (one JSON per job), as
results/reference/<device>/ does. --set KEY=VALUE overrides config.yaml as `snakemake --config` did for the run,
so that the report states what the run asked for: the reference H200 study ran with `--config threads=all` (its
README names the command), so its numpy jobs used every BLAS thread of the host, as their results record. --methods keeps only those methods' jobs and rebuilds the summaries and
the pruned list from them: a CPU-only report from a GPU run's numpy jobs, say. The report goes to --out (default:
RESULT_DIR), the figures to --figures (default: OUT/figures); the report embeds them, so it needs nothing else.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from matmul_study.analysis import collate  # noqa: E402
from matmul_study.analysis.result_devices import gpu_devices  # noqa: E402
from matmul_study.pipeline import config as study_config  # noqa: E402
from matmul_study.pipeline import grid  # noqa: E402
from matmul_study.pipeline.steps import read_results, write_report  # noqa: E402
from matmul_study.present.figures import FIGURES, left_out, save_figure  # noqa: E402

TABLES = ["best", "speedup", "blocks", "float_vs_double"]  # workflow/rules/collate.smk


def load_config(path: Path, overrides: list[str], methods: list[str] | None) -> dict:
    config = yaml.safe_load(path.read_text())
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. --set threads=16")
        config[key] = yaml.safe_load(value)
    if methods:
        config["methods"] = list(methods)
    return study_config.validate(config)


def measured_keys_only(config: dict, results: pd.DataFrame) -> dict:
    """`config` without the measurement keys newer than the results (a schema default they were never measured
    with); the results table flattens nested keys (distribution.low) with "_"."""
    recorded = [c.removeprefix("measured_config_measurement_") for c in results.columns
                if c.startswith("measured_config_measurement_")]
    if recorded and isinstance(config.get("measurement"), dict):
        config["measurement"] = {k: v for k, v in config["measurement"].items()
                                 if any(r == k or r.startswith(f"{k}_") for r in recorded)}
    return config


def draw_figures(results: pd.DataFrame, calibration: pd.DataFrame, folder: Path, palette: int | None,
                 not_drawn: dict[str, str]) -> dict[str, Path]:
    """As the figure rule (pipeline.steps.write_figure): every figure this run can have data for (those in
    `not_drawn` left out), as PNG and SVG in `folder`, a sweep's several configurations of one job drawn as the
    fastest verified one; with `palette`, each PNG stored in that many colours."""
    results = collate.best_variants(results)
    figures = {}
    for name, spec in FIGURES.items():
        if name in not_drawn:
            continue
        png = folder / f"{name}.png"
        save_figure(spec.plot(results, calibration), png, png.with_suffix(".svg"))
        if palette:
            from PIL import Image

            Image.open(png).convert("RGB").quantize(colors=palette).save(png, optimize=True)
        figures[name] = png
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result_dir", type=Path)
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--figures", type=Path, help="where the figures are drawn (default: OUT/figures)")
    parser.add_argument("--palette", type=int, metavar="N",
                        help="store each figure as a PNG of N colours (256 keeps committed result sets small)")
    args = parser.parse_args(argv)

    src, out = args.result_dir, args.out or args.result_dir
    tables_dir = src / "tables"
    config = load_config(args.config, args.set, args.methods)
    results = read_results(tables_dir / "results.csv").copy()  # one block per dtype: pandas warns on a fragmented frame
    run_paths = sorted((src / "runs").glob("**/*.json"))
    if args.methods:
        results = results[results["method"].isin(args.methods)].reset_index(drop=True)
        run_paths = [p for p in run_paths if any(part == f"method~{m}" for m in args.methods for part in p.parts)]
        summaries = {name: collate.SUMMARIES[name](results) for name in TABLES}
        pruned = grid.build(config)[1]
    else:
        summaries = {name: pd.read_csv(tables_dir / f"{name}.csv") for name in TABLES}
        pruned = pd.read_csv(tables_dir / "pruned.csv", dtype=str, keep_default_na=False)
    if results.empty:
        raise SystemExit(f"{tables_dir / 'results.csv'}: no jobs of methods {args.methods}")
    calibration = collate.load_calibration([tables_dir / "calibration.csv"]
                                           if (tables_dir / "calibration.csv").exists() else [])
    if not gpu_devices(results):
        calibration = calibration.iloc[0:0]  # a CPU-only run calibrates no GPU
    not_drawn = left_out(results[["method", "dtype"]], len(gpu_devices(results)))
    figures = draw_figures(results, calibration, args.figures or out / "figures", args.palette, not_drawn)
    write_report(out / "report.html", results, summaries, pruned, figures, measured_keys_only(config, results),
                 run_paths, calibration=calibration, not_drawn=not_drawn)
    print(out / "report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
