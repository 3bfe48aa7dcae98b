"""The ladder table and figure: each rung at the largest shape, against cuBLAS of the same run and the datasheet."""

import pandas as pd
import pytest

from matmul_study.present.figures import plot_ladder
from matmul_study.analysis.ladder import datasheet_tflops, ladder_table


def rows():
    def row(method, dtype, size, gflops, status="passed"):
        return {"method": method, "dtype": dtype, "m": size, "k": size, "n": size, "shape": f"{size}x{size}x{size}",
                "gflops": gflops, "status": status, "env_device_kind": "gpu", "env_device_name": "NVIDIA H200"}

    return pd.DataFrame([
        row("cublas", "float16", 8192, 700e3), row("wgmma_warp_specialized", "float16", 8192, 714e3),
        row("wgmma_tma", "float16", 8192, 400e3), row("wmma_tiled", "float16", 8192, 900e3, status="failed"),
        row("mma_async_copy", "float16", 8192, 420e3),
        row("wgmma_warp_specialized", "float16", 4096, 1e9),  # a smaller shape never enters the ladder
        row("cublas", "float64", 8192, 60e3), row("dmma", "float64", 8192, 54e3),
    ])


def test_the_ladder_takes_the_largest_shape_in_ladder_order_with_same_run_ratios():
    table = ladder_table(rows())
    f16 = table[table.dtype == "float16"]
    # Registry order, the pre-Hopper mma.sync rung below the wgmma ones whatever its rate; failed left out.
    assert list(f16.method) == ["mma_async_copy", "wgmma_tma", "wgmma_warp_specialized", "cublas"]
    assert set(f16["shape"]) == {"8192x8192x8192"}
    assert f16.set_index("method")["vs_cublas"]["wgmma_warp_specialized"] == pytest.approx(1.02)
    assert table[table.method == "dmma"]["vs_cublas"].iloc[0] == pytest.approx(0.9)
    assert table[table.method == "dmma"]["datasheet_tflops"].iloc[0] == pytest.approx(66.9)


def test_an_unknown_device_has_no_datasheet_line():
    assert datasheet_tflops("NVIDIA H200", "bfloat16") == pytest.approx(989.4)
    assert datasheet_tflops("Some Future GPU", "float16") is None


def test_the_peak_is_of_the_arithmetic_a_kernel_runs():
    # 3xTF32 runs fp32 on the tf32 tensor cores; kernel 18 runs fp32 FMAs on the CUDA cores for 16-bit and tf32
    # inputs, and fp64 ones for fp64: each share of "the peak" is of that arithmetic's.
    assert datasheet_tflops("NVIDIA H200", "float32", "wgmma_3xtf32") == pytest.approx(494.7)
    assert datasheet_tflops("NVIDIA H200", "float16", "few_rows") == pytest.approx(66.9)
    assert datasheet_tflops("NVIDIA H200", "tf32", "few_rows") == pytest.approx(66.9)
    assert datasheet_tflops("NVIDIA H200", "float16", "mma_async_copy") == pytest.approx(989.4)


def test_the_figure_draws_one_panel_per_dtype(tmp_path):
    fig = plot_ladder(rows(), None)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert any("float16" in t for t in titles) and any("float64" in t for t in titles)
    assert len(titles) == 2


def test_the_value_labels_and_legend_keep_clear_of_the_reference_lines():
    import matplotlib.pyplot as plt

    fig = plot_ladder(rows(), None)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in (a for a in fig.axes if a.get_visible()):
            box = ax.get_window_extent(renderer)
            # the cuBLAS and datasheet lines: vertical, across the panel
            lines = [ln for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1]
            xs = [ax.transData.transform((ln.get_xdata()[0], 0))[0] for ln in lines]
            assert len(xs) == 2
            texts = [t for t in ax.texts if t.get_text()]
            values = [t for t in texts if "TF/s" in t.get_text()]
            assert len(values) == len(ax.get_yticks())  # one value label per rung
            for text in texts:
                extent = text.get_window_extent(renderer)
                overlaps_panel = extent.y1 > box.y0 and extent.y0 < box.y1
                for x in xs:
                    assert not (overlaps_panel and extent.x0 < x < extent.x1), \
                        f"{text.get_text()!r} crosses a reference line"
            for text in values:  # in a column right of the panel, outside the bars
                assert text.get_window_extent(renderer).x0 >= box.x1
            # the two line labels sit apart from each other
            tops = [t.get_window_extent(renderer) for t in texts if "TF/s" not in t.get_text()]
            assert len(tops) == 2 and not tops[0].overlaps(tops[1])
        # the legend (the line styles) lies outside every panel
        legend = fig.legends[0].get_window_extent(renderer)
        assert not any(legend.overlaps(a.get_window_extent(renderer)) for a in fig.axes if a.get_visible())
    finally:
        plt.close(fig)
