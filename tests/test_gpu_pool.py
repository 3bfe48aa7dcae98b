"""The host's GPU lock pool (matmul_study.measure.gpu_slots), without a GPU: processes holding devices, crashing, waiting,
and a scheduler's CUDA_VISIBLE_DEVICES taking precedence."""

import os
import select
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from matmul_study.measure import gpu_slots as gpu_pool

HOLDER = """
import os, sys
from matmul_study.measure.gpu_slots import acquire_gpu
with acquire_gpu(int(sys.argv[1]), lock_dir=sys.argv[2], timeout_s=float(sys.argv[3])) as index:
    print(index, os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
    if sys.argv[4] == "crash":
        os.kill(os.getpid(), 9)  # dies holding the lock: no finally block, no atexit
    sys.stdin.readline()  # hold until the test says so
"""


SCHEDULER_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "SLURM_JOB_ID")


@pytest.fixture(autouse=True)
def no_scheduler(monkeypatch):
    for name in SCHEDULER_VARS:
        monkeypatch.delenv(name, raising=False)


def child_env(**extra):
    """A job started by Snakemake on a host without a scheduler: no CUDA_VISIBLE_DEVICES."""
    return {**{k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}, **extra}


class Holder:
    """A separate process that takes a GPU from the pool and keeps it until released (or crashes holding it)."""

    def __init__(self, count, lock_dir, timeout_s=5.0, mode="hold", inherit=False, env=None):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(count), str(lock_dir), str(timeout_s), mode],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=None if inherit else env or child_env())
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"holder exited with {self.proc.returncode}: {self.proc.stderr.read()}")
        index, visible = line.split()
        self.index, self.visible = int(index) if index.isdigit() else index, visible

    def release(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=10) == 0, self.proc.stderr.read()


def test_processes_never_share_a_gpu_and_a_third_waits_until_one_is_free(tmp_path):
    first, second = Holder(2, tmp_path), Holder(2, tmp_path)
    try:
        assert {first.index, second.index} == {0, 1}
        # Each job's CUDA sees only its own device.
        assert first.visible == str(first.index) and second.visible == str(second.index)
        with pytest.raises(TimeoutError, match="all 2 GPU"):
            with gpu_pool.acquire_gpu(2, lock_dir=tmp_path, timeout_s=0.5):
                pass
        first.release()
        with gpu_pool.acquire_gpu(2, lock_dir=tmp_path, timeout_s=5) as index:
            assert index == first.index
    finally:
        for holder in (first, second):
            if holder.proc.poll() is None:
                holder.release()


