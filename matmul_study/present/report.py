"""The study's HTML report: one self-contained file (figures inlined, no network) rendered with jinja2.

Everything that comes from the config or the results is escaped by jinja2's autoescape or by
`DataFrame.to_html(escape=True)`; only those already-escaped tables, the base64 figure URIs and the caller's
`extra_sections` fragments are marked safe.

Besides the configuration, environment, failures, figures and tables, the report checks the measurement itself
(throttled GPU clocks, repetition noise against its target), checks the source study's claims
(`matmul_study.analysis.claims`), lists the calibrated device ceilings, compares GPU devices when the results hold more
than one, and gives the provenance (commits, config hashes, library versions) of every device's results.
"""

from __future__ import annotations

import base64
import math
import re
import mimetypes
from pathlib import Path
from typing import Any, Iterable

import jinja2
import numpy as np
import pandas as pd
import yaml
from markupsafe import Markup, escape

from matmul_study.analysis import collate

from matmul_study.core import registry
from matmul_study.analysis import precision, regret, why
from matmul_study.analysis.claims import check_claims
from matmul_study.analysis.ladder import VENDOR_NAMES, datasheet_tflops, ladder_table, vendor_line
from matmul_study.analysis.result_devices import device_kind, device_labels, devices_table, gpu_devices
from matmul_study.present.figures import FIGURES, ONE_DEVICE, dtype_order, method_order
from matmul_study.core.records import BURST_SAMPLE_MAX_S

TEMPLATE_DIR = Path(__file__).with_name("templates")
TEMPLATE = "report.html.j2"
TITLE = "GPU matrix-multiplication study"
CPU_TITLE = "CPU matrix-multiplication study"  # a run without GPU jobs (methods: [numpy])

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

TIMING_MODES = {
    "hot": "hot: repetitions back to back on the same buffers (caches warm)",
    "cold": "cold: the GPU's L2 cache flushed before each timed sample",
}

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


def _table_text(df: pd.DataFrame) -> str:
    """_html_table as a plain str, for pages built as strings: str + Markup would escape the str's tags."""
    return str(_html_table(df))


def _html_table(df: pd.DataFrame, columns: Iterable[str] | None = None) -> Markup:
    """An escaped HTML table; failed statuses get a class so they stand out."""
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    text = df.to_html(
        escape=True, index=False, na_rep="", float_format=format_float, border=0, classes="data", justify="left"
    )
    # the cell text is escaped already, so this exact match can only hit a status cell that says failed
    text = text.replace("<td>failed</td>", '<td class="failed">failed</td>')
    # a long column name (timing_median_s) may wrap after an underscore, so headers do not widen the table
    text = re.sub(r"<th>([^<]*)</th>", lambda m: "<th>" + m.group(1).replace("_", "_<wbr>") + "</th>", text)
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
        "methods": _in_order(_distinct(results["method"]), method_order()) if "method" in results else [],
        "dtypes": _in_order(_distinct(results["dtype"]), dtype_order()) if "dtype" in results else [],
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


def _num(results: pd.DataFrame, column: str) -> pd.Series:
    if column not in results:
        return pd.Series(np.nan, index=results.index, dtype=float)
    return pd.to_numeric(results[column], errors="coerce")


def _several_gpus(results: pd.DataFrame) -> bool:
    return len(gpu_devices(results)) > 1


def _configurations(results: pd.DataFrame) -> bool:
    """Whether the results hold a configuration worth naming: a variant other than the default build, or a method
    with registry variants (whose default build is then a choice too)."""
    if "variant" in results and (results["variant"].fillna("default").astype(str) != "default").any():
        return True
    ran = set(results["method"]) if "method" in results else set()
    return any(registry.METHODS[name].variants for name in ran if name in registry.METHODS)


