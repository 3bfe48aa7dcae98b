"""Figures and HTML report, on a small synthetic results table (no GPU needed)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from markupsafe import escape
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from matmul_study.present import figures, report
from matmul_study.present.report import page as report_page
from matmul_study.present.report import text as report_text
from matmul_study.present.figures import FIGURES, save_figure

XSS = "<script>alert(1)</script>"
SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 512, 2048)]  # the last is non-square, size 1024
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
ITEMSIZE = {"float32": 4, "float64": 8}
GPU, GPU2 = "NVIDIA H200", "NVIDIA H100"
CEILINGS = {"memory": 4000.0, "float32": 50000.0, "float64": 25000.0}


def _row(method, dtype, block, shape, gflops, error, status="passed"):
    m, k, n = shape
    label = method if block == 0 else f"{method} b{block}"
    seconds = 2 * m * k * n / (gflops * 1e9)
    cpu = method == "numpy"
    # a stand-in for the analytic model: one element per thread, a block's tile, or each input read once
    reuse = {"naive": 1, "tiled": block, "cublas": (m * k * n) ** (1 / 3)}.get(method, np.nan)
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
        "timing_noise_target": 0.01,
        "timing_total_s": 0.5,
        "timing_mode": "hot",
        "timing_launches_per_sample": 1 if cpu else max(1, int(np.ceil(1e-3 / seconds))),
        "timing_times_s": ";".join(str(seconds) for _ in range(3)),
        "verification_max_abs_error": error * 10,
        "verification_rel_fro_error": error,
        "verification_tolerance": TOLERANCE[dtype],
        "verification_scope": "full",
        "verification_reference": "numpy float64",
        "verification_passed": status == "passed",
        "verification_unwritten": 0,
        "env_device_name": "Test CPU 9000" if cpu else GPU,
        "env_device_kind": "cpu" if cpu else "gpu",
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
        "model_flops_issued": 2 * m * k * n,
        "model_bytes_read": np.nan if cpu else 2 * m * k * n / (2 * reuse / ITEMSIZE[dtype]),
        "model_bytes_written": m * n * ITEMSIZE[dtype],
        "model_intensity": np.nan if cpu else reuse / ITEMSIZE[dtype],
        "pct_of_peak": np.nan if cpu else 100 * gflops / CEILINGS[dtype],
        "gpu_throttled_samples": np.nan if cpu else 0,
        "gpu_sm_clock_min_sample_mhz": np.nan if cpu else 1980.0,
        "gpu_sm_clock_max_mhz": np.nan if cpu else 1980.0,
        "gpu_temperature_c_before": np.nan if cpu else 40.0,
        "gpu_temperature_c_after": np.nan if cpu else 45.0,
        "gpu_power_w_before": np.nan if cpu else 120.0,
        "gpu_power_w_after": np.nan if cpu else 300.0,
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
    # where each job's time went, as the runner records it: the jobs one after another, 0.4 s apart
    job_s = 0.9
    start = pd.Timestamp("2026-11-28T10:00:00Z") + pd.to_timedelta(np.arange(len(df)) * (job_s + 0.4), unit="s")
    df = df.assign(overhead_startup_s=0.1, overhead_slot_wait_s=0.01, overhead_inputs_s=0.05, overhead_job_s=job_s,
                   overhead_timed_s=0.5, overhead_started_utc=start.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"),
                   overhead_finished_utc=(start + pd.Timedelta(seconds=job_s)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00"))
    return df


def make_two_devices(results: pd.DataFrame) -> pd.DataFrame:
    """The GPU jobs again on a second device at half the throughput, CPU jobs shared (same host)."""
    second = results[results["env_device_kind"] == "gpu"].copy()
    second["env_device_name"] = GPU2
    second[["gflops", "tflops"]] *= 0.5
    return pd.concat([results, second], ignore_index=True)


def make_calibration(devices=(GPU,)) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"device_name": d, "ceiling": c, "value": v, "unit": "GB/s" if c == "memory" else "GFLOP/s",
             "detail": "synthetic"}
            for d in devices
            for c, v in CEILINGS.items()
        ]
    )


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return make_results()


@pytest.fixture(scope="module")
def calibration() -> pd.DataFrame:
    return make_calibration()


@pytest.fixture(scope="module")
def two_devices(results) -> pd.DataFrame:
    return make_two_devices(results)


@pytest.fixture(scope="module")
def rendered(results, calibration, tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    paths = {}
    for name, spec in FIGURES.items():
        paths[name] = out / f"{name}.png"
        save_figure(spec.plot(results, calibration), paths[name], out / f"{name}.svg")
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
    doc = report.render_report(results, tables, pruned, paths, config, extra_sections=extra, calibration=calibration)
    return doc, paths


# ---------------------------------------------------------------------------------------------------- figures


def _is_placeholder(fig: Figure) -> bool:
    return fig.get_label() == figures.PLACEHOLDER


def _check_placeholder(fig: Figure, message: str | None = None) -> None:
    """A figure with nothing to show: no axes to misread, its title and one line saying why."""
    assert isinstance(fig, Figure) and _is_placeholder(fig)
    assert not [ax for ax in fig.axes if ax.get_visible()], "a placeholder draws no axes"
    assert fig._suptitle is not None and fig._suptitle.get_text()
    lines = [t.get_text() for t in fig.texts if t is not fig._suptitle]
    assert len(lines) == 1 and "\n" not in lines[0] and len(lines[0]) > 20, lines
    if message is not None:
        assert lines[0] == message


def _check_figure(fig: Figure, name: str = "") -> None:
    """A figure that shows data: never the placeholder that says there is none."""
    assert isinstance(fig, Figure)
    assert not _is_placeholder(fig), f"placeholder instead of a figure: {_texts(fig)}"
    assert not {figures.NO_DATA, figures.ONE_DEVICE} & set(_texts(fig)), "placeholder text in a figure"
    assert _drawn_points(fig) > 0, "nothing drawn"
    assert fig.legends or any(ax.get_legend() is not None for ax in fig.axes), "figure has no legend"
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert axes
    for ax in axes:
        assert re.search(r"\(.+\)", ax.get_xlabel()), f"x label without units: {ax.get_xlabel()!r}"
        assert re.search(r"\(.+\)", ax.get_ylabel()), f"y label without units: {ax.get_ylabel()!r}"
        if name in ("ladder", "study_time"):  # linear bars (TF/s, seconds), so that a gap reads as a length
            assert ax.get_xscale() == "linear"
            continue
        assert ax.get_xscale() == "log"
        if name not in ("devices", "precision"):  # their x axis is a rate, not a size or an intensity
            assert ax.xaxis.get_transform().base == 2
    assert fig._suptitle is not None or any(ax.get_title() for ax in axes), "figure has no title"


def _drawn_points(fig: Figure) -> int:
    """Data points drawn by lines and scatters (zero for an empty figure)."""
    n = 0
    for ax in fig.axes:
        n += sum(len(line.get_xdata()) for line in ax.get_lines()
                 if len(line.get_xdata()) > 2 or line.get_marker() not in (None, "", "None", " "))
        n += sum(len(c.get_offsets()) for c in ax.collections)
        n += sum(1 for p in ax.patches if p.get_width() > 0 and p.get_height() > 0)  # bars
    return n


def _texts(fig: Figure) -> list[str]:
    texts = [t for ax in fig.axes for t in ax.texts] + [t for t in fig.texts if t is not fig._suptitle]
    return [" ".join(t.get_text().split()) for t in texts]


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_has_legend_units_and_log2_axis(results, two_devices, calibration, name):
    # the devices figure needs two devices to have anything to draw
    data = two_devices if name == "devices" else results
    fig = FIGURES[name].plot(data, calibration)
    try:
        _check_figure(fig, name)
    finally:
        matplotlib.pyplot.close(fig)


def test_figure_keys_and_captions():
    assert list(FIGURES) == [
        "throughput", "speedup", "blocks", "float_vs_double", "verification_error", "roofline", "devices", "ladder",
        "precision", "study_time",
    ]
    for spec in FIGURES.values():
        assert len(spec.caption) > 40 and callable(spec.plot)


def test_calibration_may_be_left_out(results):
    # callers that have no calibration table may pass None or nothing at all
    fig = FIGURES["throughput"].plot(results)
    try:
        _check_figure(fig)
    finally:
        matplotlib.pyplot.close(fig)
    fig = FIGURES["roofline"].plot(results, None)  # the roofline needs the ceilings: it says so
    try:
        _check_placeholder(fig, "Roofline is not drawn: no calibrated ceiling in these results.")
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("name", ["throughput", "blocks", "float_vs_double"])
def test_throughput_figures_show_only_passed_jobs(results, name):
    # a failed job whose throughput was (wrongly) filled in must still be left out
    tainted = results.copy()
    tainted.loc[tainted["status"] == "failed", "gflops"] = 1e9
    fig = FIGURES[name].plot(tainted, pd.DataFrame())
    try:
        ys = np.concatenate([line.get_ydata() for ax in fig.axes for line in ax.get_lines()])
        ys = ys[np.isfinite(ys)]
        passed = results.loc[results["status"] == "passed", "gflops"] / 1e3  # drawn in TF/s
        assert ys.size > 0
        assert ys.max() <= passed.max() + 1e-9 and ys.min() >= passed.min() - 1e-9
    finally:
        matplotlib.pyplot.close(fig)


def test_throughput_has_a_panel_per_dtype(results):
    fig = FIGURES["throughput"].plot(results, pd.DataFrame())
    try:
        panels = [ax.get_title() for ax in fig.axes]
        assert "float32" in panels and "float64" in panels
    finally:
        matplotlib.pyplot.close(fig)


def test_reference_lines_are_dashed_and_grey(results):
    fig = FIGURES["throughput"].plot(results, pd.DataFrame())
    try:
        lines = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) >= 2]
        colours = {matplotlib.colors.to_hex(ln.get_color()) for ln in lines if ln.get_linestyle() == "--"}
        assert colours and colours <= {"#000000", matplotlib.colors.to_hex("dimgrey")}
        solid = {matplotlib.colors.to_hex(ln.get_color()) for ln in lines if ln.get_linestyle() == "-"}
        assert solid and not solid & colours
    finally:
        matplotlib.pyplot.close(fig)


def test_verification_error_includes_failed_job_and_tolerance(results):
    fig = FIGURES["verification_error"].plot(results, pd.DataFrame())
    try:
        ys = np.concatenate([c.get_offsets()[:, 1] for ax in fig.axes for c in ax.collections])
        assert 0.25 in ys  # the failed job's error
        assert all(ax.get_yscale() == "log" for ax in fig.axes)
        tol_lines = [ln for ax in fig.axes for ln in ax.get_lines() if set(ln.get_ydata()) & set(TOLERANCE.values())]
        assert len(tol_lines) == 2
    finally:
        matplotlib.pyplot.close(fig)


def test_save_figure_writes_png_and_svg(results, tmp_path):
    fig = FIGURES["throughput"].plot(results, pd.DataFrame())
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
def test_figures_survive_sparse_data(two_devices, calibration, subset, name):
    for cal in (calibration, pd.DataFrame(columns=calibration.columns)):
        fig = FIGURES[name].plot(subset(two_devices).reset_index(drop=True), cal)
        try:
            # either the data, or one line saying why there is none: never empty axes
            if _is_placeholder(fig):
                _check_placeholder(fig)
            else:
                _check_figure(fig, name)
        finally:
            matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figures_survive_older_results(results, calibration, name):
    # a results file from before the model, peak, throttling and device columns
    new = [c for c in results if c.startswith(("model_", "gpu_", "env_device", "pct_of_peak", "timing_noise"))]
    fig = FIGURES[name].plot(results.drop(columns=new), calibration)
    try:
        # Figures whose inputs older results still carry must draw them, not a placeholder.
        if name in ("roofline", "devices"):  # need the model and a second device
            _check_placeholder(fig)
        else:
            _check_figure(fig, name)
    finally:
        matplotlib.pyplot.close(fig)


def test_empty_figure_says_so(results):
    # numpy has no block axis, and a run of numpy alone has no naive kernel to compare with
    only_numpy = results[results["method"] == "numpy"].assign(speedup_over_naive=np.nan)
    for name in ("blocks", "speedup", "roofline", "devices", "ladder", "precision"):
        fig = FIGURES[name].plot(only_numpy, make_calibration())
        try:
            _check_placeholder(fig)
            assert FIGURES[name].title.split()[0] in _texts(fig)[0]  # it names the figure it stands for
            assert _drawn_points(fig) == 0
        finally:
            matplotlib.pyplot.close(fig)
    fig = FIGURES["throughput"].plot(only_numpy, pd.DataFrame())
    try:
        _check_figure(fig)
    finally:
        matplotlib.pyplot.close(fig)


def _panel(fig: Figure, title: str):
    hits = [ax for ax in fig.axes if ax.get_title() == title]
    assert len(hits) == 1, f"panel {title!r}: {[ax.get_title() for ax in fig.axes]}"
    return hits[0]


def test_roofline_points_and_roof(results, calibration):
    fig = FIGURES["roofline"].plot(results, calibration)
    try:
        _check_figure(fig, "roofline")
        passed = results[(results["status"] == "passed") & (results["env_device_kind"] == "gpu")]
        for dtype in ("float32", "float64"):
            ax = _panel(fig, f"{GPU} · {dtype}")
            # points: the largest size of each (method, block), at (model intensity, GFLOP/s)
            sub = passed[passed["dtype"] == dtype]
            largest = sub[sub["size"] == sub.groupby(["method", "block"])["size"].transform("max")]
            drawn = np.concatenate([c.get_offsets() for c in ax.collections])
            expected = largest[["model_intensity", "gflops"]].to_numpy() / [1, 1e3]  # TF/s
            assert sorted(map(tuple, drawn.round(6))) == sorted(map(tuple, expected.round(6)))
            assert "numpy" not in set(largest["method"])  # CPU jobs have no place under a GPU roof
            # the roof: min(bandwidth x intensity, peak)
            roofs = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 10]
            assert len(roofs) == 1
            x, y = np.asarray(roofs[0].get_xdata()), np.asarray(roofs[0].get_ydata())
            np.testing.assert_allclose(y, np.minimum(CEILINGS["memory"] * x, CEILINGS[dtype]) / 1e3)
            assert y.max() == pytest.approx(CEILINGS[dtype] / 1e3) and y.min() < CEILINGS[dtype] / 1e4
            labels = " ".join(_texts(fig))
            assert f"{dtype} calibrated {CEILINGS[dtype] / 1e3:.3g} TF/s" in labels and "memory 4 TB/s" in labels
    finally:
        matplotlib.pyplot.close(fig)


def test_roofline_names_its_lines_where_every_point_is_far_below_the_ridge(results, calibration):
    # A study of deep-K shapes with a few rows and columns (64x65536x64: about 16 FLOP/byte in fp32, against a ridge
    # of 12.5 here and of 100 and more in the tensor-core dtypes) draws its panel left of half the ridge: the
    # calibrated peak's name still finds a place (it once had none, and the figures step failed).
    shallow = results.assign(model_intensity=results["model_intensity"] / 1000)
    assert shallow["model_intensity"].max() * 1.5 * 2 < CEILINGS["float64"] / CEILINGS["memory"] / 2  # x_hi, ridge
    fig = FIGURES["roofline"].plot(shallow, calibration)
    try:
        labels = " ".join(_texts(fig))
        for dtype in ("float32", "float64"):
            assert f"{dtype} calibrated {CEILINGS[dtype] / 1e3:.3g} TF/s" in labels
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda df, cal: (df, cal.iloc[0:0]), id="empty-calibration"),
        pytest.param(lambda df, cal: (df, None), id="no-calibration"),
        pytest.param(lambda df, cal: (df.drop(columns=[c for c in df if c.startswith("model_")]), cal), id="no-model"),
    ],
)
def test_roofline_placeholder(results, calibration, change):
    fig = FIGURES["roofline"].plot(*change(results, calibration))
    try:
        _check_placeholder(fig)
        assert _texts(fig)[0].startswith("Roofline is not drawn: ") and _drawn_points(fig) == 0
    finally:
        matplotlib.pyplot.close(fig)


def test_devices_figure_placeholder_for_one_device(results, calibration):
    fig = FIGURES["devices"].plot(results, calibration)
    try:
        _check_placeholder(fig, figures.ONE_DEVICE)
        assert not [p for ax in fig.axes for p in ax.patches if p.get_width() > 0]
    finally:
        matplotlib.pyplot.close(fig)


def test_devices_figure_compares_two_devices(two_devices, calibration):
    fig = FIGURES["devices"].plot(two_devices, calibration)
    try:
        legend = {t.get_text() for lg in fig.legends for t in lg.get_texts()}
        assert {GPU, GPU2} <= legend
        passed = two_devices[(two_devices["status"] == "passed") & (two_devices["env_device_kind"] == "gpu")]
        for dtype in ("float32", "float64"):
            # the largest shape both devices ran in this dtype: 1024x512x2048
            ax = _panel(fig, f"{dtype}, 1024x512x2048")
            at = passed[(passed["dtype"] == dtype) & (passed["shape"] == "1024x512x2048")]
            widths = sorted(p.get_width() for p in ax.patches)
            np.testing.assert_allclose(widths, sorted(at["gflops"] / 1e3))  # TF/s
            assert len(widths) == 2 * at["label"].nunique()
            assert {t.get_text() for t in ax.get_yticklabels()} == set(at["label"])
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("name", ["throughput", "speedup"])
def test_throughput_and_speedup_get_a_row_per_device(two_devices, name):
    data = two_devices.copy()
    if name == "speedup":  # per device, as the collation step makes it
        naive = data[data["method"] == "naive"].groupby(["env_device_name", "dtype", "shape"])["gflops"].max()
        data["speedup_over_naive"] = data["gflops"] / data.set_index(
            ["env_device_name", "dtype", "shape"]).index.map(naive).to_numpy()
        cpu = data["env_device_kind"] == "cpu"
        data.loc[cpu, "speedup_over_naive"] = np.nan
    fig = FIGURES[name].plot(data, pd.DataFrame())
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert sorted(titles) == sorted(f"{d} · {t}" for d in (GPU, GPU2) for t in ("float32", "float64"))
        if name == "throughput":
            for device in (GPU, GPU2):
                own = data[(data["env_device_name"] == device) & (data["status"] == "passed")]["gflops"] / 1e3
                cpu = data[(data["env_device_kind"] == "cpu") & (data["status"] == "passed")]["gflops"] / 1e3
                allowed = set(np.round(pd.concat([own, cpu]), 6))
                for dtype in ("float32", "float64"):
                    ax = _panel(fig, f"{device} · {dtype}")
                    ys = np.concatenate([ln.get_ydata() for ln in ax.get_lines() if len(ln.get_xdata()) >= 2])
                    ys = set(np.round(ys[np.isfinite(ys)], 6))
                    assert ys and ys <= allowed, f"another device's jobs drawn in the {device} panel"
                    # the CPU reference line is drawn in every device's row
                    assert set(np.round(cpu, 6)) & ys
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
        if name == "devices":
            # with one device the comparison has nothing to show: a sentence instead of the figure
            assert uri not in doc
            assert str(escape(figures.ONE_DEVICE)) in figs
            continue
        # The headline figures open the report, beside the answer table; a section's figure stands in its section;
        # the rest are under Figures.
        where = (_section(doc, "answer") if name in report_page.HEADLINE_FIGURES else
                 _section(doc, name) if name in report_page.SECTION_FIGURES else figs)
        assert uri in where, f"figure {name} not embedded"
        assert str(escape(FIGURES[name].caption)) in where
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
    # The answer first (headline table, throughput and ladder figures, the ladder's steps, what bounds each shape,
    # precision and speed, claims), the details next, and the configuration, environment and provenance as an
    # appendix.
    expected = ["summary", "answer", "why", "bound", "precision", "claims", "failed", "throttling", "measurement",
                "figures", "ceilings", "tables"]
    assert ids[: len(expected)] == expected
    assert "devices" not in ids  # one GPU device
    assert ids[-5:] == ["pruned", "configuration", "environment", "provenance", "all-jobs"]
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
    assert f"<td>{report_text.format_float(seconds)}</td>" in jobs
    assert "<td>nan</td>" not in jobs.lower()  # missing values (failed job's GFLOP/s) are blank


def test_long_names_in_table_cells_may_break_after_their_underscores():
    # a configuration or kernel name of three or more parts may wrap, so that it does not widen a job table past
    # the page; shorter names, numbers and prose stay as they are
    df = pd.DataFrame({"variant": ["swap_bn128_promote_cluster1", "bn128_promote"],
                       "label": ["wgmma_warp_specialized", "a b_c_d"], "gflops": [1.5, 2.5]})
    html = str(report_text.html_table(df))
    assert "<td>swap_<wbr>bn128_<wbr>promote_<wbr>cluster1</td>" in html
    assert "<td>wgmma_<wbr>warp_<wbr>specialized</td>" in html
    assert "<td>bn128_promote</td>" in html and "<td>a b_c_d</td>" in html


def test_format_float():
    cases = {12345.678: "12346", 0.00123: "0.001230", 1.5e-7: "1.5e-07", 1e-4: "0.0001", 0.0: "0", np.nan: ""}
    assert {x: report_text.format_float(x) for x in cases} == cases


def _render(results, calibration=None, config=None):
    return report.render_report(results, {}, pd.DataFrame(columns=report.PRUNED_COLUMNS), {}, config or {},
                                calibration=calibration)


def test_report_throttled_jobs(results):
    quiet = _section(_render(results), "throttling")
    assert "No job saw its SM clock below the throttle fraction" in quiet
    assert "warning" not in quiet and "<table" not in quiet
    hot = results.copy()
    bad = hot.index[(hot["label"] == "tiled b16") & (hot["dtype"] == "float64") & (hot["shape"] == "512x512x512")]
    hot.loc[bad, ["gpu_throttled_samples", "gpu_sm_clock_min_sample_mhz"]] = [3, 1485.0]
    section = _section(_render(hot, config={"measurement": {"throttle_fraction": 0.9}}), "throttling")
    assert 'class="warning"' in section and "Throttled jobs" in section and "90%" in section
    assert section.count("<tr") == 2  # header + the one throttled job
    for text in ("tiled b16", "float64", "512x512x512", "3 of 20", "1485 / 1980 (75%)"):
        assert text in section
    assert "No job saw" not in section


def test_report_throttling_needs_the_column(results):
    doc = _render(results.drop(columns=["gpu_throttled_samples"]))
    assert 'id="throttling"' not in doc and "throttle fraction" not in doc


def test_report_measurement_and_missed_noise_target(results):
    meas = _section(_render(results), "measurement")
    assert "hot" in meas and "same buffers" in meas and "1.0%" in meas
    assert "median 0.40%" in meas and "Every job reached the noise target" in meas
    gpu_batches = results.loc[results["env_device_kind"] == "gpu", "timing_launches_per_sample"]
    assert f"batch of {gpu_batches.min()}–{gpu_batches.max()} back-to-back launches" in meas
    assert "holds the stream" in meas and "at least" not in meas
    averaged = _section(_render(results, config={"measurement": {"min_launches_per_sample": 5}}), "measurement")
    assert "Every sample averages at least 5 launches" in averaged
    cpu_only = results[results["env_device_kind"] == "cpu"]
    assert "back-to-back" not in _section(_render(cpu_only), "measurement")
    noisy = results.copy()
    bad = noisy.index[
        (noisy["label"] == "naive b32") & (noisy["dtype"] == "float32") & (noisy["shape"] == "256x256x256")
    ]
    noisy.loc[bad, ["timing_rsd", "timing_reps"]] = [0.05, 200]
    noisy.loc[noisy.index[0], "timing_mode"] = "cold"
    meas = _section(_render(noisy, config={"measurement": {"max_reps": 200, "max_time_s": 3}}), "measurement")
    assert "cold" in meas and "L2" in meas
    assert f"1 of {len(noisy)} jobs missed the noise target" in meas and "worst 5.00%" in meas
    table = meas[meas.index("<table"):]
    assert table.count("<tr") == 2  # header + the one noisy job
    for text in ("naive b32", "float32", "256x256x256", "5.00%", "repetitions"):
        assert text in table


def test_report_claims_section(rendered):
    doc, _ = rendered
    section = _section(doc, "claims")
    assert "Tiled is 5–10× faster than naive" in section and "The GPU is 10–50× faster than the CPU" in section
    assert re.search(r'<td class="verdict \w+">(holds|partly holds|does not hold|not measured)</td>', section)
    # naive 100 vs tiled 400 GFLOP/s (x1.2 for b32 on both): 4x, below the claimed 5-10x
    row = re.search(r"<tr>\s*<td>Tiled is 5–10× faster than naive</td>.*?</tr>", section, re.S).group(0)
    assert '<td class="verdict fails">does not hold</td>' in row and "<td>4.000</td>" in row


def test_report_ceilings(rendered, results):
    doc, _ = rendered
    section = _section(doc, "ceilings")
    assert "GB/s" in section and "<td>50000</td>" in section and "synthetic" in section
    assert 'id="ceilings"' not in _render(results) and 'id="ceilings"' not in _render(results, pd.DataFrame())


def test_report_devices_compared(two_devices, tmp_path):
    cal = make_calibration((GPU, GPU2))
    paths = {}
    for name in ("throughput", "devices"):
        paths[name] = tmp_path / f"{name}.png"
        save_figure(FIGURES[name].plot(two_devices, cal), paths[name], tmp_path / f"{name}.svg")
    doc = report.render_report(two_devices, {}, pd.DataFrame(), paths, {}, calibration=cal)
    section = _section(doc, "devices")
    assert "Devices compared" in section and GPU in section and GPU2 in section
    uri = "data:image/png;base64," + base64.b64encode(paths["devices"].read_bytes()).decode()
    assert uri in section and uri not in _section(doc, "figures")
    assert f"<th>{GPU} GFLOP/s</th>" in section and f"<th>{GPU2} GFLOP/s</th>" in section
    assert f"<th>{GPU2} / {GPU}</th>" in section and "<td>0.5000</td>" in section
    assert "1024x512x2048" in section
    # the claims are checked per device
    claims = _section(doc, "claims")
    assert claims.count(f"<td>{GPU2}</td>") == claims.count(f"<td>{GPU}</td>") > 0


def test_report_provenance(results):
    section = _section(_render(results), "provenance")
    for value in ("abc1234", "cafe0001", "3.11.9", "2.4.6", "2025.1", "13.6.0", "570.00", "12.8", GPU, "Test CPU 9000"):
        assert value in section
    assert "different commits" not in section
    mixed = results.copy()
    mixed.loc[mixed.index[:3], "env_git_commit"] = "def5678"
    section = _section(_render(mixed), "provenance")
    assert "2 different commits" in section and "def5678" in section


def test_report_survives_older_results(results):
    new = [c for c in results if c.startswith(("model_", "gpu_", "pct_of_peak", "timing_noise"))]
    doc = _render(results.drop(columns=new))
    assert 'id="claims"' in doc and 'id="throttling"' not in doc and "missed the noise target" not in doc


def test_the_report_opens_with_the_answer_and_keeps_configuration_for_the_appendix(rendered):
    doc, _ = rendered
    answer = _section(doc, "answer")
    assert "fastest of ours" in answer and "× cuBLAS" in answer and "TF/s" in answer
    order = [doc.index(f'<section id="{name}">') for name in ("summary", "answer", "claims", "figures", "tables",
                                                                "configuration", "environment", "all-jobs")]
    assert order == sorted(order)


def test_report_shows_the_spread_between_gpus_of_one_model():
    from matmul_study.core.records import CALIBRATION_COLUMNS as COLUMNS

    cal = pd.DataFrame([("GPU X", "GPU-aaaa", 0, "float32", 100.0, "GFLOP/s", ""),
                        ("GPU X", "GPU-bbbb", 1, "float32", 104.0, "GFLOP/s", ""),
                        ("GPU X", "GPU-aaaa", 0, "memory", 4000.0, "GB/s", "")], columns=COLUMNS)
    html = str(report_page.ceilings(cal))
    assert "Spread between GPUs of one model" in html and "4.0%" in html and "GPU-bbbb" in html
    one_gpu = str(report_page.ceilings(cal[cal["device_uuid"] == "GPU-aaaa"]))
    assert "Spread" not in one_gpu and "GPU-aaaa" in one_gpu


# ------------------------------------------------------------------ legend, spread, units, datasheet


def test_check_figure_rejects_a_placeholder(results):
    # A figure test must not pass on the figure that says there is no data.
    fig = FIGURES["blocks"].plot(results[results["method"] == "numpy"], None)
    try:
        with pytest.raises(AssertionError):
            _check_figure(fig, "blocks")
        _check_placeholder(fig)
    finally:
        matplotlib.pyplot.close(fig)


def _legend_entries(fig: Figure) -> list[tuple[str, Line2D]]:
    legend = fig.legends[0]
    return [(t.get_text(), h) for t, h in zip(legend.get_texts(), legend.legend_handles)]


def test_throughput_legend_draws_each_method_as_its_line(results):
    fig = FIGURES["throughput"].plot(results, None)
    try:
        entries = dict(_legend_entries(fig))
        drawn = {ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines()}
        # numpy and cuBLAS are drawn dashed, and so is their legend entry; the kernels are solid in both
        for method in ("numpy", "cublas"):
            handle = entries[f"{method} (reference)"]
            assert handle.get_linestyle() == "--"
            assert matplotlib.colors.to_hex(handle.get_color()) in {"#000000", matplotlib.colors.to_hex("dimgrey")}
        for method in ("naive", "tiled"):
            assert entries[method].get_linestyle() == "-"
        # "reference line" is not a block size: the block section lists block sizes only
        labels = [text for text, _ in _legend_entries(fig)]
        assert "reference line" not in labels and "no block axis" not in labels
        block = labels.index("block")
        assert labels[block + 1: block + 3] == ["16", "32"]
        assert drawn  # the lines themselves are there
    finally:
        matplotlib.pyplot.close(fig)


def _noisy(results: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """naive b16 float32 at 512³ with samples spread ±20 % around its median, numpy float64 at 256³ timed in
    three processes whose medians lie 30 % apart."""
    df = results.copy()
    naive = df.index[(df["label"] == "naive b16") & (df["dtype"] == "float32") & (df["shape"] == "512x512x512")][0]
    t = df.at[naive, "timing_median_s"]
    df.at[naive, "timing_times_s"] = ";".join(str(x) for x in (0.8 * t, 0.9 * t, t, 1.1 * t, 1.2 * t))
    numpy = df.index[(df["method"] == "numpy") & (df["dtype"] == "float64") & (df["shape"] == "256x256x256")][0]
    t = df.at[numpy, "timing_median_s"]
    df["cpu_medians_s"] = ""
    df.at[numpy, "cpu_medians_s"] = f"{0.85 * t};{t};{1.15 * t}"
    return df, df.loc[[naive, numpy]]


def test_throughput_draws_the_spread_of_each_point(results):
    df, noisy = _noisy(results)
    fig = FIGURES["throughput"].plot(df, None)
    try:
        assert figures.SPREAD_LABEL in [text for text, _ in _legend_entries(fig)]
        bars = {}
        for ax in fig.axes:
            for coll in ax.collections:
                if coll.get_label() == "_spread":
                    for (x0, y0), (_, y1) in coll.get_segments():
                        bars[(ax.get_title(), round(x0, 6))] = (min(y0, y1), max(y0, y1))
        # the IQR of the five samples: 0.9t and 1.1t, so the rate from r/1.1 to r/0.9
        naive = noisy.iloc[0]
        lo, hi = bars[("float32", round(naive["size"], 6))]
        rate = naive["gflops"] / 1e3
        assert lo == pytest.approx(rate / 1.1) and hi == pytest.approx(rate / 0.9)
        # numpy: the range of its processes' medians
        numpy = noisy.iloc[1]
        lo, hi = bars[("float64", round(numpy["size"], 6))]
        rate = numpy["gflops"] / 1e3
        assert lo == pytest.approx(rate / 1.15) and hi == pytest.approx(rate / 0.85)
        # points whose samples are all equal have no spread to draw
        assert ("float32", 256.0) not in bars
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("name", ["throughput", "blocks", "float_vs_double", "roofline", "devices"])
def test_throughput_figures_are_in_tf_per_s(results, two_devices, calibration, name):
    data = two_devices if name == "devices" else results
    fig = FIGURES[name].plot(data, calibration)
    try:
        _check_figure(fig, name)
        axes = [ax for ax in fig.axes if ax.get_visible()]
        for ax in axes:
            label = ax.get_xlabel() if name == "devices" else ax.get_ylabel()
            assert "TF/s" in label and "GFLOP" not in label
        top = data.loc[data["status"] == "passed", "gflops"].max() / 1e3
        if name == "devices":
            drawn = max(p.get_width() for ax in axes for p in ax.patches)
        elif name == "roofline":
            drawn = max(np.max(c.get_offsets()[:, 1]) for ax in axes for c in ax.collections)
        else:
            drawn = max(np.nanmax(ln.get_ydata()) for ax in axes for ln in ax.get_lines() if len(ln.get_ydata()))
        assert drawn <= top * (1 + 1e-9) and drawn > top / 100  # TF/s, not GFLOP/s
        fig.canvas.draw()
        ticks = [t.get_text() for ax in axes for t in (ax.get_xticklabels() if name == "devices"
                                                        else ax.get_yticklabels())]
        # no tick labels like 100000 (GFLOP/s): no rate reaches 10 000 TF/s
        assert not [t for t in ticks if t.replace(",", "").isdigit() and int(t.replace(",", "")) >= 10000]
    finally:
        matplotlib.pyplot.close(fig)


def test_roofline_draws_the_datasheet_peak_beside_the_calibrated_roof(results, calibration):
    from matmul_study.analysis.ladder import DATASHEET_TFLOPS

    fig = FIGURES["roofline"].plot(results, calibration)  # GPU is an NVIDIA H200: the datasheet knows it
    try:
        assert "datasheet peak" in {t.get_text() for lg in fig.legends for t in lg.get_texts()}
        for dtype in ("float32", "float64"):
            ax = _panel(fig, f"{GPU} · {dtype}")
            peak = DATASHEET_TFLOPS["H200"][dtype]
            flat = [ln for ln in ax.get_lines() if len(set(np.round(ln.get_ydata(), 9))) == 1
                    and np.round(ln.get_ydata()[0], 9) == peak]
            assert len(flat) == 1, "no datasheet line"
            assert f"datasheet {peak:.3g} TF/s" in " ".join(t.get_text() for t in ax.texts)
            roof = max((ln for ln in ax.get_lines() if len(ln.get_xdata()) > 10), key=lambda ln: len(ln.get_xdata()))
            assert max(roof.get_ydata()) == pytest.approx(CEILINGS[dtype] / 1e3)  # the calibrated one stays
            assert ax.get_ylim()[1] > peak
    finally:
        matplotlib.pyplot.close(fig)
    # a device the datasheet table does not know gets no datasheet line
    other = results.assign(env_device_name=results["env_device_name"].replace(GPU, "Some GPU"))
    fig = FIGURES["roofline"].plot(other, make_calibration(("Some GPU",)))
    try:
        assert "datasheet peak" not in {t.get_text() for lg in fig.legends for t in lg.get_texts()}
        assert not [t for ax in fig.axes for t in ax.texts if "datasheet" in t.get_text()]
    finally:
        matplotlib.pyplot.close(fig)


def test_roofline_legend_lists_block_sizes_only_under_block(results, calibration):
    fig = FIGURES["roofline"].plot(results, calibration)
    try:
        labels = [text for text, _ in _legend_entries(fig)]
        assert "reference line" not in labels and "no block axis" not in labels
        block = labels.index("block")
        assert labels[block + 1: block + 3] == ["16", "32"] and labels[block + 3] == "ceiling"
        assert dict(_legend_entries(fig))["cublas"].get_marker() == "s"  # drawn as its points are
    finally:
        matplotlib.pyplot.close(fig)


def test_screenshot_script(rendered, tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "report/screenshot.sh"
    assert script.stat().st_mode & 0o111, "report/screenshot.sh is not executable"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    missing = subprocess.run([str(script), str(tmp_path / "none.html"), str(tmp_path / "x.png")],
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "screenshot.sh:" in missing.stderr
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("no Chromium here")
    html = tmp_path / "report.html"
    html.write_text(rendered[0])
    out = subprocess.run([str(script), str(html), str(tmp_path / "shot.png")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "shot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_cpu_only_report_still_opens_with_the_answer(results):
    cpu_only = results[results["method"] == "numpy"]
    doc = _render(cpu_only)
    answer = _section(doc, "answer")
    # the headline table ranks what ran (numpy) in TF/s; the ratios it cannot have are dashes, said why once
    table = answer[answer.index("<table"):]
    assert "<th>fastest method</th>" in table and "<th>TF/s</th>" in table
    assert "<th>× cuBLAS</th>" in table and "<th>% of datasheet peak</th>" in table
    assert table.count("<td>numpy</td>") == cpu_only["shape"].nunique() * 2
    top = cpu_only.loc[cpu_only["gflops"].idxmax()]
    assert f"<td>{report_text.tf(top['gflops'] / 1e3)}</td>" in table  # TF/s as the text writes it
    assert "<td>—</td>" in table and "cuBLAS was not run" in answer and "datasheet peaks are GPU peaks" in answer
    assert "No verified kernel of ours" not in answer
    # a section with nothing to show says why in one paragraph, without the intro of a table that is not there
    claims = _section(doc, "claims")
    assert claims.count("<p") == 1 and "None of the source study's claims could be checked" in claims


# ----------------------------------------------------------------------------------- headline, why, layout


def test_the_report_opens_with_a_headline_sentence_from_the_data(rendered, results):
    doc, _ = rendered
    summary = _section(doc, "summary")
    match = re.search(r'<p class="headline" id="headline">(.*?)</p>', summary, re.S)
    assert match, "no headline paragraph"
    assert summary.index('class="headline"') < summary.index("This report covers")  # the first words under the title
    import html

    headline = html.unescape(" ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split()))
    # the fastest verified kernel of ours at the largest shape, with its ratio to cuBLAS and the datasheet peak
    ours = results[(results["status"] == "passed") & results["method"].isin(["naive", "tiled"])]
    largest = ours[ours["m"] * ours["k"] * ours["n"] == (ours["m"] * ours["k"] * ours["n"]).max()]
    best = largest.loc[largest["gflops"].idxmax()]
    cublas = results[(results["method"] == "cublas") & (results["dtype"] == best["dtype"])
                     & (results["shape"] == best["shape"])]["gflops"].iloc[0]
    tf = best["gflops"] / 1e3
    assert (f"On this {GPU}, our fastest kernel, {best['label']}, runs {best['dtype']} at {report_text.tf(tf)} TF/s at "
            f"{best['m']}×{best['k']}×{best['n']}: {best['gflops'] / cublas:.2f}× cuBLAS") in headline
    pct = 100 * tf / 66.9  # the H200's float32 datasheet peak
    share = f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"
    assert f"{share} of the datasheet's 66.9 TF/s dense peak" in headline
    other = "float64" if best["dtype"] == "float32" else "float32"
    assert f"At the largest shape of the other element types: {other} " in headline
    # the CPU line in its own sentence, with its threads
    assert "The CPU line (numpy on Test CPU 9000, 1 BLAS thread)" in headline
    # the table under "The answer" names the datasheet peak, not a peak the fastest kernel can pass
    answer = _section(doc, "answer")
    assert "<th>% of datasheet peak</th>" in answer and "% of peak<" not in answer


def test_the_why_section_gives_each_step_its_technique_traffic_and_gain(rendered, results):
    from matmul_study.analysis import why

    doc, _ = rendered
    section = _section(doc, "why")
    assert '<a href="#why">' in _section(doc, "summary")
    steps = why.ladder_steps(results)
    assert not steps.empty
    rows = re.findall(r"<tr>(.*?)</tr>", section[section.index("<tbody>"):], re.S)
    assert len(rows) == len(steps)
    for row, (_, step) in zip(rows, steps.iterrows()):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert cells[0] == step["dtype"]
        assert cells[1] == f"{step['from']} → {step['to']}"
        assert cells[2] == str(escape(why.technique(step["to"].split()[0], step["from"].split()[0])))
        traffic = f"{report_text.tf(step['traffic_from_gb'])} → {report_text.tf(step['traffic_to_gb'])}"
        assert cells[3].startswith(traffic)
        assert cells[5] == f"{report_text.tf(step['tflops_from'])} → {report_text.tf(step['tflops_to'])}"
        assert cells[6] == f"{step['gain']:.2f}×"
    # the traffic the table states is the model's, from the tidy table's columns
    f32 = results[(results["dtype"] == "float32") & (results["shape"] == "1024x512x2048")
                  & (results["label"] == "naive b32")].iloc[0]
    assert steps.iloc[0]["traffic_from_gb"] == pytest.approx(
        (f32["model_bytes_read"] + f32["model_bytes_written"]) / 1e9)
    # one line per element type on the whole climb
    for dtype in steps["dtype"].unique():
        assert re.search(rf"<li>{dtype} at [^<]*: from [^<]* TF/s to [^<]* TF/s \([^)]*×\); the largest single step",
                         section)


def test_the_wide_figures_take_the_content_width_and_the_others_their_drawn_size(rendered):
    doc, paths = rendered
    style = doc[doc.index("<style>"):doc.index("</style>")]
    assert re.search(r"figure img \{[^}]*width: 100%", style)
    assert "max-height" not in style  # no figure is squeezed to a height
    for name in ("throughput", "roofline", "ladder", "precision"):
        tag = re.search(rf'<figure id="figure-{name}">.*?(<img [^>]*>)', doc, re.S).group(1)
        assert "max-width" not in tag, f"{name} should fill the content width"
    for name in ("speedup", "blocks", "verification_error"):
        tag = re.search(rf'<figure id="figure-{name}">.*?(<img [^>]*>)', doc, re.S).group(1)
        from PIL import Image

        with Image.open(paths[name]) as image:
            inches = image.width / image.info["dpi"][0]
        assert f"max-width: {round(inches * report_page.CSS_PX_PER_INCH)}px" in tag


def test_wide_tables_scroll_instead_of_being_cut_off(rendered):
    doc, _ = rendered
    style = doc[doc.index("<style>"):doc.index("</style>")]
    rule = re.search(r"table\.data \{ display: block;[^}]*\}", style)
    assert rule and "overflow-x: auto" in rule.group(0) and "max-width: 100%" in rule.group(0)
    # long column names may wrap after an underscore
    assert "<th>timing_<wbr>median_<wbr>s</th>" in _section(doc, "all-jobs")


def _cpu_study(results: pd.DataFrame, capped: list | None = None) -> pd.DataFrame:
    """The numpy jobs as a CPU-only run measured them: 3 processes of at most 200 repetitions or 1 s each."""
    cpu = results[results["method"] == "numpy"].copy().reset_index(drop=True)
    cpu["pct_of_cublas"] = np.nan  # no cuBLAS in a CPU-only run
    cpu["cpu_processes"] = 3
    cpu["measured_config_measurement_max_reps"] = 200
    cpu["measured_config_measurement_max_time_s"] = 1.0
    cpu["measured_config_measurement_min_reps"] = 5
    cpu["timing_rsd"] = 0.13
    cpu["timing_reps"] = [600, 15] + [40] * (len(cpu) - 2)  # repetitions cap; time cap; time cap
    cpu["timing_total_s"] = [0.4, 12.0] + [3.1] * (len(cpu) - 2)
    if capped is not None:
        cpu["cpu_capped"] = capped
        cpu["cpu_processes_asked"] = 3
        cpu["cpu_max_s"] = 3.0
    return cpu


def test_a_cpu_only_report_says_cpu_and_states_its_caps_as_measured(results):
    cpu = _cpu_study(results)
    # the config asks for other caps than the jobs were measured with: the report states the measured ones
    doc = _render(cpu, config={"measurement": {"max_reps": 999, "max_time_s": 9}})
    assert "<title>CPU matrix-multiplication study</title>" in doc
    assert "<h1>CPU matrix-multiplication study</h1>" in doc and "GPU matrix" not in doc
    assert "On this CPU (Test CPU 9000, 1 BLAS thread), numpy runs float32 at" in _section(doc, "summary")
    meas = _section(doc, "measurement")
    assert "999" not in meas and "9 s" not in meas
    assert "at most 200 repetitions or 1 s of timing" in meas
    assert "up to 600 repetitions and about 3 s of timing in all" in meas
    assert f"All {len(cpu)} jobs missed the noise target" in meas
    assert "stopped at the time cap" in meas and "at the repetition cap" in meas
    table = meas[meas.index("<table"):]
    assert "600 / 3 (3 processes)" in table
    rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>"):], re.S)
    assert [re.findall(r"<td>(.*?)</td>", r)[-1] for r in rows].count("repetitions") == 1
    # no GPU: no GPU sections, and the jobs table leaves out the columns no CPU job has
    assert 'id="throttling"' not in doc and "burst</b> rate" not in doc and 'id="why"' not in doc
    jobs = _section(doc, "all-jobs")
    assert "pct_of_<wbr>cublas" not in jobs and "pct_of_cublas in percent" not in jobs


def test_the_report_names_cpu_jobs_the_time_budget_capped(results):
    no_field = _render(_cpu_study(results))
    assert "were capped" not in no_field and "was capped" not in no_field  # the field is absent: nothing said
    flags = [False] * len(_cpu_study(results))
    flags[2] = True
    cpu = _cpu_study(results, capped=flags)
    cpu.loc[2, ["cpu_processes", "timing_total_s", "timing_reps"]] = [2, 0.5, 12]  # within every cap it knows
    meas = " ".join(_section(_render(cpu), "measurement").split())
    assert f"1 of {len(cpu)} CPU jobs was capped" in meas and "measurement.cpu_max_s" in meas
    budget = meas[meas.index("was capped"):]
    table = budget[budget.index("<table"):budget.index("</table>")]
    assert table.count("<tr") == 2 and cpu.loc[2, "shape"] in table and "2 of 3" in table
    # cpu_capped decides the cap hit: the capped job says time, a job the field clears says none
    missed = meas[meas.index("missed the noise target"):]
    missed = missed[missed.index("<tbody>"):missed.index("</table>")]
    hits = {tuple(re.findall(r"<td>(.*?)</td>", r)[:3]): re.findall(r"<td>(.*?)</td>", r)[-1]
            for r in re.findall(r"<tr>(.*?)</tr>", missed, re.S)}
    key = tuple(cpu.loc[2, ["label", "dtype", "shape"]])
    assert hits[key] == "time"
    assert hits[tuple(cpu.loc[0, ["label", "dtype", "shape"]])] == ""  # 600 repetitions, but the field says no
    assert "Each CPU job has at most 3 s for verifying and timing in all" in meas


LAYOUT_PROBE = """<script>
window.addEventListener('load', () => {
  const box = e => e.getBoundingClientRect();
  const content = box(document.querySelector('#answer'));
  const headline = document.querySelector('#headline');
  const out = {viewport: window.innerWidth, page: document.documentElement.scrollWidth,
    content: [content.left, content.right], headline: headline ? [box(headline).top, headline.textContent] : null,
    why: document.querySelectorAll('#why table.data tbody tr').length,
    figures: Object.fromEntries([...document.querySelectorAll('figure')].map(
      f => [f.id, box(f.querySelector('img')).width])),
    tables: [...document.querySelectorAll('table.data')].map(t => [box(t).right, t.scrollWidth, t.clientWidth,
      getComputedStyle(t).overflowX])};
  const pre = document.createElement('pre'); pre.id = 'layout'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _layout(chromium: str, doc: str, tmp_path, width: int = 1400) -> dict:
    """What headless Chromium (at `chromium`) lays out: the page, the headline, the figures' and the tables' boxes
    (CSS px)."""
    import json
    import subprocess

    page = tmp_path / "probe.html"
    page.write_text(doc.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000",
                          "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="layout">(.*?)</pre>', out.stdout, re.S)
    assert match, out.stderr[-2000:]
    import html

    return json.loads(html.unescape(match.group(1)))


def test_the_report_reads_in_a_browser(chromium, rendered, results, tmp_path):
    """In headless Chromium at 1400 px: the headline on the first screen, the why-table, the wide figures at the
    full content width, and no table past the page's edge (a wide one scrolls inside it). Without a Chromium the
    `chromium` fixture skips it with an install hint, or fails it under MATMUL_STUDY_REQUIRE_CHROMIUM=1
    (tests/conftest.py)."""
    layout = _layout(chromium, rendered[0], tmp_path)
    left, right = layout["content"]
    assert layout["headline"] and 0 < layout["headline"][0] < 300 and "our fastest kernel" in layout["headline"][1]
    assert layout["why"] == len(__import__("matmul_study.analysis.why", fromlist=["x"]).ladder_steps(results))
    for name in ("figure-throughput", "figure-roofline", "figure-ladder"):
        assert layout["figures"][name] == pytest.approx(right - left, abs=2), name
    assert layout["page"] <= layout["viewport"]  # nothing makes the page itself wider than the window
    for table_right, scroll_width, client_width, overflow in layout["tables"]:
        assert table_right <= right + 1 and overflow == "auto"
    # a narrow window: the wide All jobs table scrolls inside the page instead of being cut off
    narrow = _layout(chromium, rendered[0], tmp_path, width=700)
    assert narrow["page"] <= narrow["viewport"]
    assert any(sw > cw for _, sw, cw, _ in narrow["tables"])


def test_a_result_set_renders_again_without_a_gpu(results, calibration, tmp_path):
    """report/rerender.py: a committed result set's report, again, from its tables (here only its numpy jobs)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "report" / "rerender.py"
    spec = importlib.util.spec_from_file_location("rerender", script)
    rerender = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rerender)
    source = tmp_path / "set"
    (source / "tables").mkdir(parents=True)
    (source / "runs").mkdir()
    results.to_csv(source / "tables" / "results.csv", index=False)
    calibration.to_csv(source / "tables" / "calibration.csv", index=False)
    out = tmp_path / "cpu-only"
    assert rerender.main([str(source), "--methods", "numpy", "--set", "dtypes=[float32, float64]", "--out", str(out),
                          "--figures", str(tmp_path / "figures")]) == 0
    doc = (out / "report.html").read_text()
    assert "<h1>CPU matrix-multiplication study</h1>" in doc and 'id="headline"' in doc
    assert (tmp_path / "figures" / "throughput.png").exists() and not (tmp_path / "figures" / "ladder.png").exists()
    assert "The ladder is not drawn" in doc
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        rerender.main([str(source), "--set", "threads"])


# ------------------------------------------------------------------------------ configurations (variants)


def _swept(results: pd.DataFrame, rates: dict[str, float], pick: str = "default") -> pd.DataFrame:
    """`results` plus a sweep of fake_tiles (the variant_method fixture) in float32 at the largest shape."""
    shape = SHAPES[-1]
    rows = [{**_row("fake_tiles", "float32", 0, shape, gflops, 1e-6), "variant": variant, "variant_reason": "swept",
             "variant_pick": pick} for variant, gflops in rates.items()]
    return pd.concat([results.assign(variant="default", variant_reason="the method has one configuration"),
                      pd.DataFrame(rows)], ignore_index=True)


def test_a_plain_run_names_no_configuration(rendered):
    doc, _ = rendered
    assert "<th>configuration</th>" not in _section(doc, "answer") and 'id="regret"' not in doc
    assert "<th>variant</th>" not in _section(doc, "all-jobs")


def test_the_answer_takes_the_fastest_verified_configuration_and_names_it(results, variant_method):
    swept = _swept(results, {"default": 3000.0, "wide": 9000.0, "deep_k": 6000.0})
    doc = _render(swept)
    answer = _section(doc, "answer")
    assert "<th>configuration</th>" in answer
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", answer, re.S)]
    rows = [r for r in rows if r]
    # dtype, shape, fastest of ours, configuration, TF/s, ...
    assert ["float32", "1024x512x2048", "fake_tiles", "wide", "9"] in [r[:5] for r in rows]
    assert {r[3] for r in rows if r[2] != "fake_tiles"} == {"default"}
    assert "our fastest kernel, fake_tiles (wide configuration), runs float32 at 9 TF/s" in _section(doc, "summary")
    # The all-jobs table lists every configuration that ran, and why.
    jobs = _section(doc, "all-jobs")
    assert "<th>variant</th>" in jobs and "<th>variant_<wbr>reason</th>" in jobs
    assert all(f"<td>{v}</td>" in jobs for v in ("default", "wide", "deep_k")) and "<td>swept</td>" in jobs
    # The reason's column may break its identifiers (cluster1_no_streamk) where the page needs the room.
    heads = re.findall(r"<th>(.*?)</th>", jobs)
    column = heads.index("variant_<wbr>reason") + 1
    assert f"#all-jobs table.data td:nth-child({column}) {{\n    overflow-wrap: anywhere;" in doc


def test_the_configuration_regret_states_the_median_and_the_worst(results, variant_method):
    swept = _swept(results, {"default": 3000.0, "wide": 9000.0, "deep_k": 6000.0})
    # A second shape swept, where the heuristic's pick (default) is the fastest.
    smaller = [{**_row("fake_tiles", "float32", 0, SHAPES[0], gflops, 1e-6), "variant": variant,
                "variant_reason": "swept", "variant_pick": "default"}
               for variant, gflops in {"default": 500.0, "wide": 400.0}.items()]
    doc = _render(pd.concat([swept, pd.DataFrame(smaller)], ignore_index=True))
    assert '<a href="#regret">Configuration regret</a>' in doc
    import html

    section = html.unescape(_section(doc, "regret"))
    assert ("Over 2 problems with several configurations measured, the heuristic's pick ran at 0.67× the fastest "
            "configuration at the median and 0.33× at worst (fake_tiles float32 at 1024×512×2048: it picked "
            "default, wide ran fastest); it picked the fastest in 1 of 2.") in section
    assert "<td>0.33</td>" in section and "<td>1.00</td>" in section and "<th>heuristic's pick</th>" in section


def test_a_sweep_is_drawn_and_compared_at_its_fastest_configuration(results, variant_method):
    from matmul_study.analysis import collate

    swept = _swept(results, {"default": 3000.0, "wide": 9000.0, "deep_k": 6000.0})
    fastest = collate.best_variants(swept)
    assert len(fastest) == len(results) + 1 and fastest.loc[fastest.method == "fake_tiles", "variant"].tolist() == [
        "wide"]
    fig = FIGURES["throughput"].plot(fastest, None)
    _check_figure(fig, "throughput")


def test_a_figure_drawn_from_a_results_table_warns_of_no_fragmented_frame(tmp_path):
    # pandas 3 reads the results table into one block per column; the figures add columns to it, and each addition
    # to an unconsolidated frame of that width writes a PerformanceWarning into the figures step's log.
    import warnings

    from matmul_study.pipeline import steps

    reference = Path(__file__).resolve().parents[1] / "results/reference/NVIDIA_H200/tables"
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        steps.write_figure("throughput", reference / "results.csv", [reference / "calibration.csv"],
                           tmp_path / "t.png", tmp_path / "t.svg")
    assert (tmp_path / "t.png").stat().st_size > 0
