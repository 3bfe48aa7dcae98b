"""The command line, read through a pipe whose reader stops early (`python -m matmul_study ... | head`)."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from matmul_study.__main__ import CLOSED_STDOUT


def _crowded_gpu(path, jobs=2000):
    """A results table in which every job held GPU-0 at once: `gpus` prints one line per overlap, far more than a
    pipe buffers (64 KiB on Linux), so its writes still fail after the reader has left, whatever the timing."""
    rows = [{"method": "tiled", "dtype": "float32", "block": 16, "m": 64, "k": 64, "n": 64 + i, "status": "passed",
             "gflops": 100.0, "env_device_name": "G", "env_device_kind": "gpu", "env_device_uuid": "GPU-0",
             "env_device_index": 0,
             "overhead_started_utc": "2026-11-22T10:00:00.000+00:00",
             "overhead_finished_utc": "2026-11-22T10:00:10.000+00:00"} for i in range(jobs)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    table = _crowded_gpu(tmp_path / "results.csv")
    whole = subprocess.run([sys.executable, "-m", "matmul_study", "gpus", str(table)], capture_output=True, text=True)
    assert whole.returncode == 1 and len(whole.stdout) > 128 * 1024, whole.stderr  # read whole: the usual answer
    out = subprocess.run(["bash", "-o", "pipefail", "-c",
                          f'"{sys.executable}" -m matmul_study gpus "{table}" | head -1'],
                         capture_output=True, text=True)
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert "BrokenPipeError" not in out.stderr, out.stderr
    assert "device_uuid" in out.stdout and out.stdout.count("\n") == 1
    assert out.returncode == CLOSED_STDOUT  # neither the 0 nor the 1 of an answer the reader never saw


@pytest.mark.parametrize("args", [
    ["model", "--method", "tiled", "--m", "512", "--k", "512", "--n", "512", "--block", "16", "--dtype", "float32"],
    ["compare", "{table}", "{table}"],
    ["gpus", "{table}"],
    ["pick", "--dtype", "float16", "--m", "64", "--k", "4096", "--n", "4096"],
])
def test_every_command_survives_a_pipe_with_no_reader(tmp_path, args):
    # A pipe whose read end is closed before the command starts: its first write fails, however little it prints.
    table = _crowded_gpu(tmp_path / "results.csv", jobs=3)
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "matmul_study", *(a.format(table=table) for a in args)],
                             stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert out.stderr == ""
    assert out.returncode == CLOSED_STDOUT
