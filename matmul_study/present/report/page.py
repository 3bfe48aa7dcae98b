"""The report page: `render_report` lays the sections out in the jinja2 template, with the run's summary, its
configuration and environment, the failures, the figures (inlined), the tables, the calibrated ceilings, the
devices compared, the provenance and every job. The answer's sections come from present.report.answer, the
measurement's from present.report.measurement."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
import yaml
from markupsafe import Markup

from matmul_study.analysis import collate
from matmul_study.analysis.columns import distinct, has_configurations, several_gpus
from matmul_study.analysis.cpu_line import load_words
from matmul_study.analysis.noise import NoisyJobs
from matmul_study.analysis.provenance import mixed, provenance_table
from matmul_study.analysis.result_devices import (device_kind, device_labels, devices_table, gpu_devices,
                                                 pick_differences)
from matmul_study.present.figures import FIGURES, ONE_DEVICE, dtype_order, method_order
from matmul_study.present.report import answer, bound, measurement, noise
from matmul_study.present.report.text import html_table, in_order

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
TEMPLATE = "report.html.j2"
TITLE = "GPU matrix-multiplication study"
CPU_TITLE = "CPU matrix-multiplication study"  # a run without GPU jobs (methods: [numpy])

# env_* columns in the order and words the Environment section shows them; others follow under their own name.
ENV_FIELDS = {
    "env_device_name": "Device",
    "env_device_kind": "Device kind",
    "env_compute_capability": "Compute capability",
    "env_sm_count": "SM count",
    "env_hbm_bytes_per_s": "Memory bandwidth (bytes/s, bus width × memory clock × 2)",
    "env_driver_version": "NVIDIA driver",
    "env_cuda_version": "CUDA",
    "env_cpu_model": "CPU model",
    "env_host": "Host",
    "env_python": "Python",
    "env_numpy": "NumPy",
    "env_pycuda": "PyCUDA",
    "env_cupy": "CuPy",
    "env_git_commit": "Git commit",
    "env_config_hash": "Config hash",
    "env_seed": "Seed",
    "timing_mode": "Timing mode",
    "timing_warmup": "Warm-up launches",
}

FAILED_COLUMNS = [
    "label",
    "method",
    "dtype",
    "block",
    "shape",
    "status",
    "verification_max_abs_error",
    "verification_rel_fro_error",
    "verification_tolerance",
    "verification_scope",
    "verification_reference",
    "verification_unwritten",
]
JOB_COLUMNS = [
    "label",
    "variant",
    "dtype",
    "shape",
    "status",
    "gflops",
    "timing_median_s",
    "timing_rsd",
    "timing_reps",
    "pct_of_cublas",
    "pct_of_peak",
    "model_intensity",
    "verification_rel_fro_error",
    "variant_reason",
    "noise_flag",
    "cpu_load",
]
# The configuration columns, shown where a method with variants ran (core/configs.py).
VARIANT_COLUMNS = ("variant", "variant_reason")
# pct_of_peak divides by the calibrated ceiling, which is cuBLAS's own rate: named for what it is.
JOB_HEADERS = {"pct_of_peak": "pct_of_calibrated_cublas"}
PRUNED_COLUMNS = ["method", "dtype", "block", "reason"]

# The Provenance section: what produced each device's results.
PROVENANCE_FIELDS = {
    "env_git_commit": "Git commit",
    "env_config_hash": "Config hash",
    "env_python": "Python",
    "env_numpy": "NumPy",
    "env_pycuda": "PyCUDA",
    "env_cupy": "CuPy",
    "env_driver_version": "NVIDIA driver",
    "env_cuda_version": "CUDA",
}
# Provenance that should be one value across a result set, with what the note calls several of them.
MIXED_PROVENANCE = {"env_git_commit": "commits", "env_config_hash": "config hashes"}

# Figures shown in their own section rather than among the others.
SECTION_FIGURES = ("devices", "precision")
# Shown first, with the headline table: the answer before the details.
HEADLINE_FIGURES = ("ladder", "throughput")
# Drawn landscape for the report's full content width (about 1170 px); the others are shown at most at
# CSS_PX_PER_INCH per inch of their drawing, so a one-panel figure does not blow up to the page's width.
FULL_WIDTH_FIGURES = ("ladder", "throughput", "roofline", "precision")
CSS_PX_PER_INCH = 110
SAVED_DPI = 150  # figures.save_figure's dpi

TABLE_TITLES = {
    "best": "Best throughput",
    "speedup": "Speedup over naive",
    "blocks": "Thread-block sizes",
    "float_vs_double": "float32 against float64",
}


def _data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{mime};base64,{base64.b64encode(Path(path).read_bytes()).decode('ascii')}"


def _plain(obj: Any) -> Any:
    """The config as plain YAML-able values (paths, numpy scalars and tuples included)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def _run_dates(results: pd.DataFrame) -> str:
    if "env_timestamp" not in results:
        return "an unrecorded date"
    stamps = pd.to_datetime(results["env_timestamp"], errors="coerce", utc=True, format="ISO8601").dropna()
    if stamps.empty:
        raw = sorted(distinct(results["env_timestamp"]))
        return " to ".join(dict.fromkeys([raw[0], raw[-1]])) if raw else "an unrecorded date"
    first, last = stamps.min().strftime("%Y-%m-%d"), stamps.max().strftime("%Y-%m-%d")
    return first if first == last else f"{first} to {last}"