def _job_keys(results: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """label, dtype, shape (the variant where a method with variants ran, and the device when the results hold
    several) of the rows of `df`."""
    keys = [c for c in ("label", "variant", "dtype", "shape")
            if c in df and (c != "variant" or _configurations(results))]
    if _several_gpus(results) and "env_device_name" in df:
        keys.append("env_device_name")
    return df[keys].rename(columns={"env_device_name": "device"})


def _throttling(results: pd.DataFrame, config: dict) -> dict | None:
    """Jobs whose SM clock fell below the throttle fraction in some samples; None without the column."""
    if "gpu_throttled_samples" not in results or not (device_kind(results) == "gpu").any():
        return None  # no GPU job (a CPU-only run): no GPU clock to have fallen
    samples = _num(results, "gpu_throttled_samples")
    hit = results[samples > 0]
    fraction = ((config or {}).get("measurement") or {}).get("throttle_fraction")
    out = {"n": len(hit), "fraction": f"{float(fraction):.0%}" if fraction is not None else None, "table": None}
    if hit.empty:
        return out
    lo, top = _num(hit, "gpu_sm_clock_min_sample_mhz"), _num(hit, "gpu_sm_clock_max_mhz")
    table = _job_keys(results, hit).assign(**{
        "throttled samples": samples[hit.index].astype(int).astype(str)
        + (" of " + _num(hit, "timing_reps").astype("Int64").astype(str)).where(_num(hit, "timing_reps").notna(), ""),
        "min SM clock / max (MHz)": [
            f"{a:.0f} / {b:.0f} ({a / b:.0%})" if np.isfinite(a) and np.isfinite(b) and b > 0
            else (f"{a:.0f} / ?" if np.isfinite(a) else "")
            for a, b in zip(lo, top)
        ],
        "temperature before → after (°C)": [
            f"{a:.0f} → {b:.0f}" if np.isfinite(a) and np.isfinite(b) else ""
            for a, b in zip(_num(hit, "gpu_temperature_c_before"), _num(hit, "gpu_temperature_c_after"))
        ],
        "power before → after (W)": [
            f"{a:.0f} → {b:.0f}" if np.isfinite(a) and np.isfinite(b) else ""
            for a, b in zip(_num(hit, "gpu_power_w_before"), _num(hit, "gpu_power_w_after"))
        ],
    })
    out["table"] = _html_table(table)
    return out


def _measured_setting(results: pd.DataFrame, meas: dict, key: str) -> pd.Series:
    """Per job, the measurement setting `key` as the job was measured with (its measured_config), else the
    config's value, else NaN."""
    value = _num(results, f"measured_config_measurement_{key}")
    fallback = pd.to_numeric(pd.Series([meas.get(key)]), errors="coerce").iloc[0]
    return value.fillna(fallback) if np.isfinite(fallback) else value


def _caps(results: pd.DataFrame, meas: dict) -> pd.DataFrame:
    """Per job: how many processes it timed in (CPU jobs time in several fresh ones, each with its own caps), the
    per-process caps and minimum, the job's caps in all, and which cap ended the timing ('time', 'repetitions' or
    ''). A `cpu_capped` field, where the results have one, says whether a cap ended a CPU job's timing; elsewhere
    the cap is inferred from the job's repetitions and timed seconds."""
    cpu = (device_kind(results) == "cpu").to_numpy()
    processes = _num(results, "cpu_processes").fillna(_measured_setting(results, meas, "cpu_processes"))
    processes = processes.where(cpu & (processes >= 1), 1.0)
    out = pd.DataFrame({
        "processes": processes,
        "max_reps": _measured_setting(results, meas, "max_reps"),
        "max_time_s": _measured_setting(results, meas, "max_time_s"),
        "min_reps": _measured_setting(results, meas, "min_reps"),
    }, index=results.index)
    out["reps_cap"] = out["max_reps"] * out["processes"]
    out["time_cap"] = out["max_time_s"] * out["processes"]
    reps, total = _num(results, "timing_reps"), _num(results, "timing_total_s")
    stopped = np.where(total >= out["time_cap"], "time", np.where(reps >= out["reps_cap"], "repetitions", ""))
    flag = _cpu_capped(results)
    known = (flag.notna() & pd.Series(cpu, index=results.index)).to_numpy()
    said = np.where(flag.fillna(False).astype(bool), np.where(stopped == "", "time", stopped), "")
    out["stopped_by"] = np.where(known, said, stopped)
    out["capped"] = flag.where(pd.Series(cpu, index=results.index))
    out["budget_s"] = _num(results, "cpu_max_s").fillna(_measured_setting(results, meas, "cpu_max_s"))
    return out


def _cpu_capped(results: pd.DataFrame) -> pd.Series:
    """The result field cpu_capped as True, False or None per job (None where the results do not say: the field
    is absent from results measured before the CPU time budget, or the job is a GPU job)."""
    if "cpu_capped" not in results:
        return pd.Series(None, index=results.index, dtype=object)
    words = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}
    return results["cpu_capped"].map(
        lambda v: bool(v) if isinstance(v, (bool, np.bool_)) else words.get(str(v).strip().lower())).astype(object)


def _setting_text(values: pd.Series, unit: str = "") -> str:
    return " or ".join(f"{v}{unit}" for v in _distinct(values)) or "?"


def _cap_sentences(results: pd.DataFrame, caps: pd.DataFrame) -> list[str]:
    """How the repetitions were capped, in the numbers the jobs were measured with, per device kind."""
    kind = device_kind(results)
    out = []
    gpu = caps[(kind == "gpu").to_numpy()]
    if not gpu.empty and gpu[["max_reps", "max_time_s"]].notna().any().any():
        out.append(f"GPU jobs sample until the noise target is met, or at most {_setting_text(gpu['max_reps'])} "
                   f"samples or {_setting_text(gpu['max_time_s'], ' s')} of timing (at least "
                   f"{_setting_text(gpu['min_reps'])} samples).")
    cpu = caps[(kind == "cpu").to_numpy()]
    if not cpu.empty and cpu[["max_reps", "max_time_s"]].notna().any().any():
        several = (cpu["processes"] > 1).any()
        if several:
            out.append(f"CPU jobs time in {_setting_text(cpu['processes'])} fresh processes each; a process "
                       f"repeats until the noise target is met, or at most {_setting_text(cpu['max_reps'])} "
                       f"repetitions or {_setting_text(cpu['max_time_s'], ' s')} of timing (after at least "
                       f"{_setting_text(cpu['min_reps'])}). A CPU job therefore has up to "
                       f"{_setting_text(cpu['reps_cap'])} repetitions and about {_setting_text(cpu['time_cap'], ' s')}"
                       f" of timing in all, and more time when one repetition alone outlasts the time cap (then "
                       f"{_setting_text(cpu['min_reps'] * cpu['processes'])} repetitions).")
        else:
            out.append(f"CPU jobs repeat until the noise target is met, or at most {_setting_text(cpu['max_reps'])}"
                       f" repetitions or {_setting_text(cpu['max_time_s'], ' s')} of timing (at least "
                       f"{_setting_text(cpu['min_reps'])} repetitions).")
    cpu_rows = results[(kind == "cpu").to_numpy()]
    recorded = _num(cpu_rows, "cpu_max_s").fillna(_num(cpu_rows, "measured_config_measurement_cpu_max_s")).dropna()
    if not recorded.empty:
        out.append(f"Each CPU job has at most {_setting_text(recorded, ' s')} for verifying and timing in all "
                   "(measurement.cpu_max_s); a job whose measurement does not fit is planned down to fewer "
                   "processes, warm-ups or samples and recorded as capped.")
    return out


