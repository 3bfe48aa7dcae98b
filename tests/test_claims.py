"""The source study's claims checked on synthetic results with known ratios (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from matmul_study.analysis import claims
from matmul_study.analysis.claims import BLOCKS, FLOAT, FP8, GPU_CPU, INT8, TILED, WMMA, X3FP16, X3TF32, check_claims

SIZES = (256, 512, 1024)


def row(method, dtype, block, size, gflops, device="GPU A", host="h1", status="passed"):
    cpu = method == "numpy"
    return {
        "method": method,
        "label": f"{method} b{block}" if block else method,
        "dtype": dtype,
        "block": block,
        "m": size,
        "k": size,
        "n": size,
        "shape": f"{size}x{size}x{size}",
        "size": float(size),
        "status": status,
        "gflops": gflops if status == "passed" else np.nan,
        "env_device_name": "Test CPU" if cpu else device,
        "env_device_kind": "cpu" if cpu else "gpu",
        "env_host": host,
    }


def frame(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def claim_row(table: pd.DataFrame, claim: str, device: str = "GPU A") -> pd.Series:
    hit = table[(table["claim"] == claim) & (table["device"] == device)]
    assert len(hit) == 1, f"{claim!r} on {device!r}: {len(hit)} rows"
    return hit.iloc[0]


def test_columns_and_every_claim_listed():
    table = check_claims(frame(row("naive", "float32", 16, 512, 100.0)))
    assert list(table.columns) == ["device", "claim", "comparison", "pairs", "median", "min", "max", "verdict"]
    for claim in claims.CLAIMS:
        assert claim in set(table["claim"])
    assert set(table["verdict"]) <= set(claims.VERDICTS)
    assert table["comparison"].str.len().min() > 20


@pytest.mark.parametrize(
    "ratios, verdict",
    [
        ([7.0, 7.0, 7.0], "holds"),
        ([3.0, 4.0, 12.0], "partly holds"),  # median 4 outside 5-10, but 12 overlaps it
        ([1.1, 1.2, 1.3], "does not hold"),
    ],
)
def test_tiled_over_naive_verdicts(ratios, verdict):
    rows = []
    for size, r in zip(SIZES, ratios):
        rows += [row("naive", "float32", 16, size, 100.0), row("tiled", "float32", 16, size, 100.0 * r)]
    got = claim_row(check_claims(frame(*rows)), TILED)
    assert got["verdict"] == verdict
    assert got["pairs"] == 3
    assert got["median"] == pytest.approx(np.median(ratios))
    assert (got["min"], got["max"]) == pytest.approx((min(ratios), max(ratios)))
    # nothing to pair tiled_unrolled with: not measured, no numbers
    unrolled = claim_row(check_claims(frame(*rows)), f"{TILED} (tiled_unrolled)")
    assert unrolled["verdict"] == "not measured" and unrolled["pairs"] == 0 and np.isnan(unrolled["median"])


def test_pairs_need_same_block_dtype_and_shape_and_passed_jobs():
    rows = [
        row("naive", "float32", 16, 512, 100.0),
        row("tiled", "float32", 16, 512, 700.0),
        row("tiled", "float32", 32, 512, 5000.0),  # no naive b32: unpaired
        row("tiled", "float64", 16, 512, 5000.0),  # no naive float64: unpaired
        row("tiled", "float32", 16, 1024, 5000.0),  # no naive at 1024: unpaired
        row("naive", "float32", 16, 256, 100.0),
        row("tiled", "float32", 16, 256, 1e9, status="failed"),  # failed: left out
    ]
    df = frame(*rows)
    df.loc[df["status"] == "failed", "gflops"] = 1e9  # even with its throughput (wrongly) filled in
    got = claim_row(check_claims(df), TILED)
    assert got["pairs"] == 1 and got["median"] == pytest.approx(7.0) and got["verdict"] == "holds"


def test_wmma_over_best_tiled_block():
    rows = []
    for size in SIZES:
        rows += [
            row("tiled", "float32", 16, size, 1000.0),
            row("tiled", "float32", 32, size, 2000.0),  # the best block: the denominator
            row("wmma", "float16", 0, size, 30000.0),
        ]
    got = claim_row(check_claims(frame(*rows)), WMMA)
    # 15x the best tiled block (holds); against the b16 block it would be 30x (does not hold)
    assert got["median"] == pytest.approx(15.0) and got["pairs"] == 3 and got["verdict"] == "holds"
    assert claim_row(check_claims(frame(*rows)), f"{WMMA} (wmma_tiled)")["verdict"] == "not measured"


def test_float_over_double_simt_and_cublas():
    rows = []
    for size in SIZES:
        for method, block in (("naive", 16), ("tiled", 32), ("register_tiled", 0)):
            rows += [row(method, "float32", block, size, 2000.0), row(method, "float64", block, size, 1000.0)]
        rows += [row("cublas", "float32", 0, size, 5000.0), row("cublas", "float64", 0, size, 5000.0)]
    # a float64 job of another block size has no float32 partner at that block and must not pair
    rows.append(row("naive", "float64", 32, 512, 10.0))
    table = check_claims(frame(*rows))
    simt = claim_row(table, FLOAT)
    assert simt["pairs"] == 9 and simt["median"] == pytest.approx(2.0) and simt["verdict"] == "holds"
    cublas = [r for r in table["claim"] if r.startswith(FLOAT) and "cublas" in r]
    assert len(cublas) == 1
    got = claim_row(table, cublas[0])
    assert got["pairs"] == 3 and got["median"] == pytest.approx(1.0) and got["verdict"] == "does not hold"


def _blocks(large: dict, small: dict) -> pd.DataFrame:
    """naive and tiled, float32, b16/b32 at sizes 256 (small) and 1024 (large); values {method: (b16, b32)}."""
    rows = []
    for size, values in ((256, small), (1024, large)):
        for method, (b16, b32) in values.items():
            rows += [row(method, "float32", 16, size, b16), row(method, "float32", 32, size, b32)]
    return frame(*rows)


@pytest.mark.parametrize(
    "large, small, verdict",
    [
        # b32 wins large and b16 wins small for both kernels
        ({"naive": (100, 150), "tiled": (100, 120)}, {"naive": (100, 80), "tiled": (100, 90)}, "holds"),
        # b32 wins large, but b32 also wins small
        ({"naive": (100, 150), "tiled": (100, 120)}, {"naive": (100, 110), "tiled": (100, 130)}, "partly holds"),
        # b16 wins large and b32 wins small: the opposite of the claim
        ({"naive": (150, 100), "tiled": (120, 100)}, {"naive": (100, 110), "tiled": (100, 130)}, "does not hold"),
    ],
)
def test_block_claim(large, small, verdict):
    got = claim_row(check_claims(_blocks(large, small)), BLOCKS)
    assert got["verdict"] == verdict
    assert got["pairs"] == 4  # two kernels, largest and smallest size each
    ratios = [b32 / b16 for b16, b32 in list(large.values()) + list(small.values())]
    assert (got["min"], got["max"]) == pytest.approx((min(ratios), max(ratios)))


def test_gpu_over_cpu_best_classic_kernel_and_cublas():
    rows = []
    for size in SIZES:
        rows += [
            row("numpy", "float32", 0, size, 100.0),
            row("naive", "float32", 16, size, 500.0),
            row("tiled", "float32", 32, size, 2000.0),  # the best classic kernel: 20x
            row("register_tiled", "float32", 0, size, 9000.0),  # not a classic kernel: not counted
            row("cublas", "float32", 0, size, 10000.0),  # 100x
        ]
    table = check_claims(frame(*rows))
    classic = claim_row(table, GPU_CPU)
    assert classic["pairs"] == 3 and classic["median"] == pytest.approx(20.0) and classic["verdict"] == "holds"
    cublas = claim_row(table, f"{GPU_CPU} (cublas)")
    assert cublas["median"] == pytest.approx(100.0) and cublas["verdict"] == "does not hold"


def test_claims_per_device_with_the_cpu_of_their_host():
    rows = []
    for size in SIZES:
        rows += [
            row("numpy", "float32", 0, size, 100.0, host="h1"),
            row("numpy", "float32", 0, size, 200.0, host="h2"),
            row("tiled", "float32", 16, size, 2000.0, device="GPU A", host="h1"),
            row("naive", "float32", 16, size, 1000.0, device="GPU A", host="h1"),
            row("tiled", "float32", 16, size, 2000.0, device="GPU B", host="h2"),
            row("naive", "float32", 16, size, 100.0, device="GPU B", host="h2"),
        ]
    table = check_claims(frame(*rows))
    assert list(dict.fromkeys(table["device"])) == ["GPU A", "GPU B"]
    assert claim_row(table, GPU_CPU, "GPU A")["median"] == pytest.approx(20.0)  # against h1's CPU
    assert claim_row(table, GPU_CPU, "GPU B")["median"] == pytest.approx(10.0)  # against h2's CPU
    a, b = claim_row(table, TILED, "GPU A"), claim_row(table, TILED, "GPU B")
    assert (a["median"], a["verdict"]) == (pytest.approx(2.0), "does not hold")
    assert (b["median"], b["verdict"]) == (pytest.approx(20.0), "does not hold")
    assert a["pairs"] == b["pairs"] == 3  # never paired across devices


def test_fp8_and_int8_against_the_fastest_fp16_kernel_at_the_same_shape():
    rows = []
    for size, fp8 in zip(SIZES, (1200.0, 1500.0, 1800.0)):
        rows += [
            row("wgmma_warp_specialized", "float16", 0, size, 700.0),
            row("cublas", "float16", 0, size, 750.0),  # the fastest fp16: every ratio divides by it
            row("wgmma_fp8", "float8_e4m3", 0, size, fp8 - 100.0),
            row("cublaslt", "float8_e4m3", 0, size, fp8),
            row("wgmma_int8", "int8", 0, size, 3000.0),
        ]
    rows.append(row("wgmma_fp8", "float8_e4m3", 0, 2048, 5000.0))  # no fp16 at 2048: unpaired
    wrong = row("wgmma_int8", "int8", 0, 512, 0.0, status="failed")
    rows.append({**wrong, "gflops": 1e6})  # a failed job's rate (wrongly filled in) is never a ratio
    table = check_claims(frame(*rows))
    fp8 = claim_row(table, FP8)
    assert fp8["pairs"] == 3 and fp8["median"] == pytest.approx(2.0) and fp8["verdict"] == "holds"
    assert (fp8["min"], fp8["max"]) == pytest.approx((1.6, 2.4))
    int8 = claim_row(table, INT8)
    assert int8["pairs"] == 3 and int8["median"] == pytest.approx(4.0) and int8["verdict"] == "does not hold"
    assert "1979" in FP8 and "989" in FP8


@pytest.mark.parametrize("method, claim", [("wgmma_3xtf32", X3TF32), ("wgmma_3xfp16", X3FP16)])
@pytest.mark.parametrize("ratio, verdict", [(2.6, "holds"), (0.8, "does not hold")])
def test_fp32_on_tensor_cores_against_sgemm(method, claim, ratio, verdict):
    other = "wgmma_3xfp16" if method == "wgmma_3xtf32" else "wgmma_3xtf32"
    rows = []
    for size in SIZES:
        rows += [row("cublas", "float32", 0, size, 50.0), row(method, "float32", 0, size, 50.0 * ratio),
                 row("warptiled", "float32", 0, size, 500.0),  # not the claim's kernel: not counted
                 row(other, "float32", 0, size, 5.0),  # the other fp32 tensor-core rung has its own claim
                 row("cublas", "tf32", 0, size, 400.0)]  # tf32 is not the SGEMM it stands against
    got = claim_row(check_claims(frame(*rows)), claim)
    assert got["pairs"] == 3 and got["median"] == pytest.approx(ratio) and got["verdict"] == verdict


def test_nothing_measured():
    for df in (pd.DataFrame(), frame(row("numpy", "float32", 0, 512, 100.0))):
        table = check_claims(df)
        assert set(table["verdict"]) == {"not measured"} and (table["pairs"] == 0).all()


def test_verdict_bounds():
    assert claims.verdict(np.array([1.6, 1.6, 3.0]), 1.6, 2.5) == "holds"  # the range is inclusive
    assert claims.verdict(np.array([1.0, 1.5, 1.7]), 1.6, 2.5) == "partly holds"
    assert claims.verdict(np.array([2.6, 3.0]), 1.6, 2.5) == "does not hold"
    assert claims.verdict(np.array([np.nan]), 1.6, 2.5) == "not measured"
