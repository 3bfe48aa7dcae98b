"""A measurement worker per GPU slot: one long-lived process that runs a study's GPU jobs one after another, so that
a job does not create again what a fresh process would: the CUDA context, NVML's handle, CuPy and the libraries the
measurement loads.

On by default (config `measurement.worker`). Each GPU job stays one Snakemake job and becomes a client
(run_job_in_worker, called by the GPU job's plain command, pipeline/job_script.py): it holds its GPU slot as a job
in its own process does (gpu_slots.job_slot: the scheduler's device, or a lock of the host's pool), then the slot's
worker lock (one flock per slot), sends the job to the slot's worker over a Unix socket (one JSON line each way)
and returns the record that comes back; the job writes it as always. The worker measures through runner.run_job, the code a job in its own process runs; it was
started with CUDA_VISIBLE_DEVICES naming its slot's device, so run_job's job_slot takes that device and no lock.

Lifetime. The first job of a slot starts its worker: a detached process (`setsid`, not a descendant of the
job), so the job can end, and Snakemake does not wait for it. A worker exits when it was idle for idle_s, when the
Snakemake process of its study is gone, when its socket was replaced, and after a job that raised: an error from
CUDA can leave the context unusable, so the next job gets a fresh process. A worker that dies inside a job (a
kernel fault, SIGKILL) closes the connection: that job alone fails (WorkerDied, naming the worker and its log), and
the next job finds the socket refused (stale), removes it and starts a fresh worker.

One job at a time. The client holds the slot's lock from before it connects until the reply is in; the worker
serves one connection at a time; and an idle worker exits only while it holds that lock itself, so a client never
connects to a worker that is leaving.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from matmul_study.measure.gpu_slots import try_lock
from matmul_study.pipeline import processes

PROTOCOL = 1
# The workers' folder, under the workflow's working directory (Snakemake's own folder there): locks, sockets, logs.
DIRECTORY = Path(".snakemake") / "matmul_study_workers"
DEFAULT_IDLE_S = 60.0
# What a worker runs for each request: module:function, taking the request (a dict) and returning the record.
DEFAULT_RUNNER = "matmul_study.pipeline.worker:run_request"
# A worker's start: a fresh Python and the runner's imports (numpy, the package), slower on a network file system.
START_TIMEOUT_S = 120.0
# How often an idle worker checks that its study is still running and its socket still its own.
POLL_S = 1.0
# A client that connected sends its request at once; one that does not is dropped after this long.
REQUEST_TIMEOUT_S = 30.0
# The job's output (prints, warnings) travels back in the reply, at most this much of its end.
MAX_OUTPUT_CHARS = 1 << 20
# Connections a job tries (a fresh worker each) where a worker that is leaving drops it before taking the job.
CONNECT_ATTEMPTS = 3
# AF_UNIX socket paths hold at most 108 bytes on Linux (104 on macOS), the terminating NUL included.
MAX_SOCKET_PATH = 100


class WorkerError(RuntimeError):
    """The job could not be measured because of its worker, not because of the job: it could not start, or it
    ended before replying."""


class WorkerStartError(WorkerError):
    pass


class WorkerDied(WorkerError):
    pass


class _NotTaken(Exception):
    """The connection ended before the worker took the job (a worker in the middle of dying still accepts
    connections for an instant): the job never started, and a fresh worker can take it."""


class WorkerJobError(RuntimeError):
    """The job raised inside the worker; the message is the error's type and message, `remote_traceback` its
    traceback there."""

    def __init__(self, message: str, remote_traceback: str = "", output: str = ""):
        super().__init__(message)
        self.remote_traceback = remote_traceback
        self.output = output  # what the job printed there, its traceback last


# --- Where a slot's worker lives --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """A GPU slot's worker: its folder, its name (gpu<index>, or gpu where no device was chosen) and the study it
    serves (the Snakemake process's pid and start time, or None outside Snakemake)."""
    directory: Path
    name: str
    study: tuple[int, str] | None = None

    @property
    def lock_path(self) -> Path:
        return self.directory / f"{self.name}.lock"

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def socket_path(self) -> Path:
        """One socket per slot and study: a worker left by another study (it exits within POLL_S of its Snakemake)
        never takes this study's jobs. Where the folder's path is too long for a socket, a short path in the
        temporary folder, named by a hash of the long one."""
        study = f"{self.study[0]}-{self.study[1]}" if self.study else "any"
        path = self.directory.absolute() / f"{self.name}.{study}.sock"
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            return path
        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"matmul_study_workers-{os.getuid()}" / f"{digest}.sock"


def slot_name(device: int | str | None) -> str:
    """gpu<index> for the device a job holds (a host index, or a UUID made safe for a file name); gpu for None (no
    device chosen: CUDA's device 0)."""
    if device is None:
        return "gpu"
    return "gpu" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(device))


