"""Figures and HTML report, on a small synthetic results table (no GPU needed)."""

from __future__ import annotations

import base64
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from markupsafe import escape
from matplotlib.figure import Figure

from matmul_study import figures, report
from matmul_study.figures import FIGURES, save_figure

XSS = "<script>alert(1)</script>"
SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 512, 2048)]  # the last is non-square, size 1024
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}


def _row(method, dtype, block, shape, gflops, error, status="passed"):
    m, k, n = shape
    label = method if block == 0 else f"{method} b{block}"
    seconds = 2 * m * k * n / (gflops * 1e9)
    return {
        "method": method,
        "dtype": dtype,
        "block": block,
        "m": m,
        "k": k,
        "n": n,
        "threads": 1,
        "label": label,
        "shape": f"{m}x{k}x{n}",
        "size": (m * k * n) ** (1 / 3),
        "status": status,
        "gflops": gflops if status == "passed" else np.nan,
        "tflops": gflops / 1e3 if status == "passed" else np.nan,
        "timing_reps": 20,
        "timing_warmup": 2,
        "timing_median_s": seconds,
        "timing_min_s": seconds * 0.98,
        "timing_max_s": seconds * 1.05,
        "timing_iqr_s": seconds * 0.01,
        "timing_rsd": 0.004,
        "timing_mode": "hot",
        "timing_times_s": ";".join(str(seconds) for _ in range(3)),
        "verification_max_abs_error": error * 10,
        "verification_rel_fro_error": error,
        "verification_tolerance": TOLERANCE[dtype],
        "verification_scope": "full",
        "verification_reference": "numpy float64",
        "verification_passed": status == "passed",
        "verification_unwritten": 0,
        "env_device_name": "cpu" if method == "numpy" else "NVIDIA H200",
        "env_device_kind": "cpu" if method == "numpy" else "gpu",
        "env_cpu_model": "Test CPU 9000",
        "env_host": "node-01",
        "env_git_commit": "abc1234",
        "env_config_hash": "cafe0001",
        "env_seed": 12345,
        "env_timestamp": "2025-11-21T15:30:00+00:00",
        "env_python": "3.11.9",
        "env_numpy": "2.4.6",
        "env_pycuda": "" if method == "numpy" else "2025.1",
        "env_cupy": "13.6.0",
        "env_driver_version": "570.00",
        "env_cuda_version": "12.8",
        "env_compute_capability": "9.0",
        "env_sm_count": 132,
    }


def make_results() -> pd.DataFrame:
    rows = []
    base = {"numpy": 50.0, "naive": 100.0, "tiled": 400.0, "cublas": 5000.0}
    for dtype in ("float32", "float64"):
        slow = 1.0 if dtype == "float32" else 0.5
        err = 1e-6 if dtype == "float32" else 1e-15
        for i, shape in enumerate(SHAPES):
            grow = 1.5**i
            rows.append(_row("numpy", dtype, 0, shape, base["numpy"] * grow * slow, err))
            rows.append(_row("cublas", dtype, 0, shape, base["cublas"] * grow * slow, err))
            for block in (16, 32):
                for method in ("naive", "tiled"):
                    gf = base[method] * grow * slow * (1.2 if block == 32 else 1.0)
                    rows.append(_row(method, dtype, block, shape, gf, err))
    df = pd.DataFrame(rows)
    # one failed job: wrong results, so no throughput
    bad = (df["method"] == "tiled") & (df["block"] == 32) & (df["dtype"] == "float32") & (df["shape"] == "512x512x512")
    df.loc[bad, ["status", "gflops", "tflops", "verification_passed", "verification_rel_fro_error"]] = [
        "failed",
        np.nan,
        np.nan,
        False,
        0.25,
    ]
    df.loc[bad, "label"] = "tiled b32"
    # derived columns as the collation step makes them
    key = ["dtype", "shape"]
    cublas = df[df["method"] == "cublas"].set_index(key)["gflops"]
    df["pct_of_cublas"] = 100 * df["gflops"] / df.set_index(key).index.map(cublas).to_numpy()
    naive = df[df["method"] == "naive"].groupby(key)["gflops"].max()
    df["speedup_over_naive"] = df["gflops"] / df.set_index(key).index.map(naive).to_numpy()
    return df


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return make_results()


