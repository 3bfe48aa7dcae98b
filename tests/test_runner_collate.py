"""A CPU job end to end (result file contents), and collation into the tidy and summary tables."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from matmul_study.analysis import collate

from matmul_study.core import results
from matmul_study.measure.runner import Job, run_job

FAST = {"warmup": 1, "min_reps": 3, "max_reps": 5, "min_time_s": 0.001, "max_time_s": 1}


def test_numpy_job_writes_a_complete_verified_result(make_config, tmp_path):
    cfg = make_config(measurement=FAST)
    out = tmp_path / "r.json"
    rec = run_job(Job("numpy", "float32", 0, 17, 33, 65), cfg, str(out))
    on_disk = json.loads(out.read_text())
    assert on_disk["status"] == "passed" and rec["status"] == "passed"
    assert (on_disk["m"], on_disk["k"], on_disk["n"]) == (17, 33, 65)
    t, cpu = on_disk["timing"], on_disk["cpu"]
    # Timed in 3 fresh processes (the default), each stopping between min_reps and max_reps.
    assert cpu["processes"] == 3 and len(cpu["medians_s"]) == 3
    assert 3 * 3 <= t["reps"] <= 3 * 5 and len(t["times_s"]) == t["reps"]
    assert t["min_s"] <= t["median_s"] <= t["max_s"] and t["iqr_s"] >= 0
    assert on_disk["gflops"] == pytest.approx(2 * 17 * 33 * 65 / np.median(cpu["medians_s"]) / 1e9)
    assert cpu["spread"] == pytest.approx((max(cpu["medians_s"]) - min(cpu["medians_s"])) / np.median(cpu["medians_s"]))
    v = on_disk["verification"]
    assert v["passed"] and v["scope"] == "full" and v["tolerance"] == 1e-4 and v["rel_fro_error"] < 1e-5
    env = on_disk["env"]
    for key in ("cpu_model", "host", "numpy", "git_commit", "config_hash", "seed", "timestamp", "device_name"):
        assert env[key] not in (None, ""), key
    assert env["seed"] == cfg["measurement"]["seed"]
    assert not list(tmp_path.glob("*.tmp"))  # the atomic write left no temp file


def test_a_result_records_its_identity_and_passes_the_start_up_check(make_config, tmp_path):
    from matmul_study.core.records import JOB_KEYS, config_hash
    from matmul_study.pipeline.result_check import check

    cfg = make_config(measurement=FAST)
    out = tmp_path / "r.json"
    job = Job("numpy", "float64", 0, 17, 33, 65)
    run_job(job, cfg, str(out))
    on_disk = results.read(out)
    identity = {key: getattr(job, key) for key in JOB_KEYS}
    assert {key: on_disk[key] for key in JOB_KEYS} == identity
    assert on_disk["env"]["config_hash"] == config_hash(cfg)
    assert on_disk["schema_version"] == results.SCHEMA_VERSION
    check(out, identity)  # its own job's: kept


def test_numpy_job_granted_every_core_uses_the_configured_blas_threads(make_config, tmp_path):
    cfg = make_config(measurement=FAST, threads=1)
    rec = run_job(Job("numpy", "float64", 0, 64, 64, 64), cfg, str(tmp_path / "r.json"), threads=8)
    assert rec["threads"] == 1 and rec["status"] == "passed"


def test_atomic_write_keeps_the_old_file_when_serialisation_fails(tmp_path):
    path = tmp_path / "x.json"
    results.write_atomic(path, {"a": 1})
    with pytest.raises(TypeError):
        results.write_atomic(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_non_finite_numbers_are_written_as_valid_json(tmp_path):
    path = tmp_path / "x.json"
    results.write_atomic(path, {"err": float("inf"), "nan": float("nan")})
    assert json.loads(path.read_text()) == {"err": "inf", "nan": None}


def record(method, dtype, block, size, gflops, status="passed", device="GPU X"):
    m = k = n = size
    seconds = 2 * m * k * n / (gflops * 1e9) if gflops else math.nan
    return {
        "method": method, "dtype": dtype, "block": block, "m": m, "k": k, "n": n, "threads": 1,
        "status": status, "gflops": gflops if status == "passed" else None,
        "timing": {"reps": 3, "median_s": seconds, "min_s": seconds, "max_s": seconds, "iqr_s": 0, "rsd": 0.0,
                   "times_s": [seconds] * 3, "warmup": 1, "mode": "hot"},
        "verification": {"max_abs_error": 0.0, "rel_fro_error": 1e-7 if status == "passed" else 0.5,
                         "tolerance": 1e-4, "scope": "full", "reference": "numpy float64", "unwritten": 0,
                         "passed": status == "passed"},
        "env": {"device_name": device, "device_kind": "gpu", "seed": 1},
    }


@pytest.fixture
def study():
    recs = []
    for size, scale in ((256, 1), (512, 2)):
        recs += [
            record("naive", "float32", 16, size, 100 * scale), record("naive", "float32", 32, size, 80 * scale),
            record("tiled", "float32", 16, size, 400 * scale), record("tiled", "float32", 32, size, 480 * scale),
            record("cublas", "float32", 0, size, 1000 * scale), record("naive", "float64", 16, size, 50 * scale),
            record("tiled", "float64", 16, size, 200 * scale), record("tiled", "float64", 32, size, 100 * scale),
            record("numpy", "float32", 0, size, 20 * scale),
        ]
    recs.append(record("tiled_unrolled", "float32", 16, 512, None, status="failed"))
    return collate.tidy(recs)


def test_tidy_has_one_row_per_job_with_flat_columns(study):
    assert len(study) == 19
    for col in ("label", "shape", "size", "gflops", "tflops", "timing_median_s", "timing_times_s",
                "verification_rel_fro_error", "verification_passed", "env_device_name", "pct_of_cublas",
                "speedup_over_naive"):
        assert col in study.columns, col
    row = study[(study.label == "tiled b32") & (study.dtype == "float32") & (study["size"] == 256)].iloc[0]
    assert row["shape"] == "256x256x256" and row["tflops"] == pytest.approx(0.48)
    assert row["pct_of_cublas"] == pytest.approx(48.0)
    assert row["speedup_over_naive"] == pytest.approx(480 / 80)  # naive at the same block
    np_row = study[(study.method == "numpy") & (study["size"] == 512)].iloc[0]
    assert np_row["speedup_over_naive"] == pytest.approx(40 / 200)  # best naive block for blockless methods
    failed = study[study.status == "failed"].iloc[0]
    assert math.isnan(failed["gflops"]) and math.isnan(failed["pct_of_cublas"])


def test_ratios_never_mix_devices():
    df = collate.tidy([record("tiled", "float32", 16, 256, 400, device="A"),
                       record("cublas", "float32", 0, 256, 1000, device="B")])
    assert math.isnan(df.set_index("method").loc["tiled", "pct_of_cublas"])
    assert df.set_index("method").loc["cublas", "pct_of_cublas"] == pytest.approx(100.0)


def test_summary_tables(study):
    best = collate.best_per_shape(study)
    assert list(best[best.dtype == "float32"]["best"]) == ["cublas", "cublas"]
    assert list(best[best.dtype == "float64"]["best"]) == ["tiled b16", "tiled b16"]
    blocks = collate.block_table(study)
    tiled32 = blocks[(blocks.method == "tiled") & (blocks.dtype == "float32")]
    assert list(tiled32["b32_over_b16"]) == [pytest.approx(1.2), pytest.approx(1.2)]
    fvd = collate.float_vs_double_table(study)
    row = fvd[(fvd.label == "tiled b16")].iloc[0]
    assert row["float_over_double"] == pytest.approx(2.0)
    sp = collate.speedup_table(study)
    assert "tiled b32" in sp.columns and sp["tiled b32"].max() == pytest.approx(6.0)


def test_summary_tables_survive_cpu_only_results():
    df = collate.tidy([record("numpy", "float32", 0, 64, 10)])
    for build in collate.SUMMARIES.values():
        assert isinstance(build(df), pd.DataFrame)


def test_collating_nothing_is_an_error():
    with pytest.raises(ValueError, match="no result files"):
        collate.tidy([])


def test_model_columns_and_percent_of_calibrated_peak():
    calibration = pd.DataFrame([("GPU X", "float32", 2000.0, "GFLOP/s", "x"), ("GPU X", "memory", 4000.0, "GB/s", "y")],
                               columns=["device_name", "ceiling", "value", "unit", "detail"])
    df = collate.tidy([record("tiled", "float32", 16, 256, 400), record("numpy", "float32", 0, 256, 20,
                                                                         device="CPU Y")], calibration)
    tiled = df[df.method == "tiled"].iloc[0]
    assert tiled["pct_of_peak"] == pytest.approx(20.0)
    assert tiled["model_bytes_read"] == 2 * 256 * 256 * 16 * 4  # each input read by 16 block rows/columns
    assert tiled["model_intensity"] == pytest.approx(2 * 256**3 / (tiled["model_bytes_read"] + 256 * 256 * 4))
    assert math.isnan(df[df.method == "numpy"].iloc[0]["pct_of_peak"])  # no ceiling for the CPU
    assert collate.tidy([record("tiled", "float32", 16, 256, 400)])["pct_of_peak"].isna().all()


def test_method_ratio_pairs_same_dtype_block_and_shape():
    df = collate.tidy([record("tiled", "float32", 16, 256, 400), record("tiled_unrolled", "float32", 16, 256, 560),
                       record("tiled_unrolled", "float32", 32, 256, 600)])
    eff = collate.method_ratio(df, "tiled_unrolled", "tiled")
    assert len(eff) == 1 and eff.iloc[0]["tiled_unrolled / tiled"] == pytest.approx(1.4)
    assert collate.method_ratio(collate.tidy([record("numpy", "float32", 0, 64, 10)]), "tiled_unrolled", "tiled").empty


def test_version_fields_survive_the_csv_round_trip(tmp_path):
    from matmul_study.pipeline.steps import read_results

    rec = record("tiled", "float32", 16, 64, 100)
    rec["env"].update({"compute_capability": "9.0", "cuda_driver_api": "13.0", "git_commit": "0123456789"})
    collate.tidy([rec]).to_csv(tmp_path / "r.csv", index=False)
    back = read_results(tmp_path / "r.csv").iloc[0]
    assert back["env_compute_capability"] == "9.0" and back["env_cuda_driver_api"] == "13.0"
    assert back["env_git_commit"] == "0123456789"


def test_percent_of_peak_uses_the_ceilings_of_the_jobs_own_gpu():
    from matmul_study.core.records import CALIBRATION_COLUMNS as COLUMNS

    calibration = pd.DataFrame([("GPU X", "uuid-a", 0, "float32", 2000.0, "GFLOP/s", ""),
                                ("GPU X", "uuid-b", 1, "float32", 1000.0, "GFLOP/s", "")], columns=COLUMNS)
    on_a, on_b, older = (record("tiled", "float32", 16, 256, 400) for _ in range(3))
    on_a["env"]["device_uuid"], on_b["env"]["device_uuid"] = "uuid-a", "uuid-b"
    on_b["block"] = 32
    older["block"], older["m"] = 16, 128
    df = collate.tidy([on_a, on_b, older], calibration).set_index(["block", "m"])["pct_of_peak"]
    assert df[(16, 256)] == pytest.approx(20.0) and df[(32, 256)] == pytest.approx(40.0)
    # a result without a UUID (an older file) is divided by the model's median ceiling
    assert df[(16, 128)] == pytest.approx(100 * 400 / 1500)


def test_ceilings_are_measured_at_the_studys_largest_dimension_within_limits(make_config):
    from matmul_study.pipeline.steps import calibration_size

    assert calibration_size(make_config(sizes=[512, 4096])) == 4096
    assert calibration_size(make_config(sizes=[{"m": 16, "k": 14336, "n": 4096}])) == 8192
    assert calibration_size(make_config(sizes=[64])) == 1024


def _cublas_record(dtype, size, uuid, status="passed", median_s=0.5):
    return {"method": "cublas", "dtype": dtype, "m": size, "k": size, "n": size, "status": status,
            "burst": {"median_s": median_s, "samples_kept": 9, "samples_total": 10},
            "env": {"device_name": "GPU X", "device_uuid": uuid, "device_index": 0}}


def test_the_studys_cublas_jobs_at_the_calibration_size_are_its_ceilings(make_config):
    from matmul_study.measure.calibrate import ceilings_from_jobs
    from matmul_study.pipeline.steps import calibration_jobs

    records = [_cublas_record("float16", 4096, "GPU-a"), _cublas_record("float64", 4096, "GPU-b", median_s=2.0),
               _cublas_record("float32", 2048, "GPU-a"),  # another size: not a ceiling
               _cublas_record("tf32", 4096, "GPU-a", status="failed"),  # unverified: never a ceiling
               {**_cublas_record("int8", 4096, "GPU-a"), "method": "wgmma_int8"}]  # not cuBLAS
    table = ceilings_from_jobs(records, 4096)
    assert list(zip(table["device_uuid"], table["ceiling"])) == [("GPU-a", "float16"), ("GPU-b", "float64")]
    assert table["value"].tolist() == pytest.approx([2 * 4096**3 / 0.5 / 1e9, 2 * 4096**3 / 2.0 / 1e9])
    assert (table["unit"] == "GFLOP/s").all() and table["detail"].str.contains("this study's own job").all()

    jobs = pd.DataFrame([("cublas", "float16", 0, "default", 4096, 4096, 4096),
                         ("cublas", "float16", 0, "default", 512, 512, 512),
                         ("wgmma_tma", "float16", 0, "default", 4096, 4096, 4096)],
                        columns=["method", "dtype", "block", "variant", "m", "k", "n"])
    picked = calibration_jobs(jobs, make_config(sizes=[512, 4096]))
    assert picked[["method", "m"]].values.tolist() == [["cublas", 4096]]


# Configurations (registry variants) as a job axis.
def test_a_numpy_job_records_its_one_configuration(make_config, tmp_path):
    rec = run_job(Job("numpy", "float32", 0, 16, 16, 16), make_config(measurement=FAST), str(tmp_path / "r.json"))
    assert (rec["variant"], rec["variant_reason"], rec["variant_pick"]) == (
        "default", "the method has one configuration", "default")


def test_a_job_resolves_its_variant_once_and_paths_without_one_are_the_default_build(variant_method):
    job = Job("fake_tiles", "float32", 0, 128, 64, 128, "wide")
    assert job.variant_record is variant_method.variants[0] and job.problem(4).sm_count == 4
    assert Job.from_wildcards({"method": "fake_tiles", "dtype": "float32", "block": "0", "m": "8", "k": "8",
                               "n": "8"}).variant_record.name == "default"
    with pytest.raises(KeyError, match="no variant 'tall'.*default, wide, deep_k"):
        Job("fake_tiles", "float32", 0, 8, 8, 8, "tall")


def test_a_jobs_configuration_fields_follow_the_config_on_the_device_that_ran_it(variant_method):
    from matmul_study.measure.runner import variant_fields

    few_tiles = Job("fake_tiles", "float32", 0, 128, 4096, 128, "deep_k")
    assert variant_fields(few_tiles, {"variants": "auto"}, few_tiles.problem(132)) == {
        "variant": "deep_k", "variant_reason": "4 tiles on 132 SMs: K split", "variant_pick": "deep_k"}
    wide = Job("fake_tiles", "float32", 0, 128, 4096, 128, "wide")
    swept = variant_fields(wide, {"variants": "all"}, wide.problem(132))
    assert swept == {"variant": "wide", "variant_reason": "swept", "variant_pick": "deep_k"}
    forced = variant_fields(few_tiles, {"variants": {"fake_tiles": ["deep_k"]}}, few_tiles.problem())  # 132 SMs
    assert forced["variant_reason"] == "forced by config" and forced["variant_pick"] == "deep_k"


def test_result_files_without_a_variant_collate_as_the_default_build():
    old = record("tiled", "float32", 16, 256, 400)
    new = {**record("fake", "float32", 0, 256, 900), "variant": "wide", "variant_reason": "swept"}
    df = collate.tidy([old, new])
    assert df.set_index("method")["variant"].to_dict() == {"tiled": "default", "fake": "wide"}
    assert df.set_index("method")["variant_reason"].to_dict() == {"tiled": "", "fake": "swept"}
    assert list(df.columns[:5]) == ["method", "label", "dtype", "block", "variant"]
    assert "variant" in collate.tidy([old]) and set(collate.tidy([old])["variant"]) == {"default"}


def test_job_names_carry_a_configuration_other_than_the_default():
    from matmul_study.core.results import job_names

    df = pd.DataFrame({"method": ["a", "a"], "dtype": ["float16"] * 2, "block": [0, 0], "variant": ["default", "wide"],
                       "m": [8, 8], "k": [8, 8], "n": [8, 8]})
    assert job_names(df).tolist() == ["a float16 b0 8x8x8", "a float16 b0 [wide] 8x8x8"]
    assert job_names(df.drop(columns="variant")).tolist() == ["a float16 b0 8x8x8"] * 2


def sweep(method="fake", rates=(("default", 100), ("wide", 150), ("deep_k", 120)), size=256, device="GPU X",
          pick="default"):
    return [{**record(method, "float32", 0, size, gflops, device=device), "variant": variant,
             "variant_reason": "swept", "variant_pick": pick} for variant, gflops in rates]


def test_best_variants_keeps_the_fastest_verified_configuration_of_each_job():
    recs = (sweep() + sweep(device="GPU Y", rates=(("default", 300), ("wide", 200)))
            + [{**record("fake", "float32", 0, 512, 999, status="failed"), "variant": "wide"},
               {**record("fake", "float32", 0, 512, 400), "variant": "deep_k"}]
            + [record("tiled", "float32", 16, 256, 40), record("tiled", "float32", 16, 256, 41)])  # a repeat, kept
    df = collate.tidy(recs)
    best = collate.best_variants(df)
    fake = best[best.method == "fake"].set_index(["env_device_name", "size"])["variant"].sort_index()
    assert fake.to_dict() == {("GPU X", 256): "wide", ("GPU Y", 256): "default", ("GPU X", 512): "deep_k"}
    assert (best.method == "tiled").sum() == 2
    assert collate.best_variants(df.drop(columns="variant")).equals(df.drop(columns="variant"))
    # The summaries then see one row per job.
    assert collate.best_per_shape(best).query("dtype == 'float32' and shape == '256x256x256'")["gflops"].max() == 300


def test_reproduce_joins_on_the_variant_and_reads_older_tables_as_default():
    from matmul_study.analysis.reproduce import compare

    first = collate.tidy(sweep())
    second = collate.tidy(sweep(rates=(("default", 110), ("wide", 150), ("deep_k", 60))))
    result = compare(first, second)
    assert result["jobs_compared"] == 3 and result["worst_abs_change"] == pytest.approx(0.5)
    assert result["worst"][0]["label"] == "fake float32 b0 [deep_k] 256x256x256"
    older = collate.tidy([record("fake", "float32", 0, 256, 100)]).drop(columns=["variant", "variant_reason"])
    assert compare(older, second)["jobs_compared"] == 1  # the default build of both