def _budget(results: pd.DataFrame, caps: pd.DataFrame) -> dict | None:
    """CPU jobs whose time budget (measurement.cpu_max_s) shaped the number: the result field cpu_capped says so.
    None where no job says (the field is absent, or no CPU job was capped)."""
    hit = results[caps["capped"].fillna(False).astype(bool).to_numpy()]
    if hit.empty:
        return None
    budget = caps.loc[hit.index, "budget_s"]
    asked = _num(hit, "cpu_processes_asked")
    ran = _num(hit, "cpu_processes")
    table = _job_keys(results, hit).assign(**{
        "processes": [f"{r:.0f} of {a:.0f}" if np.isfinite(r) and np.isfinite(a) else
                      (f"{r:.0f}" if np.isfinite(r) else "") for r, a in zip(ran, asked)],
        "repetitions": _num(hit, "timing_reps").astype("Int64"),
        "timed (s)": _num(hit, "timing_total_s"),
        "job (s)": _num(hit, "cpu_seconds"),
        "budget (s)": budget,
        "rsd": [f"{x:.2%}" if np.isfinite(x) else "" for x in _num(hit, "timing_rsd")],
    })
    table = table.loc[:, [c for c in table.columns if not table[c].isna().all()]]
    budgets = _setting_text(budget, " s")
    return {"n": len(hit), "of": int((device_kind(results) == "cpu").sum()),
            "text": f"the time budget of {budgets} per job (measurement.cpu_max_s) shaped their number: the "
                    "timing was planned to fit it, with fewer processes, warm-ups or samples than the measurement "
                    "policy asks, so each rests on less than a full measurement and reads with its spread.",
            "table": _html_table(table)}


def _measurement(results: pd.DataFrame, config: dict) -> dict | None:
    """Timing modes, the noise target and the repetition noise achieved, the caps as the jobs were measured with
    them, and the jobs that missed the target (with the cap that ended their timing)."""
    if results.empty or not {"timing_mode", "timing_rsd", "timing_noise_target"} & set(results.columns):
        return None
    meas = (config or {}).get("measurement") or {}
    modes = _distinct(results["timing_mode"]) if "timing_mode" in results else []
    rsd, target = _num(results, "timing_rsd"), _num(results, "timing_noise_target")
    targets = _distinct(target)
    finite = rsd[np.isfinite(rsd)]
    caps = _caps(results, meas)
    out = {
        "modes": [TIMING_MODES.get(m, m) for m in modes],
        "targets": [f"{float(t):.1%}" for t in targets],
        "median": f"{finite.median():.2%}" if not finite.empty else None,
        "worst": None,
        "n": len(results),
        "n_missed": 0,
        "missed": None,
        "caps": _cap_sentences(results, caps),
        "capped": None,
    }
    if not finite.empty:
        worst = results.loc[finite.idxmax()]
        where = ", ".join(str(worst.get(c, "")) for c in ("label", "dtype", "shape"))
        out["worst"] = f"{finite.max():.2%} ({where})"
    kind = device_kind(results)
    out["by_kind"] = [
        f"{k.upper()} jobs: median {finite[kind[finite.index] == k].median():.2%}, "
        f"worst {finite[kind[finite.index] == k].max():.2%}"
        for k in ("gpu", "cpu")
        if (kind[finite.index] == k).any()
    ] if kind[finite.index].nunique() > 1 else []
    per_sample = _num(results, "timing_launches_per_sample")[device_kind(results) == "gpu"].dropna()
    per_sample = per_sample[per_sample > 0]
    out["launches"] = f"{per_sample.min():.0f}–{per_sample.max():.0f}" if not per_sample.empty else None
    out["min_launches"] = meas.get("min_launches_per_sample") if out["launches"] else None
    out["budget"] = _budget(results, caps)
    missed = results[np.isfinite(rsd) & np.isfinite(target) & (rsd > target)]
    out["n_missed"] = len(missed)
    if not missed.empty:
        stopped = caps.loc[missed.index, "stopped_by"]
        by_time, by_reps = int((stopped == "time").sum()), int((stopped == "repetitions").sum())
        if by_time or by_reps:
            parts = [f"{n} at the {what} cap" for n, what in ((by_time, "time"), (by_reps, "repetition")) if n]
            out["capped"] = (f"Of these, {' and '.join(parts).replace(' at', ' stopped at', 1)}, before their samples "
                             "were quiet enough: the cap, not the noise target, decided how many samples their "
                             "median is of, so their rate carries the spread shown (rsd below; for CPU jobs also "
                             "cpu_spread, the spread between processes).")
        missed = missed.assign(_rsd=rsd[missed.index]).sort_values("_rsd", ascending=False)
        reps, total = _num(missed, "timing_reps"), _num(missed, "timing_total_s")
        table = _job_keys(results, missed).assign(
            rsd=[f"{x:.2%}" for x in rsd[missed.index]],
            target=[f"{x:.1%}" for x in target[missed.index]],
            repetitions=reps.astype("Int64"),
            **{"timed (s)": total},
        )
        job_caps = caps.loc[missed.index]
        if job_caps[["reps_cap", "time_cap"]].notna().any().any():
            table["caps (repetitions / s)"] = [
                f"{r:g} / {t:g}" + (f" ({p:.0f} processes)" if p > 1 else "")
                for r, t, p in zip(job_caps["reps_cap"], job_caps["time_cap"], job_caps["processes"])]
        table["cap hit"] = job_caps["stopped_by"].to_numpy()
        out["missed"] = _html_table(table)
    return out


VERDICT_CLASSES = {"holds": "holds", "partly holds": "partly", "does not hold": "fails", "not measured": "unmeasured"}


def _claims(results: pd.DataFrame) -> Markup | None:
    if results.empty or "method" not in results:
        return None
    table = check_claims(results)
    if not table.empty and (table["verdict"] == "not measured").all():
        # Rows of "not measured" say nothing one sentence cannot (a CPU-only run, say).
        return Markup('<p class="none">None of the source study\'s claims could be checked: each compares GPU '
                      "kernels (or a GPU kernel with the CPU), and this run has no verified job on one side of every "
                      "comparison.</p>")
    if not _several_gpus(results):
        table = table.drop(columns="device")
    text = _table_text(table)
    for verdict, css in VERDICT_CLASSES.items():
        # cell text is escaped already, so an exact match can only hit a verdict cell
        text = text.replace(f"<td>{verdict}</td>", f'<td class="verdict {css}">{verdict}</td>')
    return Markup(text)