def test_a_waiting_job_gets_the_gpu_as_soon_as_its_holder_ends(tmp_path):
    holder = Holder(1, tmp_path)
    waiter = subprocess.Popen([sys.executable, "-c", HOLDER, "1", str(tmp_path), "30", "hold"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        ready, _, _ = select.select([waiter.stdout], [], [], 1.0)
        assert not ready and waiter.poll() is None  # still waiting: the only GPU is held
        t0 = time.monotonic()
        holder.release()
        assert waiter.stdout.readline().split() == ["0", "0"]
        assert time.monotonic() - t0 < 5
    finally:
        waiter.communicate("\n", timeout=10)
        if holder.proc.poll() is None:
            holder.release()


def test_a_crashed_holder_frees_its_gpu(tmp_path):
    # SIGKILL while holding: nothing in the process runs, the kernel drops the flock with the process.
    crashed = subprocess.run([sys.executable, "-c", HOLDER, "1", str(tmp_path), "5", "crash"], capture_output=True,
                             text=True, env=child_env(), timeout=30)
    assert crashed.returncode == -signal.SIGKILL
    assert crashed.stdout.split() == ["0", "0"]
    assert gpu_pool.holder(0, tmp_path).startswith("pid ")  # the file it left still names it
    with gpu_pool.acquire_gpu(1, lock_dir=tmp_path, timeout_s=1) as index:
        assert index == 0


def test_a_live_holder_is_not_taken_over(tmp_path):
    # The contrast to the crash: the same lock, held by a live process, is not free.
    holder = Holder(1, tmp_path)
    try:
        with pytest.raises(TimeoutError, match=f"pid {holder.proc.pid}"):
            with gpu_pool.acquire_gpu(1, lock_dir=tmp_path, timeout_s=0.5):
                pass
    finally:
        holder.release()


def test_the_lock_is_released_when_the_job_raises(tmp_path):
    with pytest.raises(ValueError):
        with gpu_pool.acquire_gpu(1, lock_dir=tmp_path):
            raise ValueError("the job failed")
    holder = Holder(1, tmp_path, timeout_s=1)
    assert holder.index == 0
    holder.release()


def test_code_inside_a_held_block_keeps_the_jobs_device(tmp_path):
    # Inside the block CUDA_VISIBLE_DEVICES names the job's device, so a second acquire (in the job itself or in a
    # child process it starts) takes it as given instead of locking another GPU.
    with gpu_pool.acquire_gpu(3, lock_dir=tmp_path) as outer:
        with gpu_pool.acquire_gpu(3, lock_dir=tmp_path, timeout_s=0.1) as inner:
            assert inner == outer == 0
        child = Holder(3, tmp_path, timeout_s=0.1, inherit=True)
        child.release()
        assert child.index == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu0.lock"]


def test_cuda_sees_only_the_chosen_device_inside_the_block_and_children_inherit_it(tmp_path):
    holder = Holder(2, tmp_path)  # takes device 0
    try:
        with gpu_pool.acquire_gpu(2, lock_dir=tmp_path) as index:
            assert index == 1
            assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
            assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # CUDA numbers devices as NVML does
            child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"],
                                   capture_output=True, text=True, check=True)
            assert child.stdout.strip() == "1"
        assert "CUDA_VISIBLE_DEVICES" not in os.environ and "CUDA_DEVICE_ORDER" not in os.environ
    finally:
        holder.release()


@pytest.mark.parametrize("visible, slurm_job, expected", [
    ("3", None, 3),
    ("GPU-8f1c2a", None, "GPU-8f1c2a"),
    ("2,0", "1234", 2),  # a Slurm job given two GPUs owns both: the first, no lock
])
def test_a_schedulers_choice_is_used_and_no_lock_is_taken(tmp_path, monkeypatch, visible, slurm_job, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    if slurm_job:
        monkeypatch.setenv("SLURM_JOB_ID", slurm_job)
    assert gpu_pool.visible_device() == expected
    holder = Holder(1, tmp_path)  # the pool's only device is held: the pool would have to wait
    try:
        with gpu_pool.acquire_gpu(1, lock_dir=tmp_path, timeout_s=0.1) as index:
            assert index == expected
            assert os.environ["CUDA_VISIBLE_DEVICES"] == str(expected)  # narrowed to the one this job uses
        assert os.environ["CUDA_VISIBLE_DEVICES"] == visible
    finally:
        holder.release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu0.lock"]  # the holder's; none added


def test_gpus_the_user_listed_outside_a_scheduler_are_shared_through_the_pool(tmp_path):
    # CUDA_VISIBLE_DEVICES=2,GPU-x snakemake --resources gpu=2 ...: every job inherits both; taking the first would
    # put two jobs on one GPU.
    env = child_env(CUDA_VISIBLE_DEVICES="2,GPU-x")
    first, second = Holder(8, tmp_path, env=env), Holder(8, tmp_path, env=env)
    try:
        assert {first.index, second.index} == {2, "GPU-x"}
        assert {first.visible, second.visible} == {"2", "GPU-x"}
        third = subprocess.run([sys.executable, "-c", HOLDER, "8", str(tmp_path), "0.5", "hold"], input="\n",
                               capture_output=True, text=True, env=env, timeout=30)
        assert third.returncode != 0 and "TimeoutError: all 2 GPU" in third.stderr
    finally:
        first.release()
        second.release()


class FakeNvml:
    def __init__(self, count=None):
        self.count = count

    def nvmlInit(self):
        if self.count is None:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self):
        return self.count


@pytest.mark.parametrize("count, expected", [(4, 4), (None, 0)])
def test_the_host_gpu_count_comes_from_nvml(monkeypatch, count, expected):
    monkeypatch.delenv(gpu_pool.HOST_GPUS_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(count))
    assert gpu_pool.host_gpu_count() == expected


def test_a_job_takes_the_count_its_run_announced_for_this_host_without_nvml(monkeypatch):
    # The Snakemake process counts once and says so in the environment its jobs inherit; a job on another host (a
    # cluster node) counts its own.
    monkeypatch.setenv(gpu_pool.HOST_GPUS_ENV, "")  # restored after the test: announcing sets it in os.environ
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(8))
    assert gpu_pool.announce_host_gpus() == 8
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML no longer importable: the count must come from the run
    assert gpu_pool.host_gpu_count() == 8
    monkeypatch.setenv(gpu_pool.HOST_GPUS_ENV, "another-node:8")
    assert gpu_pool.host_gpu_count() == 0  # counted here: no NVML, no GPUs


