"""Devices in a results table are keyed so that results of different machines never merge: a GPU by its model,
a CPU by its model and host. No test here depends on this machine's CPU or GPU."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from matmul_study.analysis import claims, result_devices as devices
from matmul_study.present.figures import FIGURES

CPU = "Same CPU Model 64-Core"


def _row(method, host, device, kind, gflops, n=512, dtype="float32"):
    return {"method": method, "label": method, "dtype": dtype, "block": 0, "m": n, "k": n, "n": n,
            "shape": f"{n}x{n}x{n}", "size": float(n), "status": "passed", "gflops": gflops,
            "env_device_name": device, "env_device_kind": kind, "env_host": host}


def _two_cpu_hosts() -> pd.DataFrame:
    """numpy on two hosts with the same CPU model, at two sizes: host-a at 100 GFLOP/s, host-b at 10."""
    return pd.DataFrame([_row("numpy", h, CPU, "cpu", rate, n) for h, rate in (("host-a", 100.0), ("host-b", 10.0))
                         for n in (256, 512)])


def test_two_hosts_with_the_same_cpu_model_are_two_devices():
    out = devices.with_device(_two_cpu_hosts())
    assert set(out["device"]) == {f"{CPU} on host-a", f"{CPU} on host-b"}
    assert (out.groupby("device")["gflops"].nunique() == 1).all()  # each device holds its own host's rows only


def test_the_throughput_figure_never_joins_two_hosts_with_the_same_cpu():
    fig = FIGURES["throughput"].plot(_two_cpu_hosts(), None)
    try:
        by_panel = {}
        for ax in fig.axes:
            ys = np.concatenate([ln.get_ydata() for ln in ax.get_lines() if len(ln.get_xdata()) >= 2])
            by_panel[ax.get_title()] = set(np.round(ys, 9))
        # a row of panels per host, each with its own rate (TF/s), never the median of the two hosts
        assert by_panel == {f"{CPU} on host-a · float32": {0.1}, f"{CPU} on host-b · float32": {0.01}}
    finally:
        matplotlib.pyplot.close(fig)


def _gpu_host_and_a_cpu_only_host() -> pd.DataFrame:
    """An H200 host (its CPU at 100 GFLOP/s) and, as imported results, a CPU-only host with the same CPU model
    at 10 GFLOP/s."""
    rows = [_row("cublas", "gpu-host", "NVIDIA H200", "gpu", 50000.0), _row("naive", "gpu-host", "NVIDIA H200",
                                                                          "gpu", 5000.0),
            _row("numpy", "gpu-host", CPU, "cpu", 100.0), _row("numpy", "laptop", CPU, "cpu", 10.0)]
    return pd.DataFrame(rows)


def test_a_cpu_of_another_host_does_not_join_the_only_gpu():
    out = devices.with_device(_gpu_host_and_a_cpu_only_host())
    cpu = out[out["method"] == "numpy"].set_index("env_host")["device"]
    assert cpu["gpu-host"] == "NVIDIA H200" and cpu["laptop"] == f"{CPU} on laptop"
    # the GPU-over-CPU claim divides by the GPU host's own CPU only: 50000 / 100, not by a median with 10
    table = claims.check_claims(_gpu_host_and_a_cpu_only_host())
    gpu_over_cpu = table[table["claim"].str.startswith("The GPU is")].set_index("claim")
    assert list(gpu_over_cpu["pairs"]) == [1, 1]
    assert sorted(gpu_over_cpu["median"]) == pytest.approx([50.0, 500.0])  # naive and cuBLAS over 100


def test_without_a_recorded_host_cpu_rows_keep_the_old_rule():
    # older results have no env_host: CPU rows go with the only GPU, or stand alone under their model
    df = _gpu_host_and_a_cpu_only_host().drop(columns="env_host")
    assert set(devices.with_device(df)["device"]) == {"NVIDIA H200"}
    assert set(devices.with_device(_two_cpu_hosts().drop(columns="env_host"))["device"]) == {CPU}


def test_the_report_lists_two_hosts_with_the_same_cpu_as_two_devices():
    import re

    from matmul_study.present import report

    df = _two_cpu_hosts().assign(env_git_commit=["abc"] * 2 + ["def"] * 2)
    doc = report.render_report(df, {}, pd.DataFrame(columns=report.PRUNED_COLUMNS), {}, {})
    summary = re.search(r'<section id="summary".*?</section>', doc, re.S).group(0)
    assert f"{CPU} on host-a (cpu), {CPU} on host-b (cpu)" in summary
    provenance = re.search(r'<section id="provenance".*?</section>', doc, re.S).group(0)
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>", provenance, re.S)
    assert rows == [(f"{CPU} on host-a (cpu)", "abc"), (f"{CPU} on host-b (cpu)", "def")]
    # one host: the CPU is named as before, without its host
    one = devices.device_labels(_two_cpu_hosts().query("env_host == 'host-a'"))
    assert set(one) == {CPU}


def _two_gpus_with_picks() -> pd.DataFrame:
    """The decode kernel on an H200 and an H100: the same job picked m16_splitk4 on one and m16_splitk2 on the
    other; the H100 swept both (its pick the slower), the H200 only ran its pick. cuBLAS beside each."""
    def job(device, variant, pick, gflops, vs_vendor, method="mma_async_copy"):
        return {**_row(method, device, device, "gpu", gflops, dtype="float16"), "m": 16, "k": 4096, "n": 4096,
                "shape": "16x4096x4096", "size": 16.0 * 4096 * 4096, "variant": variant, "variant_pick": pick,
                "pct_of_cublas": vs_vendor}

    return pd.DataFrame([
        job("NVIDIA H200", "m16_splitk4", "m16_splitk4", 60000.0, 1.02),
        job("NVIDIA H100", "m16_splitk2", "m16_splitk2", 40000.0, 0.80),
        job("NVIDIA H100", "m16_splitk4", "m16_splitk2", 50000.0, 1.00),
        job("NVIDIA H200", "default", None, 59000.0, 1.0, method="cublas"),
        job("NVIDIA H100", "default", None, 50000.0, 1.0, method="cublas"),
    ])


def test_the_devices_table_gives_each_cards_ratio_to_its_own_vendor_line():
    table = devices.devices_table(_two_gpus_with_picks())
    ours = table[table["label"] == "mma_async_copy"].iloc[0]
    assert ours["NVIDIA H200 × vendor"] == pytest.approx(1.02)
    assert ours["NVIDIA H100 × vendor"] == pytest.approx(0.90)  # the median of the card's two builds


def test_where_the_heuristic_chose_differently_and_whether_it_was_right():
    picks = devices.pick_differences(_two_gpus_with_picks())
    assert len(picks) == 1
    row = picks.iloc[0]
    assert (row["method"], row["shape"]) == ("mma_async_copy", "16x4096x4096")
    assert row["NVIDIA H200 pick"] == "m16_splitk4" and row["NVIDIA H100 pick"] == "m16_splitk2"
    assert row["NVIDIA H100 best swept"] == "m16_splitk4" and row["NVIDIA H100 regret"] == pytest.approx(0.8)
    assert row["NVIDIA H200 best swept"] == "" and np.isnan(row["NVIDIA H200 regret"])  # not swept there
    same = _two_gpus_with_picks().assign(variant_pick="m16_splitk4")
    assert devices.pick_differences(same).empty
    assert devices.pick_differences(_two_gpus_with_picks()[lambda d: d["env_device_name"] == "NVIDIA H100"]).empty


def test_the_report_shows_both_cards_ratios_and_where_their_picks_differ():
    import re

    from matmul_study.present import report

    doc = report.render_report(_two_gpus_with_picks(), {}, pd.DataFrame(columns=report.PRUNED_COLUMNS), {}, {})
    section = re.search(r'<section id="devices".*?</section>', doc, re.S).group(0)
    assert "NVIDIA H200 × vendor" in section and "NVIDIA H100 × vendor" in section
    assert "Where the heuristic chose differently" in section and "1 job ran a different configuration" in section
    assert "m16_splitk2" in section and "0.800" in section and "not swept" in section


def test_a_gpus_memory_bandwidth_is_its_bus_width_times_its_memory_clock_two_transfers_a_clock():
    from types import SimpleNamespace

    from matmul_study.measure import gpu_device

    class DriverError(Exception):
        pass

    attrs = SimpleNamespace(MEMORY_CLOCK_RATE="clock", GLOBAL_MEMORY_BUS_WIDTH="bus")
    cuda = SimpleNamespace(device_attribute=attrs, Error=DriverError)
    h100 = SimpleNamespace(get_attribute={"clock": 2619000, "bus": 5120}.get)  # kHz and bits, as the driver says
    h200 = SimpleNamespace(get_attribute={"clock": 3201000, "bus": 6144}.get)
    assert gpu_device.hbm_bytes_per_s(cuda, h100) == pytest.approx(3.352e12, rel=1e-3)
    assert gpu_device.hbm_bytes_per_s(cuda, h200) == pytest.approx(4.917e12, rel=1e-3)
    # a driver that does not say (an error, or 0): not known, and the heuristics plan as for an H200
    assert gpu_device.hbm_bytes_per_s(cuda, SimpleNamespace(get_attribute={"clock": 0, "bus": 5120}.get)) is None

    def refuses(attribute):
        raise DriverError("invalid attribute")

    assert gpu_device.hbm_bytes_per_s(cuda, SimpleNamespace(get_attribute=refuses)) is None
