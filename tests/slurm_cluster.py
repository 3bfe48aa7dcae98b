"""A single-node Slurm cluster on this machine, for tests: its own munged, slurmctld and slurmd, every file in one
fresh folder, free ports, one partition and one fake GPU (gres backed by /dev/null, so that the GPU path of
sbatch and of the executor plugin runs on a machine without one).

Needs root, Debian's `slurmctld slurmd slurm-client munge` (Slurm 22.05) and a munge key. Nothing is installed
or changed outside the folder; `stop()` cancels the jobs and ends the daemons this object started, by pid.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

CLIENTS = ("sinfo", "sbatch", "squeue", "scancel", "scontrol", "srun", "sacct", "sacctmgr", "sshare")
PROGRAMS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol", "srun")
MUNGE_KEY = Path("/etc/munge/munge.key")
SBIN = ("/usr/sbin", "/sbin")


def which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path=os.pathsep.join(SBIN))


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    absent = [p for p in PROGRAMS if which(p) is None]
    if absent:
        return (f"Slurm or munge is not installed ({', '.join(absent)} not found; on Debian: "
                "apt-get install slurmctld slurmd slurm-client munge)")
    if os.geteuid() != 0:
        return "starting a local Slurm cluster needs root (SlurmUser=root)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "there is no 'munge' user (the munge package creates it)"
    if not MUNGE_KEY.is_file():
        return f"no munge key at {MUNGE_KEY} (create one with mungekey --create)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


class SlurmCluster:
    """One node, named as `hostname -s`, with every CPU this process may use and a fake GPU of type `gpu_type`."""

    def __init__(self, partition: str = "study", gpu_type: str = "fake"):
        self.partition = partition
        self.gpu_type = gpu_type
        self.host = socket.gethostname().split(".")[0]
        self.cpus = len(os.sched_getaffinity(0))
        # slurmd drains a node that reports less memory than configured: stay below what this machine has.
        self.memory_mb = max(256, memory_mb() - 512)
        self.root: Path | None = None
        self.processes: dict[str, subprocess.Popen] = {}

    # --- files ---------------------------------------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """This process's environment for this cluster: pass it to Snakemake (and through it to every job).

        SLURM_CONF points the client programs at this cluster's slurm.conf. The executor plugin's job step removes
        every SLURM_* variable before its nested `srun`, SLURM_CONF included, so PATH also starts with wrappers of
        the client programs that set it again (rather than writing /etc/slurm/slurm.conf on the machine)."""
        return {**os.environ, "SLURM_CONF": str(self.conf),
                "PATH": f"{self.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}

    def _write_config(self) -> None:
        r = self.root
        munge_socket = r / "munge" / "munge.socket"
        self.conf.write_text(f"""\
ClusterName=matmulstudy
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd.log
PlugStackConfig={r}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=300
GresTypes=gpu
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} Gres=gpu:{self.gpu_type}:1 State=UNKNOWN
PartitionName={self.partition} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        # Without File= the node drains ("gres/gpu count too low"); /dev/null stands in for /dev/nvidia0.
        (r / "gres.conf").write_text(f"NodeName={self.host} Name=gpu Type={self.gpu_type} File=/dev/null\n")
        (r / "plugstack.conf").write_text("")
        (r / "bin").mkdir()
        for program in CLIENTS:
            real = which(program)
            if real:
                wrapper = r / "bin" / program
                wrapper.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {real} "$@"\n')
                wrapper.chmod(0o755)

    # --- start and stop ------------------------------------------------------------------------------------------
    def start(self, timeout: float = 90) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="matmul-slurm-"))
        self.root.chmod(0o755)  # munged runs as user munge and must reach its folder
        for sub in ("state", "spool"):
            (self.root / sub).mkdir()
        munge_dir = self.root / "munge"
        munge_dir.mkdir()
        munge_dir.chmod(0o755)  # munged requires its socket folder to be searchable by all
        os.chown(munge_dir, pwd.getpwnam("munge").pw_uid, grp.getgrnam("munge").gr_gid)
        self._write_config()
        try:
            self._spawn("munged", [which("munged"), "--foreground", f"--socket={munge_dir}/munge.socket",
                                   f"--key-file={MUNGE_KEY}", f"--pid-file={munge_dir}/munged.pid",
                                   f"--log-file={munge_dir}/munged.log", f"--seed-file={munge_dir}/munged.seed"],
                        user="munge")
            self._wait(lambda: (munge_dir / "munge.socket").exists(), 20, "munged to create its socket")
            self._spawn("slurmctld", [which("slurmctld"), "-D", "-f", str(self.conf)])
            self._spawn("slurmd", [which("slurmd"), "-D", "-f", str(self.conf)])
            self._wait(lambda: self.node_state() == "idle", timeout, "the node to be idle")
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> None:
        log = open(self.root / f"{name}.out", "wb")
        kwargs = {"user": user, "group": user, "extra_groups": []} if user else {}
        self.processes[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                                stdin=subprocess.DEVNULL, **kwargs)
        log.close()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}\n{self.logs()}")
            if ready():
                return
            time.sleep(0.5)
        raise TimeoutError(f"waited {timeout:.0f} s for {what}\n{self.logs()}")

    def node_state(self) -> str:
        out = self.run("sinfo", "-h", "-o", "%T", check=False)
        return out.stdout.strip() if out.returncode == 0 else ""

    def run(self, program: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([which(program), *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout, check=check)

    def jobs(self) -> list[dict[str, str]]:
        """Every job slurmctld still knows (finished ones for MinJobAge = 300 s), as scontrol's key=value fields."""
        out = self.run("scontrol", "show", "job", "--oneliner", check=False)
        jobs = []
        for line in out.stdout.splitlines():
            fields = {}
            for item in line.split():
                key, sep, value = item.partition("=")
                if sep:
                    fields[key] = value
            if "JobId" in fields:
                jobs.append(fields)
        return jobs

    def stop(self) -> None:
        """Cancel every job, then end slurmd, slurmctld and munged (the processes this object started)."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            self.run("scancel", f"--partition={self.partition}", check=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(
                    j.get("JobState") in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING") for j in self.jobs()):
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.processes.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def remove(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def logs(self, lines: int = 30) -> str:
        """The last lines of every daemon's log, for a failure's message."""
        if self.root is None:
            return ""
        parts = []
        for path in sorted([*self.root.glob("*.log"), *self.root.glob("*.out"), *self.root.glob("munge/*.log")]):
            with_errors = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(with_errors))
        return "\n".join(parts)

    def __enter__(self) -> "SlurmCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
