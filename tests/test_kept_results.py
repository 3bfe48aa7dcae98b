"""No config change deletes a finished result before its new job has measured one: a result that a run rewrites is
kept (results/.kept/) until its job has written the new one; a rerun that fails or is stopped leaves it there, and
the next start puts it back where it was measured under the current config, or sets it aside to be measured again."""

import json
import os
import shutil

import pytest

from matmul_study.core import results
from matmul_study.core.records import config_hash
from matmul_study.pipeline import kept
from test_workflow import job_counts, snakemake, write_config

RESULT = "results/runs/method~numpy/dtype~float32/block~0_variant~default_m~32_k~32_n~32.json"
CONFIG = {"sizes": [32], "methods": ["numpy"], "dtypes": ["float32"]}


def write_result(workdir, config=CONFIG, path=RESULT, **changes) -> bytes:
    record = {"method": "numpy", "dtype": "float32", "block": 0, "variant": "default", "m": 32, "k": 32, "n": 32,
              "status": "passed", "gflops": 1.0, "env": {"config_hash": config_hash(config)}, **changes}
    results.write_atomic(workdir / path, record)
    return (workdir / path).read_bytes()


def write_record(workdir, params) -> bytes:
    """Snakemake's metadata record of RESULT, as its file persistence writes it."""
    record = kept.snakemake_record(workdir, RESULT)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"params": params}))
    return record.read_bytes()


def rerun_fails(workdir, params="the rerun's params"):
    """What Snakemake does to a rerun that fails: it deletes the result when the job starts, and records the job's
    params."""
    (workdir / RESULT).unlink()
    write_record(workdir, params)


def test_a_result_that_this_run_rewrites_is_kept_with_snakemake_record_of_it(tmp_path):
    write_result(tmp_path)
    record = write_record(tmp_path, "old params")
    assert kept.keep_before_rerun([RESULT, RESULT.replace("32", "48")], tmp_path) == [RESULT]
    copy = kept.kept_copy(RESULT, tmp_path)
    assert copy == tmp_path / "results/.kept/method~numpy/dtype~float32" / copy.name
    assert os.path.samefile(copy, tmp_path / RESULT)  # a hard link: nothing copied
    assert kept.record_copy(copy).read_bytes() == record


def test_a_result_whose_rerun_failed_is_put_back_with_its_record_when_measured_under_the_current_config(tmp_path):
    original = write_result(tmp_path)
    record = write_record(tmp_path, "old params")
    kept.keep_before_rerun([RESULT], tmp_path)
    rerun_fails(tmp_path)
    [line] = kept.restore_kept(CONFIG, tmp_path, argv=["snakemake"])
    assert line.startswith(f"{RESULT}: its job's rerun did not finish; put back the result kept")
    assert line.endswith("measured under the current config: its job is not measured again.")
    assert (tmp_path / RESULT).read_bytes() == original
    # Snakemake's record is the one of the result put back: the rerun's params would make Snakemake measure it again.
    assert kept.snakemake_record(tmp_path, RESULT).read_bytes() == record
    assert not (tmp_path / "results/.kept").exists()


def test_a_result_whose_rerun_failed_is_set_aside_and_measured_again_when_the_config_changed(tmp_path):
    original = write_result(tmp_path)
    write_record(tmp_path, "old params")
    kept.keep_before_rerun([RESULT], tmp_path)
    rerun_fails(tmp_path)
    changed = {**CONFIG, "measurement": {"max_reps": 11}}
    [line] = kept.restore_kept(changed, tmp_path, argv=["snakemake"])
    aside = tmp_path / f"{RESULT}.old-config"
    assert line == (f"{RESULT}: its job's rerun did not finish, and the result kept from before it was measured under "
                    f"config {config_hash(CONFIG)}, not the current {config_hash(changed)}: set aside as {aside.name}, "
                    "the job is measured again.")
    assert not (tmp_path / RESULT).exists() and aside.read_bytes() == original
    assert not (tmp_path / "results/.kept").exists()


@pytest.mark.parametrize("changes, kind", [({"env": {}}, "old-config"), ({"status": "ok"}, "wrong-schema")])
def test_a_kept_result_without_a_config_hash_or_unreadable_is_set_aside(tmp_path, changes, kind):
    write_result(tmp_path, **changes)
    kept.keep_before_rerun([RESULT], tmp_path)
    rerun_fails(tmp_path)
    [line] = kept.restore_kept(CONFIG, tmp_path, argv=["snakemake"])
    assert line.endswith(f"set aside as {(tmp_path / RESULT).name}.{kind}, the job is measured again.")
    assert not (tmp_path / RESULT).exists()


def test_the_kept_copy_of_a_result_written_again_is_dropped_and_never_put_back(tmp_path):
    write_result(tmp_path)
    kept.keep_before_rerun([RESULT], tmp_path)
    new = write_result(tmp_path, gflops=2.0)  # the job's new result, renamed into place
    assert kept.kept_copy(RESULT, tmp_path).exists()
    kept.drop_settled(tmp_path)
    assert not (tmp_path / "results/.kept").exists() and (tmp_path / RESULT).read_bytes() == new
    # A result deleted after that (to be measured again) is not put back.
    (tmp_path / RESULT).unlink()
    assert kept.restore_kept(CONFIG, tmp_path, argv=["snakemake"]) == [] and not (tmp_path / RESULT).exists()