def _ceilings(calibration: pd.DataFrame | None) -> Markup | None:
    """The ceilings of each calibrated GPU; where a model has several GPUs, their spread first: how far apart the
    same card's ceilings are on this host (each job is divided by its own GPU's)."""
    if calibration is None or calibration.empty:
        return None
    from matmul_study.analysis.collate import spread

    cols = ["device", "device_index", "device_uuid", "ceiling", "value", "unit", "detail"]
    table = calibration.rename(columns={"device_name": "device"})
    if table.get("device_uuid", pd.Series(dtype=object)).fillna("").astype(str).str.len().max() in (0, None):
        cols = [c for c in cols if c not in ("device_index", "device_uuid")]  # older tables: one row per model
    per_gpu = _html_table(table, cols)
    apart = spread(calibration)
    if apart.empty:
        return per_gpu
    apart = apart.rename(columns={"device_name": "device"}).assign(spread=lambda d: d["spread"].map("{:.1%}".format))
    return Markup("<p>Spread between GPUs of one model (highest / lowest &minus; 1):</p>") + _html_table(apart) + \
        Markup("<p>Each GPU's ceilings:</p>") + per_gpu


def _devices(results: pd.DataFrame, figures: list[dict]) -> dict | None:
    if not _several_gpus(results):
        return None
    table = devices_table(results, dtype_order(), method_order())
    return {
        "names": gpu_devices(results),
        "figures": figures,
        "table": _html_table(table) if not table.empty else None,
    }


def _provenance(results: pd.DataFrame) -> Markup | None:
    """Distinct commits, config hashes and library versions, per device."""
    fields = [c for c in PROVENANCE_FIELDS if c in results]
    if not fields or results.empty:
        return None
    device = device_labels(results)
    kind = device_kind(results)
    rows = []
    for name in dict.fromkeys(device):
        sub = results[device == name]
        what = kind[(device == name).to_numpy()].iloc[0]
        row = {"device": f"{name} ({what})" if name else what}
        for column in fields:
            row[PROVENANCE_FIELDS[column]] = ", ".join(_distinct(sub[column]))
        rows.append(row)
    table = pd.DataFrame(rows)
    table = table.loc[:, (table != "").any(axis=0)]
    return _html_table(table)


def _provenance_notes(results: pd.DataFrame) -> list[str]:
    notes = []
    for column, what in (("env_git_commit", "commits"), ("env_config_hash", "config hashes")):
        if column in results:
            values = _distinct(results[column])
            if len(values) > 1:
                notes.append(f"These results come from {len(values)} different {what} ({', '.join(values)}): "
                             "compare across them with care.")
    return notes


# Steps of the classic ladder that change one thing, with what the report says that thing is.
LADDER_STEPS = [
    ("tiled", "tiled_runtime_block",
     "tiled (the source study's kernel) fixes BLOCK at compile time; tiled_runtime_block reads it from blockDim at "
     "run time and keeps the inner loop rolled, so it pays for loop overhead and computed shared-memory offsets."),
    ("tiled_unrolled", "tiled",
     "tiled_unrolled is tiled with an explicit #pragma unroll on the inner loop (the A100 post's step). With BLOCK a "
     "compile-time constant the compiler may unroll tiled already, so the two can run alike."),
]


def _methods(results: pd.DataFrame) -> Markup:
    """The registry's description of each method run, and the measured effect of each one-change ladder step."""
    ran = [name for name in registry.METHODS if "method" in results and name in set(results["method"])]
    rows = []
    for name in ran:
        method = registry.get(name)
        rows.append({"method": name, "what it does": method.description,
                     "kernel": f"kernels/{method.source}" if method.source else "(library)",
                     "dtypes": ", ".join(method.dtypes), "block axis": "yes" if method.block_axis else "no"})
    html = _table_text(pd.DataFrame(rows)) if rows else ""
    for numerator, denominator, text in LADDER_STEPS:
        effect = collate.method_ratio(results, numerator, denominator)
        if not effect.empty:
            html += f"<p>{escape(text)} Measured ({escape(numerator)} over {escape(denominator)}):</p>"
            html += effect.to_html(escape=True, index=False, float_format=lambda x: f"{x:.2f}", border=0,
                                   classes="data", justify="left")
    return Markup(html)


def _shape_text(m: int, k: int, n: int) -> str:
    return f"{m}³" if m == k == n else f"{m}×{k}×{n}"


def _shape_words(shape: str) -> str:
    """A shape column's "8192x8192x8192" as the text writes it (8192³)."""
    parts = str(shape).split("x")
    return _shape_text(*(int(x) for x in parts)) if len(parts) == 3 and all(x.isdigit() for x in parts) else str(shape)


def _tf(x: float) -> str:
    """Three significant digits, never an exponent (4398, 138, 7.98, 0.125)."""
    if not np.isfinite(x):
        return ""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{float(f'{x:.3g}'):g}"


def _kernel(row) -> str:
    """A kernel's name in a sentence: its label, and its configuration where that is not the default build."""
    variant = str(row.get("variant") or "default")
    return row["label"] if variant in ("default", "nan") else f"{row['label']} ({variant} configuration)"


def _vendor(dtype: str) -> str:
    """The vendor line's name in prose: cuBLAS, or cuBLASLt (FP8), as the ratios of that dtype divide by it."""
    return VENDOR_NAMES.get(vendor_line(dtype), "cuBLAS")


