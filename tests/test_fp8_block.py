"""FP8 with block scales (float8_e4m3_block, DeepSeek-V3's layout: A one fp32 scale per row and 128 k, B one per
128x128 block): the dtype record and its scale buffer's layout, the block quantization, the host reference of the
dequantized inputs, the block-scaled rung (wgmma_fp8_block: registry entry, builds, ptxas) and the cuBLASLt line's
relay of the scales into cuBLASLt's layouts; all on any CPU (nvcc for the builds). The GPU checks are in
tests/test_gpu_kernels.py (every build on odd shapes, split-K bits, the error against cuBLASLt's) and
tests/test_cublaslt.py (the vendor line on odd shapes)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from matmul_study.analysis.tile_fit import table_ratios
from matmul_study.launch import cublaslt, kernels, launchers
from matmul_study.core import dtypes, registry, specs
from matmul_study.core.backends import CUBLASLT
from matmul_study.core.warp_specialized import SM90_SHARED_BYTES
from matmul_study.measure import inputs
from matmul_study.measure.verify import dequantized, verify_on_host
from matmul_study.pipeline.config import ConfigError, validate
from kernel_builds import rung_build

REPO = Path(__file__).resolve().parent.parent
BLOCK = dtypes.get("float8_e4m3_block")
PER_TENSOR = dtypes.get("float8_e4m3")
NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")
ODD_SHAPES = [(1, 1, 1), (17, 33, 65), (33, 129, 65), (257, 511, 129), (130, 257, 300), (64, 256, 128)]  # (m, k, n)


# ------------------------------------------------------------------------------------------------- the record
def test_record_is_the_e4m3_storage_with_128_blocks_of_scales():
    assert BLOCK.scaled and BLOCK.block_scaled and BLOCK.math == "scaled" and BLOCK.scale_block == 128
    assert not PER_TENSOR.block_scaled and PER_TENSOR.scale_block is None
    for field in ("storage", "c_input", "c_accumulator", "c_output", "tolerance", "cublas_types"):
        assert getattr(BLOCK, field) == getattr(PER_TENSOR, field), field
    assert BLOCK.numpy == np.dtype(ml_dtypes.float8_e4m3fn) and BLOCK.device_view == np.dtype(np.uint8)
    assert "block scales" in BLOCK.description and "1x128" in BLOCK.description
    assert [d.name for d in dtypes.DTYPE_LIST if d.block_scaled] == ["float8_e4m3_block"]
    # It sorts with the per-tensor FP8, the fewest bits first.
    assert dtypes.NAMES[:2] == ("float8_e4m3", "float8_e4m3_block")


def test_scale_buffer_layout_is_a_then_b_each_k_block_major():
    layout = dtypes.block_scale_layout(BLOCK, 3, 300, 130)  # kb = 3, nb = 2
    assert (layout.kb, layout.nb, layout.size) == (3, 2, 3 * 3 + 3 * 2)
    buffer = np.arange(layout.size, dtype=np.float32)
    sa, sb = layout.split(buffer)
    assert sa.shape == (3, 3) and sb.shape == (3, 2)
    assert sa[1, 2] == 1 * 3 + 2 and sb[2, 1] == 9 + 2 * 2 + 1  # sa[q, i] at q m + i, sb[q, j] after sa at q nb + j
    with pytest.raises(ValueError, match="14 values given, the layout holds 15"):
        layout.split(buffer[:-1])
    with pytest.raises(ValueError, match="float8_e4m3 has no block scales"):
        dtypes.block_scale_layout(PER_TENSOR, 3, 300, 130)


# ------------------------------------------------------------------------------------------------- quantization
def expected_scales(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """amax / 448 of each rows x cols block of x (edge blocks as far as x goes), 1 for all-zero blocks; by loops."""
    out = np.empty((-(-x.shape[0] // rows), -(-x.shape[1] // cols)), np.float32)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            amax = np.abs(x[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols]).max()
            out[i, j] = amax / np.float32(448) if amax > 0 else 1.0
    return out


def fp32_draws(m: int, k: int, n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random((m, k), dtype=np.float32) * 10 - 5), (rng.random((k, n), dtype=np.float32) * 10 - 5)


@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_scales_are_each_blocks_amax_over_448_and_land_it_on_448(shape):
    m, k, n = shape
    a, b = fp32_draws(m, k, n)
    ops = inputs.quantize_blocks(a, b, BLOCK)
    sa, sb = dtypes.block_scale_layout(BLOCK, m, k, n).split(ops.scales)
    assert ops.scales.dtype == np.float32 and ops[0].dtype == ops[1].dtype == BLOCK.numpy
    np.testing.assert_array_equal(sa, expected_scales(a, 1, 128).T)
    np.testing.assert_array_equal(sb, expected_scales(b, 128, 128))
    # Each block's largest stored magnitude is 448 (e4m3's largest finite value), and nothing overflows.
    aq, bq = (x.astype(np.float32) for x in ops)
    assert np.isfinite(aq).all() and np.isfinite(bq).all()
    np.testing.assert_array_equal(expected_scales(aq, 1, 128), np.float32(1.0))
    np.testing.assert_array_equal(expected_scales(bq, 128, 128), np.float32(1.0))


@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dequantized_values_are_the_draws_within_e4m3s_rounding(shape):
    m, k, n = shape
    a, b = fp32_draws(m, k, n, seed=11)
    ops = inputs.quantize_blocks(a, b, BLOCK)
    a64, b64 = dequantized(*ops, BLOCK, ops.scales)
    for x, x64, (rows, cols) in ((a, a64, (1, 128)), (b, b64, (128, 128))):
        scale = np.kron(expected_scales(x, rows, cols), np.ones((rows, cols)))[: x.shape[0], : x.shape[1]]
        # 3 mantissa bits: half an ulp is 2^-4 of a normal value; subnormals (below 2^-6) step by 2^-9.
        bound = np.maximum(2.0**-4 * np.abs(x), 2.0**-10 * scale) * (1 + 1e-6)
        assert (np.abs(x64 - x) <= bound).all()


def test_an_all_zero_block_gets_scale_one_and_zeros():
    a, b = fp32_draws(4, 256, 256)
    a[2, 128:] = 0.0  # row 2's second k block of A
    b[:128, 128:] = 0.0  # B's block (0, 1)
    ops = inputs.quantize_blocks(a, b, BLOCK)
    sa, sb = dtypes.block_scale_layout(BLOCK, 4, 256, 256).split(ops.scales)
    assert sa[1, 2] == 1.0 and sb[0, 1] == 1.0
    assert not ops[0].astype(np.float32)[2, 128:].any() and not ops[1].astype(np.float32)[:128, 128:].any()
    assert (sa[0] != 1.0).all() and sb[0, 0] != 1.0


def test_generated_operands_carry_block_scales_and_no_single_factor():
    ops = inputs.generate(200, 300, 100, "float8_e4m3_block", seed=3, low=-5, high=5)
    assert ops.scale_block == 128 and ops.scales.shape == (dtypes.block_scale_layout(BLOCK, 200, 300, 100).size,)
    with pytest.raises(ValueError, match="Operands.scale: block-scaled operands .* have no single factor"):
        ops.scale
    # The quantization error is measured as for per-tensor scales (the dequantized inputs' product against the
    # fp32 draws'), and is of e4m3's size; the record names the block and the scales' range.
    q = ops.quantization
    assert 0.005 < q["rel_fro_error"] < 0.08 and "64 rows" in q["scope"]
    assert q["scale_block"] == 128 and 4.0 / 448 < q["scale_range"][0] <= q["scale_range"][1] <= 5.0 / 448
    again = inputs.generate(200, 300, 100, "float8_e4m3_block", seed=3, low=-5, high=5)
    assert again[0].tobytes() == ops[0].tobytes() and again[1].tobytes() == ops[1].tobytes()
    assert again.scales.tobytes() == ops.scales.tobytes()
    # Per-tensor operands keep their scalar product and their record.
    per_tensor = inputs.generate(200, 300, 100, "float8_e4m3", seed=3, low=-5, high=5)
    assert per_tensor.scale_block is None and per_tensor.scale == pytest.approx(float(np.prod(per_tensor.scales)))
    assert "scale_block" not in per_tensor.quantization and len(per_tensor.quantization["scales"]) == 2


def test_operands_read_back_without_their_dtype_still_know_their_blocks():
    # input_cache rebuilds Operands(a, b, scales, quantization): the quantization record is what says "blocks".
    ops = inputs.generate(64, 256, 128, "float8_e4m3_block", seed=1)
    back = inputs.Operands(*ops, ops.scales, dict(ops.quantization))
    assert back.scale_block == 128
    with pytest.raises(ValueError):
        back.scale


# ------------------------------------------------------------------------------------------------- the reference
def block_gemm(a, b, scales, per_k_block=None) -> np.ndarray:
    """C as the block-scaled kernel computes it: each k block's product of the stored values (fp64 here), weighted
    by sa[row, kb] * sb[kb, col / 128] and summed; per_k_block(q, sa, sb) may change the scales it uses."""
    (m, k), n = a.shape, b.shape[1]
    sa, sb = (s.astype(np.float64) for s in dtypes.block_scale_layout(BLOCK, m, k, n).split(scales))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    c = np.zeros((m, n))
    for q in range(sa.shape[0]):
        wa, wb = (sa[q].copy(), sb[q].copy())
        if per_k_block:
            per_k_block(q, wa, wb)
        partial = a64[:, q * 128:(q + 1) * 128] @ b64[q * 128:(q + 1) * 128]
        c += partial * wa[:, None] * np.repeat(wb, 128)[:n][None, :]
    return c.astype(np.float32)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(64, 256, 128), (33, 300, 200), (257, 511, 129)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_host_reference_passes_the_block_product_and_fails_one_wrong_scale(shape, full):
    m, k, n = shape
    ops = inputs.generate(m, k, n, BLOCK, seed=5)
    a, b = ops
    right = block_gemm(a, b, ops.scales)
    check = verify_on_host(a, b, right, BLOCK, full, 16, 0, block_scales=ops.scales)
    assert check.passed and check.rel_fro_error < 1e-6, check

    def wrong_b(q, wa, wb):  # one 128x128 block of B with its scale doubled
        if q == 1:
            wb[0] *= 2

    def wrong_a(q, wa, wb):  # one row's 1x128 block of A (the first row: in every sample)
        if q == 0:
            wa[0] *= 2

    for wrong in (wrong_b, wrong_a):
        bad = verify_on_host(a, b, block_gemm(a, b, ops.scales, wrong), BLOCK, full, 16, 0, block_scales=ops.scales)
        assert not bad.passed and bad.rel_fro_error > BLOCK.tolerance, (wrong.__name__, bad)


def test_blocks_of_different_magnitude_need_their_own_scales():
    # Uniform draws give every block nearly the same scale; here the k blocks differ 30-fold, and reading the result
    # with one factor (the per-tensor way) fails where the block product passes.
    a, b = fp32_draws(64, 384, 256, seed=3)
    a[:, 128:256] *= 30
    b[256:, :128] /= 30
    ops = inputs.quantize_blocks(a, b, BLOCK)
    sa, sb = dtypes.block_scale_layout(BLOCK, 64, 384, 256).split(ops.scales)
    assert sa[1].min() > 20 * sa[0].max() and sb[0, 0] > 20 * sb[2, 0]
    assert verify_on_host(*ops, block_gemm(*ops, ops.scales), BLOCK, True, 0, 0, block_scales=ops.scales).passed
    stored = ops[0].astype(np.float64) @ ops[1].astype(np.float64)
    single = (stored * float(np.median(sa)) * float(np.median(sb))).astype(np.float32)
    assert not verify_on_host(*ops, single, BLOCK, True, 0, 0, block_scales=ops.scales).passed


def test_the_reference_needs_the_block_scales():
    ops = inputs.generate(8, 8, 8, BLOCK, seed=1)
    with pytest.raises(ValueError, match="float8_e4m3_block: verification needs block_scales"):
        verify_on_host(*ops, np.zeros((8, 8), np.float32), BLOCK, True, 8, 0)


def test_dequantize_blocks_multiplies_each_element_by_its_blocks_scale():
    m, k, n = 5, 300, 260
    rng = np.random.default_rng(2)
    layout = dtypes.block_scale_layout(BLOCK, m, k, n)
    scales = rng.random(layout.size).astype(np.float32) + 0.5
    a, b = rng.random((m, k)), rng.random((k, n))
    a64, b64 = dtypes.dequantize_blocks(a.copy(), b.copy(), scales, BLOCK)
    sa, sb = layout.split(scales)
    for i, kk in ((0, 0), (4, 299), (2, 128), (3, 255)):
        assert a64[i, kk] == a[i, kk] * np.float64(sa[kk // 128, i])
    for kk, j in ((0, 0), (299, 259), (128, 127), (255, 128)):
        assert b64[kk, j] == b[kk, j] * np.float64(sb[kk // 128, j // 128])


# ------------------------------------------------------------------------------------------------- the rung
def block_pick(m: int, n: int, k: int, sm_count: int = 132, variants: tuple[str, ...] | None = None) -> str:
    method = registry.get("wgmma_fp8_block")
    names = tuple(v.name for v in method.variants) if variants is None else variants
    return method.choose(specs.Problem(m, n, k, 0, BLOCK, sm_count=sm_count), names).variant


def test_block_rung_takes_64_row_tiles_where_its_own_fill_at_most_half_the_sms():
    # 128x128 tiles at most half of 132 SMs, 64x128 ones in one wave: 512^3 (16 tiles, 32), 1024^3 (64, 128)
    assert [block_pick(s, s, s) for s in (256, 512, 768, 1024)] == ["bm64"] * 4
    # past half the SMs its own tiles, without a cluster or a stream-K tail up to 8 waves and 24 k steps a tile, in
    # the clusters without the tail beyond (1536^3 bm64 lost, 0.95 to 1.01)
    own = "cluster1_no_streamk"
    assert [block_pick(s, s, s) for s in (1280, 1536, 2048, 3072, 4096, 8192)] == [own] * 4 + ["no_streamk"] * 2
    assert block_pick(1024, 1024, 1024, sm_count=127) == own  # 64 tiles past half of 127 SMs
    assert block_pick(1000, 1000, 1024) == "bm64"  # partial tiles: 64 of 128x128, 128 of 64x128
    # a split where the tiles leave SMs idle and K is deep is kept (64x128 tiles against it: not measured)
    assert block_pick(128, 4096, 7168) == "splitk4" and block_pick(1024, 1024, 8192) == "splitk2"
    # not built, not picked: the clusters without the tail in its place, as past the waves
    assert block_pick(2048, 2048, 2048, variants=("cluster1", "no_streamk")) == "no_streamk"
    assert block_pick(2048, 2048, 2048, variants=("cluster1", "splitk2")) == "default"


def test_block_rung_is_the_promoted_128x128_build_with_block_scaled_builds_only():
    m = registry.get("wgmma_fp8_block")
    assert m.dtypes == ("float8_e4m3_block",) and m.source == "17_wgmma_fp8_block.cu" and m.default_study
    # Its record is wgmma_fp8's bn128_promote build's with a scale ring (every definition comes from it, none from
    # the method), at the same stage count: the ring fits beside the six stages.
    promoted = registry.get("wgmma_fp8").variant("bn128_promote")
    assert m.config == replace(promoted.config, scale_slots=3) and m.compile_options == ()
    assert m.config.stage_count == promoted.config.stage_count == 6
    assert m.config.shared_bytes == promoted.config.shared_bytes + 3 * ((128 + 4) * 4 + 16) <= SM90_SHARED_BYTES
    assert m.tile(0, "float8_e4m3_block") == promoted.tile(0, "float8_e4m3")
    assert m.unmet_requirement((8, 9), lambda name: True) is not None  # sm_90a only
    assert {v.name for v in m.variants} == {"cluster1", "no_streamk", "cluster1_no_streamk", "splitk2", "splitk4",
                                            "splitk8", "bm64", "bm64_splitk2", "bm64_splitk4", "bm64_splitk8"}
    # 64-row tiles for small squares, without a cluster (the heuristic's below)
    for v in (v for v in m.variants if v.name.startswith("bm64")):
        assert (v.config.BM, v.config.cluster, v.config.k_groups) == (64, 1, 1), v.name
    for v in m.variants:  # a variant never changes the tile's columns, promotion or the scales: the method's
        assert (v.config.bn, v.config.bk, v.config.promote, v.config.scale_slots) == (
            m.config.bn, m.config.bk, True, m.config.scale_slots), v.name
    launch = m.launch_for(specs.Problem(512, 512, 512, 0, BLOCK))
    assert launch.grid == (16, 1, 1) and launch.cluster == (2, 1, 1)
    per_tensor = registry.get("wgmma_fp8").launch_for(specs.Problem(512, 512, 512, 0, PER_TENSOR), "bn128_promote")
    assert launch == replace(per_tensor, shared_bytes=m.config.shared_bytes)
    assert m.launch_for(specs.Problem(512, 512, 512, 0, BLOCK), "cluster1").cluster == (1, 1, 1)
    split = m.variant("splitk4")
    assert split.config == replace(m.config, split_k=4)
    tile_bytes = m.config.BM * m.config.bn * 4  # a partial tile of fp32 accumulators
    assert split.workspace(specs.Problem(300, 520, 8193, 0, BLOCK)) == 4 * 5 * (4 * tile_bytes + 4)
    # The heuristic splits deep K over few tiles and keeps whole tiles where they fill the GPU: without a cluster (and
    # without a stream-K tail) up to 8 waves of them and 24 k steps a tile, with the 2-CTA clusters past that.
    names = tuple(v.name for v in m.variants)
    assert m.choose(specs.Problem(512, 512, 8192, 0, BLOCK), names).variant == "splitk8"
    for size, pick in ((2048, "cluster1_no_streamk"), (4096, "no_streamk"), (8192, "no_streamk")):
        choice = m.choose(specs.Problem(size, size, size, 0, BLOCK), names)
        assert choice.variant == pick and (pick == "no_streamk") == ("without a cluster" not in choice.reason), size
    assert m.choose(specs.Problem(4096, 4096, 4096, 0, BLOCK), ("splitk2",)).variant == "default"


@pytest.mark.parametrize("variant, expected", [(None, ("scales",)), ("splitk4", ("workspace", "scales"))])
def test_the_block_rung_takes_its_scales_after_a_workspace_or_null(variant, expected):
    assert kernels.trailing_arguments("wgmma_fp8_block", "float8_e4m3_block", variant) == expected
    wrapper = kernels.wrapper("wgmma_fp8_block", "float8_e4m3_block", 0, variant)
    assert "wgmma_fp8_block_matmul<__nv_fp8_e4m3>" in wrapper
    assert ("C, m, n, k, workspace, scales);" if variant else "C, m, n, k, nullptr, scales);") in wrapper


def test_every_tensor_map_rung_has_an_element_type_for_each_of_its_dtypes():
    # The launcher encodes the tensor maps by the job's dtype name: e4m3 bytes travel as UINT8 either way.
    for name in registry.compiled_methods():
        m = registry.get(name)
        if m.tensor_maps:
            assert set(m.dtypes) <= set(launchers.TMA_DATA_TYPES), name
    assert launchers.TMA_DATA_TYPES["float8_e4m3_block"] == launchers.TMA_DATA_TYPES["float8_e4m3"]


def test_cublaslt_is_the_vendor_line_of_both_fp8_dtypes():
    lt = registry.get("cublaslt")
    assert lt.dtypes == ("float8_e4m3", "float8_e4m3_block") and lt.backend is CUBLASLT
    assert registry.vendor_method("float8_e4m3_block") == "cublaslt"
    assert set(cublaslt.INPUT_TYPES) == set(lt.dtypes)


def test_config_takes_the_dtype_and_its_jobs():
    from matmul_study.pipeline import grid

    config = validate({"dtypes": ["float8_e4m3_block"], "methods": ["wgmma_fp8_block", "cublaslt"],
                       "sizes": [4096, {"m": 17, "k": 33, "n": 65}]})
    assert config["dtypes"] == ["float8_e4m3_block"]
    jobs, _ = grid.build(config, have_module=lambda module: True)
    assert set(jobs.method) == {"wgmma_fp8_block", "cublaslt"} and set(jobs.dtype) == {"float8_e4m3_block"}
    with pytest.raises(ConfigError, match="one of float8_e4m3, float8_e4m3_block, float16"):
        validate({"dtypes": ["float8_block"]})
    # The default study's time is budgeted: the dtype is not in its defaults.
    assert "float8_e4m3_block" not in validate({})["dtypes"]


# ------------------------------------------------------------------------------------------------- builds
def block_build(variant: str | None, tmp_path, target: str, extra: tuple[str, ...] = (),
                options: list[str] | None = None) -> tuple[int, str, str]:
    """The block rung's `variant` compiled to `target` ("ptx" or "cubin"): (nvcc's status, the PTX or "", its
    messages); `options` replace the build's own."""
    return rung_build("wgmma_fp8_block", "float8_e4m3_block", variant, tmp_path, target, extra, options)