def _summary(results: pd.DataFrame) -> dict:
    status = results["status"] if "status" in results else pd.Series([], dtype=str)
    devices = []
    if "env_device_name" in results:
        kinds = results["env_device_kind"] if "env_device_kind" in results else pd.Series("", index=results.index)
        for name, kind in dict.fromkeys(zip(device_labels(results), kinds.fillna(""))):
            name, kind = str(name).strip(), str(kind).strip()
            if name:
                devices.append(f"{name} ({kind})" if kind and kind.lower() != name.lower() else name)
    return {
        "n_jobs": len(results),
        "n_passed": int((status == "passed").sum()),
        "n_failed": int((status != "passed").sum()),
        "devices": devices,
        "dates": _run_dates(results),
        "methods": in_order(distinct(results["method"]), method_order()) if "method" in results else [],
        "dtypes": in_order(distinct(results["dtype"]), dtype_order()) if "dtype" in results else [],
    }


def _environment(results: pd.DataFrame) -> list[tuple[str, str]]:
    rows = []
    known = [c for c in ENV_FIELDS if c in results]
    others = sorted(c for c in results if c.startswith("env_") and c not in ENV_FIELDS and c != "env_timestamp")
    for column in known + others:
        values = distinct(results[column])
        if values:
            rows.append((ENV_FIELDS.get(column, column.removeprefix("env_").replace("_", " ")), ", ".join(values)))
    if "env_timestamp" in results:
        stamps = sorted(distinct(results["env_timestamp"]))
        if stamps:
            rows.append(("Job timestamps", stamps[0] if len(stamps) == 1 else f"{stamps[0]} … {stamps[-1]}"))
    return rows