def _headline_sentences(results: pd.DataFrame) -> list[str]:
    """One or two sentences per device, generated from the data: the fastest rate of ours at the largest shape,
    against cuBLAS of the same run and the datasheet peak; then the other element types in a list. A CPU (the
    only device of a CPU-only run, or the reference line of a GPU run) gets its fastest method's rates."""
    facts = why.headline_facts(results)
    if facts.empty:
        return []
    gpus = facts.loc[facts["kind"] == "gpu", "device"].unique()
    only_cpu = len(gpus) == 0
    out = []
    for device, part in facts.groupby("device", sort=False):
        lead = part.iloc[0]  # fastest first
        shape = _shape_text(lead["m"], lead["k"], lead["n"])
        if lead["kind"] == "gpu":
            where = f"this {device}" if len(gpus) == 1 else f"the {device}"
            text = (f"On {where}, our fastest kernel, {_kernel(lead)}, runs {lead['dtype']} at "
                    f"{_tf(lead['tflops'])} TF/s at {shape}")
            clauses = []
            if np.isfinite(lead["vs_cublas"]):
                clauses.append(f"{lead['vs_cublas']:.2f}× {_vendor(lead['dtype'])} measured in the same run")
            if np.isfinite(lead["pct_of_datasheet"]):
                clauses.append(f"{_pct(lead['pct_of_datasheet'])} of the datasheet's "
                               f"{lead['datasheet_tflops']:.4g} TF/s dense peak")
            text += (": " + " and ".join(clauses) if clauses else "") + "."
            others = []
            for _, row in part.iloc[1:].sort_values("dtype", key=lambda c: c.map(_dtype_rank)).iterrows():
                other_shape = _shape_text(row["m"], row["k"], row["n"])
                detail = [_kernel(row)]
                if np.isfinite(row["vs_cublas"]):
                    detail.append(f"{row['vs_cublas']:.2f}× {_vendor(row['dtype'])}")
                others.append(f"{row['dtype']} {_tf(row['tflops'])} TF/s" + (f" at {other_shape}" if other_shape
                              != shape else "") + f" ({', '.join(detail)})")
            if others:
                text += f" At the largest shape of the other element types: {', '.join(others)}."
        else:
            threads = lead["threads"]
            with_threads = f", {threads:.0f} BLAS thread{'s' if threads != 1 else ''}" if np.isfinite(threads) else ""
            rates = [f"{row['dtype']} at {_tf(row['tflops'])} TF/s" + (
                f" at {_shape_text(row['m'], row['k'], row['n'])}" if i == 0 or
                _shape_text(row["m"], row["k"], row["n"]) != shape else "")
                for i, (_, row) in enumerate(part.sort_values("dtype", key=lambda c: c.map(_dtype_rank)).iterrows())]
            if only_cpu:
                text = f"On this CPU ({device}{with_threads}), {lead['label']} runs {_and(rates)}."
            else:
                text = f"The CPU line ({lead['label']} on {device}{with_threads}) runs {_and(rates)}."
        out.append(text)
    return out


def _pct(x: float) -> str:
    """A percentage in words: whole numbers from 10 up (77%), two significant digits below (1.6%)."""
    return f"{x:.0f}%" if x >= 10 else f"{x:.2g}%"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _dtype_rank(name: str) -> int:
    order = dtype_order()
    return order.index(name) if name in order else len(order)


def _headline(results: pd.DataFrame) -> dict | None:
    """The answer first: a sentence or two per device (see _headline_sentences), then per device, dtype and shape
    the fastest verified kernel of ours, its TF/s, its ratio to cuBLAS and its share of the datasheet peak, beside
    cuBLAS itself. A run with no kernel of ours (CPU only) ranks the reference lines instead, and says why the
    ratios are blank. None without a verified job."""
    needed = {"method", "dtype", "shape", "status", "gflops"}
    if results.empty or not needed <= set(results.columns):
        return None
    gf = _num(results, "gflops")
    ok = results[(results["status"] == "passed") & gf.notna() & (gf > 0)].assign(gflops=gf)
    if ok.empty:
        return None
    reference = {name for name, m in registry.METHODS.items() if m.reference_line}
    has_ours = not ok["method"].isin(reference).all()
    column = "fastest of ours" if has_ours else "fastest method"
    ok = ok.assign(device=ok["env_device_name"] if "env_device_name" in ok else "", kind=device_kind(ok),
                   size3=_num(ok, "m") * _num(ok, "k") * _num(ok, "n"))
    rows = []
    for (device, dtype, shape), group in ok.groupby(["device", "dtype", "shape"], sort=False):
        ours = group[~group["method"].isin(reference)] if has_ours else group
        # the dtype's vendor line (cuBLAS; cuBLASLt for FP8), in the cuBLAS columns
        cublas = group[group["method"].isin(registry.vendor_methods())]["gflops"]
        if ours.empty:
            continue
        best = ours.loc[ours["gflops"].idxmax()]
        sheet = datasheet_tflops(device, dtype) if best["kind"] == "gpu" else None
        rows.append({"device": device, "dtype": dtype, "shape": shape, "_size": best["size3"],
                     column: best.get("label", best["method"]),
                     "configuration": str(best.get("variant") or "default") if pd.notna(best.get("variant"))
                     else "default",
                     "TF/s": best["gflops"] / 1e3,
                     "× cuBLAS": best["gflops"] / cublas.iloc[0] if not cublas.empty else np.nan,
                     "% of datasheet peak": 100 * best["gflops"] / 1e3 / sheet if sheet else np.nan,
                     "cuBLAS TF/s": cublas.iloc[0] / 1e3 if not cublas.empty else np.nan})
    if not rows:
        return None
    rank = {name: i for i, name in enumerate(dtype_order())}
    table = pd.DataFrame(rows).sort_values(["device", "dtype", "_size"], key=lambda c: c.map(rank) if c.name == "dtype"
                                           else c).drop(columns="_size")
    if not _several_gpus(results):
        table = table.drop(columns="device")
    if not _configurations(ok[~ok["method"].isin(reference)] if has_ours else ok):
        table = table.drop(columns="configuration")  # no kernel with variants ran: nothing was chosen
    if table["cuBLAS TF/s"].isna().all():
        table = table.drop(columns="cuBLAS TF/s")
    blank = [c for c in ("× cuBLAS", "% of datasheet peak") if table[c].isna().all()]
    for c in blank:  # a dash, not an empty cell that reads as a bug; the note says why
        table[c] = "—"
    notes = []
    if not has_ours:
        lines = _in_order(_distinct(ok["method"]), method_order())
        notes.append(f"This run has no GPU kernel of ours, only the reference line{'s' if len(lines) > 1 else ''} "
                     f"({', '.join(lines)}): the table gives the fastest verified method at each element type and "
                     "shape.")
    why_blank = {"× cuBLAS": "cuBLAS was not run",
                 "% of datasheet peak": "no datasheet peak is on file for this device (the datasheet peaks are "
                                        "listed in matmul_study/analysis/ladder.py)"
                 if (ok["kind"] == "gpu").any() else "the datasheet peaks are GPU peaks and this run has no GPU job"}
    if blank:
        notes.append(f"The — under {' and '.join(blank)}: {'; '.join(why_blank[c] for c in blank)}.")
    return {"table": _html_table(table.reset_index(drop=True)), "column": column, "note": " ".join(notes) or None,
            "sentences": _headline_sentences(results)}