@pytest.fixture(scope="module")
def rendered(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    paths = {}
    for name, spec in FIGURES.items():
        paths[name] = out / f"{name}.png"
        save_figure(spec.plot(results), paths[name], out / f"{name}.svg")
    passed = results[results["status"] == "passed"]
    tables = {
        "best": passed.loc[passed.groupby(["method", "dtype"])["gflops"].idxmax(), ["method", "dtype", "gflops"]],
        "speedup": passed[["label", "dtype", "shape", "speedup_over_naive"]],
    }
    pruned = pd.DataFrame(
        [
            {"method": "wmma", "dtype": "float64", "block": 0, "reason": "wmma supports float16 only"},
            {"method": "naive", "dtype": "float16", "block": 16, "reason": "float16 needs tensor cores"},
        ]
    )
    config = {
        "sizes": [256, 512, {"m": 1024, "k": 512, "n": 2048}],
        "block_sizes": [16, 32],
        "dtypes": ["float32", "float64"],
        "methods": ["numpy", "naive", "tiled", "cublas"],
        "arch": XSS,
        "measurement": {"warmup": 2, "mode": "hot", "seed": 12345},
    }
    extra = [("Throttling", "<p class='extra-marker'>no throttled jobs</p>")]
    doc = report.render_report(results, tables, pruned, paths, config, extra_sections=extra)
    return doc, paths


# ---------------------------------------------------------------------------------------------------- figures


def _check_figure(fig: Figure) -> None:
    assert isinstance(fig, Figure)
    assert fig.legends or any(ax.get_legend() is not None for ax in fig.axes), "figure has no legend"
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert axes
    for ax in axes:
        assert re.search(r"\(.+\)", ax.get_xlabel()), f"x label without units: {ax.get_xlabel()!r}"
        assert re.search(r"\(.+\)", ax.get_ylabel()), f"y label without units: {ax.get_ylabel()!r}"
        assert ax.get_xscale() == "log"
        assert ax.xaxis.get_transform().base == 2
    assert fig._suptitle is not None or any(ax.get_title() for ax in axes), "figure has no title"


def _drawn_points(fig: Figure) -> int:
    """Data points drawn by lines and scatters (zero for an empty figure)."""
    n = 0
    for ax in fig.axes:
        n += sum(len(line.get_xdata()) for line in ax.get_lines() if line.get_label() and len(line.get_xdata()) > 2)
        n += sum(len(c.get_offsets()) for c in ax.collections)
    return n


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_has_legend_units_and_log2_axis(results, name):
    fig = FIGURES[name].plot(results)
    try:
        _check_figure(fig)
        assert not any(figures.NO_DATA in t.get_text() for ax in fig.axes for t in ax.texts), "real data drawn as empty"
    finally:
        matplotlib.pyplot.close(fig)


def test_figure_keys_and_captions():
    assert list(FIGURES) == ["throughput", "speedup", "blocks", "float_vs_double", "verification_error"]
    for spec in FIGURES.values():
        assert len(spec.caption) > 40 and callable(spec.plot)


@pytest.mark.parametrize("name", ["throughput", "blocks", "float_vs_double"])
def test_throughput_figures_show_only_passed_jobs(results, name):
    # a failed job whose throughput was (wrongly) filled in must still be left out
    tainted = results.copy()
    tainted.loc[tainted["status"] == "failed", "gflops"] = 1e9
    fig = FIGURES[name].plot(tainted)
    try:
        ys = np.concatenate([line.get_ydata() for ax in fig.axes for line in ax.get_lines()])
        ys = ys[np.isfinite(ys)]
        passed = results.loc[results["status"] == "passed", "gflops"]
        assert ys.size > 0
        assert ys.max() <= passed.max() + 1e-9 and ys.min() >= passed.min() - 1e-9
    finally:
        matplotlib.pyplot.close(fig)


def test_throughput_has_a_panel_per_dtype(results):
    fig = FIGURES["throughput"].plot(results)
    try:
        panels = [ax.get_title() for ax in fig.axes]
        assert "float32" in panels and "float64" in panels
    finally:
        matplotlib.pyplot.close(fig)


def test_reference_lines_are_dashed_and_grey(results):
    fig = FIGURES["throughput"].plot(results)
    try:
        lines = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) >= 2]
        colours = {matplotlib.colors.to_hex(ln.get_color()) for ln in lines if ln.get_linestyle() == "--"}
        assert colours and colours <= {"#000000", matplotlib.colors.to_hex("dimgrey")}
        solid = {matplotlib.colors.to_hex(ln.get_color()) for ln in lines if ln.get_linestyle() == "-"}
        assert solid and not solid & colours
    finally:
        matplotlib.pyplot.close(fig)