def _display_width(path: Path) -> int | None:
    """The width in CSS pixels at which a figure reads as drawn: its size in inches (pixels over the PNG's dpi,
    figures.save_figure's when the file does not say) at CSS_PX_PER_INCH. None where the file cannot be read."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            dpi = image.info.get("dpi", (SAVED_DPI, SAVED_DPI))[0] or SAVED_DPI
            return round(image.width / float(dpi) * CSS_PX_PER_INCH)
    except (OSError, ValueError):
        return None


def _figures(figures: dict[str, Path]) -> list[dict]:
    # the registry's order first, so the report reads the same whatever order the caller's dict has
    names = [n for n in FIGURES if n in figures] + [n for n in figures if n not in FIGURES]
    out = []
    for name in names:
        spec = FIGURES.get(name)
        path = Path(figures[name])
        out.append(
            {
                "name": name,
                "title": spec.title if spec else name.replace("_", " ").capitalize(),
                "caption": spec.caption if spec else "",
                "uri": _data_uri(path),
                # the wide figures fill the content width; a smaller one is shown no larger than drawn
                "max_width": None if name in FULL_WIDTH_FIGURES else _display_width(path),
            }
        )
    return out


def ceilings(calibration: pd.DataFrame | None) -> Markup | None:
    """The ceilings of each calibrated GPU; where a model has several GPUs, their spread first: how far apart the
    same card's ceilings are on this host (each job is divided by its own GPU's)."""
    if calibration is None or calibration.empty:
        return None
    cols = ["device", "device_index", "device_uuid", "ceiling", "value", "unit", "detail"]
    table = calibration.rename(columns={"device_name": "device"})
    if table.get("device_uuid", pd.Series(dtype=object)).fillna("").astype(str).str.len().max() in (0, None):
        cols = [c for c in cols if c not in ("device_index", "device_uuid")]  # older tables: one row per model
    per_gpu = html_table(table, cols)
    apart = collate.spread(calibration)
    if apart.empty:
        return per_gpu
    apart = apart.rename(columns={"device_name": "device"}).assign(spread=lambda d: d["spread"].map("{:.1%}".format))
    return Markup("<p>Spread between GPUs of one model (highest / lowest &minus; 1):</p>") + html_table(apart) + \
        Markup("<p>Each GPU's ceilings:</p>") + per_gpu


def _devices(results: pd.DataFrame, figures: list[dict], every: pd.DataFrame | None = None) -> dict | None:
    """The devices compared: `results` (the fastest build of each job) by card, and from `every` job (a sweep's
    several configurations too) where the cards' heuristics picked differently."""
    if not several_gpus(results):
        return None
    table = devices_table(results, dtype_order(), method_order())
    noisy = NoisyJobs(results)
    for device in gpu_devices(results):
        table = noise.mark_column(table, f"{device} GFLOP/s", noisy.reasons(
            table.assign(_device=device), device="_device", dtype="dtype", shape="shape", label="label"))
    picks = pick_differences(results if every is None else every)
    if not picks.empty:
        picks = picks.assign(shape=picks["shape"].str.replace("x", " × ")).rename(columns={"shape": "m × k × n"})
        if (picks["block"] == 0).all():
            picks = picks.drop(columns="block")
        for column in [c for c in picks.columns if c.endswith(" regret")]:
            picks[column] = [f"{x:.3f}" if pd.notna(x) else "not swept" for x in picks[column]]
    return {
        "names": gpu_devices(results),
        "figures": figures,
        "table": noise.marked(html_table(table)) if not table.empty else None,
        "picks": html_table(picks) if not picks.empty else None,
        "n_picks": len(picks),
    }


def _provenance(results: pd.DataFrame) -> Markup | None:
    """Distinct commits, config hashes and library versions, per device."""
    table = provenance_table(results, PROVENANCE_FIELDS)
    if table.empty:
        return None
    return html_table(table.rename(columns=PROVENANCE_FIELDS))


def _provenance_notes(results: pd.DataFrame) -> list[str]:
    return [f"These results come from {len(values)} different {MIXED_PROVENANCE[column]} ({', '.join(values)}): "
            "compare across them with care." for column, values in mixed(results, MIXED_PROVENANCE).items()]


def _jobs(results: pd.DataFrame) -> pd.DataFrame:
    """The All jobs table: JOB_COLUMNS (and the device where there are several GPUs), without columns that are
    empty for every job (a CPU-only run has no % of cuBLAS), headed as JOB_HEADERS names them. noise_flag says why
    a job was flagged (analysis.noise), cpu_load what else a CPU job's machine ran."""
    cpu = (device_kind(results) == "cpu").to_numpy()
    derived = {"noise_flag": [f"{noise.MARK} {r}" if r else "" for r in noise.job_reasons(results)],
               "cpu_load": [load_words(row) if is_cpu else None for is_cpu, (_, row) in zip(cpu, results.iterrows())]}
    columns = [c for c in JOB_COLUMNS + (["env_device_name"] if several_gpus(results) else [])
               if (c in results or c in derived) and (c not in VARIANT_COLUMNS or has_configurations(results))]
    table = results[[c for c in columns if c not in derived]].assign(**derived)[columns]
    keep = [c for c in columns if c in ("label", "dtype", "shape", "status") or
            table[c].map(lambda v: v is not None and str(v).strip() not in ("", "nan", "None")).any()]
    return table[keep].rename(columns=JOB_HEADERS)


