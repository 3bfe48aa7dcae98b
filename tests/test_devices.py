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
