"""The study through Snakemake's SLURM executor (snakemake-executor-plugin-slurm) and workflow/profiles/slurm, on a
real single-node Slurm cluster that this module starts and stops (tests/slurm_cluster.py): the CPU-only study's
results equal a local run's, every rule ran as a Slurm job with the profile's resources, and a GPU rule gets its GPU
from Slurm (a fake one, backed by /dev/null) through the plugin's GPU path.

Skipped where Slurm, munge or the plugin is missing, unless MATMUL_STUDY_REQUIRE_SLURM=1 (CI sets it when Slurm
is installed): then that is a failure. About three minutes, most of it the plugin's status polling.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

import slurm_cluster
from test_workflow import CPU_STUDY

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "workflow" / "profiles" / "slurm"
SLURM_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_SLURM") == "1"
# This cluster has no accounting database: the plugin's default status command (sacct) cannot see the jobs, and
# its first status check would come 40 s after a submission. docs/running.md gives the first for such clusters.
NO_ACCOUNTING = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1"]
RUN_LIMIT_S = 480


def why_not() -> str | None:
    reason = slurm_cluster.missing()
    if reason is None and importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        reason = "snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')"
    return reason


@pytest.fixture(scope="module")
def cluster():
    reason = why_not()
    if reason is not None:
        if SLURM_REQUIRED:
            pytest.fail(f"MATMUL_STUDY_REQUIRE_SLURM=1, but {reason}")
        pytest.skip(reason)
    cluster = slurm_cluster.SlurmCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        cluster.remove()


def snakemake_cmd(workdir: Path, *args: str, snakefile: Path = REPO / "Snakefile") -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(workdir), *args]


def through_slurm(cluster, workdir: Path, *args: str, profile: Path = PROFILE, **kwargs) -> subprocess.CompletedProcess:
    """snakemake --workflow-profile PROFILE ... as a user runs it. Under this executor Snakemake stops on SIGINT
    (cancelling its jobs), not on SIGTERM: hence timeout -s INT."""
    cmd = ["timeout", "-s", "INT", "-k", "30", str(RUN_LIMIT_S),
           *snakemake_cmd(workdir, "--workflow-profile", str(profile), *NO_ACCOUNTING, *args, **kwargs)]
    return subprocess.run(cmd, capture_output=True, text=True, env=cluster.env, timeout=RUN_LIMIT_S + 60)


def jobs_in(cluster, workdir: Path) -> list[dict[str, str]]:
    return [j for j in cluster.jobs() if Path(j.get("WorkDir", "")) == workdir]


def rule_of(job: dict[str, str]) -> str:
    """The rule, from the comment the plugin gives each job (rule_<rule>_wildcards_<values>)."""
    comment = job.get("Comment", "")
    assert comment.startswith("rule_"), job
    return comment[len("rule_"):].split("_wildcards_")[0]


def memory_mb(value: str) -> int:
    units = {"M": 1, "G": 1024, "T": 1024**2}
    return int(float(value[:-1]) * units[value[-1]])


def failure(out: subprocess.CompletedProcess, cluster) -> str:
    return f"rc {out.returncode}\n{out.stderr[-4000:]}\n{cluster.logs()}"


@pytest.fixture(scope="module")
def studies(cluster, tmp_path_factory):
    """The CPU-only study run twice: locally (`--cores 1`) and through Slurm, side by side."""
    local, remote = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("slurm")
    for workdir in (local, remote):
        (workdir / "config.yaml").write_text(yaml.safe_dump(CPU_STUDY))
    local_run = subprocess.Popen(snakemake_cmd(local, "--cores", "1"), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    # --cores: the numpy job's cores (the profile's 16 do not fit on this node).
    out = through_slurm(cluster, remote, "--cores", str(cluster.cpus))
    elapsed = time.perf_counter() - t0
    local_out, local_err = local_run.communicate(timeout=600)
    assert local_run.returncode == 0, local_err[-3000:]
    return local, remote, out, elapsed


def run_files(workdir: Path) -> set[str]:
    return {str(p.relative_to(workdir)) for p in (workdir / "results" / "runs").rglob("*.json")}


def figures(workdir: Path) -> set[str]:
    return {str(p.relative_to(workdir)) for p in (workdir / "results" / "figures").glob("*.png")}


def test_the_study_through_slurm_gives_the_local_runs_jobs_and_report(cluster, studies):
    local, remote, out, elapsed = studies
    assert out.returncode == 0, failure(out, cluster)
    assert len(run_files(local)) == 6 and run_files(remote) == run_files(local)
    key = ["method", "dtype", "shape", "block"]
    here, there = (pd.read_csv(w / "results/tables/results.csv") for w in (local, remote))
    assert sorted(map(tuple, there[key].values.tolist())) == sorted(map(tuple, here[key].values.tolist()))
    assert (there["status"] == "passed").all() and (there["gflops"] > 0).all()
    html = (remote / "report/report.html").read_text()
    for row in there.itertuples():
        assert row.label in html and row.shape in html
    assert figures(local) and figures(remote) == figures(local)
    for name in figures(remote):
        assert (remote / name).stat().st_size > 1000, name
    print(f"CPU-only study through Slurm: {elapsed:.0f} s")


def test_every_rule_ran_as_a_slurm_job_with_the_profiles_resources(cluster, studies):
    local, remote, out, _ = studies
    assert out.returncode == 0, failure(out, cluster)
    jobs = jobs_in(cluster, remote)
    assert Counter(rule_of(j) for j in jobs) == {"benchmark_cpu": 6, "collate": 1, "figures": 1, "report": 1}
    assert all(j["JobState"] == "COMPLETED" and j["ExitCode"] == "0:0" for j in jobs), jobs
    assert out.stderr.count("has been submitted with SLURM jobid") == len(jobs)
    for job in jobs:
        if rule_of(job) == "benchmark_cpu":
            # A node of its own (--exclusive), --cores cores, memory from the matrix size (2048 MB when tiny).
            assert job["OverSubscribe"] == "NO", job
            assert int(job["CPUs/Task"]) == cluster.cpus, job
            assert memory_mb(job["MinMemoryNode"]) == 2048, job
        else:
            # The figures are drawn side by side, one process each, on at most --cores cores; the rest take one.
            drawn = len(figures(remote)) if rule_of(job) == "figures" else 1
            assert job["OverSubscribe"] == "OK" and int(job["CPUs/Task"]) == min(drawn, cluster.cpus), job
            assert memory_mb(job["MinMemoryNode"]) == 4000, job
        assert job["Partition"] == cluster.partition


def test_a_rerun_through_slurm_submits_nothing(cluster, studies):
    _, remote, first, _ = studies
    assert first.returncode == 0, failure(first, cluster)
    before = len(jobs_in(cluster, remote))
    out = through_slurm(cluster, remote, "--cores", str(cluster.cpus))
    assert out.returncode == 0, failure(out, cluster)
    assert "Nothing to be done" in out.stdout + out.stderr
    assert len(jobs_in(cluster, remote)) == before


# A stand-in for the GPU benchmark (the real one needs PyCUDA and a GPU): a rule of the same name and wildcards,
# so that the profile's benchmark_gpu resources apply, that records what the job sees and what the GPU pool picks.
GPU_STAND_IN = """
rule all:
    input: "gpu/m~64_k~64_n~64.json"