def _error(x: float) -> str:
    """A relative error in one format down a column (9.6e-06, 3.1e-04); 0 is exact."""
    if not np.isfinite(x):
        return ""
    return "0 (exact)" if x == 0 else f"{x:.1e}"


def _times(x: float) -> str:
    """A ratio as a factor: 1.62×, 190×; from 1000 up in powers of ten (5.2×10⁸), which a reader compares at a
    glance."""
    if x < 1000:
        return f"{_tf(x)}×"
    exponent = int(math.floor(math.log10(x)))
    mantissa = float(f"{x / 10 ** exponent:.2g}")
    if mantissa >= 10:  # 9.96 rounds up to the next power
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:g}×10{str(exponent).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))}"


def _precision_sentence(row: pd.Series) -> str:
    """One comparison of analysis.precision.comparisons in words: the rates, the errors, FP8's quantization."""
    a, b = row["dtype"], row["against"]
    shapes = ("" if row["shape"] == row["against_shape"] else
              f", at {_shape_words(row['shape'])} and {_shape_words(row['against_shape'])}")
    text = (f"{a} runs at {_times(row['rate_ratio'])} the rate of {b} ({_tf(row['tflops'])} against "
            f"{_tf(row['against_tflops'])} TF/s, {row['method']} against {row['against_method']}{shapes})")
    mine, theirs = row["rel_error"], row["against_rel_error"]
    if np.isfinite(row["error_ratio"]) and mine > 0:
        text += f" at {_times(row['error_ratio'])} its error ({_error(mine)} against {_error(theirs)})"
    elif mine == 0 and theirs > 0:
        text += f" and exactly (error 0, against {_error(theirs)})"
    elif mine > 0 and theirs == 0:
        text += f" at an error of {_error(mine)}, where {b} matched the reference exactly"
    elif mine == 0 and theirs == 0:
        text += "; both are exact"
    quantized = row["quantization_rel_error"]
    if np.isfinite(quantized):
        text += f"; quantizing fp32 inputs to {a} costs an error of {_error(quantized)} of its own"
    return text + "."


def _precision(results: pd.DataFrame, figures: list[dict]) -> dict | None:
    """Precision and speed (analysis.precision): per element type at its largest square shape, the two fastest
    verified kernels of ours and the vendor line with their rates and errors, the figure, and a sentence per
    comparison of an element type with the more precise one it stands in for. None without a verified GPU job."""
    table = precision.precision_table(results)
    if table.empty:
        return None
    several = table["device"].nunique() > 1
    shown = pd.DataFrame({
        **({"device": table["device"]} if several else {}),
        "element type": table["dtype"],
        "shape": [_shape_words(s) for s in table["shape"]],
        "kernel": [f"{label} (vendor)" if vendor else label for label, vendor in zip(table["label"], table["vendor"])],
        "TF/s": [_tf(x) for x in table["tflops"]],
        "× vendor": ["—" if vendor or not np.isfinite(r) else f"{r:.2f}"
                     for r, vendor in zip(table["vs_vendor"], table["vendor"])],
        "rel. error": [_error(x) for x in table["rel_error"]],
        "vendor's rel. error": ["—" if vendor else _error(x) for x, vendor in zip(table["vendor_rel_error"],
                                                                                 table["vendor"])],
        "quantization error": [_error(x) for x in table["quantization_rel_error"]],
    })
    if not np.isfinite(table["quantization_rel_error"].astype(float)).any():
        shown = shown.drop(columns="quantization error")
    sentences = [(f"On {row['device']}: " if several else "") + _precision_sentence(row)
                 for _, row in precision.comparisons(table).iterrows()]
    return {"table": _html_table(shown), "sentences": sentences, "figures": figures}


def _why(results: pd.DataFrame) -> dict | None:
    """The ladder's steps at the largest shape (analysis.why): what each adds, the modelled traffic and intensity
    before and after, and the rate it bought in the same run; one sentence per element type on the whole climb.
    None without two rungs of one element type."""
    steps = why.ladder_steps(results)
    if steps.empty:
        return None
    several = steps["device"].nunique() > 1
    table = pd.DataFrame({
        "element type": steps["dtype"],
        "step": steps["from"] + " → " + steps["to"],
        "what the step adds": steps["adds"],
        "modelled traffic (GB)": [f"{_tf(a)} → {_tf(b)}" + (f" (÷{c:.3g})" if c >= 1.005 else
                                                            f" (×{1 / c:.3g})" if c <= 0.995 else " (same)")
                                  for a, b, c in zip(steps["traffic_from_gb"], steps["traffic_to_gb"],
                                                     steps["traffic_cut"])],
        "intensity (FLOP/B)": [f"{_tf(a)} → {_tf(b)}" for a, b in zip(steps["intensity_from"], steps["intensity_to"])],
        "TF/s": [f"{_tf(a)} → {_tf(b)}" for a, b in zip(steps["tflops_from"], steps["tflops_to"])],
        "gain": [f"{g:.2f}×" for g in steps["gain"]],
        "reading": steps["reading"],
        **({"device": steps["device"]} if several else {}),  # last: the template styles columns 3 and 8
    })
    climbs = []
    for _, row in why.climb(results).iterrows():
        shape = _shape_text(*(int(x) for x in str(row["shape"]).split("x"))) if str(row["shape"]).count("x") == 2 \
            else row["shape"]
        text = (f"{row['dtype']}" + (f" on {row['device']}" if several else "") + f" at {shape}: from "
                f"{row['first']} at {_tf(row['first_tflops'])} TF/s to {row['top']} at {_tf(row['top_tflops'])} TF/s "
                f"({row['factor']:.3g}×); the largest single step, {row['biggest_from']} → {row['biggest_to']}, "
                f"bought {row['biggest_gain']:.2f}×.")
        climbs.append(text)
    rungs = ladder_table(results)
    rungs = rungs[~rungs["method"].isin(why.reference_lines())]
    single = [f"{dtype} has one rung ({part['label'].iloc[0]}), so no step to explain."
              for (_, dtype), part in rungs.groupby(["device", "dtype"], sort=False) if len(part) == 1]
    return {"table": _html_table(table), "climbs": climbs, "single": single}


