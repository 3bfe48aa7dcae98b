"""Glue between Snakemake and the package: job logs, jobs that stop promptly (with Snakemake, or when it is told
to stop), progress lines, what a result was measured with, and the checks and clean-up that run when the workflow
is parsed, before any job."""

from __future__ import annotations

import _thread
import contextlib
import json
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

WATCH_INTERVAL_S = 0.5
# After a stop, how long a job may take to unwind (remove temporary files, release its GPU) before it exits
# regardless, and how much longer Snakemake waits before it kills what is left of its jobs.
GRACE_S = 3
KILL_AFTER_S = GRACE_S + 3
STOPPED_EXIT = 1
PROGRESS_ENV = "MATMUL_STUDY_PROGRESS"


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
    started = _proc_start_time(ancestor) if ancestor else None

    def gone() -> bool:
        if os.getppid() != parent:  # the parent died and this process was handed to init (or a subreaper)
            return True
        return ancestor is not None and _proc_start_time(ancestor) != started

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


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _proc_parent(int(entry.name))
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


# --- Snakemake's side of a stop ---------------------------------------------------------------------------------------

def stop_jobs_promptly() -> None:
    """Called in `onstart` (Snakemake's main thread, after its scheduler set its own handlers): SIGTERM or SIGINT
    to Snakemake ends every running job at once, instead of Snakemake waiting for them to finish (its SIGTERM
    handler waits; SIGINT to its pid alone waits too, and leaves the job's result flagged incomplete). Each job
    gets SIGTERM (it abandons its work: stop_with_snakemake) and, KILL_AFTER_S later, SIGKILL if still there;
    Snakemake itself then stops as on Ctrl-C. A second signal kills the jobs at once."""
    if threading.current_thread() is not threading.main_thread():
        return
    me = os.getpid()
    signals = []

    def end_jobs(now: bool):
        if not now:
            kill_descendants(me, signal.SIGTERM)
            deadline = time.monotonic() + KILL_AFTER_S
            while descendants(me) and time.monotonic() < deadline:
                time.sleep(0.1)
        kill_descendants(me, signal.SIGKILL)

    def on_signal(signum, frame):
        signals.append(signum)
        threading.Thread(target=end_jobs, args=(len(signals) > 1,), name="end-jobs", daemon=True).start()
        if len(signals) == 1:
            print(f"{signal.Signals(signum).name}: stopping every running job; finished results are kept. Run the "
                  "same command again to finish the study.", file=sys.stderr, flush=True)
            raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)


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


# --- Progress ------------------------------------------------------------------------------------------------------

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


def _proc_start_time(pid: int) -> str | None:
    """The process's start time (in clock ticks since boot) from /proc, or None where there is no /proc entry:
    a pid alone can be reused by a new process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _proc_parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _proc_cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


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
        parent = _proc_parent(current)
        if parent is None or parent <= 1:
            return None
        if is_snakemake(_proc_cmdline(parent)):
            return parent
        current = parent
    return None


def _granted_cores(workflow) -> int | None:
    """--cores, or None in modes that run nothing (--report and the like: Snakemake raises a WorkflowError)."""
    try:
        return workflow.cores
    except Exception:
        return None


def cpu_job_cores(workflow) -> int:
    """The cores a numpy job holds on this host: every core but one per GPU slot (--resources gpu=N). The N GPU
    jobs, one core each, run beside it on cores BLAS does not use, and nothing else does; with no GPU slots, or
    under a cluster executor, every core."""
    cores = _granted_cores(workflow)
    if cores is None:
        return 1
    if not workflow.local_exec or workflow.remote_exec:
        return cores  # a cluster executor: the job has a node of its own (see the Slurm profile), GPU jobs others
    gpu_slots = workflow.global_resources.get("gpu")
    gpu_slots = int(getattr(gpu_slots, "value", gpu_slots) or 0)  # Snakemake 9 wraps it in a Resource
    return max(1, cores - gpu_slots)


def blas_threads(config: dict, workflow) -> int:
    """The BLAS threads a numpy job uses: every core it holds (config `threads: auto`, the default), or config
    `threads`, at most the cores it holds (run_job takes the same minimum); without --cores (nothing runs) the
    config's number, or 1 for auto."""
    asked = config["threads"]
    if _granted_cores(workflow) is None:
        return 1 if asked == "auto" else asked
    held = cpu_job_cores(workflow)
    return held if asked == "auto" else min(asked, held)


# --- Before any job ---------------------------------------------------------------------------------------------

