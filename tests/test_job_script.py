"""The benchmark job's body and the GPU job's command (matmul_study/pipeline/job_script.py), on the CPU: a job
measured by a worker (a fake runner, tests/worker_fakes.py) writes the worker's record as its result and loads
nothing that measures; the rule's command hands the job its wildcards and the run's config."""

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from matmul_study.core import registry
from matmul_study.pipeline import job_script
from matmul_study.pipeline.config import validate

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# A passed job's result from the committed reference: the record the fake worker sends back.
RECORD = json.loads((REPO / "results/reference/NVIDIA_H200/runs/method~cublas/dtype~float16/"
                     "block~0_variant~default_m~512_k~512_n~512.json").read_text())


def test_a_gpu_job_measured_by_a_worker_writes_its_record_and_loads_nothing_that_measures(tmp_path):
    config = validate({"sizes": [512], "methods": ["cublas"], "dtypes": ["float16"],
                       "measurement": {"worker": True, "worker_idle_s": 5}})
    config["fake"] = {"record": RECORD}
    config_file = job_script.write_config(config, tmp_path / "configs")
    output = tmp_path / "results/runs/r.json"
    log = tmp_path / "logs/r.log"
    log.parent.mkdir()
    # The command as benchmark_gpu runs it, with the worker's runner swapped for the fake; then which modules the
    # client process loaded.
    client = f"""
import functools, json, sys
sys.path.insert(0, {str(REPO / "workflow/scripts")!r})
from matmul_study.pipeline import job_script, worker
worker.run_job_in_worker = functools.partial(worker.run_job_in_worker, runner="worker_fakes:runner")
job_script.main(sys.argv[1:])
print(json.dumps(sorted(m for m in ("numpy", "snakemake", "cupy", "matmul_study.core.registry") if m in sys.modules)))
"""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), str(REPO), os.environ.get("PYTHONPATH")) if p)}
    argv = ["--config", str(config_file), "--cubin=", "--output", str(output), "--log", str(log),
            "--inputs-dir", str(tmp_path / "inputs"), "method=cublas", "dtype=float16", "block=0",
            "variant=default", "m=512", "k=512", "n=512"]
    out = subprocess.run([sys.executable, "-c", client, *argv], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=120)
    try:
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout.strip().splitlines()[-1]) == []
        record = json.loads(output.read_text())
        assert record["job"] == {"method": "cublas", "dtype": "float16", "block": 0, "m": 512, "k": 512, "n": 512,
                                 "variant": "default"}
        assert record["cubin"] is None and record["inputs_dir"] == str(tmp_path / "inputs")
        assert record["output"] == str(output.with_name(".r.json.job.tmp"))  # measured beside, then renamed
        assert record["measured_config"] == {"measurement": {k: v for k, v in config["measurement"].items()
                                                             if k not in ("worker", "worker_idle_s")}}
        assert record["worker"]["pid"] == record["served_by"]
        assert "cublas float16 512x512x512: " in out.stderr  # the progress line
        assert "cublas float16 b0 512x512x512: passed" in log.read_text()
    finally:
        pid = json.loads(output.read_text())["served_by"] if output.exists() else None
        if pid:
            os.kill(pid, 9)


def test_the_run_config_file_is_named_by_its_content(tmp_path):
    config = validate({"sizes": [64]})
    first = job_script.write_config(config, tmp_path)
    assert job_script.write_config(dict(config), tmp_path) == first
    assert json.loads(first.read_text()) == json.loads(json.dumps(config, default=str))
    assert job_script.write_config({**config, "sizes": [128]}, tmp_path) != first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial file left


