"""CPU baseline: numpy's matmul (BLAS) with the job's thread count, verified like every GPU method.

One process's BLAS rate on a shared VM moves from process to process (thread placement, memory, neighbours), so
the timing runs in several fresh processes and the job reports the median of their medians and their spread.
Every timed call runs in such a child process, which the job kills when it is stopped: a numpy call in flight is
abandoned, not waited for (one 8192^3 float64 call takes about a minute on two cores).

Time budget: `measurement.cpu_max_s` caps the seconds a job spends verifying and timing (from its first verified
call to its last sample, fresh processes' start-up included). The first verified call tells how long one call
takes; the timing is then planned to fit: each process's window is its share of what is left (never longer than
max_time_s), and where even the policy's minimum does not fit (min_reps samples after `warmup` warm-ups, at least
min_time_s), fewer processes run, then fewer warm-ups and fewer samples, down to one process with one sample.
Such a job is `capped` (last_run_budget()): its number rests on less than the measurement policy asks for.
The check after timing (a second verified call) runs where the budget leaves room for it.

What else the machine ran: the job records, from its first verified call to its last sample, the 1-minute load
average before and after, the cores the whole machine kept busy (/proc/stat), its own share of them (the CPU
time of this process and its timing processes) and the busiest other processes (/proc/PID/stat), with the
machine's cores (`host` in last_run_budget()). Where /proc cannot be read the fields are None.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import resource
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field, replace

import numpy as np

from matmul_study.core.dtypes import DType
from matmul_study.measure.stats import Policy, done
from matmul_study.measure.verify import poison_value, verify_on_host

# A fresh process's start-up (interpreter, imports, inputs) before the first one has measured it: about 0.15 s.
STARTUP_GUESS_S = 0.2


@dataclass(frozen=True)
class InputSpec:
    """What a fresh process needs to rebuild the job's inputs (the same seed gives the same matrices)."""
    m: int
    k: int
    n: int
    dtype: str
    seed: int
    low: float
    high: float


@dataclass(frozen=True)
class ProcessPlan:
    """One timing process: its stopping rule and the time (time.monotonic, shared by every process of the host)
    after which it takes no further sample once it has one."""
    policy: Policy
    deadline: float


@dataclass
class ProcessTimes:
    times: list[float]
    warmup: int
    startup_s: float


@dataclass
class Budget:
    """What measurement.cpu_max_s did to one job; merged into the result's `cpu` record."""
    max_s: float
    capped: bool = False
    processes_asked: int = 1
    reps: list[int] = field(default_factory=list)
    warmup: list[int] = field(default_factory=list)
    verified_after_timing: bool = True
    seconds: float = 0.0
    timed_in: str = "fresh processes"  # or "the verified call": one call outlasted the budget
    host: dict = field(default_factory=dict)  # what else the machine ran meanwhile (host_load)

    def as_dict(self) -> dict:
        return {"max_s": self.max_s, "capped": self.capped, "processes_asked": self.processes_asked,
                "reps": list(self.reps), "warmup": list(self.warmup),
                "verified_after_timing": self.verified_after_timing, "seconds": self.seconds,
                "timed_in": self.timed_in, "host": dict(self.host)}


_LAST_BUDGET: dict = {}


def last_run_budget() -> dict:
    """The Budget (as_dict) of the latest run() in this process; empty before the first."""
    return dict(_LAST_BUDGET)


def resolve_threads(threads) -> int:
    """config `threads`: an integer, or "auto" (or "all") for every core this process may use."""
    if isinstance(threads, str):
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:
            return os.cpu_count() or 1
    return int(threads)


# --- What else the machine ran ------------------------------------------------------------------------------------

BUSY_PROCESS_CORES = 0.05  # another process is named when it used at least this many cores over the job
BUSY_PROCESSES_NAMED = 3


@dataclass
class HostSnapshot:
    """The machine at one moment: CPU-seconds are cumulative counters, compared between two snapshots."""
    at: float  # time.monotonic()
    load: float | None  # the 1-minute load average
    busy_s: float | None  # CPU-seconds every core of the machine has been busy (/proc/stat)
    own_s: float  # CPU-seconds of this process and its ended child processes
    processes: dict  # pid -> (name, CPU-seconds) of every other process (not this one, not its children)


def _clock_ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100.0


