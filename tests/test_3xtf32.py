"""The 3xTF32 rung (kernels/14_wgmma_3xtf32.cu, method wgmma_3xtf32): the host's sizes of its split operands and of
its pre-pass against the kernel's own (nvcc, no GPU), and on a Hopper GPU the pre-pass's split itself and the
accuracy it buys (fp32's, against plain tf32's).

The rung's results on odd shapes are checked with every other kernel's in tests/test_gpu_kernels.py."""

from __future__ import annotations

import numpy as np
import pytest

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem, cdiv
from matmul_study.core.warp_specialized import split_tf32_columns, split_tf32_kp
from prepass_checks import (assert_both_kernels_wait_before_any_global_access, assert_the_kernel_agrees,
                            needs_nvcc, rung_gpu, run_prepass)

METHOD = "wgmma_3xtf32"
FP32 = dtypes.get("float32")
# (m, n, k): k a multiple of 4 or not, of 32 or not, tiles cut by every edge; 1x1x1.
SHAPES = [(1, 1, 1), (17, 65, 33), (257, 129, 511), (100, 250, 37), (64, 64, 64), (1000, 1200, 4096), (3, 5, 4097)]


@pytest.mark.parametrize("k,split", [(1, 96), (3, 96), (32, 96), (33, 192), (129, 480), (4096, 12288)])
def test_each_block_of_k_is_padded_to_whole_k_steps(k, split):
    # Three blocks for the GEMM's K, two stored: the third reads the big parts again. A block is a whole number of
    # the GEMM's k steps of 32 floats (so no k step straddles two blocks), and its rows a whole number of 16 bytes.
    kp = split_tf32_kp(k)
    assert 3 * kp == split and split_tf32_columns(k) == 2 * kp
    assert kp % 32 == 0 and (kp * FP32.itemsize) % 16 == 0 and k <= kp < k + 32


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_prepass_outputs_are_the_tensor_maps_operands_with_two_blocks_of_k(m, n, k):
    method = registry.get(METHOD)
    p = Problem(m, n, k, 0, FP32)
    shapes = {o.name: o.shape(p) for o in method.prepass.outputs}
    assert shapes == {"A3": (m, split_tf32_columns(k)), "BT3": (n, split_tf32_columns(k))}
    # The GEMM reads nothing but the pre-pass's outputs, and their rows need no padded copy.
    assert {spec.operand for spec in method.tensor_maps} == set(shapes)
    assert all(cols * FP32.itemsize % 16 == 0 for _, cols in shapes.values())


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_prepass_has_one_block_per_32x32_tile_of_a_and_of_b(m, n, k):
    launch = registry.get(METHOD).prepass.launch(Problem(m, n, k, 0, FP32))
    kp = split_tf32_kp(k)
    assert launch.grid == (cdiv(m, 32) * cdiv(kp, 32) + cdiv(kp, 32) * cdiv(n, 32), 1, 1)
    assert launch.threads == (32, 8, 1) and launch.shared_bytes == 0
    # It waits for the previous GEMM before overwriting the buffers that GEMM reads.
    assert launch.dependent and not launch.clustered


@needs_nvcc
def test_the_kernel_agrees_with_the_registry_on_sizes(tmp_path):
    # The kernel computes K' and its tile count itself: a registry that disagreed would size the buffers, the
    # tensor maps or the pre-pass grid for another layout.
    products = registry.get(METHOD).products  # K' = products x the padded k: the model's reads and FLOP too
    checks = [f"static_assert(wgmma_3xtf32::wide_k({k}) == {products * split_tf32_kp(k)}, \"wide_k({k})\");"
              for _, _, k in SHAPES]
    checks += [f"static_assert(wgmma_3xtf32::stored_k({k}) == {split_tf32_columns(k)}, \"stored_k({k})\");"
               for _, _, k in SHAPES]
    for m, n, k in SHAPES:
        blocks = registry.get(METHOD).prepass.launch(Problem(m, n, k, 0, FP32)).grid[0]
        checks.append(f"static_assert(wgmma_3xtf32::prepass_blocks({m}, {n}, {k}) == {blocks}, "
                      f"\"blocks {m}x{n}x{k}\");")
    checks.append(f"static_assert(wgmma_3xtf32::PREPASS_THREADS == {32 * 8}, \"threads\");")
    assert_the_kernel_agrees(METHOD, checks, "static_assert(wgmma_3xtf32::wide_k(1) == 4, \"guard: one block only\");",
                             tmp_path)


