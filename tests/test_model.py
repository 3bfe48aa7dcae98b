"""The analytic work and traffic model, on small cases worked out by hand."""

import json
import subprocess
import sys

import pytest

from matmul_study.analysis.model import known_build, model
from matmul_study.core import registry


def test_naive_reads_a_row_and_a_column_per_output():
    r = model("naive", 2, 3, 4, 16, "float32")
    # 8 outputs, each reading 3 of A and 3 of B: 48 elements of 4 bytes; writes 8 floats.
    assert r["flops_useful"] == r["flops_issued"] == 48
    assert r["bytes_read"] == 48 * 4 and r["bytes_written"] == 32
    assert r["intensity"] == pytest.approx(48 / 224)


def test_tiled_reads_a_once_per_block_column_and_b_once_per_block_row():
    r = model("tiled", 64, 64, 64, 16, "float32")
    # 4x4 blocks: each A element is read by 4 block columns, each B element by 4 block rows.
    assert r["bytes_read"] == 2 * 64 * 64 * 4 * 4
    assert r["bytes_written"] == 64 * 64 * 4
    assert r["flops_issued"] == r["flops_useful"] == 2 * 64**3


def test_padding_threads_are_counted_in_issued_flops_but_not_in_traffic():
    r = model("tiled_unrolled", 17, 17, 17, 16, "float64")
    # 2x2 blocks over a 32x32 padded C, k padded to 32: the zero tiles are multiplied too.
    assert r["flops_useful"] == 2 * 17**3
    assert r["flops_issued"] == 2 * 32**3
    assert r["bytes_read"] == (17 * 17 * 2 + 17 * 17 * 2) * 8


def test_wmma_one_warp_tile_and_fp32_output():
    r = model("wmma", 16, 16, 16, 0, "float16")
    assert r["bytes_read"] == (256 + 256) * 2 and r["bytes_written"] == 256 * 4
    assert r["intensity"] == pytest.approx(2 * 16**3 / 2048)


def test_library_calls_are_modelled_as_ideal():
    r = model("cublas", 100, 200, 300, 0, "float32")
    assert r["bytes_read"] == (100 * 200 + 200 * 300) * 4
    assert r["flops_issued"] == r["flops_useful"] == 2 * 100 * 200 * 300


def test_larger_tiles_mean_higher_intensity():
    big = model("register_tiled", 4096, 4096, 4096, 0, "float32")["intensity"]
    small = model("tiled", 4096, 4096, 4096, 16, "float32")["intensity"]
    naive = model("naive", 4096, 4096, 4096, 16, "float32")["intensity"]
    assert naive < small < big
    assert naive == pytest.approx(0.25, rel=1e-3)  # 2 flops per 8 bytes


def test_three_products_issue_three_times_the_flop_over_the_prepasses_operands():
    # 3xFP16 at 8192^3 in 128x256 tiles: the GEMM reads fp16 parts over K' = 3k (1.5 times fp32 operands over k),
    # and its pre-pass reads A and B once and writes A3, B3 (m x 2k and 2k x n halves) and the scales S3.
    n, item = 8192, 4
    r = model("wgmma_3xfp16", n, n, n, 0, "float32", "promote2")
    tm, tn, _ = registry.get("wgmma_3xfp16").tile(0, "float32")
    assert r["flops_issued"] == 3 * r["flops_useful"] == 3 * 2 * n**3
    gemm = (n * 3 * n * (n // tn) + 3 * n * n * (n // tm)) * 2
    assert r["bytes_read"] == gemm + 2 * n * n * item
    assert r["bytes_written"] == n * n * item + 2 * (n * 2 * n * 2) + 2 * n * item
    sgemm_like = model("wgmma_warp_specialized", n, n, n, 0, "float16")  # the same tiles on fp16 operands
    assert r["bytes_read"] > 3 * sgemm_like["bytes_read"] and r["intensity"] < sgemm_like["intensity"] / 3


def test_a_build_without_the_prepass_is_modelled_without_its_traffic():
    # wgmma_tf32's default build reads the Bt its transpose wrote (B read, Bt written); its swapped build reads B
    # as it is and runs no pre-pass.
    n = 4096
    default = model("wgmma_tf32", n, n, n, 0, "tf32")
    swapped = model("wgmma_tf32", n, n, n, 0, "tf32", "swap")
    assert default["bytes_read"] - swapped["bytes_read"] == n * n * 4
    assert default["bytes_written"] - swapped["bytes_written"] == n * n * 4
    assert known_build("wgmma_tf32", "swap") == "swap" and known_build("wgmma_tf32", "gone") is None


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "matmul_study", "model", *args], capture_output=True, text=True)


