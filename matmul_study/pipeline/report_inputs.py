"""What the report is told about the run besides its tables: the config as the results were measured with it
(config_as_measured), which result sets (this run, each imported folder) hold GPU jobs (for the figures it can
draw), and, for Snakemake's own `--report`, whether a finished run of this config is there to describe."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ASKED_KEY = "config asks for (not what the results were measured with)"
# matmul_study.present.report computes with these (caps hit, throttled clocks): where results differ, it gets the
# largest.
REPORT_NUMBERS = ("max_reps", "max_time_s", "throttle_fraction")


def _one_or_all(values: list, key: str = ""):
    if len(values) == 1:
        return values[0]
    return max(values) if key in REPORT_NUMBERS else values


def config_as_measured(config: dict, records: list[dict]) -> dict:
    """The config as the report states it: `threads` and `measurement` replaced by the values this run's results
    were measured with (from each result's measured_config), wherever they differ from the config. The values
    the config asked for but no result was measured with are kept under ASKED_KEY, so that the report says both.
    Results without measured_config (older files) leave the config's values as they are."""
    from matmul_study.core import registry

    shown = json.loads(json.dumps(config, default=str))
    asked = {}
    measured = [r["measured_config"] for r in records if isinstance(r.get("measured_config"), dict)]
    cpu = [r for r in records if r.get("method") in registry.METHODS and not registry.get(r["method"]).on_gpu]
    threads = sorted({int(r["threads"]) for r in cpu if r.get("threads") is not None})
    if threads and threads != [shown.get("threads")]:
        asked["threads"] = shown.get("threads")
        shown["threads"] = _one_or_all(threads)
    if measured and isinstance(shown.get("measurement"), dict):
        for key, value in list(shown["measurement"].items()):
            values = []
            for m in measured:
                got = (m.get("measurement") or {}).get(key, value)
                if got not in values:
                    values.append(got)
            if values != [value]:
                asked.setdefault("measurement", {})[key] = value
                shown["measurement"][key] = _one_or_all(values, key)
    if asked:
        shown[ASKED_KEY] = asked
    return shown


def run_keys(local_jobs, imported_paths: list[str]):
    """method, dtype and source of every job of a run: this run's grid (source "") and the imported result files
    (source: their folder under results/imported/, read from the path)."""
    import pandas as pd

    rows = [(m, d, "") for m, d in zip(local_jobs["method"], local_jobs["dtype"])]
    for path in imported_paths:
        parts = Path(path).parts
        keys = {p.split("~", 1)[0]: p.split("~", 1)[1] for p in parts if "~" in p}
        if "method" in keys and "dtype" in keys:
            rows.append((keys["method"], keys["dtype"], parts[2] if len(parts) > 2 else path))
    return pd.DataFrame(rows, columns=["method", "dtype", "source"])


def gpu_sources(keys) -> int:
    """How many result sets (this run, each imported folder) hold GPU jobs."""
    from matmul_study.core import registry

    on_gpu = keys["method"].map(lambda m: m in registry.METHODS and registry.get(m).on_gpu)
    return keys.loc[on_gpu, "source"].nunique()


def report_mode(argv: list[str] | None = None) -> bool:
    """Whether this Snakemake process builds Snakemake's own report (`--report FILE`), not a run."""
    argv = sys.argv if argv is None else argv
    return any(a == "--report" or a.startswith("--report=") for a in argv) and "--report-after-run" not in argv


def _config_value(value) -> str:
    """A --config value as text that Snakemake's --config parser reads back to the same value: JSON (which YAML
    reads), except that the strings its YAML reader made of nested numbers and booleans ({min_reps: 4} gives
    "4") are written bare again, as the user typed them."""
    if isinstance(value, str):
        try:
            json.loads(value)
            return value
        except ValueError:
            return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_config_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_config_value(v) for v in value) + "]"
    return json.dumps(value)


def user_config_args(settings, methods: list[str] | None = None) -> str:
    """The --configfile and --config arguments of this Snakemake run (settings: workflow.config_settings), as
    text to repeat in a command for the user, with methods= replaced by `methods` when given. Snakemake's
    parsed settings, not sys.argv: they hold what a profile added too, whatever the spelling on the command line."""
    import shlex

    files = []
    for path in getattr(settings, "configfiles", None) or []:
        path = Path(path)
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            pass  # outside the working directory: the absolute path, which works from anywhere
        files.append(f"--configfile {shlex.quote(str(path))}")
    overrides = dict(getattr(settings, "config", None) or {})
    if methods is not None:
        overrides.pop("methods", None)
        overrides = {"methods": methods, **overrides}
    entries = [f"{key}={value}" if isinstance(value, str) else f"{key}={_config_value(value)}"
               for key, value in overrides.items()]
    config = ["--config " + " ".join(shlex.quote(e) for e in entries)] if entries else []
    return " ".join(files + config)


def report_needs_a_finished_run(config: dict, run_files: list[str], argv: list[str] | None = None,
                                settings=None) -> str | None:
    """For `snakemake --report`: None when every result this config selects exists; else what to do, in words.
    Snakemake's report describes a finished run of the same config: after a run with --config, the report needs
    the same --config (it would otherwise fail on the first missing file, with no hint). settings
    (workflow.config_settings): the suggested command repeats the user's own --configfile and --config, since
    dropping them would point at another config than the one the user is working with."""
    argv = sys.argv if argv is None else argv
    missing = [f for f in run_files if not Path(f).exists()]
    if not missing:
        return None
    target = next((a.split("=", 1)[1] if "=" in a else argv[i + 1] for i, a in enumerate(argv)
                   if (a == "--report" and i + 1 < len(argv)) or a.startswith("--report=")), "report.zip")
    have = sorted({Path(f).parts[2].removeprefix("method~") for f in run_files if Path(f).exists()},
                  key=config["methods"].index)
    if have:
        advice = (f"If the run used --config, give --report the same, e.g. (the methods that have results here): "
                  f"snakemake --report {target} {user_config_args(settings, have)}")
    else:
        first_run = user_config_args(settings, None if "methods" in (getattr(settings, "config", None) or {})
                                     else ["numpy"])
        advice = f"No result of this config exists yet: run the study first, e.g. snakemake --cores 1 {first_run}"
    return (f"snakemake --report describes a finished run, but {len(missing)} of the {len(run_files)} results this "
            f"config selects are missing (e.g. {missing[0]}). {advice.rstrip()}.")