@needs_nvcc
def test_the_prepass_and_the_gemm_wait_for_the_previous_grid_before_any_global_access(tmp_path):
    # Both are launched as programmatic dependents: the pre-pass may start while the previous launch's GEMM still
    # reads A3 and BT3, the GEMM while the pre-pass still writes them.
    assert_both_kernels_wait_before_any_global_access(METHOD, "float32", tmp_path)


# ------------------------------------------------------------------------------------------- on a GPU
def tf32_rna(x: np.ndarray) -> np.ndarray:
    """fp32 rounded to tf32 (10 mantissa bits), to nearest with ties away from zero: fp32 is sign-magnitude, so
    adding half of the dropped range to the bits and clearing them rounds the magnitude half away."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.fixture(scope="module")
def gpu():
    """PyCUDA's primary context on a GPU that runs the rung, and its arch."""
    return rung_gpu(METHOD)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(17, 65, 33), (257, 129, 511), (3, 5, 4097)])
def test_the_prepass_splits_each_operand_into_big_and_small_tf32_parts(gpu, tmp_path, m, n, k):
    rng = np.random.default_rng([m, n, k])
    a = (rng.standard_normal((m, k)) * 10.0 ** rng.integers(-6, 7, (m, k))).astype(np.float32)
    a.flat[:4] = [1 + 2.0 ** -11, -(1 + 3 * 2.0 ** -11), 0.0, 2.0 ** -120]  # ties away from zero, zero, tiny
    b = rng.uniform(-5, 5, (k, n)).astype(np.float32)
    kp, width = split_tf32_kp(k), split_tf32_columns(k)
    # every column must be written
    a3, bt3 = run_prepass(gpu, tmp_path, METHOD, "float32", a, b,
                          [np.full((m, width), np.nan, np.float32), np.full((n, width), np.nan, np.float32)])

    def blocks(x):
        return [x[:, i * kp:(i + 1) * kp] for i in range(2)]

    # A3 = [A_big | A_small], BT3 = [B_smallᵀ | B_bigᵀ]: the correction terms first; the GEMM's third block of k
    # steps reads A3's first and BT3's second again.
    for x, out, order in ((a, a3, "bs"), (b.T, bt3, "sb")):
        big = tf32_rna(x)
        small = tf32_rna(x - big)
        expect = {"b": big, "s": small}
        for part, block in zip(order, blocks(out)):
            np.testing.assert_array_equal(block[:, :k], expect[part])
            assert not block[:, k:].any(), "padding columns must be zero"
        assert not (out.view(np.uint32) & np.uint32(0x1FFF)).any(), "a part has bits tf32 does not have"
        recon = big.astype(np.float64) + small.astype(np.float64)
        assert (np.abs(recon - x) <= 2.0 ** -22 * np.abs(x)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", ["2048", "1000x2200x4300"])
def test_3xtf32_error_is_far_below_tf32s_and_the_correction_terms_come_first(gpu, shape):
    # The tensor cores' fp32 accumulation truncates, so the error grows linearly with the k steps taken on the
    # full-size sum: about 2.35e-9 x k on an H200 with the correction terms summed first (only big·big's k / 8
    # steps on the large sum), about 9.5e-9 x k with big·big first. The bound 4e-9 x k tells the two apart.
    # cuBLAS SGEMM's error (IEEE fp32, rounded to nearest) is 6-19x lower on these shapes: printed, not asserted.
    from matmul_study.measure import compare

    bench = compare.Bench()
    case = compare.make_case(METHOD, None, "float32", shape)
    _, check = bench.prepare(case)
    ours, sgemm = check("ours"), check("cublas")
    _, check_tf32 = bench.prepare(compare.make_case("wgmma_tf32", None, "tf32", shape))
    tf32 = check_tf32("ours")
    errors = f"3xTF32 {ours.rel_fro_error:.2e}, SGEMM {sgemm.rel_fro_error:.2e}, tf32 {tf32.rel_fro_error:.2e}"
    print(errors)
    assert ours.passed and sgemm.passed and tf32.passed, errors
    assert ours.rel_fro_error * 20 < tf32.rel_fro_error, errors
    assert ours.rel_fro_error <= 4e-9 * case.k, errors