def test_cli_prints_the_model_as_json():
    out = run_cli("--method", "tiled", "--m", "64", "--k", "64", "--n", "64", "--block", "16", "--dtype", "float32")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"flops_useful", "flops_issued", "bytes_read", "bytes_written", "intensity"} <= set(data)
    assert data["bytes_read"] == 131072


@pytest.mark.parametrize("args, message", [
    (["--method", "wmma", "--dtype", "float32"], "wmma supports float16"),
    (["--method", "tiled", "--dtype", "float32", "--block", "64"], "block size from 1 to 32"),
    (["--method", "magic", "--dtype", "float32"], "invalid choice: 'magic'"),
    (["--method", "wgmma_3xfp16", "--dtype", "float32", "--variant", "bn999"], "wgmma_3xfp16 has no variant 'bn999'"),
])
def test_cli_rejects_bad_input_clearly(args, message):
    out = run_cli("--m", "8", "--k", "8", "--n", "8", *args)
    assert out.returncode != 0 and message in out.stderr


def test_compare_reports_the_worst_change_between_two_runs(tmp_path):
    import pandas as pd

    rows = [{"env_device_name": "G", "env_device_kind": "gpu", "method": "tiled", "dtype": "float32", "block": b,
             "m": 64, "k": 64, "n": 64, "status": "passed", "gflops": 100.0} for b in (16, 32)]
    rows.append({**rows[0], "method": "cublas", "block": 0, "m": 4096, "k": 4096, "n": 4096, "gflops": 50000.0,
                 "sustained_gflops": 48000.0, "sustained_sm_clock_mhz": 1700, "sustained_power_w": 690})
    rows.append({**rows[0], "env_device_name": "CPU", "env_device_kind": "cpu", "method": "numpy", "block": 0,
                 "gflops": 10.0})
    first = pd.DataFrame(rows)
    # the burst rates change by +1 %, -5 % and -2 %; the CPU by +20 %; the sustained cuBLAS rate by -10 %
    second = first.assign(gflops=[101.0, 95.0, 49000.0, 12.0], sustained_gflops=[None, None, 43200.0, None],
                          sustained_sm_clock_mhz=[None, None, 1500, None])
    first.to_csv(tmp_path / "a.csv", index=False)
    second.to_csv(tmp_path / "b.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "matmul_study", "compare", str(tmp_path / "a.csv"),
                          str(tmp_path / "b.csv"), "--markdown", str(tmp_path / "c.md")], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["gpu"]["jobs_compared"] == 3 and data["gpu"]["within_tolerance"] == 2
    assert data["gpu"]["worst_abs_change"] == pytest.approx(0.05)
    assert data["gpu"]["worst"][0]["label"] == "tiled float32 b32 64x64x64"
    assert data["cpu"]["jobs_compared"] == 1 and data["cpu"]["within_tolerance"] == 0
    assert [r["change"] for r in data["cublas_4096_8192"]] == [pytest.approx(-0.02)]
    (sustained,) = data["sustained"]
    assert sustained["change"] == pytest.approx(-0.10) and sustained["second_sustained_sm_clock_mhz"] == 1500
    page = (tmp_path / "c.md").read_text()
    assert "2 of 3 within" in page and "1500 MHz" in page
    assert data["vs_cublas"]["jobs_compared"] == 0  # no ratios in these tables


def test_compare_counts_ratios_to_cublas_apart_from_rates(tmp_path):
    import pandas as pd

    from matmul_study.analysis.reproduce import compare, markdown

    # A second card 4 % slower across the board: every rate moves, no ratio to cuBLAS does, except one
    # kernel's, which moves 5 %.
    first = pd.DataFrame([{"env_device_name": "G", "env_device_kind": "gpu", "method": method, "dtype": "float16",
                           "block": 0, "m": 4096, "k": 4096, "n": 4096, "status": "passed", "gflops": rate,
                           "pct_of_cublas": pct} for method, rate, pct in
                          (("cublas", 740e3, 100.0), ("wgmma_warp_specialized", 720e3, 97.3), ("wgmma_tma", 400e3, 54.1))])
    second = first.assign(gflops=first["gflops"] * 0.96, pct_of_cublas=[100.0, 97.3, 54.1 * 1.05])
    result = compare(first, second)
    assert result["gpu"]["within_tolerance"] == 0
    ratios = result["vs_cublas"]
    assert ratios["jobs_compared"] == 2 and ratios["within_tolerance"] == 1  # cuBLAS itself is not counted
    assert ratios["worst"][0]["label"].startswith("wgmma_tma") and ratios["worst_abs_change"] == pytest.approx(0.05)
    page = markdown(result, "a", "b")
    assert "× cuBLAS in the same run** (GPU jobs other than cuBLAS): 1 of 2 within" in page
    assert "| 0.541 | 0.568 | +5.00% |" in page


