"""The process tree as Linux's /proc shows it: a process's parent, start time and command line, its descendants,
and which processes are Snakemake. Everything here returns nothing (or None) where there is no /proc, so that the
stop and recovery code that relies on it does nothing there rather than guess."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from matmul_study.core.procfs import PARENT, START_TIME, stat_fields


def start_time(pid: int) -> str | None:
    """The process's start time (in clock ticks since boot) from /proc, or None where there is no /proc entry:
    a pid alone can be reused by a new process."""
    fields = stat_fields(pid)
    return fields[START_TIME] if fields and len(fields) > START_TIME else None


def parent_of(pid: int) -> int | None:
    fields = stat_fields(pid)
    try:
        return int(fields[PARENT]) if fields else None
    except (ValueError, IndexError):
        return None


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = parent_of(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere), parents before their children."""
    if not Path("/proc/self").exists():
        return []
    children, out, todo = _children_map(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_descendants(pid: int, sig: int) -> list[int]:
    killed = []
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            os.kill(child, sig)
            killed.append(child)
    return killed


def is_snakemake(cmdline: list[str]) -> bool:
    """A Snakemake process (`snakemake ...`, `python -m snakemake ...`), not a job's script under .snakemake/."""
    args = [a for a in cmdline if a]
    for i, arg in enumerate(args[:3]):
        if Path(arg).name == "snakemake" or (arg == "-m" and i + 1 < len(args) and args[i + 1] == "snakemake"):
            return True
    return False


def snakemake_ancestor(pid: int | None = None, levels: int = 4) -> int | None:
    """The nearest ancestor of `pid` (default: this process) that is a Snakemake process, within `levels`
    generations (a conda job runs under a shell under Snakemake); None when there is none or no /proc."""
    current = os.getpid() if pid is None else pid
    for _ in range(levels):
        parent = parent_of(current)
        if parent is None or parent <= 1:
            return None
        if is_snakemake(command_line(parent)):
            return parent
        current = parent
    return None


# The workflow's plain job commands (workflow/scripts/): a process that runs one in a run's working directory is a
# job of that run.
JOB_COMMANDS = ("benchmark_job.py", "compile_job.py")


def is_job_command(cmdline: list[str]) -> bool:
    """A job's plain command (`python .../workflow/scripts/benchmark_job.py ...`), not the processes it starts."""
    return any(Path(a).name in JOB_COMMANDS and Path(a).parent.name == "scripts" for a in cmdline[1:3])


def job_processes(workdir: Path) -> list[int]:
    """Pids of the jobs of a run in `workdir` (Linux /proc): its `script:` jobs, by their script under
    .snakemake/scripts/ wherever they run, and its plain commands, by their working directory."""
    return _processes_of(workdir, snakemake_too=False)


def running_here(workdir: Path) -> list[int]:
    """Pids of other Snakemake processes working in `workdir`, and of jobs of a run there (Linux /proc)."""
    skip = {os.getpid()}
    pid = os.getpid()
    while pid and pid > 1:  # this process's own ancestors (a wrapper that runs Snakemake) do not count
        pid = parent_of(pid)
        if pid:
            skip.add(pid)
    return [pid for pid in _processes_of(workdir, snakemake_too=True) if pid not in skip]


def _processes_of(workdir: Path, snakemake_too: bool) -> list[int]:
    """One pass over /proc: the run's jobs (job_processes) and, with `snakemake_too`, the Snakemake processes whose
    working directory is `workdir`."""
    scripts, found = f"{workdir}/.snakemake/scripts/", []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        cmdline = command_line(int(entry.name))
        if any(a.startswith(scripts) for a in cmdline):  # a job's script, wherever it runs
            found.append(int(entry.name))
        elif (is_job_command(cmdline) or (snakemake_too and is_snakemake(cmdline))) and _cwd(entry) == workdir:
            found.append(int(entry.name))
    return found


def _cwd(entry: Path) -> Path | None:
    try:
        return Path(os.readlink(entry / "cwd")).resolve()
    except OSError:
        return None
