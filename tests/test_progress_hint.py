"""What the study tells the user between runs: the command that `snakemake --report` suggests when this config's
results are missing, and the progress line's job count."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import yaml

from matmul_study.pipeline.report_inputs import report_needs_a_finished_run, user_config_args

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
STUDY = {"sizes": [32], "methods": ["numpy"], "dtypes": ["float32", "float64"],
         "measurement": {"warmup": 1, "min_reps": 3, "max_reps": 10, "min_time_s": 0.01, "max_time_s": 1}}


def snakemake(workdir, *args):
    # Run in the study's folder, as the user types the suggested command there (it names no --directory).
    return subprocess.run([*SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, timeout=600)


def test_the_suggested_command_keeps_the_users_config_overrides_and_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    settings = SimpleNamespace(config={"methods": ["numpy", "naive"], "dtypes": ["float32"], "threads": 2,
                                       "measurement": {"min_reps": "4"}},  # Snakemake's parser reads 4 as "4"
                               configfiles=[tmp_path.parent / "quick.yaml", Path("/elsewhere/other.yaml")])
    args = user_config_args(settings, ["numpy"])
    assert args == ("--configfile quick.yaml --configfile /elsewhere/other.yaml --config 'methods=[\"numpy\"]' "
                    "'dtypes=[\"float32\"]' threads=2 'measurement={\"min_reps\": 4}'")
    # No overrides: only the methods, as before.
    assert user_config_args(SimpleNamespace(config={}, configfiles=[]), ["numpy"]) == "--config 'methods=[\"numpy\"]'"
    config = {"methods": ["numpy", "naive"]}
    monkeypatch.chdir(tmp_path)
    present = Path("results/runs/method~numpy/x.json")
    present.parent.mkdir(parents=True)
    present.touch()
    hint = report_needs_a_finished_run(config, [str(present), "results/runs/method~naive/y.json"],
                                       argv=["snakemake", "--report", "r.zip"], settings=settings)
    assert hint is not None and "1 of the 2 results" in hint
    # quick.yaml now lies outside the working directory: its absolute path
    assert hint.endswith(f"snakemake --report r.zip --configfile {tmp_path.parent / 'quick.yaml'} --configfile "
                         "/elsewhere/other.yaml --config 'methods=[\"numpy\"]' 'dtypes=[\"float32\"]' threads=2 "
                         "'measurement={\"min_reps\": 4}'.")


def test_snakemake_report_repeats_the_runs_configfile_and_config(tmp_path):
    workdir = tmp_path / "study"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump({**STUDY, "methods": ["numpy", "naive"]}))
    (workdir / "extra.yaml").write_text(yaml.safe_dump({"sizes": [16]}))
    overrides = ["--configfile", "extra.yaml", "--config", 'dtypes=["float32"]',
                 "measurement={min_reps: 4}"]
    out = snakemake(workdir, "--report", str(tmp_path / "report.zip"), *overrides)
    assert out.returncode != 0
    # Nothing measured yet: the first-run command carries the user's configfile and overrides.
    (suggested,) = re.findall(r"run the study first, e.g. (snakemake --cores 1 .*?)\.\s*$", out.stderr, re.M)
    assert "--configfile extra.yaml" in suggested and "'dtypes=[\"float32\"]'" in suggested
    assert "'measurement={\"min_reps\": 4}'" in suggested
    # Snakemake reads the suggestion back as the same config: the dry run selects the jobs of this config.
    dry = snakemake(workdir, *shlex.split(suggested)[1:], "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "dtype~float32" in dry.stdout and "dtype~float64" not in dry.stdout

    # One result there: the report command names the methods that have results, and still the user's settings.
    (missing,) = re.findall(r"\(e\.g\. (results/runs/\S+?\.json)\)", out.stderr)
    numpy_run = Path(missing.replace("method~naive", "method~numpy"))
    (workdir / numpy_run).parent.mkdir(parents=True, exist_ok=True)
    (workdir / numpy_run).write_text(json.dumps({"method": "numpy", "dtype": "float32", "block": 0, "m": 16, "k": 16,
                                                 "n": 16, "status": "passed"}))
    out = snakemake(workdir, "--report", str(tmp_path / "report.zip"), *overrides)
    assert out.returncode != 0
    command = (f"snakemake --report {tmp_path / 'report.zip'} --configfile extra.yaml --config 'methods=[\"numpy\"]' "
               "'dtypes=[\"float32\"]' 'measurement={\"min_reps\": 4}'")
    assert command in out.stderr, out.stderr[-2000:]


def test_the_progress_count_includes_jobs_that_rerun_over_an_existing_result(tmp_path):
    from matmul_study.pipeline import progress

    old, new, missing = (str(tmp_path / name) for name in ("old.json", "new.json", "missing.json"))
    Path(old).write_text("{}")
    Path(new).write_text("{}")
    # Snakemake reruns old (its parameters changed) and runs missing; new is up to date.
    job = SimpleNamespace(output=[old, missing])
    workflow = SimpleNamespace(dag=SimpleNamespace(needrun_jobs=lambda: iter([job])))
    pending = progress.pending_results(workflow, [old, new, missing])
    assert pending == [old, missing]
    state = progress.start_progress(pending, tmp_path / "progress.json")
    record = {"method": "numpy", "dtype": "float32", "m": 8, "k": 8, "n": 8, "status": "passed", "gflops": 1.0}
    # The old result is still there, unchanged: nothing is done yet.
    assert progress.progress_line(record, state).endswith("[0 of 2 jobs done, 2 left]")
    os.utime(old, ns=(Path(old).stat().st_mtime_ns + 10**9,) * 2)  # written again, atomically
    assert "[1 of 2 jobs done, 1 left" in progress.progress_line(record, state)
    Path(missing).write_text("{}")
    assert progress.progress_line(record, state).endswith("[2 of 2 jobs done, 0 left]")
    # Without Snakemake's DAG: the missing files, as before.
    Path(missing).unlink()
    assert progress.pending_results(SimpleNamespace(), [old, new, missing]) == [missing]


def test_a_run_whose_jobs_rerun_for_changed_parameters_counts_them(tmp_path):
    workdir = tmp_path / "study"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(STUDY))
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-2000:]
    # A measurement parameter changed: Snakemake reruns both jobs over their existing results.
    out = snakemake(workdir, "--cores", "1", "--config", "measurement={min_reps: 4}")
    assert out.returncode == 0, out.stderr[-2000:]
    counts = re.findall(r"^numpy float(?:32|64) 32x32x32: .*\[(\d+) of (\d+) jobs done, (\d+) left.*\]$",
                        out.stdout + out.stderr, re.M)
    assert sorted(counts) == [("1", "2", "1"), ("2", "2", "0")], out.stderr[-3000:]
