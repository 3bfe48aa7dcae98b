"""What precision costs: the precision table, its figure and the report's section, on synthetic results (no GPU)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from matmul_study.analysis import ladder
from matmul_study.analysis.precision import comparisons, precision_table
from matmul_study.core import dtypes, registry, specs
from matmul_study.core.backends import CUBLAS
from matmul_study.present import figures, report
from matmul_study.present.figures.style import dtype_palette

H200 = "NVIDIA H200"
BIG = 8192


def job(method, dtype, gflops, error, size=BIG, shape=None, status="passed", quantization=np.nan, device=H200):
    m, k, n = shape or (size, size, size)
    cpu = method == "numpy"
    return {"method": method, "label": method, "dtype": dtype, "block": 0, "variant": "default", "m": m, "k": k,
            "n": n, "shape": f"{m}x{k}x{n}", "size": float(np.cbrt(m * k * n)), "status": status,
            "gflops": gflops, "verification_rel_fro_error": error, "quantization_rel_fro_error": quantization,
            "env_device_kind": "cpu" if cpu else "gpu", "env_device_name": "Test CPU" if cpu else device,
            "env_host": "node-01"}


@pytest.fixture(autouse=True)
def cublaslt(monkeypatch):
    """FP8's vendor line, cuBLASLt: a reference-line GPU method of float8_e4m3 (a stand-in where the registry has
    none yet)."""
    if "cublaslt" not in registry.METHODS:
        monkeypatch.setitem(registry.METHODS, "cublaslt", specs.Method(
            "cublaslt", "FP8 GEMM through cuBLASLt (test stand-in)", ("float8_e4m3",), backend=CUBLAS,
            reference_line=True))


def study() -> pd.DataFrame:
    """Every element type at 8192³ (H200-like rates and errors), smaller and larger non-square shapes around it,
    a failed kernel that would have been the fastest, and the CPU line."""
    return pd.DataFrame([
        job("wgmma_fp8", "float8_e4m3", 1210e3, 3.1e-5, quantization=2.9e-2),
        job("cublaslt", "float8_e4m3", 1250e3, 2.8e-5, quantization=2.9e-2),
        job("wgmma_fp8", "float8_e4m3", 1300e3, 3.0e-5, size=4096, quantization=2.9e-2),
        job("wgmma_warp_specialized", "float16", 745e3, 9.6e-6),
        job("mma_async_copy", "float16", 476e3, 9.7e-6),
        job("cublas", "float16", 732e3, 9.7e-6),
        # more work than 8192³, but not square: the comparison stays at the largest square shape
        job("wgmma_warp_specialized", "float16", 760e3, 9.0e-6, shape=(16384, 8192, 8192)),
        job("cublas", "float16", 750e3, 9.0e-6, shape=(16384, 8192, 8192)),
        job("wgmma_int8", "int8", 1420e3, 0.0), job("cublas", "int8", 1390e3, 0.0),
        job("wgmma_tf32", "tf32", 391e3, 3.1e-4), job("cublas", "tf32", 402e3, 3.1e-4),
        job("wgmma_3xtf32", "float32", 130e3, 1.2e-6), job("warptiled", "float32", 49e3, 1.6e-6),
        job("cublas", "float32", 51e3, 1.6e-6),
        # wrong and "fast": never in the table
        job("register_tiled", "float32", 900e3, 0.3, status="failed"),
        job("dmma", "float64", 59.2e3, 0.0), job("cublas", "float64", 60.3e3, 3.1e-15),
        job("numpy", "float32", 0.2e3, 4e-7), job("numpy", "float64", 0.1e3, 0.0),
    ])


def row(table: pd.DataFrame, dtype: str, vendor: bool) -> pd.Series:
    """The vendor's row, or the fastest of ours (ours come fastest first)."""
    hit = table[(table["dtype"] == dtype) & (table["vendor"] == vendor)]
    assert len(hit) >= 1 and (len(hit) == 1 or not vendor), f"{dtype} vendor={vendor}: {len(hit)} rows"
    return hit.iloc[0]