def study_of_this_process() -> tuple[int, str] | None:
    """The Snakemake process whose job this is (pid, start time), or None outside Snakemake."""
    pid = processes.snakemake_ancestor()
    started = processes.start_time(pid) if pid else None
    return (pid, started) if pid and started else None


def study_is_per_job() -> bool:
    """Whether this job's Snakemake runs this job alone (an executor's job step, e.g. Slurm's: `--target-jobs`),
    so that a worker would end with the job and only add its start to it."""
    pid = processes.snakemake_ancestor()
    return pid is not None and "--target-jobs" in processes.command_line(pid)


def use_worker(config: dict, on_gpu: bool) -> bool:
    """Whether a job runs in its GPU slot's worker: a GPU job, with measurement.worker set, under a Snakemake that
    runs more than this job (else a line in the job's log says why not). CPU jobs always run in their own process
    (their timing processes are fresh anyway)."""
    if not (on_gpu and config.get("measurement", {}).get("worker", False)):
        return False
    if study_is_per_job():
        print("measurement.worker: not used here: this job's Snakemake runs it alone (an executor's job step), "
              "and a worker would end with it", flush=True)
        return False
    return True


# --- The client ------------------------------------------------------------------------------------------------------

@dataclass
class Reply:
    record: dict
    pid: int  # the worker's
    jobs_before: int  # the jobs it had served before this one (0: a fresh worker)
    start_s: float  # what starting the worker cost this job (0.0: it was running)
    waited_s: float  # this client's wait for the slot's lock (since `waited_since`)
    output: str = ""


def run_job_in_worker(job, config: dict, output: str, cubin: str | None = None, threads: int | None = None,
                      inputs_dir: str | None = None, *, directory: str | os.PathLike | None = None,
                      runner: str = DEFAULT_RUNNER) -> dict:
    """runner.run_job's GPU job, measured by the worker of the GPU slot this job holds; the same arguments, and the
    same record, with `worker` (its pid, the jobs it served before this one, the seconds its start cost this job)
    added. The record's start-up is this process's and the worker's start (where this job started it), its slot
    wait this process's wait for its GPU and for the worker. Raises WorkerJobError where the job raised in the
    worker, WorkerError where the worker could not start or ended before replying."""
    from matmul_study.measure import environment, gpu_slots

    startup_s = environment.process_age_s()  # this process's start-up: Python, imports, Snakemake's script preamble
    # (The result folder is checked before: by the job script, and by run_job in the worker.)
    folder = (Path(directory) if directory is not None else DIRECTORY).absolute()
    request = {"protocol": PROTOCOL, "cwd": os.getcwd(),
               "job": {key: getattr(job, key) for key in ("method", "dtype", "block", "m", "k", "n", "variant")},
               "config": config, "output": _absolute(output), "cubin": _absolute(cubin), "threads": threads,
               "inputs_dir": _absolute(inputs_dir)}
    idle_s = float(config.get("measurement", {}).get("worker_idle_s", DEFAULT_IDLE_S))
    t_wait = time.perf_counter()
    # The GPU first, as a job in its own process takes it: inside, CUDA_VISIBLE_DEVICES names the device, which a
    # worker started here inherits.
    with gpu_slots.job_slot(True) as device:
        slot = Slot(folder, slot_name(device), study_of_this_process())
        try:
            reply = submit(slot, request, runner=runner, idle_s=idle_s, waited_since=t_wait)
        except WorkerJobError as exc:
            _echo(exc.output)  # into this job's log, as if it had run here
            raise
    _echo(reply.output)
    record = reply.record
    overhead = record.setdefault("overhead", {})
    if startup_s is not None:
        overhead["startup_s"] = startup_s + reply.start_s
    overhead["slot_wait_s"] = reply.waited_s + (overhead.get("slot_wait_s") or 0.0)
    record["worker"] = {"pid": reply.pid, "jobs_before": reply.jobs_before, "start_s": reply.start_s}
    return record


def _echo(text: str) -> None:
    if text:
        print(text, end="" if text.endswith("\n") else "\n", flush=True)


def _absolute(path: str | os.PathLike | None) -> str | None:
    return None if path is None else str(Path(path).absolute())