def test_verification_error_includes_failed_job_and_tolerance(results):
    fig = FIGURES["verification_error"].plot(results)
    try:
        ys = np.concatenate([c.get_offsets()[:, 1] for ax in fig.axes for c in ax.collections])
        assert 0.25 in ys  # the failed job's error
        assert all(ax.get_yscale() == "log" for ax in fig.axes)
        tol_lines = [ln for ax in fig.axes for ln in ax.get_lines() if set(ln.get_ydata()) & set(TOLERANCE.values())]
        assert len(tol_lines) == 2
    finally:
        matplotlib.pyplot.close(fig)


def test_save_figure_writes_png_and_svg(results, tmp_path):
    fig = FIGURES["throughput"].plot(results)
    png, svg = tmp_path / "a" / "t.png", tmp_path / "b" / "t.svg"
    save_figure(fig, png, svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert b"<svg" in svg.read_bytes()[:2000]
    assert not matplotlib.pyplot.fignum_exists(fig.number)


@pytest.mark.parametrize(
    "subset",
    [
        pytest.param(lambda df: df[df["method"] == "numpy"], id="only-numpy"),
        pytest.param(lambda df: df[df["shape"] == "512x512x512"], id="single-size"),
        pytest.param(lambda df: df[df["dtype"] == "float32"], id="no-float64"),
        pytest.param(lambda df: df[df["status"] == "failed"], id="only-failed"),
        pytest.param(lambda df: df.iloc[0:0], id="no-rows"),
    ],
)
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figures_survive_sparse_data(results, subset, name):
    fig = FIGURES[name].plot(subset(results).reset_index(drop=True))
    try:
        _check_figure(fig)
    finally:
        matplotlib.pyplot.close(fig)


def test_empty_figure_says_so(results):
    # numpy has no block axis, and a run of numpy alone has no naive kernel to compare with
    only_numpy = results[results["method"] == "numpy"].assign(speedup_over_naive=np.nan)
    for name in ("blocks", "speedup"):
        fig = FIGURES[name].plot(only_numpy)
        try:
            assert any(t.get_text() == figures.NO_DATA for ax in fig.axes for t in ax.texts)
            assert _drawn_points(fig) == 0
        finally:
            matplotlib.pyplot.close(fig)
    fig = FIGURES["throughput"].plot(only_numpy)
    try:
        assert not any(t.get_text() == figures.NO_DATA for ax in fig.axes for t in ax.texts)
        assert _drawn_points(fig) > 0
    finally:
        matplotlib.pyplot.close(fig)


# ----------------------------------------------------------------------------------------------------- report


def _section(doc: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}".*?</section>', doc, re.S)
    assert match, f"no section {section_id}"
    return match.group(0)


def test_report_embeds_every_figure_and_caption(rendered):
    doc, paths = rendered
    figs = _section(doc, "figures")
    for name, path in paths.items():
        uri = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
        assert uri in figs, f"figure {name} not embedded"
        assert str(escape(FIGURES[name].caption)) in figs
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:)?//', doc)
    assert "<link" not in doc and "<script" not in doc


