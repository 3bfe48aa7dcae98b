"""How the workflow and its jobs stop: a configuration error ends the workflow with its message alone (fail); a job
writes its log and stops promptly, with its Snakemake or when told to, leaving nothing half written (logged,
stop_with_snakemake, job_finished); and SIGTERM or SIGINT to Snakemake ends its running jobs at once
(stop_jobs_promptly).

The job's state (_JOB: watching, finished, stopped_by) lives here, once per process: the signal handler, the
watcher thread, the excepthook and `logged` all read and write the same record."""

from __future__ import annotations

import _thread
import contextlib
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import traceback

from matmul_study.pipeline.processes import descendants, kill_descendants, snakemake_ancestor, start_time

WATCH_INTERVAL_S = 0.5
# After a stop, how long a job may take to unwind (remove temporary files, release its GPU) before it exits
# regardless, and how much longer Snakemake waits before it kills what is left of its jobs.
GRACE_S = 3
KILL_AFTER_S = GRACE_S + 3
STOPPED_EXIT = 1


# --- Errors before any job -----------------------------------------------------------------------------------------

def fail(message: str, argv: list[str] | None = None):
    """Stop the workflow with `message` alone on stderr (no Snakemake or pipeline frames); with --verbose, as
    Snakemake's WorkflowError (file, line and traceback)."""
    from snakemake.exceptions import WorkflowError

    argv = sys.argv if argv is None else argv
    if "--verbose" in argv:
        raise WorkflowError(message)
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(1)


# --- Jobs -------------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def logged(log_path: str):
    """Redirect stdout/stderr to the job's log; on failure, write the traceback there and to stderr. A job that
    was stopped (JobStopped: a signal, or its Snakemake is gone) writes its traceback to the log only and exits
    quietly. The job also stops when its Snakemake is gone (stop_with_snakemake)."""
    real_stderr = sys.stderr
    stop_with_snakemake()
    with open(log_path, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield
        except BaseException as exc:
            traceback.print_exc()
            # Stopped: JobStopped, or whatever Python made of it where it cannot pass through (Python 3.11 wraps
            # an exception raised in a class body's __set_name__ in RuntimeError).
            if _JOB["stopped_by"]:
                print(f"{_JOB['stopped_by']}: not finished (log: {log_path})", file=real_stderr, flush=True)
                raise SystemExit(STOPPED_EXIT) from None
            print(f"error: {exc} (full log: {log_path})", file=real_stderr)
            raise


class JobStopped(KeyboardInterrupt):
    """The job was told to stop (SIGTERM, SIGINT, or its Snakemake is gone): unwinds like Ctrl-C, so that nothing
    half written is left behind (results.write_atomic removes its temporary file)."""


# stopped_by: what stopped the job ("stopped by SIGTERM"), None while it runs.
_JOB = {"watching": False, "finished": False, "stopped_by": None}


def job_finished() -> None:
    """Called by a job once its output is written: a stop that arrives now no longer abandons it (the result is
    whole; Snakemake records it as finished, or keep_finished_results does after a stop)."""
    _JOB["finished"] = True
    with contextlib.suppress(ValueError):
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)


def in_spawned_child() -> bool:
    """True in a process that multiprocessing started for a job, also while it imports the job's script as
    __mp_main__ (before multiprocessing.parent_process() is set there)."""
    # While the child runs the script, sys.modules["__mp_main__"] is that script's module, not "__main__".
    script = sys.modules.get("__mp_main__")
    return multiprocessing.parent_process() is not None or (script is not None and
                                                           script is not sys.modules.get("__main__"))


