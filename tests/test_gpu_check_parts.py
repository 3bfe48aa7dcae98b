"""`.ci/gpu-check.sh tests` with several processes: the kernels' GPU tests in parts that the processes take in turn,
within one deadline, and the parts left over named for the next call. Run here with stand-ins for python3 and
nvidia-smi on the PATH (a pytest that takes a part, logs it and ends on pytest's summary line, one part slow), so
that only the script's own logic is under test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FAKE_PYTHON = """#!/usr/bin/env bash
case "$*" in
  *"-m pytest"*)
    if [[ -n ${MATMUL_STUDY_TEST_SHARD:-} ]]; then
      echo "$MATMUL_STUDY_TEST_SHARD $CUDA_VISIBLE_DEVICES" >> "$FAKE_LOG"
      [[ ${MATMUL_STUDY_TEST_SHARD%/*} == "$SLOW_PART" ]] && sleep 30
      echo "...."; echo "4 passed, 96 deselected in 0.10s"
    else
      echo "outside $CUDA_VISIBLE_DEVICES" >> "$FAKE_LOG"; echo "3 passed, 97 deselected in 0.20s (0:00:00)"
    fi ;;
  *"-c"*) echo fake-commit ;;
  *) exit 0 ;;
esac
"""
FAKE_SMI = """#!/usr/bin/env bash
[[ $1 == -L ]] && { echo "GPU 0: fake"; echo "GPU 1: fake"; exit 0; }
echo "name"; echo "fake"
"""

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None
                                or shutil.which("xargs") is None, reason="needs bash, timeout and xargs")


def run_tests_stage(tmp_path: Path, processes: int, parts: int, timeout_s: int, slow_part: int = 0):
    """The script's tests stage with the stand-ins; (its exit status, its summary log, the parts the stand-in
    pytest was started on, in order)."""
    bin_dir, wheels, out = tmp_path / "bin", tmp_path / "wheels", tmp_path / "out"
    for folder in (bin_dir, wheels, out):
        folder.mkdir()
    (wheels / "stand-in.whl").touch()
    for name, text in (("python3", FAKE_PYTHON), ("nvidia-smi", FAKE_SMI)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "started.log"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "OUT": str(out), "WHEELS": str(wheels),
           "TEST_PROCESSES": str(processes), "TEST_PARTS": str(parts), "TEST_TIMEOUT": str(timeout_s),
           "FAKE_LOG": str(log), "SLOW_PART": str(slow_part)}
    done = subprocess.run(["bash", str(REPO / ".ci" / "gpu-check.sh"), "tests"], env=env, capture_output=True,
                          text=True, timeout=120)
    started = log.read_text().splitlines() if log.exists() else []
    return done.returncode, (out / "pytest-gpu.log").read_text(), started


def test_every_part_runs_once_the_processes_taking_them_in_turn(tmp_path):
    status, summary, started = run_tests_stage(tmp_path, processes=4, parts=7, timeout_s=60)
    assert status == 0, summary
    parts = [line.split()[0] for line in started if not line.startswith("outside")]
    assert sorted(parts, key=lambda s: int(s.split("/")[0])) == [f"{i}/7" for i in range(1, 8)]
    assert {line.split()[1] for line in started} == {"0", "1"}  # both GPUs taken
    assert sum("4 passed" in line for line in summary.splitlines()) == 7 and "outside.log: 3 passed" in summary
    assert "not finished" not in summary


def test_a_part_cut_off_and_the_parts_never_started_are_named_for_the_next_call(tmp_path):
    # One process for the parts: part 2 outlasts the deadline, so 3 and 4 never start; the outside tests pass.
    status, summary, started = run_tests_stage(tmp_path, processes=2, parts=4, timeout_s=3, slow_part=2)
    assert status == 1
    assert [line.split()[0] for line in started if not line.startswith("outside")] == ["1/4", "2/4"]
    assert "part003-of-4.log: not started" in summary and "part004-of-4.log: not started" in summary
    assert summary.splitlines()[-1] == "parts not finished (MATMUL_STUDY_TEST_SHARD): 2/4 3/4 4/4"