def submit(slot: Slot, request: dict, *, runner: str = DEFAULT_RUNNER, idle_s: float = DEFAULT_IDLE_S,
           start_timeout_s: float = START_TIMEOUT_S, waited_since: float | None = None) -> Reply:
    """Send `request` to the slot's worker (starting one where none is listening) and wait for its reply, holding
    the slot's lock throughout. Raises WorkerJobError where the runner raised, WorkerStartError where no worker
    could be started, WorkerDied where the worker ended before replying. The reply's waited_s: seconds from
    `waited_since` (default: now) until this client held the slot's lock."""
    slot.directory.mkdir(parents=True, exist_ok=True)
    waited_since = time.perf_counter() if waited_since is None else waited_since
    with _locked(slot.lock_path):
        waited_s = time.perf_counter() - waited_since
        start_s = 0.0
        for attempt in range(CONNECT_ATTEMPTS):
            conn = _connect(slot.socket_path)
            if conn is None:
                t_start = time.perf_counter()
                _start(slot, runner, idle_s, start_timeout_s)
                conn = _connect(slot.socket_path)
                if conn is None:
                    raise WorkerStartError(f"the measurement worker of GPU slot {slot.name} started but does not "
                                           f"accept connections at {slot.socket_path}{_log_tail(slot.log_path)}")
                start_s += time.perf_counter() - t_start
            try:
                with conn:
                    answer = _exchange(conn, request, slot)
                break
            except _NotTaken as exc:
                with contextlib.suppress(FileNotFoundError):
                    slot.socket_path.unlink()  # its worker is leaving: the next attempt starts a fresh one
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise WorkerDied(_died(slot, None, str(exc))) from None
    reply = Reply(answer.get("record") or {}, int(answer["pid"]), int(answer["jobs_before"]), start_s, waited_s,
                  answer.get("output") or "")
    if not answer.get("ok"):
        error = answer.get("error") or {}
        raise WorkerJobError(f"{error.get('type', 'Error')}: {error.get('message', '')} (in the measurement worker "
                             f"pid {reply.pid} of GPU slot {slot.name})", error.get("traceback", ""), reply.output)
    return reply


def _exchange(conn: socket.socket, request: dict, slot: Slot) -> dict:
    """The request out; the worker's acceptance (its pid) and its reply in."""
    pid = None
    stream = conn.makefile("rb")
    try:
        try:
            conn.sendall(json.dumps(request).encode() + b"\n")
            accepted = _line(stream)
        except OSError as exc:
            raise _NotTaken(f"the connection failed before the worker took the job: {exc}") from None
        if accepted is None:
            raise _NotTaken("the worker closed the connection before taking the job")
        pid = int(json.loads(accepted)["pid"])
        reply = _line(stream)
    except (KeyboardInterrupt, SystemExit):
        # This job was stopped while its worker measures it: the worker's state is unknown and the GPU should be
        # free at once, so the worker goes too (the next job starts a fresh one).
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        raise
    except OSError as exc:
        raise WorkerDied(_died(slot, pid, f"the connection failed: {exc}")) from None
    finally:
        stream.close()
    if reply is None:
        raise WorkerDied(_died(slot, pid, "its connection closed before a result came back"))
    return json.loads(reply)


def _line(stream) -> bytes | None:
    """One whole line, or None where the connection closed first."""
    line = stream.readline()
    return line if line.endswith(b"\n") else None