def test_the_two_fastest_of_ours_and_the_vendor_at_the_largest_square_shape():
    table = precision_table(study())
    assert set(table["shape"]) == {f"{BIG}x{BIG}x{BIG}"}
    # the records' display order (a dtype they do not know last), ours (fastest first) before the vendor
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    ran = sorted(set(table["dtype"]), key=lambda d: (rank.get(d, len(rank)), d))
    assert list(dict.fromkeys(table["dtype"])) == ran
    for dtype, part in table.groupby("dtype"):
        assert list(part["vendor"]) == [False] * (len(part) - 1) + [True]
    ours = table[~table["vendor"]]
    # fp16's SIMT-free second rung and fp32's two kinds (tensor-core 3xTF32, SIMT warptiled) both show
    assert list(ours.loc[ours["dtype"] == "float16", "method"]) == ["wgmma_warp_specialized", "mma_async_copy"]
    assert list(ours.loc[ours["dtype"] == "float32", "method"]) == ["wgmma_3xtf32", "warptiled"]
    assert list(ours.loc[ours["dtype"] == "tf32", "method"]) == ["wgmma_tf32"]
    f16 = row(table, "float16", vendor=False)
    assert f16["method"] == "wgmma_warp_specialized" and f16["tflops"] == pytest.approx(745)
    assert f16["vs_vendor"] == pytest.approx(745 / 732)
    assert f16["rel_error"] == pytest.approx(9.6e-6) and f16["vendor_rel_error"] == pytest.approx(9.7e-6)
    assert f16["datasheet_tflops"] == pytest.approx(989.4)
    vendor = row(table, "float16", vendor=True)
    assert vendor["method"] == "cublas" and vendor["vs_vendor"] == pytest.approx(1.0)
    # FP8 against cuBLASLt, at 8192³ though wgmma_fp8 ran faster at 4096³
    fp8 = row(table, "float8_e4m3", vendor=False)
    assert fp8["vendor_method"] == "cublaslt" and fp8["tflops"] == pytest.approx(1210)
    assert fp8["vs_vendor"] == pytest.approx(1210 / 1250) and fp8["datasheet_tflops"] == pytest.approx(1978.9)
    assert row(table, "int8", vendor=False)["rel_error"] == 0


def test_a_failed_job_and_the_cpu_line_never_enter():
    table = precision_table(study())
    assert "register_tiled" not in set(table["method"]) and "numpy" not in set(table["method"])
    # the verified fastest of ours instead
    assert row(table, "float32", vendor=False)["method"] == "wgmma_3xtf32"
    only_failed = study().assign(status="failed")
    assert precision_table(only_failed).empty
    assert precision_table(study()[study()["method"] == "numpy"]).empty


def test_without_a_square_shape_the_largest_one_is_taken():
    skinny = pd.DataFrame([job("wgmma_warp_specialized", "float16", 600e3, 1e-5, shape=(4096, 8192, 1024)),
                           job("wgmma_warp_specialized", "float16", 700e3, 1e-5, shape=(8192, 8192, 1024)),
                           job("cublas", "float16", 650e3, 1e-5, shape=(8192, 8192, 1024))])
    table = precision_table(skinny)
    assert set(table["shape"]) == {"8192x8192x1024"} and len(table) == 2


def test_the_quantization_column_is_optional_and_a_dtype_without_a_vendor_keeps_its_row():
    results = study().drop(columns="quantization_rel_fro_error")
    table = precision_table(results)
    assert table["quantization_rel_error"].isna().all() and not table.empty
    with_it = precision_table(study())
    assert set(with_it.loc[with_it["quantization_rel_error"].notna(), "dtype"]) == {"float8_e4m3"}
    # int32 has no vendor library: our row stays, its vendor columns empty
    simt = precision_table(pd.DataFrame([job("warptiled", "int32", 20e3, 0.0)]))
    assert len(simt) == 1 and simt["vendor_method"].iloc[0] == "" and np.isnan(simt["vs_vendor"].iloc[0])


def test_a_dtype_the_records_do_not_know_sorts_last():
    results = pd.concat([study(), pd.DataFrame([job("wgmma_fp4", "float4_e2m1", 2500e3, 1e-1)])], ignore_index=True)
    assert precision_table(results)["dtype"].iloc[-1] == "float4_e2m1"