def test_a_result_whose_rerun_failed_stays_kept_when_the_run_ends(tmp_path):
    write_result(tmp_path)
    kept.keep_before_rerun([RESULT], tmp_path)
    rerun_fails(tmp_path)
    kept.drop_settled(tmp_path)
    assert kept.kept_copy(RESULT, tmp_path).exists()


def test_nothing_is_put_back_while_a_run_is_at_work_here_or_in_a_job_an_executor_spawned(tmp_path, monkeypatch):
    from matmul_study.pipeline import processes

    write_result(tmp_path)
    kept.keep_before_rerun([RESULT], tmp_path)
    rerun_fails(tmp_path)
    assert kept.restore_kept(CONFIG, tmp_path, argv=["snakemake", "--mode", "remote"]) == []
    (tmp_path / ".snakemake/locks").mkdir(parents=True)
    (tmp_path / ".snakemake/locks/0.output.lock").touch()
    monkeypatch.setattr(processes, "running_here", lambda workdir: [12345])
    assert kept.restore_kept(CONFIG, tmp_path, argv=["snakemake"]) == []
    assert not (tmp_path / RESULT).exists() and kept.kept_copy(RESULT, tmp_path).exists()
    monkeypatch.setattr(processes, "running_here", lambda workdir: [])  # its locks are stale
    assert len(kept.restore_kept(CONFIG, tmp_path, argv=["snakemake"])) == 1 and (tmp_path / RESULT).exists()


# --- Through Snakemake: one numpy job, its result the only target ----------------------------------------------

STUDY = {**CONFIG, "measurement": {"warmup": 1, "min_reps": 3, "max_reps": 10, "min_time_s": 0.01, "max_time_s": 0.1,
                                   "cpu_processes": 1}}
CHANGED = {**STUDY, "measurement": {**STUDY["measurement"], "max_reps": 11}}


def run(workdir):
    return snakemake(workdir, "--cores", "1", RESULT, timeout=300)


def copy(source, tmp_path):
    workdir = tmp_path / "study"
    shutil.copytree(source, workdir, symlinks=True)
    return workdir


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("finished")
    write_config(workdir, STUDY)
    out = run(workdir)
    assert out.returncode == 0, out.stderr[-3000:]
    return workdir


@pytest.fixture(scope="module")
def failed_rerun(finished, tmp_path_factory):
    """The finished study, its measurement changed, rerun: the job measures, then fails to write (a folder where it
    writes its record first), after Snakemake deleted the result."""
    workdir = tmp_path_factory.mktemp("failed") / "study"
    shutil.copytree(finished, workdir, symlinks=True)
    write_config(workdir, CHANGED)
    blocked = (workdir / RESULT).with_name(f".{(workdir / RESULT).name}.job.tmp")
    blocked.mkdir()
    out = run(workdir)
    assert out.returncode != 0 and "Is a directory" in out.stderr, out.stderr[-3000:]
    blocked.rmdir()
    return workdir


def test_a_rerun_that_fails_leaves_the_finished_result_kept(finished, failed_rerun):
    assert not (failed_rerun / RESULT).exists()
    assert kept.kept_copy(RESULT, failed_rerun).read_bytes() == (finished / RESULT).read_bytes()


def test_after_a_failed_rerun_the_config_changed_back_puts_the_result_back_and_measures_nothing(
        finished, failed_rerun, tmp_path):
    workdir = copy(failed_rerun, tmp_path)
    write_config(workdir, STUDY)
    out = run(workdir)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{RESULT}: its job's rerun did not finish; put back the result kept" in out.stderr
    assert "Nothing to be done" in out.stdout + out.stderr
    assert (workdir / RESULT).read_bytes() == (finished / RESULT).read_bytes()
    assert not (workdir / "results/.kept").exists()


def test_after_a_failed_rerun_the_result_of_the_old_config_is_set_aside_and_measured_again(
        finished, failed_rerun, tmp_path):
    workdir = copy(failed_rerun, tmp_path)
    out = run(workdir)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"set aside as {(workdir / RESULT).name}.old-config, the job is measured again." in out.stderr
    assert job_counts(out.stdout + out.stderr)["benchmark_cpu"] == 1
    old = json.loads((finished / RESULT).read_text())["env"]["config_hash"]
    assert json.loads((workdir / RESULT).read_text())["env"]["config_hash"] not in (old, None)
    assert (workdir / f"{RESULT}.old-config").read_bytes() == (finished / RESULT).read_bytes()
    assert not (workdir / "results/.kept").exists()


def test_a_rerun_that_finishes_replaces_the_result_and_keeps_no_copy(finished, tmp_path):
    workdir = copy(finished, tmp_path)
    write_config(workdir, CHANGED)
    out = run(workdir)
    assert out.returncode == 0, out.stderr[-3000:]
    assert job_counts(out.stdout + out.stderr)["benchmark_cpu"] == 1
    assert json.loads((workdir / RESULT).read_text())["measured_config"]["measurement"]["max_reps"] == 11
    assert not (workdir / "results/.kept").exists()