@pytest.mark.parametrize("visible", ["", " ", "-1"])
def test_a_scheduler_that_gave_no_gpu_is_an_error_not_a_silent_fallback(monkeypatch, tmp_path, visible):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    with pytest.raises(gpu_pool.GpuPoolError, match="names no GPU"):
        with gpu_pool.acquire_gpu(4, lock_dir=tmp_path):
            pass
    assert not list(tmp_path.iterdir())


def test_no_scheduler_means_no_visible_device():
    assert gpu_pool.visible_device() is None


def test_the_lock_folder_comes_from_the_environment_and_is_created(tmp_path, monkeypatch):
    folder = tmp_path / "locks" / "here"
    monkeypatch.setenv(gpu_pool.LOCK_DIR_ENV, str(folder))
    with gpu_pool.acquire_gpu(1) as index:
        assert index == 0
        assert (folder / "gpu0.lock").is_file()
        assert gpu_pool.holder(0) == gpu_pool.holder(0, folder)
        assert gpu_pool.holder(0).startswith(f"pid {os.getpid()} on ")
    assert folder.stat().st_mode & 0o1777 == 0o1777  # every user's jobs can take the host's GPUs


def test_a_pool_of_no_gpus_is_an_error(tmp_path):
    with pytest.raises(gpu_pool.GpuPoolError):
        with gpu_pool.acquire_gpu(0, lock_dir=tmp_path):
            pass