rule benchmark_gpu:
    output: "gpu/m~{m}_k~{k}_n~{n}.json"
    resources: gpu=1
    run:
        import json, os
        from matmul_study.measure import gpu_slots as gpu_pool
        with gpu_pool.acquire_gpu(8, lock_dir="locks") as index:
            record = {"index": index, "inside": os.environ.get("CUDA_VISIBLE_DEVICES")}
        record.update({k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID")})
        Path(output[0]).write_text(json.dumps(record))
"""


def test_a_gpu_rule_gets_its_gpu_from_slurm(cluster, tmp_path):
    # The user's edit: the placeholders for the partition and the GPU type set, as docs/running.md says.
    profile = tmp_path / "profile"
    profile.mkdir()
    text = (PROFILE / "config.yaml").read_text()
    for placeholder, value in (("# gpu_model: \"'h100'\"", f"gpu_model: \"'{cluster.gpu_type}'\""),
                               ("# slurm_partition: \"'gpu'\"", f"slurm_partition: \"'{cluster.partition}'\"")):
        assert text.count(placeholder) == 2, placeholder  # benchmark_gpu and calibrate
        text = text.replace(placeholder, value)
    (profile / "config.yaml").write_text(text)
    workdir = tmp_path / "work"
    workdir.mkdir()
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text("from pathlib import Path\n" + GPU_STAND_IN)
    out = through_slurm(cluster, workdir, profile=profile, snakefile=snakefile)
    assert out.returncode == 0, failure(out, cluster)
    record = json.loads((workdir / "gpu/m~64_k~64_n~64.json").read_text())
    # Slurm chose the device; the pool used it and locked nothing.
    assert record["CUDA_VISIBLE_DEVICES"] == "0" and record["SLURM_JOB_ID"]
    assert record["index"] == 0 and record["inside"] == "0"
    assert not (workdir / "locks").exists()
    (job,) = jobs_in(cluster, workdir)
    assert rule_of(job) == "benchmark_gpu" and job["JobId"] == record["SLURM_JOB_ID"]
    assert job["TresPerJob"] == f"gres:gpu:{cluster.gpu_type}:1"  # --gpus=<gpu_model>:1
    assert job["Partition"] == cluster.partition and int(job["CPUs/Task"]) == 2
    assert memory_mb(job["MinMemoryNode"]) == 2048
