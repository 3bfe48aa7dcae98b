"""The CPU line (numpy's BLAS) as the report states it: the BLAS threads it ran on against the machine's cores, and
what else the machine ran meanwhile. A CPU job records both in its `cpu.host` section (measure.cpu_job): the
machine's logical cores (os.cpu_count) and those the job may use, the 1-minute load average before and after it,
the cores the whole machine kept busy over the job (/proc/stat), the job's own share of them (its processes' CPU
time) and the busiest other processes. Results without these fields read as unknown: nothing is said about them."""

from __future__ import annotations

import pandas as pd

from matmul_study.analysis.columns import numeric


def _frame(rows: pd.DataFrame | pd.Series) -> pd.DataFrame:
    return rows.to_frame().T if isinstance(rows, pd.Series) else rows


def machine_cores(results: pd.DataFrame) -> pd.Series:
    """Per job, the machine's logical cores: env_cpu_cores where the environment records it, else the CPU job's
    own record (cpu_host_cores); NaN where neither does."""
    return numeric(results, "env_cpu_cores").fillna(numeric(results, "cpu_host_cores"))


def _counts(values: pd.Series) -> list[int]:
    finite = pd.to_numeric(values, errors="coerce").dropna()
    return sorted({int(v) for v in finite if v > 0})


def _or(values: list[int]) -> str:
    return ", ".join(str(v) for v in values[:-1]) + (" or " if len(values) > 1 else "") + str(values[-1])


def threads_words(cpu_rows: pd.DataFrame) -> str:
    """The CPU line of `cpu_rows` (its numpy jobs) in a few words: "numpy on 1 BLAS thread of a 16-core
    machine", with what is not recorded said so."""
    threads = _counts(numeric(cpu_rows, "threads"))
    cores = _counts(machine_cores(cpu_rows))
    usable = _counts(numeric(cpu_rows, "cpu_host_usable_cores"))
    if not threads:
        return "numpy (its BLAS thread count is not recorded)"
    text = f"numpy on {_or(threads)} BLAS thread{'s' if threads != [1] else ''}"
    if not cores:
        return text + " (the machine's core count is not recorded)"
    article = "an" if str(cores[0]).startswith("8") or cores[0] in (11, 18) else "a"
    text += f" of {article} {_or(cores)}-core machine"
    if usable and max(usable) < min(cores):
        text += f" ({_or(usable)} of them usable by the job)"
    return text


def fewer_threads_words(cpu_rows: pd.DataFrame) -> str | None:
    """Where the CPU line ran on fewer BLAS threads than the machine has cores, a sentence saying what that does
    to a claim about the CPU; None where it ran on every core or nothing says otherwise."""
    threads = _counts(numeric(cpu_rows, "threads"))
    cores = _counts(machine_cores(cpu_rows))
    if not threads:
        return None
    if cores and max(threads) < min(cores):
        return (f"The CPU line ran on {_or(threads)} of the machine's {_or(cores)} cores: the claim is about the "
                "CPU, so a ratio against it overstates the GPU's lead.")
    if not cores and threads == [1]:
        return ("The CPU line ran on one BLAS thread: against a CPU with more cores, a ratio to it overstates the "
                "GPU's lead.")
    return None


def _names(others: pd.Series) -> list[str]:
    """The process names of cpu_host_others ("stress-ng (1.9 cores), python3 (0.4 cores)"), busiest first."""
    names: list[str] = []
    for text in others.dropna().astype(str):
        for part in text.split("), "):
            name = part.split(" (")[0].strip()
            if name and name not in names:
                names.append(name)
    return names


def load_words(rows: pd.DataFrame | pd.Series) -> str | None:
    """What the machine ran beside the CPU job(s) of `rows`: "load 3.2 on 2 cores, other processes busy on 1.8
    cores (stress-ng)"; over several jobs the range of the load and the most other processes used. None where
    no job recorded it."""
    rows = _frame(rows)
    load = pd.concat([numeric(rows, "cpu_host_load_before"), numeric(rows, "cpu_host_load_after")], axis=1).max(axis=1)
    others = numeric(rows, "cpu_host_others_cores")
    if load.dropna().empty and others.dropna().empty:
        return None
    cores = _counts(machine_cores(rows))
    parts = []
    if not load.dropna().empty:
        low, high = load.min(), load.max()
        span = f"{high:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}–{high:.1f}"
        parts.append(f"load {span}" + (f" on {_or(cores)} cores" if cores else ""))
    if not others.dropna().empty:
        most = float(others.max())
        names = _names(rows["cpu_host_others"]) if "cpu_host_others" in rows else []
        if most >= 0.05:
            parts.append(f"other processes busy on {'up to ' if len(others.dropna()) > 1 else ''}{most:.1f} cores"
                         + (f" ({', '.join(names[:3])})" if names else ""))
        else:
            parts.append("no other process busy")
    return ", ".join(parts)


__all__ = ["fewer_threads_words", "load_words", "machine_cores", "threads_words"]
