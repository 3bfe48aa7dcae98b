"""Recovery after a crash: Snakemake killed mid-run (kill -9, or Ctrl-C sent to it alone), then the one documented
command (README: Recovering from a crash) finishes the study: only the missing jobs run, and no result is lost,
left half-written or written twice."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
# 6 numpy jobs of about 1 s of timing each, so that a job is surely still running when Snakemake is killed.
STUDY = {
    "sizes": [64, 96, 128],
    "methods": ["numpy"],
    "dtypes": ["float32", "float64"],
    "measurement": {"warmup": 1, "min_reps": 3, "max_reps": 100000, "min_time_s": 1, "max_time_s": 1,
                    "noise_target": 1e-6, "cpu_processes": 1},
}
N_JOBS = 6
RECOVER = ["--cores", "1", "--rerun-incomplete"]  # the README's recovery command: the run's own, plus this flag


def job_pids(workdir: Path) -> list[int]:
    """Live processes that run a job script of this directory's Snakemake."""
    scripts = f"{workdir}/.snakemake/scripts/"
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if scripts in cmdline:
                pids.append(int(entry.name))
    return pids


def wait_until(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def results(workdir: Path) -> dict[str, tuple[float, bytes]]:
    return {str(p.relative_to(workdir)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in (workdir / "results/runs").rglob("*.json")}


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc to watch processes")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "sigint"])
def test_killed_mid_run_then_one_command_recovers_running_only_the_missing_jobs(tmp_path, sig):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(STUDY))
    run = subprocess.Popen([*SNAKEMAKE, "--directory", str(tmp_path), "--cores", "1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # Mid-run: two results written and the next job started (its log is open, its timing not yet done).
        assert wait_until(lambda: len(results(tmp_path)) >= 2 and job_pids(tmp_path)
                          and len(list(tmp_path.glob("logs/runs/**/*.log"))) > len(results(tmp_path)), 120)
        running = job_pids(tmp_path)
        os.kill(run.pid, sig)  # Snakemake alone, as a crash or a Ctrl-C sent to its pid would
        run.wait(timeout=60)
        # The job it was running does not go on unattended: it stops with its Snakemake (on SIGINT, Snakemake
        # itself waits for it to finish).
        assert wait_until(lambda: not job_pids(tmp_path), 20), "a job outlived its Snakemake"
        assert not any(p in job_pids(tmp_path) for p in running)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    before = results(tmp_path)
    assert 2 <= len(before) < N_JOBS
    for name, (_, content) in before.items():
        assert json.loads(content)["status"] == "passed", name  # what was written is whole
    if sig == signal.SIGKILL:  # stopped before it wrote a result, and its log says why
        logs = "".join(p.read_text() for p in (tmp_path / "logs/runs").rglob("*.log"))
        assert "Snakemake (pid" in logs and "is gone: stopping this job" in logs

    out = subprocess.run([*SNAKEMAKE, "--directory", str(tmp_path), *RECOVER], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    ran = out.stdout + out.stderr
    # Only the missing jobs ran: the count Snakemake planned, and the finished results left untouched. After
    # SIGINT, Snakemake waits for the running job but leaves its result flagged incomplete: that one job, and no
    # other, is measured again (its file replaced, not doubled).
    planned = int(ran.split("Job stats:")[1].split("benchmark_cpu")[1].split()[0])
    after = results(tmp_path)
    assert len(after) == N_JOBS
    untouched = [name for name, stamp in before.items() if after[name] == stamp]
    assert len(untouched) == len(before) - (0 if sig == signal.SIGKILL else 1)
    assert planned == N_JOBS - len(untouched)
    # Nothing doubled, nothing half written, and the study is complete.
    table = pd.read_csv(tmp_path / "results/tables/results.csv")
    assert len(table) == N_JOBS and not table.duplicated(["method", "dtype", "block", "m", "k", "n"]).any()
    assert (table["status"] == "passed").all()
    assert not list((tmp_path / "results/runs").rglob("*.tmp"))
    assert (tmp_path / "report/report.html").exists()
    assert not list((tmp_path / ".snakemake/locks").glob("*"))
    # And now nothing is left to do.
    again = subprocess.run([*SNAKEMAKE, "--directory", str(tmp_path), "--cores", "1"], capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_a_live_run_keeps_its_locks(tmp_path):
    """The stale-lock clean-up never touches the locks of a run that is still going."""
    from matmul_study.pipeline.scripting import clear_stale_locks

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(STUDY))
    run = subprocess.Popen([*SNAKEMAKE, "--directory", str(tmp_path), "--cores", "1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        locks = tmp_path / ".snakemake/locks"
        assert wait_until(lambda: list(locks.glob("*.lock")) and job_pids(tmp_path), 120)
        assert clear_stale_locks(tmp_path) == []
        assert list(locks.glob("*.lock"))
        # A second run in the same directory is refused, as Snakemake refuses it, while the first one runs.
        second = subprocess.run([*SNAKEMAKE, "--directory", str(tmp_path), *RECOVER], capture_output=True,
                                text=True, timeout=120)
        assert second.returncode != 0 and "cannot be locked" in second.stdout + second.stderr
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=60)
    # Once that run is dead (kill -9 of its whole group: no job of it is left), its locks are stale.
    assert wait_until(lambda: not job_pids(tmp_path), 20)
    # A job that an executor spawned (on a cluster node, say) never clears locks: its run's Snakemake holds them.
    assert clear_stale_locks(tmp_path, argv=["snakemake", "--target-jobs", "benchmark_cpu:"]) == []
    removed = clear_stale_locks(tmp_path)
    assert any(r.startswith(".snakemake/locks/") for r in removed)
    assert not list((tmp_path / ".snakemake/locks").glob("*.lock"))