def test_the_gpu_rule_hands_the_command_its_wildcards_and_the_runs_config(tmp_path):
    # Snakemake's dry run prints each job's command: it parses back into the job that the result path names.
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "sizes": [{"m": 17, "k": 33, "n": 9}], "methods": ["cublas", "naive"], "dtypes": ["float32"],
        "block_sizes": [16], "arch": "sm_90"}))
    # Planning looks for cuBLAS's package (find_spec) and imports none of it: an empty one where it is missing.
    stand_ins = tmp_path / "stand_ins"
    cublas = registry.get("cublas")
    for name in (cublas.backend.module, *cublas.requires.modules):
        if importlib.util.find_spec(name.split(".")[0]) is None:
            (stand_ins / name.replace(".", "/")).mkdir(parents=True)
            (stand_ins / name.replace(".", "/") / "__init__.py").touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(stand_ins), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
                          "-n", "-p", "--cores", "1"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    commands = [line for line in out.stdout.splitlines() if "$MATMUL_STUDY_BENCHMARK_JOB" in line]
    assert len(commands) == 2, out.stdout
    for command in commands:
        argv = command.split()
        wildcards = dict(a.split("=", 1) for a in argv if re.fullmatch(r"[a-z]+=\S+", a))
        key = job_script.JobKey.from_wildcards(wildcards)
        assert (key.m, key.k, key.n, key.dtype, key.variant) == (17, 33, 9, "float32", "default")
        output = argv[argv.index("--output") + 1].strip("'")
        assert f"method~{key.method}/dtype~float32/block~{key.block}_variant~default_m~17_k~33_n~9.json" in output
        cubin = next(a for a in argv if a.startswith("--cubin="))
        assert (cubin == "--cubin=") == (key.method == "cublas"), cubin  # a library's kernel: none
        assert '--config "$MATMUL_STUDY_RUN_CONFIG"' in command and '--inputs-dir "$MATMUL_STUDY_INPUTS"' in command
    # The run's config, written once where the environment of the jobs points (the Snakefile sets it).
    (written,) = (tmp_path / ".snakemake" / "matmul_study_configs").glob("*.json")
    config = json.loads(written.read_text())
    assert config["sizes"] == [{"m": 17, "k": 33, "n": 9}] and config["measurement"]["worker"] is True


@pytest.mark.parametrize("wildcards, text", [
    ({"method": "naive", "dtype": "float32", "block": "16", "m": "8", "k": "9", "n": "10"},
     "naive float32 b16 8x9x10"),
    ({"method": "wgmma_int8", "dtype": "int8", "block": "0", "variant": "bm64", "m": "1", "k": "2", "n": "3"},
     "wgmma_int8 int8 [bm64] b0 1x2x3"),
])
def test_a_job_key_reads_its_wildcards(wildcards, text):
    assert str(job_script.JobKey.from_wildcards(wildcards)) == text


def test_the_gpu_jobs_command_finds_what_the_snakefile_puts_in_its_environment(tmp_path):
    # A rule beside the workflow's, whose shell prints what benchmark_gpu's shell reads, run as Snakemake runs a job.
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"sizes": [16], "methods": ["naive"], "dtypes": ["float32"],
                                                          "block_sizes": [16], "arch": "sm_90",
                                                          "measurement": {"worker": False}}))
    (tmp_path / "probe.smk").write_text(f"include: {str(REPO / 'Snakefile')!r}\n\n"
                                        "rule probe:\n    output: 'env.txt'\n"
                                        "    shell: 'env | grep ^MATMUL_STUDY_ > {output}'\n")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(tmp_path / "probe.smk"), "-d", str(tmp_path),
                          "--cores", "1", "probe"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines())
    assert env["MATMUL_STUDY_PYTHON"] == sys.executable and env["MATMUL_STUDY_INPUTS"] == "results/.inputs"
    assert json.loads(Path(env["MATMUL_STUDY_RUN_CONFIG"]).read_text())["sizes"] == [16]
    helped = subprocess.run([env["MATMUL_STUDY_PYTHON"], env["MATMUL_STUDY_BENCHMARK_JOB"], "--help"],
                            capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--inputs-dir" in helped.stdout, helped.stderr
    # benchmark_gpu's own command, as the dry run prints it, in that environment: it reaches the job (its log is
    # written; on this machine the measurement then stops for want of a GPU or a cubin, a clear error, no usage).
    planned = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
                              "-n", "-p", "--cores", "1"], capture_output=True, text=True, timeout=300)
    (command,) = [line.split("Shell command:", 1)[-1] for line in planned.stdout.splitlines()
                  if "$MATMUL_STUDY_BENCHMARK_JOB" in line]
    argv = shlex.split(command)
    for flag in ("--log", "--output"):  # their folders, as Snakemake makes them before a job
        (tmp_path / argv[argv.index(flag) + 1]).parent.mkdir(parents=True, exist_ok=True)
    ran = subprocess.run(["bash", "-c", f"set -euo pipefail; {command}"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, **env})
    assert "unbound variable" not in ran.stderr and "usage:" not in ran.stderr, ran.stderr
    log = tmp_path / argv[argv.index("--log") + 1]
    assert ran.returncode != 0 or (tmp_path / argv[argv.index("--output") + 1]).exists(), ran.stderr
    assert log.read_text(), ran.stderr  # the job ran: what it printed, and why it stopped, are in its log
