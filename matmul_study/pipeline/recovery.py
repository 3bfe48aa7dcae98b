"""Recovery after a crash or a stop: what a killed or stopped Snakemake left that would stop the next run (its
directory locks, half-written temporary files, the incomplete flags of outputs that are whole) is removed or
recorded as finished, so that the same command resumes the study."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from matmul_study.pipeline.processes import running_here


def keep_finished_results(workflow, rules: tuple[str, ...] = ("benchmark_cpu", "benchmark_gpu")) -> list[str]:
    """Called in `onerror`: a benchmark job that wrote its result (atomically: a result file is whole or absent)
    just before Snakemake stopped is finished, but Snakemake recorded only its start, and the next plain run would
    stop with IncompleteFilesException. Record such jobs as finished; returns their result files."""
    from matmul_study.core import results

    kept = []
    persistence = getattr(workflow, "persistence", None)
    if persistence is None:
        return kept
    for job in list(workflow.dag.needrun_jobs()):
        if job.rule.name not in rules:
            continue
        paths = [str(f) for f in job.output]
        if not paths or not all(Path(p).is_file() for p in paths):
            continue
        try:
            if not workflow.async_run(persistence.incomplete(job)):
                continue
            for p in paths:
                results.read(p)
            workflow.async_run(persistence.finished(job))
        except Exception:  # noqa: BLE001  (not a whole result, or Snakemake's records refused: rerun measures it)
            continue
        kept.extend(paths)
    return kept


# The folders whose files the study writes whole (a temporary name, then one rename: results.write_atomic and
# results.replaced_whole): a file there under its final name is finished. Result files are read as well (they are
# also the study's record of what was measured); tables, figures and the report need only exist.
RUNS_DIR = "results/runs"
WHOLE_DIRS = (RUNS_DIR, "results/tables", "results/figures", "report")


def _inside(path: Path, folders) -> bool:
    return any(path.resolve().is_relative_to(folder.resolve()) for folder in folders)


def finished_but_flagged(workdir: Path, runs_dir: str = RUNS_DIR,
                         whole_dirs: tuple[str, ...] = WHOLE_DIRS) -> list[tuple[Path, Path]]:
    """Snakemake's incomplete markers (.snakemake/incomplete/, its file persistence: one file per output, named by
    the output's path in URL-safe base64, split into "@"-prefixed chunks where long) of outputs that exist and are
    whole: they are written atomically, so such an output is finished, and only the record of it is not (Snakemake
    was stopped or killed between the job's end and its bookkeeping, or mid-job after the file was renamed into
    place). Returns (marker, output) pairs."""
    from base64 import urlsafe_b64decode

    from matmul_study.core import results

    root = workdir / ".snakemake" / "incomplete"
    if not root.is_dir():
        return []
    runs = [workdir / runs_dir]
    written_whole = [workdir / d for d in (runs_dir, *whole_dirs)]
    found = []
    for marker in root.rglob("*"):
        if not marker.is_file() or marker.name == "migration_underway":
            continue
        encoded = "".join(part.removeprefix("@") for part in marker.relative_to(root).parts)
        try:
            target = Path(urlsafe_b64decode(encoded).decode())
        except (ValueError, UnicodeDecodeError):
            continue
        path = target if target.is_absolute() else workdir / target
        if not path.is_file() or not _inside(path, written_whole):
            continue
        if _inside(path, runs):
            try:
                results.read(path)
            except (results.ResultFileError, OSError):
                continue
        found.append((marker, path))
    return found


def half_written(workdir: Path, whole_dirs: tuple[str, ...] = WHOLE_DIRS) -> list[Path]:
    """The hidden temporary files (".<name>.<random>.tmp") that a writer stopped before its rename left in the
    folders written whole."""
    return sorted(p for d in whole_dirs if (workdir / d).is_dir() for p in (workdir / d).rglob(".*.tmp"))


def pause_for_tests(step: str) -> None:
    """MATMUL_STUDY_PAUSE_IN="<step>:<file>" holds `step` here (after it wrote some or all of its outputs) once it has
    created <file>: the recovery tests stop Snakemake at that point, deterministically, inside each rule."""
    import os
    import time

    wanted, _, flag = os.environ.get("MATMUL_STUDY_PAUSE_IN", "").partition(":")
    if wanted == step and flag:
        Path(flag).touch()
        time.sleep(120)


def clear_stale_locks(workdir: str | Path = ".", runs_dir: str = RUNS_DIR,
                      argv: list[str] | None = None) -> list[str]:
    """After a crash (Snakemake killed), remove what it left that would stop the next run: its directory locks,
    half-written temporary files, and the incomplete flags of outputs that are whole (so that the same
    command resumes; stop_jobs_promptly and keep_finished_results avoid such flags where Snakemake is only told to
    stop). Only where /proc shows no Snakemake process and no Snakemake job working in this directory on this
    machine; returns what was removed (nothing where that cannot be checked).

    Snakemake's own locks record no owner, so a run on another host sharing this directory cannot be seen: run
    recovery from one machine at a time."""
    argv = sys.argv if argv is None else argv
    if "--target-jobs" in argv or "--mode" in argv:  # a job that an executor spawned: the run's own Snakemake
        return []                                     # (maybe on another host) holds these locks
    workdir = Path(workdir).resolve()
    locks = sorted((workdir / ".snakemake" / "locks").glob("*.lock"))
    whole_dirs = tuple(dict.fromkeys((runs_dir, *WHOLE_DIRS)))
    temps = half_written(workdir, whole_dirs)
    flags = finished_but_flagged(workdir, runs_dir, whole_dirs)
    if not (locks or temps or flags) or not Path("/proc/self").exists() or running_here(workdir):
        return []
    removed = []
    named = [(p, str(p.relative_to(workdir))) for p in locks + temps]
    named += [(marker, f"the incomplete flag of {output.relative_to(workdir)} (written whole)")
              for marker, output in flags]
    for path, name in named:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(name)
    return removed