def _running_here(workdir: Path) -> list[int]:
    """Pids of other Snakemake processes working in `workdir`, and of jobs of a run there (Linux /proc)."""
    skip = {os.getpid()}
    pid = os.getpid()
    while pid and pid > 1:  # this process's own ancestors (a wrapper that runs Snakemake) do not count
        pid = _proc_parent(pid)
        if pid:
            skip.add(pid)
    scripts = f"{workdir}/.snakemake/scripts/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        cmdline = _proc_cmdline(int(entry.name))
        if any(a.startswith(scripts) for a in cmdline):  # a job's script, wherever it runs
            found.append(int(entry.name))
            continue
        try:
            here = Path(os.readlink(entry / "cwd")).resolve() == workdir
        except OSError:
            continue
        if here and is_snakemake(cmdline):
            found.append(int(entry.name))
    return found


def finished_but_flagged(workdir: Path, runs_dir: str = "results/runs") -> list[tuple[Path, Path]]:
    """Snakemake's incomplete markers (.snakemake/incomplete/, its file persistence: one file per output, named by
    the output's path in URL-safe base64, split into "@"-prefixed chunks where long) of result files that exist and
    are whole: results are written atomically, so such a result is finished, and only the record of it is not
    (Snakemake was killed between the job's end and its bookkeeping). Returns (marker, result) pairs."""
    from base64 import urlsafe_b64decode

    from matmul_study.core import results

    root = workdir / ".snakemake" / "incomplete"
    if not root.is_dir():
        return []
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
        if not path.resolve().is_relative_to((workdir / runs_dir).resolve()) or not path.is_file():
            continue
        try:
            results.read(path)
        except (results.ResultFileError, OSError):
            continue
        found.append((marker, path))
    return found


def clear_stale_locks(workdir: str | Path = ".", runs_dir: str = "results/runs",
                      argv: list[str] | None = None) -> list[str]:
    """After a crash (Snakemake killed), remove what it left that would stop the next run: its directory locks,
    half-written temporary result files, and the incomplete flags of results that are whole (so that the same
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
    temps = sorted((workdir / runs_dir).rglob(".*.json.*.tmp")) if (workdir / runs_dir).is_dir() else []
    flags = finished_but_flagged(workdir, runs_dir)
    if not (locks or temps or flags) or not Path("/proc/self").exists() or _running_here(workdir):
        return []
    removed = []
    named = [(p, str(p.relative_to(workdir))) for p in locks + temps]
    named += [(marker, f"the incomplete flag of {result.relative_to(workdir)} (a whole result)")
              for marker, result in flags]
    for path, name in named:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(name)
    return removed


def host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def host_bytes_needed(m: int, k: int, n: int, dtype: str, on_gpu: bool) -> int:
    """A lower bound on the host memory one job needs: its inputs A and B, float64 copies of them for the
    reference, and for a CPU job its output C twice (the verified run's and the timed run's)."""
    from matmul_study.core import dtypes

    record = dtypes.get(dtype)
    need = (m * k + k * n) * (record.itemsize + 8)
    if not on_gpu:
        need += 2 * m * n * record.output.itemsize
    return need


def _size_key(config: dict, m: int, k: int, n: int) -> tuple[str, object]:
    from matmul_study.pipeline.config import parse_size

    for i, entry in enumerate(config["sizes"]):
        shape = parse_size(entry)
        if (shape.m, shape.k, shape.n) == (m, k, n):
            return f"sizes[{i}]", entry
    return "sizes", f"{m}x{k}x{n}"


def _gib(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB" if x < 2**40 else f"{x / 2**40:,.2f} TiB"


def check_host_memory(config: dict, jobs, memory: int | None = None) -> None:
    """Stop before any job when a job cannot fit in this machine's memory: names the size's config key, its
    value, what the job needs and the limit."""
    from matmul_study.core import registry
    from matmul_study.pipeline.config import ConfigError

    memory = host_memory_bytes() if memory is None else memory
    if not memory:
        return
    worst = None
    for job in jobs.itertuples():
        need = host_bytes_needed(job.m, job.k, job.n, job.dtype, registry.get(job.method).on_gpu)
        if need > memory and (worst is None or need > worst[0]):
            worst = (need, job)
    if worst is None:
        return
    need, job = worst
    key, value = _size_key(config, job.m, job.k, job.n)
    raise ConfigError(
        f"config key '{key}': value {json.dumps(value)} is too large for this machine: the {job.method} "
        f"{job.dtype} job at {job.m}x{job.k}x{job.n} needs at least {_gib(need)} of host memory (inputs, their "
        f"float64 copies for verification and the output), and this machine has {_gib(memory)}; allowed: sizes "
        f"whose jobs fit in {_gib(memory)}.")


def report_mode(argv: list[str] | None = None) -> bool:
    """Whether this Snakemake process builds Snakemake's own report (`--report FILE`), not a run."""
    argv = sys.argv if argv is None else argv
    return any(a == "--report" or a.startswith("--report=") for a in argv) and "--report-after-run" not in argv