@needs_nvcc
def test_each_step_is_weighted_by_three_scales_as_it_is_promoted(tmp_path):
    status, ptx, messages = block_build(None, tmp_path, "ptx")
    assert status == 0, messages
    assert "m64n128k32.f32.e4m3.e4m3" in ptx and "m64n256k32" not in ptx
    # A chain of 8 steps and a remainder step: 9 steps of 4 wgmmas, each partial's 64 accumulators added with an
    # FFMA (no FADD: the per-tensor build's add), and per step two rows' A scales and one B scale read from the scale
    # ring in shared memory, whose slot the thread then frees; no consumer loads a scale from global memory.
    assert ptx.count("mma_async.sync.aligned.m64n128k32") == 9 * 4
    assert len(re.findall(r"^\s*fma\.rn\.f32", ptx, re.MULTILINE)) == 9 * 64
    assert len(re.findall(r"^\s*add\.f32", ptx, re.MULTILINE)) == 0
    assert ptx.count("ld.shared.f32") == 9 * 3 and "ld.global.nc.f32" not in ptx
    # The loader warp copies a step's 128 rows (4 per lane) and the B scale, then arrives as its copies land (in each
    # copy of its k loop that the compiler unrolls).
    arrivals = ptx.count("cp.async.mbarrier.arrive.noinc.shared::cta.b64")
    assert arrivals >= 1 and ptx.count("cp.async.ca.shared.global") == (128 // 32 + 1) * arrivals


@needs_nvcc
@pytest.mark.parametrize("variant", [None, *(v.name for v in registry.get("wgmma_fp8_block").variants)])
def test_every_block_build_keeps_its_wgmmas_pipelined_without_spills(variant, tmp_path):
    status, _, report = block_build(variant, tmp_path, "cubin", ("-Xptxas", "-v"))
    assert status == 0, report
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "Potential Performance Loss" not in report, report


@needs_nvcc
@pytest.mark.parametrize("variant", [None, *(v.name for v in registry.get("wgmma_fp8_block").variants)])
def test_registry_launch_matches_the_block_kernels_config(variant, tmp_path):
    m = registry.get("wgmma_fp8_block")
    launch = m.launch_for(specs.Problem(4096, 4096, 4096, 0, BLOCK, 132, specs.shared_opt_in_bytes("sm_90a")), variant)
    tile_m, tile_n, _ = (m.variant(variant).tile or m.tile)(0, "float8_e4m3_block")
    checks = {"LAYOUT_BYTES + wgmma_ws::ALIGN_SLACK": launch.shared_bytes, "THREADS": launch.threads[0],
              "CLUSTER": launch.cluster[0], "BM": tile_m, "BN": tile_n, "SPLIT_K": m.variant(variant).config.split_k,
              "PROMOTE": 1}
    source = f'#include "{m.source}"\n' + "".join(
        f'static_assert(wgmma_ws::{name} == {value}, "{name} is not the registry\'s {value}");\n'
        for name, value in checks.items())
    # Every build has the family's launch bound (384 threads); a 64-row build launches one consumer warpgroup fewer.
    assert m.launch_bounds == (m.config.LAUNCH_THREADS, 1) and launch.persistent and launch.dependent
    assert launch.threads[0] == m.config.LAUNCH_THREADS - 128 * (tile_m == 64)
    result = kernels.compile_with_nvcc(source, "sm_90a", tmp_path, kernels.compile_options("wgmma_fp8_block", variant))
    assert result.returncode == 0, result.stderr


@needs_nvcc
@pytest.mark.parametrize("moved, message", [
    ({"promote": False}, "block scales (wgmma_fp8_block) need WGMMA_WS_PROMOTE=1"),
    ({"bn": 256}, "a tile one 128-column block of B's scales"),
    ({"bn": 256, "promote": False}, "block scales (wgmma_fp8_block) need WGMMA_WS_PROMOTE=1"),
    ({"scale_slots": 0}, "block scales (wgmma_fp8_block) need WGMMA_WS_SCALE_SLOTS of at least 2"),
    ({"scale_slots": 1}, "WGMMA_WS_SCALE_SLOTS: 0 (none), or a ring of at least 2"),
])
def test_a_block_build_without_promotion_a_scale_ring_or_at_128x256_tiles_does_not_compile(moved, message, tmp_path):
    # The rung's record with promotion or the tile width moved (its shared memory follows the tile).
    config = replace(registry.get("wgmma_fp8_block").config, stages=None, **moved)
    options = [*kernels.COMPILE_OPTIONS, *(f"-D{d}" for d in config.defines)]
    status, _, messages = block_build(None, tmp_path, "cubin", options=options)
    assert status != 0 and message in messages, messages


# ------------------------------------------------------------------------------------------------- cuBLASLt
def cublaslt_offsets(m: int, k: int, n: int, m_padded: int) -> tuple[dict, dict]:
    """Where cuBLASLt reads each scale (BLOCK_SCALE_MODES): A's (q, i) in the VEC128 tensor of cuBLAS's B and B's
    (q, j) in the BLK128x128 tensor of cuBLAS's A, as flat indices."""
    kb, nb = -(-k // 128), -(-n // 128)
    vec = {(q, i): i + q * (-(-m_padded // 4) * 4) for q in range(kb) for i in range(m)}
    blk = {(q, j): q + j * (-(-kb // 4) * 4) for q in range(kb) for j in range(nb)}
    return vec, blk


@pytest.mark.parametrize("shape", ODD_SHAPES + [(513, 1000, 384), (4, 1024, 256)], ids=lambda s: "x".join(map(str, s)))
def test_the_scales_are_relaid_into_cublaslts_layouts(shape):
    m, k, n = shape
    layout = dtypes.block_scale_layout(BLOCK, m, k, n)
    scales = np.arange(1, layout.size + 1, dtype=np.float32)  # every scale distinct
    sa, sb = layout.split(scales)
    m_padded = -(-m // cublaslt.BLOCK_M_ALIGNMENT) * cublaslt.BLOCK_M_ALIGNMENT
    vec, blk = cublaslt.block_scales_for_cublaslt(scales, BLOCK, m, n, k, m_padded)
    assert vec.dtype == blk.dtype == np.float32 and vec.flags.c_contiguous and blk.flags.c_contiguous
    at_vec, at_blk = cublaslt_offsets(m, k, n, m_padded)
    assert all(vec.ravel()[at] == sa[q, i] for (q, i), at in at_vec.items())
    assert all(blk.ravel()[at] == sb[q, j] for (q, j), at in at_blk.items())
    # Everything else is padding (ones: it scales zeros), and the tensors are as large as cuBLASLt reads them.
    assert vec.size == layout.kb * m_padded and blk.size == layout.nb * (-(-layout.kb // 4) * 4)
    assert (np.delete(vec.ravel(), list(at_vec.values())) == 1).all()
    assert (np.delete(blk.ravel(), list(at_blk.values())) == 1).all()


def test_block_scaled_calls_pad_m_to_4_and_k_to_whole_scale_blocks():
    assert cublaslt.padded(33, 65, cublaslt.BLOCK_K_ALIGNMENT) == (36, 128)
    assert cublaslt.padded(4096, 8192, cublaslt.BLOCK_K_ALIGNMENT) == (4096, 8192)
    assert cublaslt.padded(33, 65) == (36, 80)  # per-tensor: k to 16, as measured
    assert cublaslt.BLOCK_SCALE_MODES == {"A": "BLK128x128_32F", "B": "VEC128_32F"}


def lt_method() -> specs.Method:
    return specs.Method("cublaslt", "test", ("float8_e4m3", "float8_e4m3_block"), backend=CUBLASLT,
                           reference_line=True, variants=(specs.Variant("fast_accum"),))


def test_the_launcher_refuses_fast_accumulation_and_missing_block_scales_before_any_library():
    # This CPU environment has no nvmath: getting past a check would raise ImportError instead.
    p = specs.Problem(64, 64, 64, 0, BLOCK)
    with pytest.raises(ValueError, match="variant 'fast_accum' is for per-tensor scales; float8_e4m3_block runs the "
                                         "default build only"):
        launchers.make(lt_method(), p, launchers.DeviceBuffers(None, None, None, object()), None, "fast_accum")
    with pytest.raises(ValueError, match=r"needs its block scales \(dtypes.block_scale_layout\) on the device"):
        cublaslt.cublaslt(lt_method(), p, launchers.DeviceBuffers(None, None, None), None)


def test_the_block_rung_runs_its_clusters_without_the_tail_past_24_k_steps_a_tile():
    # configs.BLOCK_LONG_TILES and BLOCK_CLUSTERS against the committed runs on H100s and an H200: wherever two of the
    # rung's whole-tile builds ran 2 % apart, the rule takes the faster of them. Up to 24 k steps a tile (and 8
    # waves) the tiles without a cluster or a tail; past that, and past 8 waves, the 2-CTA clusters without the
    # stream-K tail, never the default build with it.
    method = registry.get("wgmma_fp8_block")
    names = tuple(v.name for v in method.variants)
    runs = [*sorted((REPO / "results/reference/NVIDIA_H100/fp8-block-waves").glob("block-waves-*.txt")),
            *sorted((REPO / "results/reference/NVIDIA_H100/fp8-block-no-streamk").glob("*.txt")),
            *sorted((REPO / "results/reference/NVIDIA_H200/fp8-block-no-streamk").glob("*.txt"))]
    whole = ("default", "no_streamk", "cluster1_no_streamk")
    decided = 0
    for (name, _, shape), builds in table_ratios(runs).items():
        m, n, k = map(int, shape.split("x"))
        if name != method.name or 2 * (m // 128) * (n // 128) <= 132:  # (the 64-row tiles' own rule)
            continue
        pick = method.choose(specs.Problem(m, n, k, 0, BLOCK, sm_count=132), names)
        assert pick.variant in whole, (shape, pick)
        for other in whole:
            if other in builds and pick.variant in builds and builds[other] > 1.02 * builds[pick.variant]:
                raise AssertionError((shape, pick.variant, builds))
            decided += other in builds and other != pick.variant
    assert decided >= 30, decided
    # the card's bandwidth plays no part: an H100's, an H200's, or none known
    for hbm in (2 * 2619e6 * 5120 / 8, 2 * 3201e6 * 6144 / 8, None):
        chosen = method.choose(specs.Problem(4096, 4096, 4096, 0, BLOCK, sm_count=132, hbm_bytes_per_s=hbm), names)
        assert chosen.variant == "no_streamk" and "32 k steps a tile are more than 24" in chosen.reason, hbm
        assert "without the stream-K tail" in chosen.reason
        for size, pick in ((3072, "cluster1_no_streamk"), (8192, "no_streamk")):
            problem = specs.Problem(size, size, size, 0, BLOCK, sm_count=132, hbm_bytes_per_s=hbm)
            assert method.choose(problem, names).variant == pick, (hbm, size)