def stop_with_snakemake() -> None:
    """Make this job process stop promptly: on SIGTERM or SIGINT (Snakemake ending its jobs, or Ctrl-C to the
    process group), and when the Snakemake process that started it is gone (killed with -9): a job left running on
    its own would time itself against the rerun that recovers. Called first thing in every rule script
    (workflow/scripts/_study.py); idempotent; does nothing in the child processes a job starts (they are killed by
    the job).

    The signal raises JobStopped in the job (it unwinds cleanly) and, at once, a watcher thread kills the job's
    child processes (a numpy call in flight there is abandoned). A job whose main thread is itself inside a long
    call (where Python cannot raise) is ended by the watcher GRACE_S later."""
    if _JOB["watching"] or threading.current_thread() is not threading.main_thread():
        return
    if in_spawned_child():
        # Ctrl-C reaches the whole process group: the job stops and kills this process; a KeyboardInterrupt
        # here would only print a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return

    def on_signal(signum, frame):
        if _JOB["finished"] or _JOB["stopped_by"]:
            return
        _JOB["stopped_by"] = f"stopped by {signal.Signals(signum).name}"
        raise JobStopped(_JOB["stopped_by"])

    def quiet_stop(kind, value, tb):
        # A stop that arrives before `logged` has taken over (the job's imports, the opening of its log) ends the
        # job as quietly as one inside it: one line, no traceback.
        if _JOB["stopped_by"]:
            print(f"{_JOB['stopped_by']}: not finished", file=sys.__stderr__, flush=True)
        else:
            excepthook(kind, value, tb)

    excepthook = sys.excepthook
    sys.excepthook = quiet_stop

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)  # the C-level handler writes here at once
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    parent = os.getppid()
    ancestor = snakemake_ancestor()
    started = start_time(ancestor) if ancestor else None

    def gone() -> bool:
        if os.getppid() != parent:  # the parent died and this process was handed to init (or a subreaper)
            return True
        return ancestor is not None and start_time(ancestor) != started

    def abandon():
        if _JOB["finished"]:
            return
        kill_descendants(os.getpid(), signal.SIGKILL)
        time.sleep(GRACE_S)
        if not _JOB["finished"]:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
                print("stopped inside a long call (numpy or CUDA): abandoned, not finished", file=sys.__stderr__,
                      flush=True)
            os._exit(STOPPED_EXIT)

    def watch():
        while True:
            if select.select([wake_read], [], [], WATCH_INTERVAL_S)[0]:
                signums = os.read(wake_read, 64)
                if any(n in (signal.SIGTERM, signal.SIGINT) for n in signums):
                    return abandon()
            elif gone():
                if _JOB["finished"]:
                    return
                print(f"Snakemake (pid {ancestor or parent}) is gone: stopping this job. Rerun the same command to "
                      "finish the study (README: Recovering from a crash).", file=sys.stderr, flush=True)
                _thread.interrupt_main(signal.SIGTERM)  # raises JobStopped in the job, after its current call
                return abandon()

    threading.Thread(target=watch, name="stop-with-snakemake", daemon=True).start()
    _JOB["watching"] = True


# --- Snakemake's side of a stop ---------------------------------------------------------------------------------------

def stop_jobs_promptly() -> None:
    """Called in `onstart` (Snakemake's main thread, after its scheduler set its own handlers): SIGTERM or SIGINT
    to Snakemake ends every running job at once, instead of Snakemake waiting for them to finish (its SIGTERM
    handler waits; SIGINT to its pid alone waits too, and leaves the job's result flagged incomplete). Each job
    gets SIGTERM (it abandons its work: stop_with_snakemake) and, KILL_AFTER_S later, SIGKILL if still there;
    Snakemake itself then stops as on Ctrl-C. A second signal kills the jobs at once.

    The jobs are ended by a watcher thread, not by the Python handler. A Python handler runs in the main thread,
    and only when that thread runs Python; Snakemake's main thread waits for its jobs on a semaphore with no
    timeout, and a signal that the kernel hands to one of its other threads (the executor's, waiting on a job)
    does not interrupt that wait. The handler then ran only when the running job finished on its own: a stop took
    14-16 s instead of 1-2 in about 1 of 5 tries on a loaded 2-core machine. The C-level handler that records
    the signal runs in whichever thread took it, and writes the signal's number to the wakeup fd at once: the
    watcher reads it there and ends the jobs, whose ends wake the main thread, which then stops Snakemake."""
    if threading.current_thread() is not threading.main_thread():
        return
    me = os.getpid()
    interrupted = []

    def end_jobs(now: bool):
        if not now:
            kill_descendants(me, signal.SIGTERM)
            deadline = time.monotonic() + KILL_AFTER_S
            while descendants(me) and time.monotonic() < deadline:
                time.sleep(0.1)
        kill_descendants(me, signal.SIGKILL)

    def watch(wake_read: int):
        seen = 0
        while True:
            for signum in os.read(wake_read, 64):
                if signum not in (signal.SIGTERM, signal.SIGINT):
                    continue
                seen += 1
                if seen == 1:
                    print(f"{signal.Signals(signum).name}: stopping every running job; finished results are kept. "
                          "Run the same command again to finish the study.", file=sys.stderr, flush=True)
                threading.Thread(target=end_jobs, args=(seen > 1,), name="end-jobs", daemon=True).start()

    def on_signal(signum, frame):
        # The main thread, once it runs Python again: the watcher has ended the jobs; Snakemake stops as on Ctrl-C.
        if not interrupted:
            interrupted.append(signum)
            raise KeyboardInterrupt

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    threading.Thread(target=watch, args=(wake_read,), name="stop-jobs", daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

