"""Progress lines: `onstart` records the result files of the jobs this run executes and its start; each finished
job prints one line on the console (what it measured, its rate, whether it verified), with the jobs done and left
and an estimate of the time to go."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PROGRESS_ENV = "MATMUL_STUDY_PROGRESS"


def pending_results(workflow, run_files: list[str]) -> list[str]:
    """The result files (of run_files) that this run writes: those of the jobs Snakemake will execute. Not just the
    missing ones: a job reruns over its existing result when its parameters or code changed, and a count of missing
    files alone makes such a run "0 of 0 jobs". Without Snakemake's DAG (called elsewhere), the missing files."""
    dag = getattr(workflow, "dag", None)
    if dag is None:
        return [f for f in run_files if not Path(f).exists()]
    written = {str(f) for job in dag.needrun_jobs() for f in job.output}
    return [f for f in run_files if f in written]


def _mtime(path: str) -> int | None:
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return None


def start_progress(pending: list[str], path: str | Path = "logs/progress.json") -> Path:
    """Called in `onstart`: record the result files this run writes and its start, for the jobs' progress lines.
    A result that exists already (its job reruns) is recorded with its modification time: it counts as done once
    it is written again, not while the old file is there."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    before = {f: _mtime(f) for f in pending}
    path.write_text(json.dumps({"started": time.time(), "pending": list(pending),
                                "existing": {f: t for f, t in before.items() if t is not None}}))
    os.environ[PROGRESS_ENV] = str(path)
    return path


def _done(path: str, existing: dict) -> bool:
    """Whether this run wrote the result: it exists and is not the file that was there when the run started
    (compared by modification time, which the job's atomic rename replaces, not by clocks across hosts)."""
    now = _mtime(path)
    return now is not None and now != existing.get(path)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def progress_line(record: dict, progress_path: str | Path | None = None, now: float | None = None) -> str:
    """One line for a finished job: what was measured, its rate, whether it verified, and (where the run's
    progress file is known) jobs done and left and an estimate of the time to go."""
    name = f"{record['method']} {record['dtype']}"
    if int(record.get("block") or 0):
        name += f" b{record['block']}"
    if record.get("variant") not in (None, "", "default"):  # a configuration other than the default build
        name += f" [{record['variant']}]"
    name += f" {record['m']}x{record['k']}x{record['n']}"
    rate = record.get("gflops")
    rate_text = f"{rate:,.1f} GFLOP/s" if isinstance(rate, (int, float)) else "no rate"
    v = record.get("verification") or {}
    error = v.get("rel_fro_error")
    error_text = f" (rel. error {error:.1e})" if isinstance(error, (int, float)) else ""
    verified = f"verified{error_text}" if record.get("status") == "passed" else f"FAILED verification{error_text}"
    line = f"{name}: {rate_text}, {verified}"
    cpu = record.get("cpu") or {}
    if cpu.get("capped"):
        line += (f"; capped at {cpu.get('max_s')} s (measurement.cpu_max_s): {len(cpu.get('reps', []))} "
                 f"process(es), {sum(cpu.get('reps', []))} sample(s)")
    progress_path = progress_path or os.environ.get(PROGRESS_ENV)
    if progress_path:
        try:
            progress = json.loads(Path(progress_path).read_text())
        except (OSError, ValueError):
            return line
        pending = progress.get("pending", [])
        existing = progress.get("existing", {})
        finished = sum(_done(p, existing) for p in pending)
        left = len(pending) - finished
        elapsed = (time.time() if now is None else now) - progress.get("started", time.time())
        line += f" [{finished} of {len(pending)} jobs done, {left} left"
        if left and finished:
            line += f", about {_duration(elapsed / finished * left)} to go"
        line += "]"
    return line
