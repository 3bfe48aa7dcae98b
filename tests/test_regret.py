"""Configuration regret: the heuristic's pick against the fastest configuration a sweep measured."""

import math

import pandas as pd
import pytest

from matmul_study.analysis import collate, regret


def job(variant, gflops, size=256, method="fake_tiles", device="GPU X", status="passed", pick="default",
        sm_count=132):
    record = {"method": method, "dtype": "float32", "block": 0, "variant": variant, "m": size, "k": size, "n": size,
              "status": status, "gflops": gflops if status == "passed" else None,
              "verification": {"passed": status == "passed"},
              "env": {"device_name": device, "sm_count": sm_count}}
    if pick is not None:
        record["variant_pick"] = pick
    return record


def test_regret_is_the_picks_rate_over_the_fastest_measured():
    df = collate.tidy([
        job("default", 100), job("wide", 150), job("deep_k", 120),  # picked default: 100 / 150
        job("default", 300, size=512, pick="wide"), job("wide", 300, size=512, pick="wide"),  # picked the fastest
        job("default", 80, size=1024), job("wide", 90, size=1024, status="failed"),  # one verified: no sweep
        job("default", 50, size=64, pick="deep_k"), job("wide", 40, size=64, pick="deep_k"),  # pick not measured
    ])
    table = regret.regret_table(df)
    assert table["shape"].tolist() == ["64x64x64", "256x256x256", "512x512x512"]  # size order
    row = table.set_index("shape").loc["256x256x256"]
    assert (row["pick"], row["best"], row["variants"]) == ("default", "wide", 3)
    assert row["regret"] == pytest.approx(100 / 150) and row["best_gflops"] == 150
    assert table.set_index("shape").loc["512x512x512", "regret"] == pytest.approx(1.0)
    assert math.isnan(table.set_index("shape").loc["64x64x64", "regret"])
    facts = regret.summary(table)
    assert facts["measured"] == 2 and facts["unmeasured"] == 1 and facts["no_regret"] == 1
    assert facts["median"] == pytest.approx((1 + 100 / 150) / 2) and facts["worst"] == pytest.approx(100 / 150)
    assert facts["worst_row"]["shape"] == "256x256x256"


def test_results_without_a_recorded_pick_get_the_heuristics_pick_for_their_devices_sm_count(variant_method):
    # 128x128 is 4 tiles of 64x64: the heuristic splits K on 132 SMs and keeps whole tiles on 4.
    recs = [job(v, r, size=128, pick=None, sm_count=sms, device=name)
            for name, sms in (("big", 132), ("small", 4)) for v, r in (("default", 100), ("deep_k", 200))]
    table = regret.regret_table(collate.tidy(recs)).set_index("device")
    assert table.loc["big", "pick"] == "deep_k" and table.loc["big", "regret"] == pytest.approx(1.0)
    assert table.loc["small", "pick"] == "default" and table.loc["small", "regret"] == pytest.approx(0.5)


def test_no_sweep_no_regret():
    assert regret.regret_table(collate.tidy([job("default", 100), job("default", 200, size=512)])).empty
    assert regret.summary(regret.regret_table(pd.DataFrame())) is None
    # A method the registry does not know (results of a newer checkout) and no recorded pick: no pick, no regret.
    table = regret.regret_table(collate.tidy([job("a", 1, method="gone", pick=None), job("b", 2, method="gone",
                                                                                         pick=None)]))
    assert table["pick"].tolist() == [""] and math.isnan(table["regret"].iloc[0])


def fp8_job(variant, gflops, pick="cluster1"):
    record = job(variant, gflops, size=4096, method="wgmma_fp8", pick=pick)
    record["dtype"] = "float8_e4m3"
    return record


def test_a_pick_is_weighed_against_the_builds_of_its_accuracy_class_only():
    # FP8's promoted build runs beside the fast-accumulation pick (configs.class_picks); a faster build of the other
    # class is no regret of the pick, and a pick with no other build of its class measured has no row.
    table = regret.regret_table(collate.tidy([fp8_job("cluster1", 1000), fp8_job("bn128_promote", 1200)]))
    assert table.empty
    table = regret.regret_table(collate.tidy([fp8_job("cluster1", 1000), fp8_job("default", 1100),
                                              fp8_job("bn128_promote", 1200), fp8_job("promote", 1300)]))
    row = table.iloc[0]
    assert (row["pick"], row["best"], row["variants"]) == ("cluster1", "default", 2)
    assert row["regret"] == pytest.approx(1000 / 1100)
