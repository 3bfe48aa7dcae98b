"""Glue for Snakemake's script directive: send a job's output and errors to its log file."""

from __future__ import annotations

import contextlib
import sys
import traceback


@contextlib.contextmanager
def logged(log_path: str):
    """Redirect stdout/stderr to the job's log; on failure, write the traceback there and to stderr."""
    real_stderr = sys.stderr
    with open(log_path, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield
        except BaseException as exc:
            traceback.print_exc()
            print(f"error: {exc} (full log: {log_path})", file=real_stderr)
            raise