def _died(slot: Slot, pid: int | None, how: str) -> str:
    who = f"pid {pid}" if pid else "not yet identified"
    return (f"the measurement worker of GPU slot {slot.name} ({who}) ended while running this job ({how}: a kernel "
            f"fault, or the process was killed); this job failed, the next one starts a fresh worker. Worker log: "
            f"{slot.log_path}{_log_tail(slot.log_path)}")


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return ("\nLast lines of the worker log:\n" + "\n".join(tail)) if tail else ""


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive flock on `path` for the block (released by the kernel if this process dies)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _connect(path: Path) -> socket.socket | None:
    """A connection to the worker listening at `path`, or None where none is: no socket file, or a stale one that
    no process listens on any more (left by a worker that was killed), which is removed here. Called under the
    slot's lock: no worker of this slot is starting or leaving meanwhile."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(os.fspath(path))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        with contextlib.suppress(FileNotFoundError):
            if path.exists():
                path.unlink()  # stale: its worker is gone
        return None
    except OSError:
        conn.close()
        raise
    return conn


def _start(slot: Slot, runner: str, idle_s: float, timeout_s: float) -> None:
    """Start the slot's worker and wait until it listens. It inherits this process's environment (inside the GPU
    slot: CUDA_VISIBLE_DEVICES names the slot's device) and finds the package this process runs (PYTHONPATH)."""
    import matmul_study

    slot.socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    package_root = str(Path(matmul_study.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "matmul_study.pipeline.worker", "--socket", str(slot.socket_path),
               "--lock", str(slot.lock_path), "--idle-s", repr(float(idle_s)), "--runner", runner]
    if slot.study:
        command += ["--study-pid", str(slot.study[0]), "--study-start", slot.study[1]]
    with open(slot.log_path, "a") as log:
        # setsid: Ctrl-C at the terminal and a signal to this job's process group do not reach it (its
        # study's end does: serve). It forks once more and its first process exits, so that it is not this job's
        # child; its stdout is the pipe it says "ready" on.
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env,
                                   cwd=os.getcwd(), start_new_session=True, close_fds=True)
    try:
        line = _read_ready(process.stdout, timeout_s)
    finally:
        process.stdout.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
    if not line.startswith("ready"):
        why = "did not start in time" if line == "timeout" else "exited during its start"
        raise WorkerStartError(f"the measurement worker of GPU slot {slot.name} {why} ({' '.join(command)}); worker "
                               f"log: {slot.log_path}{_log_tail(slot.log_path)}")


def _read_ready(pipe, timeout_s: float) -> str:
    """The worker's first line ("ready <pid>"), "" where it closed the pipe without one, "timeout" after timeout_s."""
    deadline = time.monotonic() + timeout_s
    data = b""
    fd = pipe.fileno()
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if not select.select([fd], [], [], left)[0]:
            continue
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode(errors="replace") if b"\n" in data else ""


# --- The worker --------------------------------------------------------------------------------------------------------

def run_request(request: dict) -> dict:
    """The default runner: the request's job through runner.run_job, the code a job in its own process runs."""
    from matmul_study.measure.runner import Job, run_job

    job = Job.from_wildcards(request["job"])
    return run_job(job, request["config"], request["output"], cubin=request.get("cubin"),
                   threads=request.get("threads"), inputs_dir=request.get("inputs_dir"))


def resolve(spec: str) -> Callable[[dict], dict]:
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"runner {spec!r}: expected module:function")
    return getattr(importlib.import_module(module), name)


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} worker {os.getpid()}: {message}", file=sys.stderr, flush=True)


def _listen(path: Path) -> socket.socket:
    """Listen at `path`, replacing a socket file that is there: a client starts a worker only where none listens
    (under the slot's lock), so a file there is a dead worker's."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is this user's alone: a request names files the worker writes
    try:
        server.bind(os.fspath(path))
    finally:
        os.umask(old_umask)
    server.listen(8)
    return server


def _study_gone(study: tuple[int, str] | None) -> bool:
    return study is not None and processes.start_time(study[0]) != study[1]


def _own_socket(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's user (Linux SO_PEERCRED); None where the platform cannot say."""
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize("3i")))
        return uid
    except (AttributeError, OSError):
        return None


def serve(server: socket.socket, path: Path, lock_path: Path, runner: Callable[[dict], dict], idle_s: float,
          study: tuple[int, str] | None) -> str:
    """Serve one connection at a time until a reason to leave; returns that reason."""
    inode = os.stat(path).st_ino
    jobs = 0
    idle_since = time.monotonic()
    while True:
        left = idle_since + idle_s - time.monotonic()
        server.settimeout(max(0.05, min(POLL_S, left)))
        try:
            conn, _ = server.accept()
        except socket.timeout:
            if _study_gone(study):
                return "its study's Snakemake is gone"
            if not _own_socket(path, inode):
                return f"its socket {path} was replaced"
            if time.monotonic() - idle_since >= idle_s:
                # Leave only while holding the slot's lock: no client is connecting or waiting for a reply, and
                # the next one finds no socket and starts a fresh worker. The lock is released at exit.
                if try_lock(lock_path) is not None:
                    _remove_own(path, inode)
                    return f"idle for {idle_s:g} s"
            continue
        with conn:
            served = _serve_connection(conn, runner, jobs, on_failure=lambda: _remove_own(path, inode))
        if served is None:
            continue
        jobs += 1
        idle_since = time.monotonic()
        if not served:
            return "its last job raised (its CUDA context may be unusable)"