def _machine_busy_s(ticks: float) -> float | None:
    """CPU-seconds all cores have spent on anything but idling or waiting for I/O since boot."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        values = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, ValueError, IndexError):
        return None
    return (sum(values) - values[3] - values[4]) / ticks if fields[0] == "cpu" and len(values) >= 5 else None


def _other_processes(ticks: float) -> dict:
    """pid -> (name, CPU-seconds) of the processes other than this one and its children ({} without /proc)."""
    me, out = os.getpid(), {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return out
    for pid in entries:
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
            name, fields = text[text.find("(") + 1:text.rfind(")")], text[text.rfind(")") + 2:].split()
            if int(pid) != me and int(fields[1]) != me:  # fields: state ppid ... utime (12th) stime (13th)
                out[int(pid)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or unreadable
    return out


def host_snapshot() -> HostSnapshot:
    ticks = _clock_ticks()
    try:
        load = float(os.getloadavg()[0])
    except (AttributeError, OSError):
        load = None
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own_s = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return HostSnapshot(time.monotonic(), load, _machine_busy_s(ticks), own_s, _other_processes(ticks))


def host_load(before: HostSnapshot, after: HostSnapshot) -> dict:
    """What the machine ran between two snapshots: its cores (logical, and usable by this job), the load before
    and after, the cores busy on average (all of them, this job's, the others') and the busiest other processes
    ("stress-ng (1.9 cores), python3 (0.4 cores)"). A field that cannot be known is None."""
    window = after.at - before.at
    per_s = (lambda seconds: seconds / window) if window > 0 else (lambda seconds: None)
    busy = per_s(after.busy_s - before.busy_s) if after.busy_s is not None and before.busy_s is not None else None
    own = per_s(after.own_s - before.own_s)
    used = sorted(((name, per_s(cpu_s - before.processes[pid][1])) for pid, (name, cpu_s) in after.processes.items()
                   if pid in before.processes and window > 0), key=lambda p: -p[1])
    named = [f"{name} ({cores:.1f} cores)" for name, cores in used[:BUSY_PROCESSES_NAMED]
             if cores >= BUSY_PROCESS_CORES]
    return {"cores": os.cpu_count(), "usable_cores": resolve_threads("auto"), "load_before": before.load,
            "load_after": after.load, "window_s": window, "busy_cores": busy, "own_cores": own,
            "others_cores": max(busy - own, 0.0) if busy is not None and own is not None else None,
            "others": ", ".join(named) if after.processes else None}


# --- Timing --------------------------------------------------------------------------------------------------------

def _time_matmul(a: np.ndarray, b: np.ndarray, plan: ProcessPlan, threads: int,
                 started: float | None = None) -> ProcessTimes:
    from threadpoolctl import threadpool_limits

    out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)

    def time_once() -> float:
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        return time.perf_counter() - t0

    policy = plan.policy
    startup = time.monotonic() - started if started is not None else 0.0
    with threadpool_limits(limits=threads, user_api="blas"):
        for _ in range(policy.warmup):
            time_once()
        times: list[float] = []
        while not done(times, policy):
            if times and time.monotonic() + times[-1] > plan.deadline:
                break  # the next sample would end past this process's share of the budget
            times.append(float(time_once()))
    return ProcessTimes(times, policy.warmup, startup)


def _time_in_fresh_process(spec: InputSpec, plan: ProcessPlan, threads: int, started: float) -> ProcessTimes:
    from matmul_study.measure import inputs

    a, b = inputs.generate(spec.m, spec.k, spec.n, spec.dtype, spec.seed, spec.low, spec.high)
    return _time_matmul(a, b, plan, threads, started)


def _die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the job that started it is gone, however it ended."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child_main(sender, fn, args) -> None:
    # Ctrl-C reaches the whole process group: the job itself stops (and kills) this process; a KeyboardInterrupt
    # here would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    try:
        result = (True, fn(*args))
    except BaseException:  # noqa: BLE001  (sent to the job, which raises it with the child's traceback)
        result = (False, traceback.format_exc())
    sender.send(result)
    sender.close()


@contextlib.contextmanager
def _children_write_to_log():
    """Processes started inside this block write their file descriptors 1 and 2 where this job's sys.stdout and
    sys.stderr point (its log, inside stops.logged), not to Snakemake's console: what a child prints when a
    stop reaches it mid-start-up stays in the job's log."""
    saved = []
    try:
        for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
            try:
                target = stream.fileno()
            except (AttributeError, OSError, ValueError):
                continue
            if target != fd:
                stream.flush()
                saved.append((fd, os.dup(fd)))
                os.dup2(target, fd)
        yield
    finally:
        for fd, copy in reversed(saved):
            os.dup2(copy, fd)
            os.close(copy)


def call_in_fresh_process(fn, *args):
    """fn(*args) in a fresh interpreter ("spawn": nothing inherited from this one); its exceptions are raised here
    with the child's traceback. The child is killed if this call is interrupted (the job is stopped)."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(sender, fn, args), name="numpy-timing", daemon=True)
    with _children_write_to_log():
        process.start()
    sender.close()
    try:
        try:
            ok, value = receiver.recv()
        except EOFError:
            process.join(5)
            raise RuntimeError(f"the numpy timing process ended without a result (exit code {process.exitcode})"
                               ) from None
        if not ok:
            raise RuntimeError(f"the numpy timing process failed:\n{value}")
        process.join(5)
        return value
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
            process.join()


# --- The budget ----------------------------------------------------------------------------------------------------

def policy_minimum_s(policy: Policy, t_call: float) -> float:
    """The least time the stopping rule can take: its warm-ups, then min_reps samples and min_time_s (or max_reps
    samples, whichever stops it first)."""
    timed = min(policy.max_reps * t_call, max(policy.min_reps * t_call, min(policy.min_time_s, policy.max_time_s)))
    return policy.warmup * t_call + timed


def process_policy(policy: Policy, share_s: float, t_call: float, startup_s: float) -> Policy:
    """The stopping rule of one process given `share_s` seconds: the policy with its window cut to the share
    where the policy's minimum fits; else fewer warm-ups (one while room is left for it) and fewer samples."""
    available = share_s - startup_s
    if available >= policy_minimum_s(policy, t_call):
        return replace(policy, max_time_s=min(policy.max_time_s, available - policy.warmup * t_call))
    warmup = min(policy.warmup, 1) if available >= 2 * t_call else 0
    reps = max(1, min(policy.min_reps, math.floor((available - warmup * t_call) / t_call) if t_call > 0 else 1))
    window = max(available - warmup * t_call, 0.0)
    return replace(policy, warmup=warmup, min_reps=reps, min_time_s=min(policy.min_time_s, window),
                   max_time_s=max(window, 1e-9))


