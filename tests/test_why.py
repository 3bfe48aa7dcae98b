"""Why the ladder climbs (analysis.why): each step's technique, modelled traffic and measured gain, and the facts
behind the report's opening sentences. Synthetic rows; the modelled columns come from analysis.model as the
collation step writes them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from matmul_study.analysis import why
from matmul_study.analysis.ladder import ladder_table
from matmul_study.analysis.model import model

GPU = "NVIDIA H200"


def _row(method, dtype, size, gflops, block=0, status="passed", device=GPU, kind="gpu", threads=1):
    modelled = model(method, size, size, size, block, dtype)
    return {"method": method, "label": method if block == 0 else f"{method} b{block}", "dtype": dtype,
            "block": block, "m": size, "k": size, "n": size, "shape": f"{size}x{size}x{size}", "gflops": gflops,
            "status": status, "env_device_kind": kind, "env_device_name": device, "threads": threads,
            **{f"model_{key}": modelled[key] for key in ("flops_issued", "bytes_read", "bytes_written", "intensity")}}


def classic() -> pd.DataFrame:
    """float32 at 4096 (and one smaller shape that must not enter the ladder), the classic rungs plus cuBLAS."""
    return pd.DataFrame([
        _row("naive", "float32", 4096, 5000, block=16), _row("naive", "float32", 4096, 5500, block=32),
        _row("tiled_runtime_block", "float32", 4096, 6000, block=32),
        _row("tiled", "float32", 4096, 9000, block=16), _row("tiled", "float32", 4096, 8000, block=32),
        _row("tiled_unrolled", "float32", 4096, 9000, block=16),
        _row("register_tiled", "float32", 4096, 45000),
        _row("warptiled", "float32", 4096, 40000),  # a step down
        _row("cublas", "float32", 4096, 50000),
        _row("register_tiled", "float32", 1024, 1e9),  # a smaller shape never enters the ladder
        _row("warptiled", "float32", 4096, 90000, status="failed"),  # nor does a failed job
        _row("numpy", "float32", 4096, 1000, device="Test CPU", kind="cpu", threads=8),
    ])


def test_each_step_gives_its_technique_traffic_and_gain_in_ladder_order():
    steps = why.ladder_steps(classic())
    assert list(steps["from"]) == ["naive b32", "tiled_runtime_block b32", "tiled b16", "tiled_unrolled b16",
                                   "register_tiled"]
    assert list(steps["to"]) == ["tiled_runtime_block b32", "tiled b16", "tiled_unrolled b16", "register_tiled",
                                 "warptiled"]  # the faster block enters; references, CPU and failed jobs do not
    assert set(steps["shape"]) == {"4096x4096x4096"}
    assert steps["gain"].tolist() == pytest.approx([6000 / 5500, 9000 / 6000, 1.0, 45000 / 9000, 40000 / 45000])
    traffic = {(m, b): (lambda d: (d["bytes_read"] + d["bytes_written"]) / 1e9)(model(m, 4096, 4096, 4096, b,
                                                                                      "float32"))
               for m, b in [("naive", 32), ("tiled_runtime_block", 32), ("tiled", 16), ("register_tiled", 0)]}
    first = steps.iloc[0]
    assert first["traffic_from_gb"] == pytest.approx(traffic[("naive", 32)])
    assert first["traffic_to_gb"] == pytest.approx(traffic[("tiled_runtime_block", 32)])
    assert first["traffic_cut"] == pytest.approx(traffic[("naive", 32)] / traffic[("tiled_runtime_block", 32)])
    assert first["intensity_to"] == pytest.approx(model("tiled_runtime_block", 4096, 4096, 4096, 32,
                                                        "float32")["intensity"])
    # a 32x smaller 32x32 tile read barely moves the rate: the caches already served the naive kernel's re-reads
    assert first["traffic_cut"] > 10 and "caches" in first["reading"]
    # the step's own note says what it adds over the rung below
    assert steps["adds"].tolist() == [why.STEP_TECHNIQUES[("naive", "tiled_runtime_block")],
                                      why.STEP_TECHNIQUES[("tiled_runtime_block", "tiled")],
                                      why.STEP_TECHNIQUES[("tiled", "tiled_unrolled")],
                                      why.STEP_TECHNIQUES[("tiled_unrolled", "register_tiled")],
                                      why.STEP_TECHNIQUES[("register_tiled", "warptiled")]]
    readings = dict(zip(steps["to"], steps["reading"]))
    assert readings["tiled_unrolled b16"].startswith("no clear change")  # same traffic, same rate
    assert readings["register_tiled"] == "less traffic, faster"
    assert "slower" in readings["warptiled"]


def test_a_step_the_table_does_not_list_says_what_the_rung_is():
    rows = classic()
    rows = rows[~rows["method"].isin(["tiled_runtime_block"])]
    steps = why.ladder_steps(rows)
    assert steps.iloc[0]["to"] == "tiled b16"
    assert steps.iloc[0]["adds"] == why.TECHNIQUES["tiled"]
    # a method with no note at all falls back to its registry description
    from matmul_study.core import registry

    assert why.technique("warptiled_mbarrier", "register_tiled") == registry.get("warptiled_mbarrier").description


def test_the_climb_names_the_step_that_bought_the_largest_factor():
    climb = why.climb(classic()).iloc[0]
    assert (climb["first"], climb["top"]) == ("naive b32", "register_tiled")
    assert climb["factor"] == pytest.approx(45000 / 5500)
    assert (climb["biggest_from"], climb["biggest_to"]) == ("tiled_unrolled b16", "register_tiled")
    assert climb["biggest_gain"] == pytest.approx(5.0)


def test_one_rung_is_no_step():
    assert why.ladder_steps(classic()[classic()["method"].isin(["warptiled", "cublas"])]).empty
    assert why.ladder_steps(pd.DataFrame()).empty
    cpu_only = classic()[classic()["method"] == "numpy"]
    assert why.ladder_steps(cpu_only).empty and why.climb(cpu_only).empty


def test_the_ladder_table_models_results_collated_without_the_model_columns():
    with_model = ladder_table(classic())
    without = ladder_table(classic().drop(columns=[c for c in classic() if c.startswith("model_")]))
    pd.testing.assert_series_equal(with_model["traffic_bytes"], without["traffic_bytes"])
    # the table's own columns win where present
    marked = classic().assign(model_bytes_read=1e9, model_bytes_written=0.0)
    assert set(ladder_table(marked)["traffic_bytes"]) == {1e9}


def test_headline_facts_lead_with_the_fastest_kernel_of_ours_per_device():
    rows = pd.concat([classic(), pd.DataFrame([
        _row("wgmma_warp_specialized", "float16", 4096, 760e3), _row("cublas", "float16", 4096, 740e3),
        _row("wgmma_warp_specialized", "float16", 2048, 999e3)])], ignore_index=True)
    facts = why.headline_facts(rows)
    gpu = facts[facts["kind"] == "gpu"]
    assert list(gpu["dtype"]) == ["float16", "float32"]  # fastest first
    lead = gpu.iloc[0]
    assert (lead["label"], lead["shape"]) == ("wgmma_warp_specialized", "4096x4096x4096")  # the largest shape
    assert lead["tflops"] == pytest.approx(760) and lead["vs_cublas"] == pytest.approx(760 / 740)
    assert lead["pct_of_datasheet"] == pytest.approx(100 * 760 / 989.4)
    f32 = gpu.iloc[1]
    assert f32["label"] == "register_tiled" and f32["vs_cublas"] == pytest.approx(0.9)
    cpu = facts[facts["kind"] == "cpu"].iloc[0]  # GPU devices first, then the CPU line with its threads
    assert facts.index[facts["kind"] == "cpu"][0] > gpu.index.max()
    assert (cpu["label"], cpu["threads"]) == ("numpy", 8)
    assert np.isnan(cpu["vs_cublas"]) and np.isnan(cpu["pct_of_datasheet"])  # no datasheet for a CPU
