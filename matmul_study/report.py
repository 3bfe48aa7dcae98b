"""The study's HTML report: one self-contained file (figures inlined, no network) rendered with jinja2.

Everything that comes from the config or the results is escaped by jinja2's autoescape or by
`DataFrame.to_html(escape=True)`; only those already-escaped tables, the base64 figure URIs and the caller's
`extra_sections` fragments are marked safe.
"""

from __future__ import annotations

import base64
import math
import mimetypes
from pathlib import Path
from typing import Any, Iterable

import jinja2
import numpy as np
import pandas as pd
import yaml
from markupsafe import Markup

from matmul_study.figures import DTYPE_ORDER, FIGURES, METHOD_ORDER

TEMPLATE_DIR = Path(__file__).with_name("templates")
TEMPLATE = "report.html.j2"
TITLE = "GPU matrix-multiplication study"

# env_* columns in the order and words the Environment section shows them; others follow under their own name.
ENV_FIELDS = {
    "env_device_name": "Device",
    "env_device_kind": "Device kind",
    "env_compute_capability": "Compute capability",
    "env_sm_count": "SM count",
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
    "dtype",
    "shape",
    "status",
    "gflops",
    "timing_median_s",
    "timing_rsd",
    "timing_reps",
    "pct_of_cublas",
    "verification_rel_fro_error",
]
PRUNED_COLUMNS = ["method", "dtype", "block", "reason"]

TABLE_TITLES = {
    "best": "Best throughput",
    "speedup": "Speedup over naive",
    "blocks": "Thread-block sizes",
    "float_vs_double": "float32 against float64",
}


def format_float(x: float) -> str:
    """Four significant digits, no exponent for everyday magnitudes (12346, 0.001230, 1.5e-07)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    magnitude = math.floor(math.log10(abs(x)))
    if -3 <= magnitude < 6:
        return f"{x:.{max(0, 3 - magnitude)}f}"
    return f"{x:.4g}"


def _html_table(df: pd.DataFrame, columns: Iterable[str] | None = None) -> Markup:
    """An escaped HTML table; failed statuses get a class so they stand out."""
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    text = df.to_html(
        escape=True, index=False, na_rep="", float_format=format_float, border=0, classes="data", justify="left"
    )
    # the cell text is escaped already, so this exact match can only hit a status cell that says failed
    text = text.replace("<td>failed</td>", '<td class="failed">failed</td>')
    return Markup(text)


def _data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{mime};base64,{base64.b64encode(Path(path).read_bytes()).decode('ascii')}"


def _distinct(series: pd.Series) -> list[str]:
    """Distinct non-empty values as text, in order of first appearance; 12345.0 reads as 12345."""
    out = []
    for value in series.dropna():
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        text = str(value).strip()
        if text and text.lower() not in ("nan", "none") and text not in out:
            out.append(text)
    return out


def _in_order(values: list[str], order: Iterable[str]) -> list[str]:
    rank = {v: i for i, v in enumerate(order)}
    return sorted(values, key=lambda v: (rank.get(v, len(rank)), v))


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
        raw = sorted(_distinct(results["env_timestamp"]))
        return " to ".join(dict.fromkeys([raw[0], raw[-1]])) if raw else "an unrecorded date"
    first, last = stamps.min().strftime("%Y-%m-%d"), stamps.max().strftime("%Y-%m-%d")
    return first if first == last else f"{first} to {last}"


def _summary(results: pd.DataFrame) -> dict:
    status = results["status"] if "status" in results else pd.Series([], dtype=str)
    devices = []
    if "env_device_name" in results:
        kinds = results["env_device_kind"] if "env_device_kind" in results else pd.Series("", index=results.index)
        for name, kind in dict.fromkeys(zip(results["env_device_name"].fillna(""), kinds.fillna(""))):
            name, kind = str(name).strip(), str(kind).strip()
            if name:
                devices.append(f"{name} ({kind})" if kind and kind.lower() != name.lower() else name)
    return {
        "n_jobs": len(results),
        "n_passed": int((status == "passed").sum()),
        "n_failed": int((status != "passed").sum()),
        "devices": devices,
        "dates": _run_dates(results),
        "methods": _in_order(_distinct(results["method"]), METHOD_ORDER) if "method" in results else [],
        "dtypes": _in_order(_distinct(results["dtype"]), DTYPE_ORDER) if "dtype" in results else [],
    }


def _environment(results: pd.DataFrame) -> list[tuple[str, str]]:
    rows = []
    known = [c for c in ENV_FIELDS if c in results]
    others = sorted(c for c in results if c.startswith("env_") and c not in ENV_FIELDS and c != "env_timestamp")
    for column in known + others:
        values = _distinct(results[column])
        if values:
            rows.append((ENV_FIELDS.get(column, column.removeprefix("env_").replace("_", " ")), ", ".join(values)))
    if "env_timestamp" in results:
        stamps = sorted(_distinct(results["env_timestamp"]))
        if stamps:
            rows.append(("Job timestamps", stamps[0] if len(stamps) == 1 else f"{stamps[0]} … {stamps[-1]}"))
    return rows


def _figures(figures: dict[str, Path]) -> list[dict]:
    # the registry's order first, so the report reads the same whatever order the caller's dict has
    names = [n for n in FIGURES if n in figures] + [n for n in figures if n not in FIGURES]
    out = []
    for name in names:
        spec = FIGURES.get(name)
        out.append(
            {
                "name": name,
                "title": spec.title if spec else name.replace("_", " ").capitalize(),
                "caption": spec.caption if spec else "",
                "uri": _data_uri(Path(figures[name])),
            }
        )
    return out


def render_report(
    results: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    pruned: pd.DataFrame,
    figures: dict[str, Path],
    config: dict,
    extra_sections: list | None = None,
) -> str:
    """The whole report as one HTML document.

    `figures` maps a figure name (a key of `figures.FIGURES`, whose caption is used) to its PNG file; `tables`
    maps a key ("best", "speedup", ... or a free title) to a DataFrame; `pruned` lists the (method, dtype, block)
    combinations the config asked for but the study skipped, with a reason; `extra_sections` holds
    (title, html) pairs whose html is already safe and is shown as is after the tables.
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every config- and data-derived string is escaped unless marked safe here
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    failed = results[results["status"] != "passed"] if "status" in results else results.iloc[0:0]
    extra = [
        {"id": f"extra-{i}", "title": str(title), "html": Markup(fragment)}
        for i, (title, fragment) in enumerate(extra_sections or [], start=1)
    ]
    return env.get_template(TEMPLATE).render(
        title=TITLE,
        summary=_summary(results),
        config_yaml=yaml.safe_dump(_plain(config or {}), sort_keys=False, allow_unicode=True).rstrip(),
        environment=_environment(results),
        failed=_html_table(failed, FAILED_COLUMNS) if not failed.empty else None,
        n_failed=len(failed),
        figures=_figures(figures or {}),
        tables=[
            {"title": TABLE_TITLES.get(key, str(key).replace("_", " ").capitalize()), "html": _html_table(df)}
            for key, df in (tables or {}).items()
        ],
        extra_sections=extra,
        pruned=_html_table(pruned, PRUNED_COLUMNS) if pruned is not None and not pruned.empty else None,
        jobs=_html_table(results, JOB_COLUMNS),
    )