def _remove_own(path: Path, inode: int) -> None:
    with contextlib.suppress(OSError):
        if _own_socket(path, inode):
            path.unlink()


def _serve_connection(conn: socket.socket, runner: Callable[[dict], dict], jobs: int,
                      on_failure: Callable[[], None]) -> bool | None:
    """Read one request, say it was taken (this worker's pid), run it and reply. True: the job ran; False: it
    raised (on_failure ran first, before the reply releases the client and its slot lock: the next client must
    not connect to a worker that is about to leave); None: no request came."""
    uid = _peer_uid(conn)
    if uid is not None and uid != os.getuid():
        _log(f"refused a connection from user {uid}")
        return None
    conn.settimeout(REQUEST_TIMEOUT_S)
    stream = conn.makefile("rb")
    try:
        line = _line(stream)
    except OSError as exc:
        _log(f"dropped a client that sent no request: {exc}")
        return None
    finally:
        stream.close()
    if line is None:
        return None
    conn.settimeout(None)
    try:
        conn.sendall(json.dumps({"pid": os.getpid(), "jobs_before": jobs}).encode() + b"\n")
    except OSError as exc:  # the client left before its job started: nothing ran
        _log(f"a client left before its job started: {exc}")
        return None
    reply = {"pid": os.getpid(), "jobs_before": jobs, "ok": False}
    t0 = time.perf_counter()
    what = None
    try:
        request = json.loads(line)
        what = request.get("job")
        if request.get("protocol") != PROTOCOL:
            raise ValueError(f"protocol {request.get('protocol')!r}; this worker speaks {PROTOCOL}")
        with _captured() as output, _in_folder(request.get("cwd")):
            try:
                reply["record"] = runner(request)
                reply["ok"] = True
            except Exception as exc:
                traceback.print_exc()
                reply["error"] = _error(exc)
        reply["output"] = output.text[-MAX_OUTPUT_CHARS:]
    except Exception as exc:  # a request it cannot read, or a client already gone
        reply["error"] = _error(exc)
    _release_memory()
    _log(f"job {jobs + 1} {what}: {'done' if reply['ok'] else 'raised'} in {time.perf_counter() - t0:.3f} s")
    if not reply["ok"]:
        on_failure()
    try:
        conn.sendall(json.dumps(reply).encode() + b"\n")
    except OSError as exc:  # the client is gone (stopped)
        _log(f"could not reply: {exc}")
    return reply["ok"]


def _error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}


class _Output:
    text = ""


@contextlib.contextmanager
def _captured():
    """The job's stdout and stderr, at the descriptors (CUDA's and the compiler's output too), into `.text`."""
    out = _Output()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            out.text = tmp.read().decode(errors="replace")


@contextlib.contextmanager
def _in_folder(path: str | None):
    """The client's working directory for the job: the workflow's relative paths (and git's) resolve there."""
    before = os.getcwd()
    if path:
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _release_memory() -> None:
    """Free what a job left on the device before the next one checks its free memory (gpu_job.ensure_fits): the
    job's buffers (garbage collected) and CuPy's memory pools, which a process of its own returned at exit."""
    import gc

    gc.collect()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A GPU slot's measurement worker (started by its first job).")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--lock", required=True, type=Path)
    parser.add_argument("--idle-s", type=float, default=DEFAULT_IDLE_S)
    parser.add_argument("--runner", default=DEFAULT_RUNNER)
    parser.add_argument("--study-pid", type=int)
    parser.add_argument("--study-start")
    args = parser.parse_args(argv)
    if os.fork() > 0:  # the starting job's child exits at once: the worker is not the job's descendant
        os._exit(0)
    study = (args.study_pid, args.study_start) if args.study_pid and args.study_start else None
    # SIGTERM unwinds (removing the socket); SIGINT is a terminal's or a job's process group's, not this process's.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        runner = resolve(args.runner)
        server = _listen(args.socket)
    except Exception as exc:
        _log(f"could not start: {type(exc).__name__}: {exc}")
        return 1
    inode = os.stat(args.socket).st_ino
    _log(f"serving {args.socket} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}, idle "
         f"{args.idle_s:g} s, study {study})")
    os.write(1, f"ready {os.getpid()}\n".encode())
    os.dup2(2, 1)  # its prints go to the log from here on, and nothing holds the starting job's pipe open
    reason = "stopped"
    try:
        reason = serve(server, args.socket, args.lock, runner, args.idle_s, study)
    finally:
        server.close()
        _remove_own(args.socket, inode)
        _log(f"exits: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
