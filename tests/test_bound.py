"""The roofline per shape: memory- or math-bound by the datasheet, and each line's share of the bound."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from matmul_study.analysis.bound import bound_table, decode_cells, ideal_bytes

REPO = Path(__file__).resolve().parents[1]


def rows(*entries, device="NVIDIA H200"):
    return pd.DataFrame([{"method": meth, "variant": v, "dtype": "float16", "m": m, "k": k, "n": n, "gflops": g,
                          "status": "passed", "env_device_kind": "gpu", "env_device_name": device}
                         for meth, v, m, k, n, g in entries])


def test_ideal_traffic_reads_the_inputs_and_writes_the_output_once():
    assert ideal_bytes(16, 4096, 4096, "float16") == (16 * 4096 + 4096 * 4096) * 2 + 16 * 4096 * 4
    assert ideal_bytes(2, 3, 5, "int8") == (6 + 15) + 10 * 4


def test_a_decode_shape_is_memory_bound_and_its_share_of_hbm_is_bytes_over_time():
    # 16 x 4096 x 4096 in fp16: intensity about 16 FLOP/byte, far under the H200's ridge (989 TF/s / 4.8 TB/s).
    table = bound_table(rows(("mma_async_copy", "m16_splitk4", 16, 4096, 4096, 53_000.0),
                             ("wgmma_warp_specialized", "default", 16, 4096, 4096, 17_000.0),
                             ("cublas", "default", 16, 4096, 4096, 56_000.0)))
    row = table.iloc[0]
    assert row["bound"] == "memory" and row["label"] == "mma_async_copy" and row["variant"] == "m16_splitk4"
    assert row["intensity"] == pytest.approx(2 * 16 * 4096 * 4096 / ideal_bytes(16, 4096, 4096, "float16"))
    seconds = 2 * 16 * 4096 * 4096 / 53e12
    assert row["pct_of_hbm"] == pytest.approx(100 * ideal_bytes(16, 4096, 4096, "float16") / seconds / 4.8e12)
    assert row["vendor"] == "cublas" and row["vendor_pct_of_hbm"] > row["pct_of_hbm"]
    assert row["pct_of_peak"] == pytest.approx(100 * 53.0 / 989.4)


def test_a_large_square_is_math_bound_and_an_unknown_device_has_no_roof():
    table = bound_table(rows(("wgmma_warp_specialized", "default", 8192, 8192, 8192, 780_000.0),
                             ("cublas", "default", 8192, 8192, 8192, 760_000.0)))
    assert table.iloc[0]["bound"] == "math"
    other = bound_table(rows(("wgmma_warp_specialized", "default", 8192, 8192, 8192, 1.0), device="Some GPU"))
    assert other.iloc[0]["bound"] == "" and np.isnan(other.iloc[0]["pct_of_hbm"])


def test_a_kernel_on_other_arithmetic_takes_its_share_of_that_arithmetics_peak():
    # 3xFP16 runs fp32 on the fp16 tensor cores: 208 TF/s on an H100 is 312 % of fp32's 66.9 TF/s, 21 % of fp16's
    # 989.4; the roof stays fp32's (math-bound), and SGEMM keeps fp32's peak.
    table = bound_table(pd.DataFrame([
        {"method": meth, "variant": "default", "dtype": "float32", "m": 8192, "k": 8192, "n": 8192, "gflops": g,
         "status": "passed", "env_device_kind": "gpu", "env_device_name": "NVIDIA H100 80GB HBM3"}
        for meth, g in (("wgmma_3xfp16", 208_000.0), ("warptiled", 49_000.0), ("cublas", 51_700.0))]))
    row = table.iloc[0]
    assert row["label"] == "wgmma_3xfp16" and row["bound"] == "math"
    assert row["pct_of_peak"] == pytest.approx(100 * 208.0 / 989.4) and row["pct_of_peak"] < 100
    assert row["vendor_pct_of_peak"] == pytest.approx(100 * 51.7 / 66.9)


def test_the_report_section_says_what_bounds_each_shape():
    from matmul_study.present.report.bound import bound

    section = bound(rows(("mma_async_copy", "m16_splitk4", 16, 4096, 4096, 53_000.0),
                         ("cublas", "default", 16, 4096, 4096, 56_000.0),
                         ("wgmma_warp_specialized", "default", 8192, 8192, 8192, 780_000.0),
                         ("cublas", "default", 8192, 8192, 8192, 760_000.0), device="NVIDIA H100 80GB HBM3"))
    table = str(section["table"])
    assert "memory" in table and "math" in table and "mma_async_copy (m16_splitk4 configuration)" in table
    assert section["sentences"][0].startswith("1 of 2 (shape, element type) pairs are memory-bound")
    # 16 x 4096 x 4096 at 53 TF/s moves its 32 MiB at more than an H100's 3.35 TB/s: from L2, latency decides.
    assert any("L2" in s for s in section["sentences"])
    assert bound(rows(("wgmma_warp_specialized", "default", 64, 64, 64, 1.0), device="Some GPU")) is None


def test_the_roofs_time_says_where_latency_decides():
    from matmul_study.analysis.bound import LATENCY_US
    from matmul_study.present.report.bound import bound

    # 16 x 4096 x 4096 in fp16 moves 34 MB: 7 µs at an H200's 4.8 TB/s, a few launches' worth; 8192^3 takes
    # 1.1 ms at its 989 TF/s.
    found = rows(("mma_async_copy", "m16_splitk4", 16, 4096, 4096, 53_000.0), ("cublas", "default", 16, 4096, 4096,
                                                                                56_000.0),
                 ("wgmma_warp_specialized", "default", 8192, 8192, 8192, 780_000.0),
                 ("cublas", "default", 8192, 8192, 8192, 760_000.0))
    table = bound_table(found).set_index("m")
    assert table.loc[16, "roof_us"] == pytest.approx(1e6 * ideal_bytes(16, 4096, 4096, "float16") / 4.8e12)
    assert table.loc[16, "roof_us"] < LATENCY_US < table.loc[8192, "roof_us"]
    assert table.loc[8192, "roof_us"] == pytest.approx(1e6 * 2 * 8192**3 / 989.4e12, rel=1e-3)
    sentences = bound(found)["sentences"]
    assert any(s.startswith("1 would take under 10 µs even at the roof") for s in sentences)
    assert "µs at the roof" in str(bound(found)["table"])


def case(method, variant, shape, ms, vendor_ms, passed=True, dtype="float16"):
    """A row of bench/compare.py's --json."""
    checks = {"ours": {"passed": True}, "cublas": {"passed": True}, "ours after timing": {"passed": passed}}
    return {"method": method, "variant": variant, "dtype": dtype, "m x n x k": shape, "ms": ms,
            "cuBLAS ms": vendor_ms, "ratio": vendor_ms / ms, "checks": checks}