def test_comparisons_set_each_dtype_against_the_more_precise_one_it_stands_in_for():
    got = comparisons(precision_table(study())).set_index("dtype")
    assert list(got.index) == ["float8_e4m3", "int8", "tf32", "float32"]
    fp8 = got.loc["float8_e4m3"]
    # the fastest point of each (cuBLASLt for fp8, ours for fp16)
    assert fp8["against"] == "float16" and fp8["rate_ratio"] == pytest.approx(1250 / 745)
    assert fp8["error_ratio"] == pytest.approx(2.8e-5 / 9.6e-6) and fp8["quantization_rel_error"] == 2.9e-2
    assert got.loc["int8", "error_ratio"] == 0
    assert got.loc["float32", "against"] == "float64" and got.loc["float32", "rate_ratio"] == pytest.approx(130 / 60.3)


def test_the_datasheet_knows_fp8():
    assert ladder.datasheet_tflops(H200, "float8_e4m3") == pytest.approx(1978.9)
    assert ladder.datasheet_tflops("NVIDIA H100 80GB HBM3", "float8_e4m3") == pytest.approx(1978.9)


def test_the_ladder_measures_fp8_against_cublaslt():
    table = ladder.ladder_table(study())
    fp8 = table[(table["dtype"] == "float8_e4m3") & (table["method"] == "wgmma_fp8")]
    assert fp8["vs_cublas"].iloc[0] == pytest.approx(1210 / 1250)


# ----------------------------------------------------------------------------------------------------- figure


def _draw(results: pd.DataFrame) -> Figure:
    return figures.FIGURES["precision"].plot(results, None)


