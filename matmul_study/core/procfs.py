"""Linux's /proc/<pid>/stat, read once here for the process tree (pipeline.processes) and a process's own age
(measure.environment)."""

from __future__ import annotations

from pathlib import Path

START_TIME = 19  # the process's start, in clock ticks since boot
PARENT = 1  # its parent's pid


def stat_fields(pid: int | str = "self") -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (whose parentheses may hold spaces), numbered from the
    process state at 0 (proc(5) numbers it 3); None where there is no such entry (no /proc, or no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
