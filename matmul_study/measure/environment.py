"""Where and with what a result was measured."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from matmul_study.core.procfs import START_TIME, stat_fields

REPO = Path(__file__).resolve().parents[2]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The project's commit; MATMUL_STUDY_COMMIT names it where the checkout has no .git (a copied tree)."""
    if os.environ.get("MATMUL_STUDY_COMMIT"):
        return os.environ["MATMUL_STUDY_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip()
        if commit:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def host_environment(seed: int, config_hash: str) -> dict:
    import numpy as np

    return {
        "device_name": cpu_model(),
        "device_kind": "cpu",
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),  # the machine's logical cores: what a claim about "the CPU" is judged against
        "host": platform.node(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "git_commit": git_commit(),
        "config_hash": config_hash,
        "seed": seed,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def process_age_s() -> float | None:
    """Seconds since this process started, to the clock tick (10 ms): Linux's seconds since boot (/proc/uptime)
    less the process's start in ticks since boot (/proc/self/stat). psutil's start time adds the boot time, which
    Linux gives in whole seconds, so the age it gives is off by up to a second, by the same amount for every process
    of a boot. Elsewhere psutil's; None where neither can say."""
    import time

    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ticks = int((stat_fields() or [])[START_TIME])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return max(0.0, time.time() - psutil.Process().create_time())
    except Exception:  # no psutil, or a platform it cannot read: the report then counts no start-up
        return None