def test_compare_across_card_models_joins_on_the_job_and_says_so_otherwise(tmp_path):
    # A second reference GPU: an H100 against an H200 shares no device name, so by default no GPU job joins and the
    # comparison says why and what joins them; --across-devices compares the ratios measured in each run.
    import pandas as pd

    from matmul_study.analysis.reproduce import compare, markdown

    first = pd.DataFrame([{"env_device_name": "NVIDIA H200", "env_device_kind": "gpu", "method": method,
                           "dtype": "float16", "block": 0, "m": 4096, "k": 4096, "n": 4096, "status": "passed",
                           "gflops": rate, "pct_of_cublas": pct}
                          for method, rate, pct in (("cublas", 740e3, 100.0),
                                                    ("wgmma_warp_specialized", 740e3, 100.0))])
    second = first.assign(env_device_name="NVIDIA H100 80GB HBM3", gflops=[700e3, 686e3], pct_of_cublas=[100.0, 98.0])
    alone = compare(first, second)
    assert alone["gpu"]["jobs_compared"] == 0 and not alone["across_devices"]
    assert alone["devices"] == {"first": ["NVIDIA H200"], "second": ["NVIDIA H100 80GB HBM3"]}
    assert "NVIDIA H200" in alone["note"] and "--across-devices" in alone["note"]
    across = compare(first, second, across_devices=True)
    assert "note" not in across and across["gpu"]["jobs_compared"] == 2
    assert across["vs_cublas"]["jobs_compared"] == 1
    assert across["vs_cublas"]["worst_abs_change"] == pytest.approx(0.02)
    assert "jobs joined on the job alone, across device models" in markdown(across, "a", "b")
    first.to_csv(tmp_path / "a.csv", index=False)
    second.to_csv(tmp_path / "b.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "matmul_study", "compare", str(tmp_path / "a.csv"),
                          str(tmp_path / "b.csv")], capture_output=True, text=True)
    assert out.returncode == 0 and "note: no GPU job ran on the same device model" in out.stderr, out.stderr
    # One run holding a job on two card models cannot be joined on the job alone: a usage error, not a guess.
    both = pd.concat([first, second.assign(gflops=[1.0, 1.0])])
    both.to_csv(tmp_path / "both.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "matmul_study", "compare", str(tmp_path / "both.csv"),
                          str(tmp_path / "b.csv"), "--across-devices"], capture_output=True, text=True)
    assert out.returncode == 2 and "the first run holds cublas float16" in out.stderr, out.stderr
    assert "more than one device model" in out.stderr and "Traceback" not in out.stderr


def test_compare_takes_a_runs_folder_and_names_a_wrong_argument(tmp_path):
    # A run's folder (results/, results/reference/<device>/) stands for its tables/results.csv; a path that is
    # neither a results table nor such a folder is a usage error naming the argument, not a traceback.
    import pandas as pd

    rows = [{"env_device_name": "G", "env_device_kind": "gpu", "method": "tiled", "dtype": "float32", "block": 16,
             "m": 64, "k": 64, "n": 64, "status": "passed", "gflops": 100.0}]
    (tmp_path / "run" / "tables").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(tmp_path / "run" / "tables" / "results.csv", index=False)
    pd.DataFrame(rows).assign(gflops=[104.0]).to_csv(tmp_path / "b.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "matmul_study", "compare", str(tmp_path / "run"),
                          str(tmp_path / "b.csv")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["gpu"]["worst_abs_change"] == pytest.approx(0.04)
    (tmp_path / "empty").mkdir()
    for args, words in ((["compare", str(tmp_path / "empty"), str(tmp_path / "b.csv")],
                         "first '" + str(tmp_path / "empty") + "': a folder without tables/results.csv"),
                        (["compare", str(tmp_path / "b.csv"), str(tmp_path / "nothing.csv")],
                         "second '" + str(tmp_path / "nothing.csv") + "': no such file"),
                        (["gpus", str(tmp_path / "empty")], "results '" + str(tmp_path / "empty") + "'")):
        out = subprocess.run([sys.executable, "-m", "matmul_study", *args], capture_output=True, text=True)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