def test_report_lists_every_job(rendered, results):
    doc, _ = rendered
    jobs = _section(doc, "all-jobs")
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>", jobs, re.S)
    listed = {(label, dtype, shape) for label, dtype, shape in rows}
    expected = set(results[["label", "dtype", "shape"]].itertuples(index=False, name=None))
    assert listed == expected and len(rows) == len(results)


def test_report_failed_section(rendered, results):
    doc, _ = rendered
    failed = _section(doc, "failed")
    assert 'class="alert' in failed
    bad = results[results["status"] == "failed"].iloc[0]
    assert bad["label"] in failed and bad["shape"] in failed and "0.25" in failed
    assert "<td>0.0001</td>" in failed  # its tolerance
    assert failed.count("<tr") == 2  # header + the one failed job


def test_report_failed_section_says_none(results):
    passed = results[results["status"] == "passed"]
    doc = report.render_report(passed, {}, pd.DataFrame(columns=["method", "dtype", "block", "reason"]), {}, {})
    failed = _section(doc, "failed")
    assert "none" in failed.lower() and "<table" not in failed
    assert "none" in _section(doc, "pruned").lower()


def test_report_sections_in_order(rendered):
    doc, _ = rendered
    ids = re.findall(r'<section id="([^"]+)"', doc)
    expected = ["summary", "configuration", "environment", "failed", "figures", "tables"]
    assert ids[: len(expected)] == expected
    assert ids[-2:] == ["pruned", "all-jobs"]
    assert doc.index("extra-marker") < doc.index('id="pruned"')
    assert doc.index("extra-marker") > doc.index('id="tables"')


def test_report_summary_and_environment(rendered, results):
    doc, _ = rendered
    summary = _section(doc, "summary")
    n, n_passed = len(results), int((results["status"] == "passed").sum())
    assert f"{n} jobs" in summary and f"{n_passed} passed" in summary
    assert "NVIDIA H200" in summary and "2025-11-21" in summary
    env = _section(doc, "environment")
    for value in ("Test CPU 9000", "node-01", "570.00", "12.8", "abc1234", "cafe0001", "12345", "hot", "2.4.6"):
        assert value in env


def test_report_tables_and_pruned(rendered):
    doc, _ = rendered
    tables = _section(doc, "tables")
    assert tables.count("<table") == 2
    pruned = _section(doc, "pruned")
    assert "wmma supports float16 only" in pruned and "float16 needs tensor cores" in pruned


def test_report_escapes_config_and_data(rendered, results):
    doc, _ = rendered
    assert XSS not in doc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in _section(doc, "configuration")
    # a data-derived string (a method name) is escaped too, in tables, the failed list and the summary
    evil = results.copy()
    evil.loc[evil.index[0], ["method", "label"]] = XSS
    evil.loc[evil.index[0], "env_device_name"] = XSS
    evil.loc[evil["status"] == "failed", "label"] = XSS
    pruned = evil[["method", "dtype", "block"]].assign(reason=XSS)
    doc2 = report.render_report(evil, {"best": evil[["method", "gflops"]]}, pruned, {}, {"title": XSS})
    assert XSS not in doc2 and "&lt;script&gt;" in doc2


def test_report_floats_are_formatted(rendered, results):
    doc, _ = rendered
    jobs = _section(doc, "all-jobs")
    seconds = results["timing_median_s"].iloc[0]
    assert repr(seconds) not in jobs, "floats printed at full precision"
    assert f"<td>{report.format_float(seconds)}</td>" in jobs
    assert "<td>nan</td>" not in jobs.lower()  # missing values (failed job's GFLOP/s) are blank


def test_format_float():
    cases = {12345.678: "12346", 0.00123: "0.001230", 1.5e-7: "1.5e-07", 1e-4: "0.0001", 0.0: "0", np.nan: ""}
    assert {x: report.format_float(x) for x in cases} == cases