def below_minimum(times: list[float], warmup: int, policy: Policy) -> bool:
    """Whether one process stopped short of what the unbudgeted policy asks at least."""
    if warmup < policy.warmup or len(times) < min(policy.min_reps, policy.max_reps):
        return True
    return sum(times) < min(policy.min_time_s, policy.max_time_s) and len(times) < policy.max_reps


# --- The job ---------------------------------------------------------------------------------------------------------

def run(a: np.ndarray, b: np.ndarray, dtype: DType, measurement, threads, spec: InputSpec | None = None):
    """Return (times or None, [verifications], per-process medians) for the job's inputs and dtype record. Timing
    runs only after a passed verification, within measurement.cpu_max_s (see the module docstring); with `spec` in
    measurement.cpu_processes fresh processes, without it in this one. last_run_budget() says what the cap did."""
    from threadpoolctl import threadpool_limits

    global _LAST_BUDGET
    threads = resolve_threads(threads)
    machine = host_snapshot()
    started = time.monotonic()
    policy = measurement.stopping
    asked = max(1, measurement.cpu_processes) if spec is not None else 1
    budget = Budget(max_s=float(measurement.cpu_max_s), processes_asked=asked)
    _LAST_BUDGET = {}
    m, k = a.shape
    out = np.empty((m, b.shape[1]), dtype=a.dtype)
    full = m * k * b.shape[1] <= measurement.full_verify_max_flops
    call_s = []

    def verified_run():
        out.fill(poison_value(out.dtype))
        with threadpool_limits(limits=threads, user_api="blas"):
            t0 = time.perf_counter()
            np.matmul(a, b, out=out)
            call_s.append(time.perf_counter() - t0)
        return verify_on_host(a, b, out, dtype, full, measurement.sample_rows, measurement.seed)

    verifications = [verified_run()]
    verify_s = time.monotonic() - started
    if not verifications[0].passed:
        return None, verifications, []
    t_call = call_s[0]
    if t_call >= budget.max_s:
        # One call already outlasts the whole budget (8192³ on one core): the verified call is the one sample,
        # timed in this process; another call would double the job for one more reading of the same number.
        budget.verified_after_timing, budget.capped = False, True
        budget.reps, budget.warmup, budget.seconds = [1], [0], time.monotonic() - started
        budget.timed_in, budget.host = "the verified call", host_load(machine, host_snapshot())
        _LAST_BUDGET = budget.as_dict()
        return [t_call], verifications, [t_call]
    deadline = started + budget.max_s
    startup = STARTUP_GUESS_S if spec is not None else 0.0
    need = startup + policy_minimum_s(policy, t_call)
    # Room for the check after timing, unless keeping it would leave less than one process's minimum.
    timing_end = deadline - verify_s
    if timing_end - time.monotonic() < need:
        timing_end = deadline
        budget.verified_after_timing = False
    left = timing_end - time.monotonic()
    processes = min(asked, max(1, math.floor(left / need)))

    per_process: list[ProcessTimes] = []
    for i in range(processes):
        share = max(timing_end - time.monotonic(), 0.0) / (processes - i)
        plan = ProcessPlan(process_policy(policy, share, t_call, startup), time.monotonic() + share)
        if spec is None:
            result = _time_matmul(a, b, plan, threads)
        else:
            result = call_in_fresh_process(_time_in_fresh_process, spec, plan, threads, time.monotonic())
            startup = result.startup_s
        per_process.append(result)
    if budget.verified_after_timing:
        verifications.append(verified_run())
    budget.reps = [len(p.times) for p in per_process]
    budget.warmup = [p.warmup for p in per_process]
    budget.capped = (len(per_process) < asked or any(below_minimum(p.times, p.warmup, policy) for p in per_process))
    budget.seconds, budget.host = time.monotonic() - started, host_load(machine, host_snapshot())
    _LAST_BUDGET = budget.as_dict()
    times = [t for p in per_process for t in p.times]
    return times, verifications, [float(np.median(p.times)) for p in per_process]


def process_spread(medians: list[float]) -> float | None:
    """(slowest - fastest) / median of the per-process medians: how far apart fresh processes landed."""
    if len(medians) < 2:
        return None
    return float((max(medians) - min(medians)) / np.median(medians))