def test_a_job_holds_a_gpu_only_when_it_runs_on_one(monkeypatch, tmp_path):
    monkeypatch.setenv("MATMUL_STUDY_GPU_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with gpu_pool.job_slot(False) as index:
        assert index is None and "CUDA_VISIBLE_DEVICES" not in os.environ
    # Two GPUs on this host (as NVML would say): a GPU job holds the first free one, GPU 0, for its lifetime.
    monkeypatch.setattr(gpu_pool, "host_gpu_count", lambda: 2)
    with gpu_pool.job_slot(True) as first:
        assert first == 0 and os.environ["CUDA_VISIBLE_DEVICES"] == "0"
        assert gpu_pool.holder(0, tmp_path) is not None
    assert "CUDA_VISIBLE_DEVICES" not in os.environ  # restored when the job ends
    # No NVML and no scheduler: CUDA's device 0, as before, with no lock taken.
    monkeypatch.setattr(gpu_pool, "host_gpu_count", lambda: 0)
    with gpu_pool.job_slot(True) as index:
        assert index is None and "CUDA_VISIBLE_DEVICES" not in os.environ


def _fake_ceilings(config, size, index, known=None):
    from matmul_study.core.records import CALIBRATION_COLUMNS as COLUMNS

    import pandas as pd
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    if known is not None and f"uuid-{gpu}" in set(known["device_uuid"]):  # the study's job measured this GPU
        return known[known["device_uuid"] == f"uuid-{gpu}"].assign(device_index=index)
    return pd.DataFrame([("GPU X", f"uuid-{gpu}", index, "float32", 100.0 + int(gpu), "GFLOP/s", "fake")],
                        columns=COLUMNS)


def test_calibration_holds_each_gpu_of_the_host_in_turn(monkeypatch, tmp_path):
    from matmul_study.analysis.collate import spread as ceiling_spread
    from matmul_study.measure import calibrate

    monkeypatch.setenv("MATMUL_STUDY_GPU_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_pool, "host_gpu_count", lambda: 3)
    monkeypatch.setattr(calibrate, "calibrate_device", _fake_ceilings)
    monkeypatch.setattr(calibrate, "in_fresh_processes", lambda f, args: [f(*a) for a in args])
    table = calibrate.calibrate({}, size=64)
    # one row set per GPU, each measured while CUDA_VISIBLE_DEVICES named that GPU alone
    assert table["device_uuid"].tolist() == ["uuid-0", "uuid-1", "uuid-2"]
    assert table["device_index"].tolist() == [0, 1, 2]
    spread = ceiling_spread(table)
    assert len(spread) == 1 and spread.iloc[0]["gpus"] == 3
    assert spread.iloc[0]["spread"] == pytest.approx(102 / 100 - 1)
    # Ceilings the study's own jobs measured reach the GPU they were measured on, and only that one.
    from matmul_study.core.records import CALIBRATION_COLUMNS

    known = pd.DataFrame([("GPU X", "uuid-1", 1, "float32", 555.0, "GFLOP/s", "job")], columns=CALIBRATION_COLUMNS)
    table = calibrate.calibrate({}, size=64, known=known)
    assert table["value"].tolist() == [100.0, 555.0, 102.0]


def test_calibration_of_a_scheduler_gpu_or_a_single_gpu_takes_that_one(monkeypatch, tmp_path):
    from matmul_study.analysis.collate import spread as ceiling_spread
    from matmul_study.measure import calibrate

    monkeypatch.setenv("MATMUL_STUDY_GPU_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(calibrate, "calibrate_device", _fake_ceilings)
    monkeypatch.setattr(calibrate, "in_fresh_processes", lambda f, args: pytest.fail("one GPU needs no processes"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")  # Slurm gave this job GPU 5
    assert calibrate.calibrate({}, size=64)["device_uuid"].tolist() == ["uuid-5"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(gpu_pool, "host_gpu_count", lambda: 1)
    assert calibrate.calibrate({}, size=64)["device_index"].tolist() == [0]


def test_a_spread_needs_two_gpus_of_one_model():
    from matmul_study.core.records import CALIBRATION_COLUMNS as COLUMNS
    from matmul_study.analysis.collate import spread

    import pandas as pd
    one_each = pd.DataFrame([("GPU X", "u0", 0, "float32", 100.0, "GFLOP/s", ""),
                             ("GPU Y", "u1", 1, "float32", 90.0, "GFLOP/s", "")], columns=COLUMNS)
    assert spread(one_each).empty
    older = one_each.drop(columns=["device_uuid", "device_index"])  # tables from before per-GPU calibration
    assert spread(older).empty


def _job(uuid, start, end, block=16):
    return {"method": "tiled", "dtype": "float32", "block": block, "m": 64, "k": 64, "n": 64, "env_device_uuid": uuid,
            "env_device_index": int(uuid[-1]), "overhead_started_utc": f"2026-11-22T10:00:{start:06.3f}+00:00",
            "overhead_finished_utc": f"2026-11-22T10:00:{end:06.3f}+00:00"}


def test_jobs_that_shared_a_gpu_are_found_from_their_timestamps(tmp_path):
    import pandas as pd

    # GPU 0 runs three jobs back to back; GPU 1 runs one at the same time as GPU 0's second
    apart = pd.DataFrame([_job("GPU-0", 0, 5), _job("GPU-0", 5.5, 9), _job("GPU-0", 9, 12), _job("GPU-1", 6, 8)])
    assert gpu_pool.shared_gpus(apart).empty
    usage = gpu_pool.gpu_usage(apart).set_index("device_uuid")
    assert usage.loc["GPU-0", "jobs"] == 3 and usage.loc["GPU-0", "held_s"] == pytest.approx(11.5)
    assert usage.loc["GPU-1", "device_index"] == 1
    shared = pd.concat([apart, pd.DataFrame([_job("GPU-1", 7.25, 10, block=32)])])
    (row,) = gpu_pool.shared_gpus(shared).itertuples()
    assert row.device_uuid == "GPU-1" and row.overlap_s == pytest.approx(0.75)
    shared.to_csv(tmp_path / "results.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "matmul_study", "gpus", str(tmp_path / "results.csv")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "jobs that shared a GPU: 1" in out.stdout


def test_the_cublas_ceiling_is_its_burst_rate_like_the_jobs():
    import math
    from types import SimpleNamespace

    from matmul_study.measure.calibrate import cublas_ceiling

    passed = [SimpleNamespace(passed=True)]
    burst = {"median_s": 1e-3, "samples_kept": 40, "samples_total": 100, "note": ""}
    run = SimpleNamespace(times=[1e-3] * 40 + [1.2e-3] * 60, verifications=passed, rates={"burst": burst})
    value, unit, detail = cublas_ceiling(run, 1000)
    # The burst rate (2 TFLOP/s at 1 ms), not the all-sample median (1.2 ms), which the throttled samples set.
    assert value == pytest.approx(2000.0) and unit == "GFLOP/s" and "burst rate" in detail and "40 of 100" in detail
    no_burst = SimpleNamespace(times=run.times, verifications=passed,
                               rates={"burst": {"median_s": None, "note": "only 2 of 100 samples ran at full clock"}})
    value, _, detail = cublas_ceiling(no_burst, 1000)
    assert value == pytest.approx(2e9 / 1.2e-3 / 1e9) and "median of all 100" in detail and "only 2 of 100" in detail
    failed = SimpleNamespace(times=run.times, verifications=[SimpleNamespace(passed=False)], rates={})
    assert math.isnan(cublas_ceiling(failed, 1000)[0])
