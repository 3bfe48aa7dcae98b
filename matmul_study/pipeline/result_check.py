"""The start-up check of the grid's result files: Snakemake takes a file at a result path for that job's result, so
one that is cut short, holds the wrong fields or another job's result would otherwise be collated as it is (or stop
collate) and its job would never be measured. Each bad one is renamed beside itself, under a name that says why and
that the result pattern does not match, so the same command measures that job again.

A result measured with another config is not bad: Snakemake reruns it when the params changed. Identity is the job
keys (records.JOB_KEYS) only. A result put back after a rerun that did not finish (pipeline/kept.py) is also compared
by the config hash it recorded (measured_under_another_config): that rerun replaced Snakemake's record of its params."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable

from matmul_study.core import results
from matmul_study.core.configs import DEFAULT
from matmul_study.core.records import JOB_KEYS


class BadResult(Exception):
    """`kind` is the suffix the file is set aside under ("corrupt", "wrong-schema", "foreign")."""

    def __init__(self, kind: str, why: str):
        super().__init__(why)
        self.kind = kind


def identity_mismatches(record: dict, job: dict) -> list[str]:
    """The job keys where `record` differs from the job its path stands for. A result written before variants were
    an axis has no variant: it ran the default build."""
    found = {**record, "variant": record.get("variant") or DEFAULT}
    return [f"{key} {found.get(key)!r}, not {job[key]!r}" for key in JOB_KEYS
            if key in job and str(found.get(key)) != str(job[key])]


def check(path: str | Path, job: dict) -> None:
    """Raise BadResult when the file at `path` is not a whole result of `job` (a dict of the job keys)."""
    try:
        record = results.read(path)
    except results.ResultFileError as exc:
        # The message's own advice (delete and rerun) is what set_aside does: keep only what is wrong.
        why = str(exc).split(": ", 1)[-1].split(". Delete it", 1)[0]
        raise BadResult(exc.kind, why) from None
    wrong = identity_mismatches(record, job)
    if wrong:
        raise BadResult("foreign", f"the result of another job ({'; '.join(wrong)})")


def measured_under_another_config(path: str | Path, current_hash: str) -> str | None:
    """Why the result at `path` cannot stand for a study of the config whose hash (records.config_hash) is
    `current_hash`: the hash it recorded differs, or it recorded none. None when it was measured under that config.
    Raises results.ResultFileError where the file is not a result."""
    env = results.read(path).get("env")
    recorded = env.get("config_hash") if isinstance(env, dict) else None
    if recorded == current_hash:
        return None
    return f"config {recorded}, not the current {current_hash}" if recorded else "a config it did not record"


def set_aside(path: str | Path, kind: str) -> Path:
    """Rename `path` to `<name>.<kind>` in its folder (replacing an earlier one set aside for the same reason)."""
    path = Path(path)
    aside = path.with_name(f"{path.name}.{kind}")
    os.replace(path, aside)
    return aside


def set_aside_bad_results(jobs: Iterable[tuple[str, dict]], argv: list[str] | None = None) -> list[str]:
    """Check every existing result file of (path, job) pairs; set each bad one aside. One line per file set aside,
    saying what was wrong and what was done. Not in a job that an executor spawned (it parses the workflow again):
    the run's own Snakemake checked the files before it planned."""
    argv = sys.argv if argv is None else argv
    if "--target-jobs" in argv or "--mode" in argv:
        return []
    lines = []
    for path, job in jobs:
        if not os.path.exists(path):
            continue
        try:
            check(path, job)
        except BadResult as bad:
            try:
                aside = set_aside(path, bad.kind)
            except FileNotFoundError:  # gone meanwhile (another process set it aside): measured again either way
                continue
            lines.append(f"{path}: {bad}; set aside as {aside.name}, the job is measured again.")
    return lines


def every_job_failed(paths: Iterable[str | Path]) -> str | None:
    """The line a finished run ends with when not one of its jobs passed verification (None when one did, or when
    there are none): the tables and the report are written, but the study measured nothing usable."""
    statuses = []
    for path in paths:
        try:
            statuses.append(results.read(path)["status"])
        except (OSError, results.ResultFileError):
            return None  # not a finished run of this grid: collate names the file
    if not statuses or "passed" in statuses:
        return None
    return (f"All {len(statuses)} jobs failed verification: no rate was measured. The tables and the report are "
            "written; report/report.html lists each job's error against its tolerance.")