def _percent(fraction) -> str:
    return f"{float(fraction):.0%}" if isinstance(fraction, (int, float)) else "?"


def _rates(results: pd.DataFrame, config: dict) -> Markup | None:
    """How the headline (burst) rate, the sustained rate and the energy were measured, what the waits cost, and
    the jobs the burst rule or a bimodal kernel leaves without a plain median."""
    if "burst_samples_total" not in results or not (device_kind(results) == "gpu").any():
        return _cpu_processes(results)  # no GPU job: nothing was burst-sampled
    meas = (config or {}).get("measurement") or {}
    gpu = results[device_kind(results) == "gpu"]
    settle_s, recovery_s = _num(gpu, "burst_settle_s").sum(), _num(gpu, "burst_recovery_s").sum()
    job_s = _num(results, "overhead_job_s").sum()

    def setting(key: str) -> str:
        return escape(str(meas.get(key, "?")))

    html = (
        "<p>Every GPU job's headline rate (the GFLOP/s and the ratios to cuBLAS and to the peaks in the tables and "
        "figures) is its "
        "<b>burst</b> rate: the job starts once the card draws at most "
        f"{setting('settle_power_fraction')} of its power limit (a wait of at most "
        f"{setting('settle_max_s')} s), and only samples whose SM clock, read before and after, "
        f"stayed at or above {setting('throttle_fraction')} of its maximum count. From idle, "
        "the power limiter lets a heavy kernel run at full clock for only tens of milliseconds, and NVML's clock "
        "readings lag it, so the samples' own times are the finer signal. A sample lasts at most "
        f"{BURST_SAMPLE_MAX_S * 1e3:.0f} ms where a launch allows, and until {setting('burst_plateau_samples')} "
        "samples ran within "
        f"{_percent(meas.get('burst_band'))} of the fastest, a sample that fell off that level is followed by a "
        f"cool-down (up to {setting('recovery_max_s')} s, until the card draws idle power "
        "again). The burst rate is the median of the full-clock samples within "
        f"{_percent(meas.get('burst_band'))} of the time the "
        f"{setting('burst_plateau_samples')} fastest beat (the fastest plateau; a steady "
        "kernel keeps every sample). "
        "The median of all samples is kept too (<code>gflops_all_samples</code>). The <b>sustained</b> rate is "
        "the second half of a continuous window of "
        f"{setting('sustained_s')} s of back-to-back launches (jobs of at least "
        f"{setting('sustained_min_size')}³ multiply-adds), where the power limiter has settled; "
        "its clock, power and <b>energy</b> (NVML's total-energy counter, as GFLOP per joule) are recorded. "
        "Ratios compare burst with burst and sustained with sustained, never one with the other. Clocks and power "
        "limits are never changed: the study only waits.</p>")
    if job_s > 0:
        html += (f"<p>Waiting cost {settle_s:.0f} s of settling and {recovery_s:.0f} s of cool-downs, "
                 f"{(settle_s + recovery_s) / job_s:.0%} of the {job_s:.0f} s the jobs took.</p>")
    no_burst = gpu[(gpu["status"] == "passed") & _num(gpu, "gflops").isna()] if "status" in gpu else gpu.iloc[0:0]
    if not no_burst.empty:
        table = _job_keys(results, no_burst).assign(why=no_burst.get("burst_note", ""))
        html += "<p>Verified jobs without a burst rate:</p>" + _table_text(table)
    sustained = gpu[_num(gpu, "sustained_gflops").notna()]
    if not sustained.empty:
        burst, sus = _num(sustained, "gflops"), _num(sustained, "sustained_gflops")
        table = _job_keys(results, sustained).assign(**{
            "burst GFLOP/s": burst, "sustained GFLOP/s": sus, "sustained / burst": sus / burst,
            "% of cuBLAS (burst)": _num(sustained, "pct_of_cublas"),
            "% of cuBLAS (sustained)": _num(sustained, "pct_of_cublas_sustained"),
            "settled SM clock (MHz)": _num(sustained, "sustained_sm_clock_mhz"),
            "power (W)": _num(sustained, "sustained_power_w"),
            "GFLOP/J": _num(sustained, "sustained_gflop_per_j")})
        html += "<p>Sustained rate, clock, power and energy per job:</p>" + _table_text(table)
    if "burst_modes_s" in gpu:
        bimodal = gpu[gpu["burst_modes_s"].astype(str).str.contains(";")]
        if not bimodal.empty:
            table = _job_keys(results, bimodal).assign(**{
                "modes (ms per launch)": [" and ".join(f"{float(x) * 1e3:.4g}" for x in str(v).split(";"))
                                          for v in bimodal["burst_modes_s"]],
                "shares": [" / ".join(f"{float(x):.0%}" for x in str(v).split(";")) for v in bimodal["burst_mode_shares"]]})
            html += "<p>Jobs whose samples fall into two modes (both are reported; the median may sit on either):</p>"
            html += _table_text(table)
    return Markup(html + str(_cpu_processes(results) or ""))


def _cpu_processes(results: pd.DataFrame) -> Markup | None:
    """The CPU line's reproducibility within the run: how far apart its fresh processes landed."""
    spread = _num(results, "cpu_spread").dropna()
    if spread.empty:
        return None
    processes = _num(results, "cpu_processes").dropna()
    return Markup(
        f"<p>CPU (numpy) jobs time in {processes.max():.0f} fresh processes each and report the median of their "
        f"medians. The spread between a job's processes was {spread.median():.1%} at the median and "
        f"{spread.max():.1%} at worst: the CPU line reproduces to about that, not to the GPU's few percent.</p>")