def test_a_decode_cell_is_the_fastest_kernel_whose_output_passed_with_its_share_of_hbm():
    cases = [case("wgmma_warp_specialized", "bm64_bn128_splitk4", "64x4096x4096", 0.0105, 0.0092),
             case("mma_async_copy", "m64", "64x4096x4096", 0.0120, 0.0093),
             case("wgmma_warp_specialized", "swap_bm64_bn32_kg2", "64x4096x4096", 0.0080, 0.0092, passed=False),
             case("mma_async_copy", "m16", "1x4096x4096", 0.0088, 0.0100),
             {"method": "few_rows", "variant": "m8", "dtype": "float16", "m x n x k": "64x4096x4096", "ms": "-",
              "check": "error: ValueError: few_rows serves M of 8 rows or fewer"}]
    cells = decode_cells(cases, 4.8)
    assert list(cells["shape"]) == ["64x4096x4096", "1x4096x4096"]  # in the order the cases name them
    first = cells.iloc[0]  # the wrong output, faster, is not a cell; the error has no time
    assert (first["variant"], first["ratio"]) == ("bm64_bn128_splitk4", pytest.approx(0.0092 / 0.0105))
    traffic = ideal_bytes(64, 4096, 4096, "float16")
    assert first["pct_of_hbm"] == pytest.approx(100 * traffic / 10.5e-6 / 4.8e12)
    assert first["vendor_pct_of_hbm"] == pytest.approx(100 * traffic / 9.2e-6 / 4.8e12)
    assert decode_cells(cases[2:3], 4.8).empty


def test_the_committed_h200_decode_table_is_what_bench_decode_table_prints(capsys):
    spec = importlib.util.spec_from_file_location("decode_table", REPO / "bench/decode_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runs = REPO / "results/reference/NVIDIA_H200/small-problems"
    assert module.main([str(runs / "decode-picks.json"), "--device", "NVIDIA H200", "--dtypes", "float16",
                        "bfloat16", "tf32", "float32", "float64", "int8", "float8_e4m3"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert len(table) == 2 + 11 and len(json.loads((runs / "decode-picks.json").read_text())) == 153
    readme = (runs / "README.md").read_text()
    assert all(line in readme for line in table[2:])
    with pytest.raises(SystemExit):
        module.main([str(runs / "decode-picks.json"), "--device", "NVIDIA A100"])
    assert "--device 'NVIDIA A100': no datasheet bandwidth for it; known: H200, H100" in capsys.readouterr().err