def test_the_figure_sets_each_point_at_its_rate_and_error_with_the_datasheet_lines(tmp_path):
    fig = _draw(study())
    try:
        assert fig.get_label() != figures.PLACEHOLDER
        (ax,) = [a for a in fig.axes if a.get_visible()]
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        points = np.concatenate([c.get_offsets() for c in ax.collections
                                 if isinstance(c, matplotlib.collections.PathCollection)])
        table = precision_table(study())
        floor = 3.1e-16  # a tenth of the smallest positive error (cuBLAS fp64's 3.1e-15)
        for _, r in table.iterrows():
            y = r["rel_error"] if r["rel_error"] > 0 else None
            hits = points[np.isclose(points[:, 0], r["tflops"])]
            assert len(hits), f"{r['dtype']} {r['method']} not drawn"
            if y is None:  # exact: on the floor, below every error
                assert np.isclose(hits[:, 1], floor).any()
            else:
                assert np.isclose(hits[:, 1], y).any()
        # FP8's quantization error above its GEMM's error
        assert np.isclose(points[:, 1], 2.9e-2).sum() == 2
        assert points[:, 1].min() == pytest.approx(floor)
        # one dotted line per datasheet peak, named with the dtypes that share it
        names = {t.get_text() for t in ax.texts}
        assert {"fp8/int8 1979", "fp16 989", "tf32 495", "fp32/fp64 67"} <= names, names
        verticals = {round(ln.get_xdata()[0], 1) for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1}
        assert verticals == {1978.9, 989.4, 494.7, 66.9}
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "float8_e4m3, 8192³" in legend and "ours (the two fastest, verified)" in legend
        vendor = [t for t in legend if t.startswith("vendor (")]
        assert len(vendor) == 1 and set(vendor[0][len("vendor ("):-1].split(", ")) == {"cuBLAS", "cuBLASLt"}
        assert "exact (error 0)" in legend
    finally:
        png, svg = tmp_path / "precision.png", tmp_path / "precision.svg"
        figures.save_figure(fig, png, svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 30_000


def test_shared_peaks_alternate_the_colours_of_their_dtypes():
    fig = _draw(study())
    try:
        ax = fig.axes[0]
        at_67 = [ln for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1 and ln.get_xdata()[0] == 66.9]
        palette = dtype_palette(["float32", "float64"])
        assert {matplotlib.colors.to_hex(ln.get_color()) for ln in at_67} == {
            matplotlib.colors.to_hex(palette["float32"]), matplotlib.colors.to_hex(palette["float64"])}
        assert len({tuple(ln._dash_pattern[1]) for ln in at_67}) == 1
        assert len({ln._dash_pattern[0] for ln in at_67}) == 2  # the same dots, shifted
    finally:
        matplotlib.pyplot.close(fig)


def test_without_gpu_jobs_the_figure_says_so_and_a_cpu_only_run_leaves_it_out():
    cpu = study()[study()["method"] == "numpy"]
    fig = _draw(cpu)
    try:
        assert fig.get_label() == figures.PLACEHOLDER
        assert any("Precision and speed is not drawn" in t.get_text() for t in fig.texts)
    finally:
        matplotlib.pyplot.close(fig)
    assert "precision" in figures.left_out(cpu[["method", "dtype"]])
    assert "precision" not in figures.left_out(study()[["method", "dtype"]])


# ----------------------------------------------------------------------------------------------------- report


def _section(doc: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}".*?</section>', doc, re.S)
    assert match, f"no section {section_id}"
    return match.group(0)


def _render(results: pd.DataFrame, tmp_path) -> str:
    png = tmp_path / "precision.png"
    figures.save_figure(_draw(results), png, tmp_path / "precision.svg")
    pruned = pd.DataFrame(columns=["method", "dtype", "block", "reason"])
    return report.render_report(results, {}, pruned, {"precision": png}, {})


def test_the_report_has_the_section_with_its_figure_table_and_sentences(tmp_path):
    doc = _render(study(), tmp_path)
    section = _section(doc, "precision")
    assert "<h2>Precision and speed</h2>" in section and 'href="#precision"' in doc
    assert '<figure id="figure-precision">' in section and "data:image/png;base64," in section
    assert section.index("<figure") < section.index("<table")
    rows = re.findall(r"<tr>\s*((?:<td>.*?</td>\s*)+)</tr>", section, re.S)
    cells = [re.findall(r"<td>(.*?)</td>", r) for r in rows]
    header = re.findall(r"<th>(.*?)</th>", section)
    assert [h.replace("<wbr>", "") for h in header] == [
        "element type", "shape", "kernel", "TF/s", "× vendor", "rel. error", "vendor's rel. error",
        "quantization error"]
    assert ["float8_e4m3", "8192³", "wgmma_fp8", "1210", "0.97", "3.1e-05", "2.8e-05", "2.9e-02"] in cells
    assert ["float8_e4m3", "8192³", "cublaslt (vendor)", "1250", "—", "2.8e-05", "—", "2.9e-02"] in cells
    assert ["int8", "8192³", "wgmma_int8", "1420", "1.02", "0 (exact)", "0 (exact)", ""] in cells
    assert len(cells) == 14  # six element types, the vendor's and up to two of ours (fp16 and fp32 have two)
    sentences = re.findall(r"<li>(.*?)</li>", section, re.S)
    assert sentences[0] == ("float8_e4m3 runs at 1.68× the rate of float16 (1250 against 745 TF/s, cublaslt against "
                            "wgmma_warp_specialized) at 2.92× its error (2.8e-05 against 9.6e-06); quantizing fp32 "
                            "inputs to float8_e4m3 costs an error of 2.9e-02 of its own.")
    assert sentences[1].startswith("int8 runs at 1.91× the rate of float16") and "exactly (error 0" in sentences[1]
    assert "3.9×10⁸ its error" in sentences[3]


def test_without_quantization_errors_the_column_is_left_out(tmp_path):
    doc = _render(study().drop(columns="quantization_rel_fro_error"), tmp_path)
    assert "<th>quantization error</th>" not in _section(doc, "precision")
    assert not [li for li in re.findall(r"<li>(.*?)</li>", _section(doc, "precision")) if "quantizing" in li]


def test_a_cpu_only_report_has_no_precision_section():
    cpu = study()[study()["method"] == "numpy"]
    doc = report.render_report(cpu, {}, pd.DataFrame(columns=["method", "dtype", "block", "reason"]), {}, {})
    assert 'id="precision"' not in doc and 'href="#precision"' not in doc
