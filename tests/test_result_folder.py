"""A job checks that it can write its result before it measures: a read-only result folder or a full disk ends it
at once with one line naming the folder and what to do, not with a traceback after the job's whole time."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matmul_study.core import results
from matmul_study.measure import runner
from matmul_study.measure.runner import Job, run_job
from matmul_study.pipeline import job_script

REPO = Path(__file__).resolve().parent.parent
FAST = {"warmup": 1, "min_reps": 3, "max_reps": 10, "min_time_s": 0.01, "max_time_s": 0.1}


def test_a_folder_that_can_be_written_passes_and_is_left_as_it_was(tmp_path):
    results.check_can_write(tmp_path / "runs" / "method~numpy")
    assert (tmp_path / "runs" / "method~numpy").is_dir()
    assert not list((tmp_path / "runs").rglob("*.*"))  # the probe file is gone


def test_a_result_folder_under_a_regular_file_is_refused_even_for_root(tmp_path):
    # A file where a folder should be: no user, root included, can create the result there.
    (tmp_path / "results").write_text("not a folder")
    folder = tmp_path / "results" / "runs"
    with pytest.raises(results.ResultFolderError) as err:
        results.check_can_write(folder)
    message = str(err.value)
    assert str(folder) in message and "rerun the same command" in message and "\n" not in message


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file modes")
def test_a_read_only_result_folder_is_refused(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(results.ResultFolderError, match="Permission denied"):
            results.check_can_write(folder)
    finally:
        folder.chmod(0o755)


def test_a_folder_that_refuses_new_files_is_refused(tmp_path, monkeypatch):
    # What a read-only folder does for a user who is not root (root ignores modes: simulated here).
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(results.tempfile, "mkstemp", refuse)
    with pytest.raises(results.ResultFolderError, match=r"cannot write results to .* \(Permission denied\)"):
        results.check_can_write(tmp_path)


def test_a_full_disk_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(results.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 1024, 1024))
    with pytest.raises(results.ResultFolderError, match=r"has 0\.0 MB free.*free some space there"):
        results.check_can_write(tmp_path)


def test_a_cpu_job_that_cannot_write_its_result_fails_before_measuring(tmp_path, monkeypatch):
    measured = []
    monkeypatch.setattr(runner, "_run_job", lambda *args, **kwargs: measured.append(args))
    (tmp_path / "runs").write_text("a file where the result folder should be")
    config = {"measurement": FAST, "threads": 1}
    with pytest.raises(results.ResultFolderError):
        run_job(Job("numpy", "float32", 0, 32, 32, 32), config, str(tmp_path / "runs" / "r.json.job.tmp"))
    assert not measured


def test_the_job_script_says_so_in_one_line_without_a_traceback(tmp_path):
    # The CPU job's command as Snakemake runs it: it stops in well under the job's time.
    (tmp_path / "results").write_text("a file where the result folder should be")
    log = tmp_path / "job.log"
    config = job_script.write_config({"measurement": FAST, "threads": 1}, tmp_path / "configs")
    command = [sys.executable, str(REPO / "workflow/scripts/benchmark_job.py"), "--cpu", "--config", str(config),
               "--inputs-dir", str(tmp_path / "inputs"), "--output", str(tmp_path / "results/runs/r.json"),
               "--log", str(log), "--threads", "1", "method=numpy", "dtype=float32", "block=0", "variant=default",
               "m=32", "k=32", "n=32"]
    t0 = time.monotonic()
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - t0 < 30
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "results/runs") in lines[0], out.stderr
    assert "cannot write results to" in log.read_text()