def _title(results: pd.DataFrame) -> str:
    """GPU unless the results hold CPU jobs only."""
    if results.empty or "method" not in results:
        return TITLE
    return CPU_TITLE if (device_kind(results) == "cpu").all() else TITLE


def _extra_sections(results: pd.DataFrame, fastest: pd.DataFrame, config: dict, extra_sections: list | None) -> list:
    """The sections after the tables: the methods, how the rates were measured, then the caller's."""
    sections = [("About the methods", answer.methods(fastest))]
    rates = measurement.rates(results, config)
    if rates is not None:
        sections.append(("Burst, sustained and energy", rates))
    sections += list(extra_sections or [])
    return [
        {"id": f"extra-{i}", "title": str(title), "html": Markup(fragment)}
        for i, (title, fragment) in enumerate(sections, start=1)
    ]


def render_report(
    results: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    pruned: pd.DataFrame,
    figures: dict[str, Path],
    config: dict,
    extra_sections: list | None = None,
    calibration: pd.DataFrame | None = None,
    compile_seconds: list[float] | None = None,
) -> str:
    """The whole report as one HTML document.

    `figures` maps a figure name (a key of `figures.FIGURES`, whose caption is used) to its PNG file; `tables`
    maps a key ("best", "speedup", ... or a free title) to a DataFrame; `pruned` lists the (method, dtype, block)
    combinations the config asked for but the study skipped, with a reason; `extra_sections` holds
    (title, html) pairs whose html is already safe and is shown as is after the tables; `calibration` is the
    table of device ceilings (device_name, ceiling, value, unit, detail), shown when not empty; `compile_seconds`
    the wall time of each kernel build the jobs load. Columns the results lack (older files) leave out the parts
    that need them.
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every config- and data-derived string is escaped unless marked safe here
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    results = results.reset_index(drop=True)  # merged result sets may repeat index labels
    # A sweep's several configurations of one job: the ratios, the ladder and the claims read the fastest verified
    # one (collate.best_variants); the answer, the regret and the job lists read every job.
    fastest = collate.best_variants(results).reset_index(drop=True)
    failed = results[results["status"] != "passed"] if "status" in results else results.iloc[0:0]
    extra = _extra_sections(results, fastest, config, extra_sections)
    all_figures = _figures(figures or {})
    jobs = _jobs(results)
    noisy = NoisyJobs(fastest)
    return env.get_template(TEMPLATE).render(
        title=_title(results),
        summary=_summary(results),
        config_yaml=yaml.safe_dump(_plain(config or {}), sort_keys=False, allow_unicode=True).rstrip(),
        environment=_environment(results),
        failed=html_table(failed, FAILED_COLUMNS) if not failed.empty else None,
        n_failed=len(failed),
        headline=answer.headline(results),
        why=answer.why(fastest),
        regret=answer.regret(results),
        bound=bound.bound(fastest),
        headline_figures=[f for name in HEADLINE_FIGURES for f in all_figures if f["name"] == name],
        figures=[f for f in all_figures if f["name"] not in SECTION_FIGURES + HEADLINE_FIGURES],
        one_device=ONE_DEVICE if len(gpu_devices(results)) == 1 and "devices" in (figures or {}) else None,
        provenance=_provenance(results),
        provenance_notes=_provenance_notes(results),
        throttling=measurement.throttling(results, config),
        measurement=measurement.measurement(results, config, compile_seconds),
        claims=answer.claims(fastest),
        ceilings=ceilings(calibration),
        devices=_devices(fastest, [f for f in all_figures if f["name"] == "devices"], results),
        precision=answer.precision(fastest, [f for f in all_figures if f["name"] == "precision"]),
        tables=[
            {"title": TABLE_TITLES.get(key, str(key).replace("_", " ").capitalize()),
             "html": noise.summary(str(key), df, noisy)}
            for key, df in (tables or {}).items()
        ],
        extra_sections=extra,
        pruned=html_table(pruned, PRUNED_COLUMNS) if pruned is not None and not pruned.empty else None,
        jobs=noise.marked(html_table(jobs)),
        job_columns=list(jobs.columns),
    )
