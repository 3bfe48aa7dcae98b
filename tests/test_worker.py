"""The measurement worker per GPU slot (matmul_study/pipeline/worker.py), on the CPU: its protocol with a fake runner
(tests/worker_fakes.py) in place of run_job, its faults and lifetime, and the config keys that turn it on."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from polling import wait_until

from matmul_study.core.records import config_hash, measured_settings
from matmul_study.pipeline import processes, worker
from matmul_study.pipeline.config import ConfigError, validate

TESTS = Path(__file__).resolve().parent
FAKE = "worker_fakes:runner"


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not: a worker is not the test's child, and init may be slow to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.fixture
def workers(tmp_path, monkeypatch):
    """A slot's folder and a `submit` that sends a fake job there; every worker it met is killed at the end."""
    # the workers import worker_fakes, and keep the path that holds the GPU packages where one does
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
    pids = set()

    class Workers:
        slot = worker.Slot(tmp_path / "workers", "gpu0")

        def submit(self, fake=None, slot=None, idle_s=30.0, **request):
            reply = worker.submit(slot or self.slot, {"protocol": worker.PROTOCOL, "fake": fake or {}, **request},
                                  runner=FAKE, idle_s=idle_s)
            pids.add(reply.pid)
            return reply

        def remember(self, pid):
            pids.add(pid)

    yield Workers()
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_job_round_trip_gives_the_runners_record_and_output(workers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reply = workers.submit({"print": "compiling kernel"})
    assert reply.record["served_by"] == reply.pid != os.getpid()
    assert reply.record["cwd"] == str(tmp_path)  # the job runs in the client's working directory
    assert reply.jobs_before == 0 and reply.start_s > 0  # this job started the worker
    assert reply.output == "compiling kernel\n"
    assert workers.slot.socket_path.exists() and alive(reply.pid)


def test_the_jobs_of_a_slot_reuse_its_worker(workers):
    first, second, third = (workers.submit() for _ in range(3))
    assert first.pid == second.pid == third.pid
    assert [first.jobs_before, second.jobs_before, third.jobs_before] == [0, 1, 2]
    assert second.start_s == 0.0 and third.start_s == 0.0


def test_two_slots_have_two_workers(workers):
    other = worker.Slot(workers.slot.directory, "gpu1")
    assert workers.submit().pid != workers.submit(slot=other).pid


def test_a_worker_never_runs_two_jobs_at_once(workers):
    workers.submit()  # started, so that both jobs below find it
    replies = []

    def send():
        replies.append(workers.submit({"sleep": 0.3}))

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(replies) == 3 and len({r.pid for r in replies}) == 1
    spans = sorted((r.record["started"], r.record["finished"]) for r in replies)
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:])), spans
    assert sorted(r.jobs_before for r in replies) == [1, 2, 3]


