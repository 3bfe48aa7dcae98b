"""Result files are checked, not trusted: at start-up a bad one (cut short, wrong fields, another job's) is set aside
and its job measured again; collate names a file that still cannot be read; a deleted table is rebuilt; a study whose
every job failed still gets its tables and report, and ends with one line."""

import json
import re
import shutil

import pandas as pd
import pytest

from matmul_study.analysis import collate
from matmul_study.core import results
from matmul_study.pipeline import result_check
from test_runner_collate import record
from test_workflow import CPU_STUDY, job_counts, snakemake, write_config

JOB = {"method": "numpy", "dtype": "float32", "block": 0, "variant": "default", "m": 32, "k": 32, "n": 32}
NAME = "block~0_variant~default_m~32_k~32_n~32.json"


def good_record(**changes):
    return {**record("numpy", "float32", 0, 32, 10.0), "variant": "default", "schema_version": 1, **changes}


def write(tmp_path, content) -> str:
    path = tmp_path / NAME
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def test_a_whole_result_of_its_own_job_is_kept(tmp_path):
    path = write(tmp_path, good_record())
    assert result_check.set_aside_bad_results([(path, JOB)]) == []
    assert (tmp_path / NAME).exists()


def test_a_result_without_a_variant_is_the_default_build_and_kept(tmp_path):
    rec = good_record()
    del rec["variant"]
    assert result_check.set_aside_bad_results([(write(tmp_path, rec), JOB)]) == []


def test_another_jobs_result_is_set_aside_as_foreign(tmp_path):
    path = write(tmp_path, good_record(dtype="float64", m=48))
    [line] = result_check.set_aside_bad_results([(path, JOB)])
    assert line.startswith(f"{path}: the result of another job (dtype 'float64', not 'float32'; m 48, not 32)")
    assert line.endswith(f"set aside as {NAME}.foreign, the job is measured again.")
    assert not (tmp_path / NAME).exists() and (tmp_path / f"{NAME}.foreign").exists()


@pytest.mark.parametrize("content", [json.dumps(good_record())[:100], "", "[1, 2]", "\xff"])
def test_a_cut_short_or_unreadable_result_is_set_aside_as_corrupt(tmp_path, content):
    path = write(tmp_path, content)
    [line] = result_check.set_aside_bad_results([(path, JOB)])
    assert line.startswith(f"{path}: not a valid result file (") and f"{NAME}.corrupt" in line
    assert (tmp_path / f"{NAME}.corrupt").exists() and not (tmp_path / NAME).exists()


@pytest.mark.parametrize("changes, why", [
    ({"gflops": "fast"}, "gflops is 'fast', not a number"),
    ({"m": "32"}, "m is '32', not an integer"),
    ({"status": "ok"}, "status is 'ok', not one of passed, failed"),
    ({"verification": {"passed": "yes"}}, "verification.passed is not true or false"),
])
def test_a_field_of_the_wrong_type_is_set_aside_as_wrong_schema(tmp_path, changes, why):
    path = write(tmp_path, good_record(**changes))
    [line] = result_check.set_aside_bad_results([(path, JOB)])
    assert why in line and f"{NAME}.wrong-schema" in line


def test_a_result_missing_a_key_is_set_aside_as_wrong_schema(tmp_path):
    rec = good_record()
    del rec["status"]
    [line] = result_check.set_aside_bad_results([(write(tmp_path, rec), JOB)])
    assert "(no status)" in line and line.endswith(f"{NAME}.wrong-schema, the job is measured again.")


def test_collate_names_a_file_with_a_wrong_typed_field(tmp_path):
    path = write(tmp_path, good_record(gflops="fast"))
    with pytest.raises(results.ResultFileError, match=rf"^{re.escape(path)}: not a valid result file \(gflops is"):
        collate.load([path])


def test_collate_tables_when_every_job_failed():
    recs = [record("numpy", dtype, 0, size, None, status="failed") for dtype in ("float32", "float64")
            for size in (32, 48)]
    df = collate.tidy(recs)
    assert len(df) == 4 and (df["status"] == "failed").all() and df["gflops"].isna().all()
    assert df["speedup_over_naive"].isna().all() and df["pct_of_cublas"].isna().all()
    for build in collate.SUMMARIES.values():
        assert build(collate.best_variants(df)).empty


def test_every_job_failed_says_so_only_when_none_passed(tmp_path):
    failed = write(tmp_path, good_record(status="failed", gflops=None))
    assert result_check.every_job_failed([failed]).startswith("All 1 jobs failed verification")
    passed = tmp_path / "passed.json"
    passed.write_text(json.dumps(good_record()))
    assert result_check.every_job_failed([failed, passed]) is None
    assert result_check.every_job_failed([failed, tmp_path / "missing.json"]) is None


# --- Through Snakemake, on a small CPU-only study ---------------------------------------------------------------

@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("checked")
    write_config(workdir, {**CPU_STUDY, "sizes": [32, 48]})
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    return workdir


def copy(study, tmp_path):
    workdir = tmp_path / "study"
    shutil.copytree(study, workdir, symlinks=True)
    return workdir


def test_bad_results_are_set_aside_and_measured_again_by_the_plain_command(study, tmp_path):
    workdir = copy(study, tmp_path)
    runs = workdir / "results/runs/method~numpy"
    f32, f64 = runs / "dtype~float32", runs / "dtype~float64"
    shutil.copy(f32 / NAME, f64 / NAME)  # another job's result at this job's path
    truncated = f32 / NAME.replace("32", "48")
    truncated.write_text(truncated.read_text()[:100])
    wrong = f64 / NAME.replace("32", "48")
    wrong.write_text(json.dumps({**json.loads(wrong.read_text()), "gflops": "fast"}))
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if "set aside as" in line]
    assert len(lines) == 3
    assert {p.name.rsplit(".", 1)[1] for p in runs.rglob("*.json.*")} == {"foreign", "corrupt", "wrong-schema"}
    assert job_counts(out.stdout + out.stderr)["benchmark_cpu"] == 3
    df = pd.read_csv(workdir / "results/tables/results.csv")
    assert len(df) == 4 and not df.duplicated(["dtype", "shape"]).any() and (df["status"] == "passed").all()


def test_a_deleted_table_is_rebuilt_by_the_plain_command(study, tmp_path):
    workdir = copy(study, tmp_path)
    (workdir / "results/tables/results.csv").unlink()
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "benchmark_cpu" not in job_counts(out.stdout + out.stderr)
    assert len(pd.read_csv(workdir / "results/tables/results.csv")) == 4


def test_a_study_whose_every_job_failed_writes_its_tables_and_report_and_exits_1_with_one_line(study, tmp_path):
    workdir = copy(study, tmp_path)
    for path in (workdir / "results/runs").rglob("*.json"):
        rec = json.loads(path.read_text())
        rec.update(status="failed", gflops=None, gflops_all_samples=None)
        rec["verification"].update(passed=False, rel_fro_error=0.5)
        path.write_text(json.dumps(rec))
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.rstrip().splitlines()[-1].startswith("All 4 jobs failed verification")
    df = pd.read_csv(workdir / "results/tables/results.csv")
    assert len(df) == 4 and (df["status"] == "failed").all()
    html = (workdir / "report/report.html").read_text()
    assert "Failed or unverified jobs" in html and "4 jobs did not pass verification" in html


def test_a_job_spawned_by_an_executor_leaves_the_files_alone(tmp_path):
    path = write(tmp_path, "{")
    assert result_check.set_aside_bad_results([(path, JOB)], argv=["snakemake", "--mode", "remote"]) == []
    assert (tmp_path / NAME).exists()
