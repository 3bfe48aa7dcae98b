"""Progress lines: `onstart` records the run's pending result files and its start; each finished job prints one
line on the console (what it measured, its rate, whether it verified), with the jobs done and left and an estimate
of the time to go."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PROGRESS_ENV = "MATMUL_STUDY_PROGRESS"


def start_progress(pending: list[str], path: str | Path = "logs/progress.json") -> Path:
    """Called in `onstart`: record this run's pending result files and its start, for the jobs' progress lines."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"started": time.time(), "pending": list(pending)}))
    os.environ[PROGRESS_ENV] = str(path)
    return path


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
        finished = sum(Path(p).exists() for p in pending)
        left = len(pending) - finished
        elapsed = (time.time() if now is None else now) - progress.get("started", time.time())
        line += f" [{finished} of {len(pending)} jobs done, {left} left"
        if left and finished:
            line += f", about {_duration(elapsed / finished * left)} to go"
        line += "]"
    return line
