"""Glue between Snakemake and the package: job logs, jobs that stop with Snakemake, what a result was measured
with, and the checks and clean-up that run when the workflow is parsed, before any job."""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

WATCH_INTERVAL_S = 0.5
GRACE_S = 30  # after asking the job to stop, how long it may take to clean up before it is killed


# --- Jobs -------------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def logged(log_path: str):
    """Redirect stdout/stderr to the job's log; on failure, write the traceback there and to stderr. The job also
    stops when its Snakemake is gone (stop_with_snakemake)."""
    real_stderr = sys.stderr
    stop_with_snakemake()
    with open(log_path, "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield
        except BaseException as exc:
            traceback.print_exc()
            print(f"error: {exc} (full log: {log_path})", file=real_stderr)
            raise


class JobStopped(KeyboardInterrupt):
    """The job was told to stop (SIGTERM, or its Snakemake is gone): unwinds like Ctrl-C, so that nothing half
    written is left behind (results.write_atomic removes its temporary file)."""


_WATCHING = []


def stop_with_snakemake() -> None:
    """Make this job process stop when the Snakemake process that started it is gone (killed with -9, or
    interrupted while this job ran on): a job left running on its own would time itself against the rerun that
    recovers, and write a result that Snakemake has flagged incomplete. Called first thing in every rule script
    (workflow/scripts/_study.py); idempotent. SIGTERM raises JobStopped, so the job unwinds cleanly."""
    if _WATCHING or threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        raise JobStopped(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    parent = os.getppid()
    ancestor = snakemake_ancestor()
    started = _proc_start_time(ancestor) if ancestor else None

    def gone() -> bool:
        if os.getppid() != parent:  # the parent died and this process was handed to init (or a subreaper)
            return True
        return ancestor is not None and _proc_start_time(ancestor) != started

    def watch():
        while True:
            time.sleep(WATCH_INTERVAL_S)
            if gone():
                print(f"Snakemake (pid {ancestor or parent}) is gone: stopping this job. Recover with the same "
                      "command plus --rerun-incomplete (README: Recovering from a crash).", file=sys.stderr,
                      flush=True)
                _thread.interrupt_main(signal.SIGTERM)  # raises JobStopped in the job, after its current call
                time.sleep(GRACE_S)
                os._exit(1)

    threading.Thread(target=watch, name="stop-with-snakemake", daemon=True).start()
    _WATCHING.append(True)


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
    """The BLAS threads a numpy job uses: config `threads`, at most the cores it holds (run_job takes the same
    minimum); without --cores (nothing runs) the config's number stands."""
    if _granted_cores(workflow) is None:
        return config["threads"]
    return min(config["threads"], cpu_job_cores(workflow))


def record_measured_config(result_path: str | Path, measured: dict) -> dict:
    """Add the measured config to a result file (atomically), so that every result says what it was measured
    with, whatever config a later report is rendered with."""
    from matmul_study.core import results

    record = results.read(result_path)
    record["measured_config"] = measured
    results.write_atomic(result_path, record)
    return record


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


def clear_stale_locks(workdir: str | Path = ".", runs_dir: str = "results/runs",
                      argv: list[str] | None = None) -> list[str]:
    """After a crash (Snakemake killed), remove what it left that would stop the next run: its directory locks
    and half-written temporary result files. Only where /proc shows no Snakemake process and no Snakemake job
    working in this directory on this machine; returns what was removed (nothing where that cannot be checked).

    Snakemake's own locks record no owner, so a run on another host sharing this directory cannot be seen: run
    recovery from one machine at a time."""
    argv = sys.argv if argv is None else argv
    if "--target-jobs" in argv or "--mode" in argv:  # a job that an executor spawned: the run's own Snakemake
        return []                                     # (maybe on another host) holds these locks
    workdir = Path(workdir).resolve()
    locks = sorted((workdir / ".snakemake" / "locks").glob("*.lock"))
    temps = sorted((workdir / runs_dir).rglob(".*.json.*.tmp")) if (workdir / runs_dir).is_dir() else []
    if not (locks or temps) or not Path("/proc/self").exists() or _running_here(workdir):
        return []
    removed = []
    for path in locks + temps:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(str(path.relative_to(workdir)))
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
