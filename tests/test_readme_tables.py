"""The README's tables are what present.tables prints from the committed runs, and each cell pairs like with like."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from matmul_study.present.tables import answer_table, best_cell, squares_table, suite_table

REPO = Path(__file__).resolve().parents[1]
H200 = REPO / "results/reference/NVIDIA_H200"


def block_in(text: str, table: str) -> bool:
    """Whether `table`'s lines stand in `text` one after the other, as one table."""
    return f"\n{table}\n" in text


def test_the_readme_answer_and_squares_tables_are_the_reference_study_s():
    readme = (REPO / "README.md").read_text()
    results = pd.read_csv(H200 / "tables/results.csv")
    answer = answer_table([results])
    assert block_in(readme, answer)
    assert "†" not in answer  # every rung against the vendor line of its own class: no trade reads as parity
    squares = squares_table(results)
    assert block_in(readme, squares) and block_in((REPO / "docs/results.md").read_text(), squares)
    assert "| float16 | 1.16 (wgmma_warp_specialized bm64_bn64_kg2) | 1.06 (wgmma_warp_specialized bn64) |" in squares


@pytest.mark.parametrize("run, readmes", [
    ("results-small-deep-splits.csv", ("README.md",)),
    ("results-large.csv", ("README.md", "results/reference/NVIDIA_H200/shapes/README.md")),
])
def test_the_readme_suite_tables_are_the_committed_suite_runs(run, readmes):
    results = pd.read_csv(H200 / "shapes" / run)
    table = suite_table(results)
    assert len(table.splitlines()) == 2 + len(set(zip(results["m"], results["k"], results["n"])))
    for readme in readmes:
        assert block_in((REPO / readme).read_text(), table), readme


def test_the_large_shapes_rates_table_names_the_builds_and_drops_a_rate_that_had_no_burst():
    table = suite_table(pd.read_csv(H200 / "shapes/results-large.csv"), rates=True)
    assert block_in((H200 / "shapes/README.md").read_text(), table)
    # fp64's longest launches outlast the power limiter's window: no burst rate, so the build alone.
    assert "| 8192 × 4096 × 28672 | 727 `default` | 752 `default` | 402 `swap` | 50 `default` | `default` |" in table


def job(method, variant, dtype, gflops, *, sustained=None, status="passed", m=512, k=512, n=512):
    return {"method": method, "variant": variant, "dtype": dtype, "gflops": gflops, "status": status, "m": m, "k": k,
            "n": n, "sustained_gflops": gflops if sustained is None else sustained,
            "verification_rel_fro_error": 1e-6}


def frame(*jobs):
    from matmul_study.analysis.accuracy import with_classes

    return with_classes(pd.DataFrame(list(jobs)))


def test_a_cell_is_the_fastest_verified_kernel_over_the_vendor_line_of_its_class():
    at = frame(job("cublas", "default", "float32", 50.0),
               job("warptiled", "default", "float32", 45.0),
               job("warptiled", "splitk2", "float32", 60.0, status="failed"),  # wrong: never fast
               job("wgmma_3xtf32", "default", "float32", 120.0),  # another arithmetic: a row of its own
               job("wgmma_3xfp16", "default", "float32", 200.0))
    cell = best_cell(at, "float32")
    assert (cell.ours["variant"], cell.ratio, cell.text()) == ("default", pytest.approx(0.9), "0.90")
    assert best_cell(at, "float16") is None  # no job of that dtype


def test_fp8_cells_pair_each_class_with_its_own_line():
    at = frame(job("cublaslt", "default", "float8_e4m3", 1000.0),  # promoted
               job("cublaslt", "fast_accum", "float8_e4m3", 1400.0),
               job("wgmma_fp8", "default", "float8_e4m3", 1450.0),  # fast accumulation
               job("wgmma_fp8", "bn128_promote", "float8_e4m3", 980.0))
    fast, promoted = best_cell(at, "float8_e4m3", "fast accumulation"), best_cell(at, "float8_e4m3", "promoted")
    assert fast.ratio == pytest.approx(1450 / 1400) and promoted.ratio == pytest.approx(0.98)
    # Of any class: the best ratio, each against its own line (not 1450 over the promoted line's 1000).
    assert best_cell(at, "float8_e4m3").ratio == pytest.approx(1450 / 1400)
    # A class whose vendor line did not run has no cell: no ratio against a line of another accuracy.
    assert best_cell(at[at["variant"] != "fast_accum"], "float8_e4m3", "fast accumulation") is None


def test_a_missing_burst_rate_takes_sustained_over_sustained_and_says_so():
    at = frame(job("cublas", "default", "float64", np.nan, sustained=55.0),
               job("dmma", "default", "float64", np.nan, sustained=54.0),
               job("warptiled", "default", "float64", 22.0))
    cell = best_cell(at, "float64")
    assert cell.sustained and cell.ours["method"] == "dmma" and cell.text() == "0.98*"
    row = suite_table(at.assign(m=8, k=8, n=8)).splitlines()[2]
    assert row == "| 8 × 8 × 8 | – | – | – | – | 0.98* | – | – | – |"
    # Neither rate on one side: no ratio at all.
    assert best_cell(at.assign(sustained_gflops=np.nan), "float64") is None


def test_the_squares_table_names_the_pick_at_the_small_sizes_and_the_class_where_a_dtype_has_several():
    results = pd.concat([pd.DataFrame([job("cublaslt", "fast_accum", "float8_e4m3", 1000.0 * s, m=s, k=s, n=s),
                                        job("wgmma_fp8", "swap_bn64", "float8_e4m3", 1100.0 * s, m=s, k=s, n=s),
                                        job("cublas", "default", "float16", 500.0 * s, m=s, k=s, n=s),
                                        job("wgmma_warp_specialized", "bn64", "float16", 510.0 * s, m=s, k=s, n=s)])
                         for s in (512, 1024, 2048)])
    lines = squares_table(results, sizes=(512, 1024, 2048)).splitlines()
    assert lines[2] == ("| float8_e4m3 | 1.10 (wgmma_fp8 swap_bn64, fast accumulation) | 1.10 (wgmma_fp8 swap_bn64, "
                        "fast accumulation) | 1.10 |")
    assert lines[3] == ("| float16 | 1.02 (wgmma_warp_specialized bn64) | 1.02 (wgmma_warp_specialized bn64) | "
                        "1.02 |")