# --- The report ---------------------------------------------------------------------------------------------------

ASKED_KEY = "config asks for (not what the results were measured with)"
# matmul_study.present.report computes with these (caps hit, throttled clocks): where results differ, it gets the largest.
REPORT_NUMBERS = ("max_reps", "max_time_s", "throttle_fraction")


def _one_or_all(values: list, key: str = ""):
    if len(values) == 1:
        return values[0]
    return max(values) if key in REPORT_NUMBERS else values


def config_as_measured(config: dict, records: list[dict]) -> dict:
    """The config as the report states it: `threads` and `measurement` replaced by the values this run's results
    were measured with (from each result's measured_config), wherever they differ from the config. The values
    the config asked for but no result was measured with are kept under ASKED_KEY, so that the report says both.
    Results without measured_config (older files) leave the config's values as they are."""
    from matmul_study.core import registry

    shown = json.loads(json.dumps(config, default=str))
    asked = {}
    measured = [r["measured_config"] for r in records if isinstance(r.get("measured_config"), dict)]
    cpu = [r for r in records if r.get("method") in registry.METHODS and not registry.get(r["method"]).on_gpu]
    threads = sorted({int(r["threads"]) for r in cpu if r.get("threads") is not None})
    if threads and threads != [shown.get("threads")]:
        asked["threads"] = shown.get("threads")
        shown["threads"] = _one_or_all(threads)
    if measured and isinstance(shown.get("measurement"), dict):
        for key, value in list(shown["measurement"].items()):
            values = []
            for m in measured:
                got = (m.get("measurement") or {}).get(key, value)
                if got not in values:
                    values.append(got)
            if values != [value]:
                asked.setdefault("measurement", {})[key] = value
                shown["measurement"][key] = _one_or_all(values, key)
    if asked:
        shown[ASKED_KEY] = asked
    return shown


def report_needs_a_finished_run(config: dict, run_files: list[str], argv: list[str] | None = None) -> str | None:
    """For `snakemake --report`: None when every result this config selects exists; else what to do, in words.
    Snakemake's report describes a finished run of the same config: after a run with --config, the report needs
    the same --config (it would otherwise fail on the first missing file, with no hint)."""
    argv = sys.argv if argv is None else argv
    missing = [f for f in run_files if not Path(f).exists()]
    if not missing:
        return None
    target = next((a.split("=", 1)[1] if "=" in a else argv[i + 1] for i, a in enumerate(argv)
                   if (a == "--report" and i + 1 < len(argv)) or a.startswith("--report=")), "report.zip")
    have = sorted({Path(f).parts[2].removeprefix("method~") for f in run_files if Path(f).exists()},
                  key=config["methods"].index)
    advice = (f"If the run used --config, give --report the same, e.g. (the methods that have results here): "
              f"snakemake --report {target} --config 'methods={json.dumps(have)}'" if have else
              "No result of this config exists yet: run the study first, e.g. snakemake --cores 1 --config "
              "'methods=[\"numpy\"]'")
    return (f"snakemake --report describes a finished run, but {len(missing)} of the {len(run_files)} results this "
            f"config selects are missing (e.g. {missing[0]}). {advice}.")


def run_keys(local_jobs, imported_paths: list[str]):
    """method, dtype and source of every job of a run: this run's grid (source "") and the imported result files
    (source: their folder under results/imported/, read from the path)."""
    import pandas as pd

    rows = [(m, d, "") for m, d in zip(local_jobs["method"], local_jobs["dtype"])]
    for path in imported_paths:
        parts = Path(path).parts
        keys = {p.split("~", 1)[0]: p.split("~", 1)[1] for p in parts if "~" in p}
        if "method" in keys and "dtype" in keys:
            rows.append((keys["method"], keys["dtype"], parts[2] if len(parts) > 2 else path))
    return pd.DataFrame(rows, columns=["method", "dtype", "source"])


def gpu_sources(keys) -> int:
    """How many result sets (this run, each imported folder) hold GPU jobs."""
    from matmul_study.core import registry

    on_gpu = keys["method"].map(lambda m: m in registry.METHODS and registry.get(m).on_gpu)
    return keys.loc[on_gpu, "source"].nunique()