def _jobs(results: pd.DataFrame) -> pd.DataFrame:
    """The All jobs table: JOB_COLUMNS (and the device where there are several GPUs), without columns that are
    empty for every job (a CPU-only run has no % of cuBLAS), headed as JOB_HEADERS names them."""
    columns = [c for c in JOB_COLUMNS + (["env_device_name"] if _several_gpus(results) else []) if c in results
               and (c not in VARIANT_COLUMNS or _configurations(results))]
    table = results[columns]
    keep = [c for c in columns if c in ("label", "dtype", "shape", "status") or
            table[c].map(lambda v: v is not None and str(v).strip() not in ("", "nan", "None")).any()]
    return table[keep].rename(columns=JOB_HEADERS)


def _regret(results: pd.DataFrame) -> dict | None:
    """Configuration regret (analysis.regret): where a sweep measured several configurations of a method on one
    shape, the heuristic's pick against the fastest verified one, per problem, with the median and the worst in a
    sentence. None where no method had two configurations verified on one shape."""
    table = regret.regret_table(results)
    facts = regret.summary(table)
    if facts is None:
        return None
    several = table["device"].nunique() > 1
    shown = pd.DataFrame({
        **({"device": table["device"]} if several else {}),
        "method": table["method"] + table["block"].map(lambda b: f" b{b}" if b else ""),
        "element type": table["dtype"],
        "shape": [_shape_text(m, k, n) for m, k, n in zip(table["m"], table["k"], table["n"])],
        "configurations measured": table["variants"],
        "heuristic's pick": table["pick"],
        "pick TF/s": table["pick_gflops"] / 1e3,
        "fastest measured": table["best"],
        "fastest TF/s": table["best_gflops"] / 1e3,
        "pick ÷ fastest": [f"{r:.2f}" if np.isfinite(r) else "not measured" for r in table["regret"]],
    })
    sentences = []
    problems = f"{facts['measured']} problem{'s' if facts['measured'] != 1 else ''}"
    if facts["measured"] and facts["no_regret"] == facts["measured"]:
        sentences.append(f"Over {problems} with several configurations measured, the heuristic picked the fastest "
                         "configuration every time (no regret).")
    elif facts["measured"]:
        worst = facts["worst_row"]
        sentences.append(
            f"Over {problems} with several configurations measured, the heuristic's pick ran at "
            f"{facts['median']:.2f}× the fastest configuration at the median and {facts['worst']:.2f}× at worst "
            f"({worst['method']} {worst['dtype']} at {_shape_text(worst['m'], worst['k'], worst['n'])}: it picked "
            f"{worst['pick']}, {worst['best']} ran fastest); it picked the fastest in {facts['no_regret']} of "
            f"{facts['measured']}.")
    if facts["unmeasured"]:
        sentences.append(f"In {facts['unmeasured']} problem{'s' if facts['unmeasured'] != 1 else ''} the pick was "
                         "not among the verified configurations measured (a sweep by a list of names that left it "
                         "out, or a pick that failed verification): no regret is stated there.")
    return {"table": _html_table(shown), "sentences": sentences}


def _title(results: pd.DataFrame) -> str:
    """GPU unless the results hold CPU jobs only."""
    if results.empty or "method" not in results:
        return TITLE
    return CPU_TITLE if (device_kind(results) == "cpu").all() else TITLE


def render_report(
    results: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    pruned: pd.DataFrame,
    figures: dict[str, Path],
    config: dict,
    extra_sections: list | None = None,
    calibration: pd.DataFrame | None = None,
) -> str:
    """The whole report as one HTML document.

    `figures` maps a figure name (a key of `figures.FIGURES`, whose caption is used) to its PNG file; `tables`
    maps a key ("best", "speedup", ... or a free title) to a DataFrame; `pruned` lists the (method, dtype, block)
    combinations the config asked for but the study skipped, with a reason; `extra_sections` holds
    (title, html) pairs whose html is already safe and is shown as is after the tables; `calibration` is the
    table of device ceilings (device_name, ceiling, value, unit, detail), shown when not empty. Columns the
    results lack (older files) leave out the parts that need them.
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
    sections = [("About the methods", _methods(fastest))]
    rates = _rates(results, config)
    if rates is not None:
        sections.append(("Burst, sustained and energy", rates))
    sections += list(extra_sections or [])
    extra = [
        {"id": f"extra-{i}", "title": str(title), "html": Markup(fragment)}
        for i, (title, fragment) in enumerate(sections, start=1)
    ]
    all_figures = _figures(figures or {})
    jobs = _jobs(results)
    return env.get_template(TEMPLATE).render(
        title=_title(results),
        summary=_summary(results),
        config_yaml=yaml.safe_dump(_plain(config or {}), sort_keys=False, allow_unicode=True).rstrip(),
        environment=_environment(results),
        failed=_html_table(failed, FAILED_COLUMNS) if not failed.empty else None,
        n_failed=len(failed),
        headline=_headline(results),
        why=_why(fastest),
        regret=_regret(results),
        headline_figures=[f for name in HEADLINE_FIGURES for f in all_figures if f["name"] == name],
        figures=[f for f in all_figures if f["name"] not in SECTION_FIGURES + HEADLINE_FIGURES],
        one_device=ONE_DEVICE if len(gpu_devices(results)) == 1 and "devices" in (figures or {}) else None,
        provenance=_provenance(results),
        provenance_notes=_provenance_notes(results),
        throttling=_throttling(results, config),
        measurement=_measurement(results, config),
        claims=_claims(fastest),
        ceilings=_ceilings(calibration),
        devices=_devices(fastest, [f for f in all_figures if f["name"] == "devices"]),
        precision=_precision(fastest, [f for f in all_figures if f["name"] == "precision"]),
        tables=[
            {"title": TABLE_TITLES.get(key, str(key).replace("_", " ").capitalize()), "html": _html_table(df)}
            for key, df in (tables or {}).items()
        ],
        extra_sections=extra,
        pruned=_html_table(pruned, PRUNED_COLUMNS) if pruned is not None and not pruned.empty else None,
        jobs=_html_table(jobs),
        job_columns=list(jobs.columns),
    )