@pytest.mark.parametrize("how", ["SIGKILL", "abort"])
def test_a_worker_that_dies_mid_job_fails_that_job_alone(workers, tmp_path, how):
    first = workers.submit()
    started = tmp_path / "started"
    fake = {"started": str(started), "sleep": 30} if how == "SIGKILL" else {"abort": True}
    if how == "SIGKILL":
        threading.Thread(target=lambda: wait_until(started.exists) and os.kill(first.pid, signal.SIGKILL),
                         daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(worker.WorkerDied) as died:
        workers.submit(fake)
    assert time.monotonic() - t0 < 10
    message = str(died.value)
    assert f"GPU slot gpu0 (pid {first.pid}) ended while running this job" in message
    assert "this job failed, the next one starts a fresh worker" in message and str(workers.slot.log_path) in message
    assert wait_until(lambda: not alive(first.pid))
    after = workers.submit()
    assert after.pid != first.pid and after.jobs_before == 0 and after.start_s > 0


def test_a_job_stopped_while_its_worker_measures_it_takes_the_worker_with_it(workers, tmp_path):
    started = tmp_path / "started"
    # The client takes Ctrl-C as a terminal's job does, whatever this process's handling of it left to its children.
    client = f"""
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
from pathlib import Path
from matmul_study.pipeline import worker
slot = worker.Slot(Path({str(workers.slot.directory)!r}), "gpu0")
worker.submit(slot, {{"protocol": worker.PROTOCOL, "fake": {{"started": {str(started)!r}, "sleep": 60}}}},
              runner={FAKE!r})
"""
    job = subprocess.Popen([sys.executable, "-c", client], stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(started.exists, timeout_s=20)
        pid = int(started.read_text())
        workers.remember(pid)
        job.send_signal(signal.SIGINT)  # as Ctrl-C, or the JobStopped that SIGTERM raises in a job
        assert job.wait(timeout=30) != 0 and "KeyboardInterrupt" in job.stderr.read()
    finally:
        job.kill()
    # The GPU is free at once: the worker was killed, not left measuring for nobody.
    assert wait_until(lambda: not alive(pid))


def test_a_job_that_raises_fails_with_its_error_and_the_next_gets_a_fresh_worker(workers):
    first = workers.submit()
    with pytest.raises(worker.WorkerJobError) as raised:
        workers.submit({"raise": "illegal memory access"})
    assert str(raised.value).startswith("RuntimeError: illegal memory access (in the measurement worker pid "
                                        f"{first.pid} of GPU slot gpu0)")
    assert "Traceback" in raised.value.remote_traceback and "illegal memory access" in raised.value.output
    # A CUDA error can leave the context unusable: that worker left, the next job starts another.
    assert wait_until(lambda: not alive(first.pid))
    after = workers.submit()
    assert after.pid != first.pid and after.jobs_before == 0


def test_an_idle_worker_exits_and_the_next_job_starts_another(workers):
    first = workers.submit(idle_s=0.3)
    assert wait_until(lambda: not alive(first.pid))
    assert not workers.slot.socket_path.exists()  # it removed its socket before leaving
    assert "exits: idle for 0.3 s" in workers.slot.log_path.read_text()
    second = workers.submit(idle_s=0.3)
    assert second.pid != first.pid and second.jobs_before == 0


def test_a_stale_socket_is_replaced(workers):
    workers.slot.directory.mkdir(parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(workers.slot.socket_path))  # bound, never listening, closed: as a dead worker leaves it
    stale.close()
    assert workers.slot.socket_path.exists()
    first = workers.submit()
    assert first.jobs_before == 0
    os.kill(first.pid, signal.SIGKILL)  # killed while idle: its socket stays behind
    assert wait_until(lambda: not alive(first.pid)) and workers.slot.socket_path.exists()
    second = workers.submit()
    assert second.pid != first.pid and second.jobs_before == 0


def test_a_worker_exits_when_its_study_ends(workers):
    study = subprocess.Popen(["sleep", "60"])  # stands for the study's Snakemake
    try:
        slot = worker.Slot(workers.slot.directory, "gpu0", (study.pid, processes.start_time(study.pid)))
        reply = workers.submit(slot=slot)
        assert alive(reply.pid)
        # Another study's jobs of the same slot never reach this worker.
        assert workers.submit().pid != reply.pid
    finally:
        study.kill()
        study.wait()
    assert wait_until(lambda: not alive(reply.pid), timeout_s=worker.POLL_S + 4)
    assert "exits: its study's Snakemake is gone" in workers.slot.log_path.read_text()


def test_a_worker_that_cannot_start_says_why(workers, monkeypatch):
    monkeypatch.setattr(worker, "START_TIMEOUT_S", 20)
    with pytest.raises(worker.WorkerStartError) as failed:
        worker.submit(workers.slot, {"protocol": worker.PROTOCOL}, runner="no_such_module:runner")
    message = str(failed.value)
    assert "the measurement worker of GPU slot gpu0 exited during its start" in message
    assert "No module named 'no_such_module'" in message  # the log's last lines


def test_a_long_folder_gets_a_short_socket_path(workers, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    slot = worker.Slot(deep, "gpu0")
    assert len(os.fsencode(slot.socket_path)) <= worker.MAX_SOCKET_PATH
    reply = workers.submit(slot=slot)
    assert reply.jobs_before == 0 and (deep / "gpu0.log").exists()


def test_run_job_in_worker_returns_the_record_with_the_worker_and_the_clients_waits(workers, tmp_path, monkeypatch):
    from matmul_study.measure import environment
    from matmul_study.measure.runner import Job

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(environment, "process_age_s", lambda: 0.25)  # this process's start-up
    # A scheduler's device: the job holds it without a lock, and its worker is started with that device alone.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    job = Job("naive", "float32", 16, 64, 64, 64)
    config = validate({"sizes": [64], "methods": ["naive"], "dtypes": ["float32"]})
    records = [worker.run_job_in_worker(job, config, "results/runs/.x.json.job.tmp", cubin="build/x.cubin",
                                        inputs_dir="results/.inputs", runner=FAKE) for _ in range(2)]
    for record in records:
        workers.remember(record["worker"]["pid"])
    first, second = records
    assert first["cuda_visible_devices"] == "3" and first["cwd"] == str(tmp_path)
    assert (tmp_path / ".snakemake" / "matmul_study_workers" / "gpu3.log").exists()
    assert first["job"] == {"method": "naive", "dtype": "float32", "block": 16, "m": 64, "k": 64, "n": 64,
                            "variant": "default"}
    # Paths travel absolute: the worker may have been started from elsewhere.
    assert first["output"] == str(tmp_path / "results/runs/.x.json.job.tmp")
    assert first["cubin"] == str(tmp_path / "build/x.cubin")
    assert first["inputs_dir"] == str(tmp_path / "results/.inputs")
    assert first["worker"]["pid"] == second["worker"]["pid"] == first["served_by"]
    assert (first["worker"]["jobs_before"], second["worker"]["jobs_before"]) == (0, 1)
    assert first["worker"]["start_s"] > 0 and second["worker"]["start_s"] == 0.0
    # The start-up is this process's and the worker's start, not the worker's own age (the fake's 123 s).
    assert first["overhead"]["startup_s"] == pytest.approx(0.25 + first["worker"]["start_s"])
    assert second["overhead"]["startup_s"] == 0.25
    for record in records:
        assert record["overhead"]["slot_wait_s"] >= 0.001 and record["overhead"]["job_s"] == 0.01


def test_run_job_in_worker_echoes_a_failed_jobs_output_into_its_log(workers, tmp_path, monkeypatch, capsys):
    from matmul_study.measure.runner import Job

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    config = validate({"sizes": [64], "methods": ["naive"], "dtypes": ["float32"]})
    config["fake"] = {"print": "before the fault", "raise": "an illegal memory access was encountered"}
    with pytest.raises(worker.WorkerJobError, match="RuntimeError: an illegal memory access was encountered"):
        worker.run_job_in_worker(Job("naive", "float32", 16, 64, 64, 64), config, "out.json", runner=FAKE)
    printed = capsys.readouterr().out  # the job's stdout: its log under Snakemake
    assert "before the fault" in printed and "Traceback" in printed


# --- When a job uses it, and its config keys ---------------------------------------------------------------------

def test_only_gpu_jobs_with_the_key_use_a_worker(monkeypatch, capsys):
    monkeypatch.setattr(processes, "snakemake_ancestor", lambda pid=None, levels=4: 4242)
    monkeypatch.setattr(processes, "command_line", lambda pid: ["python", "-m", "snakemake", "--cores", "4"])
    on = validate({"measurement": {"worker": True}})
    assert worker.use_worker(on, on_gpu=True)
    assert not worker.use_worker(on, on_gpu=False)
    assert not worker.use_worker(validate({"measurement": {"worker": False}}), on_gpu=True)
    # An executor's job step (Slurm's) runs this job alone: a worker would end with it.
    monkeypatch.setattr(processes, "command_line",
                        lambda pid: ["python", "-m", "snakemake", "--target-jobs", "benchmark_gpu:m=1"])
    assert not worker.use_worker(on, on_gpu=True)
    assert "measurement.worker: not used here" in capsys.readouterr().out  # the job's log says why


def test_the_worker_keys_default_on_and_are_checked():
    measurement = validate({})["measurement"]
    assert measurement["worker"] is True and measurement["worker_idle_s"] == 60
    assert validate({"measurement": {"worker": "false"}})["measurement"]["worker"] is False  # --config spelling


@pytest.mark.parametrize("section, key, value, allowed", [
    ({"worker": "sometimes"}, "measurement.worker", '"sometimes"', "allowed: true or false"),
    ({"worker": 1}, "measurement.worker", "1", "allowed: true or false"),
    ({"worker_idle_s": 0}, "measurement.worker_idle_s", "0", "allowed: a number >0"),
    ({"worker_idle_s": "long"}, "measurement.worker_idle_s", '"long"', "allowed: a number >0"),
])
def test_bad_worker_values_name_the_key_the_value_and_what_is_allowed(section, key, value, allowed):
    with pytest.raises(ConfigError) as err:
        validate({"measurement": section})
    message = str(err.value)
    assert f"config key '{key}': value {value} is not allowed; {allowed}" in message, message


def test_the_worker_keys_change_neither_the_config_hash_nor_the_rules_params():
    off = validate({})
    on = validate({"measurement": {"worker": True, "worker_idle_s": 5}})
    assert config_hash(on) == config_hash(off)
    assert config_hash(validate({"measurement": {"seed": 1}})) != config_hash(off)
    assert measured_settings(on["measurement"]) == measured_settings(off["measurement"])
    assert "worker" not in measured_settings(on["measurement"])
    # What the study measured with before the keys existed hashes as it did.
    before = {**off, "measurement": {k: v for k, v in off["measurement"].items() if not k.startswith("worker")}}
    assert config_hash(before) == config_hash(off)


# --- On a real device ----------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_jobs_measured_by_one_worker_pass_and_share_its_process(workers, make_config, tmp_path, monkeypatch):
    pytest.importorskip("pycuda.driver")
    from matmul_study.launch import kernels
    from matmul_study.measure.gpu_device import GpuUnavailable, device_arch
    from matmul_study.measure.runner import Job

    try:
        arch = device_arch()
    except GpuUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.chdir(tmp_path)
    cubin = tmp_path / "naive.cubin"
    kernels.compile_cubin("naive", "float32", 16, arch, str(cubin))
    config = make_config(measurement={"warmup": 1, "min_reps": 2, "max_reps": 3, "min_time_s": 0.0001,
                                      "max_time_s": 0.5, "worker": True})
    records = []
    for shape in ((100, 37, 250), (257, 511, 129)):
        record = worker.run_job_in_worker(Job("naive", "float32", 16, *shape), config, str(tmp_path / "r.json"),
                                          cubin=str(cubin))
        workers.remember(record["worker"]["pid"])
        records.append(record)
    assert [r["status"] for r in records] == ["passed", "passed"]
    assert records[0]["worker"]["pid"] == records[1]["worker"]["pid"] != os.getpid()
    assert [r["worker"]["jobs_before"] for r in records] == [0, 1]
    assert all(r["env"]["device_kind"] == "gpu" for r in records)
