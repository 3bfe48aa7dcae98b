"""The tf32 rung's pre-pass (kernels/warp_specialized/transpose_tf32.cuh, wgmma_tf32_transpose): Bᵀ for the GEMM's
K-major second operand. The host's grid and output against the kernel's own (nvcc, no GPU), its waits, and on a
Hopper GPU the transpose itself.

The rung's results on odd shapes, through the launcher that runs this pre-pass, are checked with every other
kernel's in tests/test_gpu_kernels.py."""

from __future__ import annotations

import numpy as np
import pytest

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem, cdiv
from matmul_study.core.warp_specialized import BT_SMEM_SUFFIX, TF32_TRANSPOSE_THREADS, TF32_TRANSPOSE_TILE
from matmul_study.launch.operands import pitch_elements
from prepass_checks import (assert_both_kernels_wait_before_any_global_access, assert_the_kernel_agrees,
                            needs_nvcc, rung_gpu, run_prepass)

METHOD = "wgmma_tf32"
TF32 = dtypes.get("tf32")
# (m, n, k): k and n a multiple of 4, of 64 or not, tiles cut by every edge; 1x1x1.
SHAPES = [(1, 1, 1), (17, 65, 33), (257, 129, 511), (100, 250, 37), (64, 64, 64), (3, 5, 4097), (9, 1, 130)]


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_prepass_writes_the_bt_that_the_gemm_reads(m, n, k):
    method = registry.get(METHOD)
    p = Problem(m, n, k, 0, TF32)
    assert {o.name: o.shape(p) for o in method.prepass.outputs} == {"BT": (n, k)}
    assert [spec.operand for spec in method.tensor_maps] == ["A", "BT"]
    launch = method.prepass.launch(p)
    assert launch.grid == (max(1, cdiv(n, TF32_TRANSPOSE_TILE)), max(1, cdiv(k, TF32_TRANSPOSE_TILE)), 1)
    assert launch.threads == (256, 1, 1) and launch.shared_bytes == 0
    # In stream order: it starts once the previous GEMM, which reads Bᵀ, has ended (the GEMM after it is its
    # programmatic dependent).
    assert not launch.dependent and not launch.clustered
    assert method.launch(p).dependent


def test_the_builds_that_write_bt_in_shared_memory_or_swap_a_and_b_read_b_and_so_skip_the_prepass():
    # launchers.tensor_map_kernel runs the pre-pass only for a build whose maps read one of its outputs.
    method = registry.get(METHOD)
    written = {o.name for o in method.prepass.outputs}
    smem = [v for v in method.variants if v.name.endswith(BT_SMEM_SUFFIX) or v.config.swap_ab]
    assert smem and all(not {s.operand for s in v.tensor_maps} & written for v in smem)
    rest = [v for v in method.variants if v not in smem]
    assert all({s.operand for s in (v.tensor_maps or method.tensor_maps)} & written for v in rest)


@needs_nvcc
def test_the_kernel_agrees_with_the_registry_on_its_tile_and_bts_pitch(tmp_path):
    # The kernel computes Bᵀ's row pitch itself: the host's (the pre-pass output's, the tensor map's stride) must be
    # the same, or rows would land where the tensor map does not read them.
    checks = [f"static_assert(tf32_transpose::bt_pitch({k}) == {pitch_elements(k, 4)}, \"pitch {k}\");"
              for k in (1, 3, 4, 5, 33, 4097)]
    checks += [f"static_assert(tf32_transpose::TILE == {TF32_TRANSPOSE_TILE}, \"tile\");",
               f"static_assert(tf32_transpose::THREADS == {TF32_TRANSPOSE_THREADS}, \"threads\");"]
    guard = "static_assert(tf32_transpose::bt_pitch(5) == 5, \"guard: 16-byte rows\");"
    assert_the_kernel_agrees(METHOD, checks, guard, tmp_path)


@needs_nvcc
def test_the_prepass_and_the_gemm_wait_for_the_previous_grid_before_any_global_access(tmp_path):
    # The GEMM is launched as the pre-pass's programmatic dependent, so it may start while the pre-pass still writes
    # Bᵀ; the pre-pass waits too, should it be launched as a dependent of the GEMM before it, which reads Bᵀ.
    assert_both_kernels_wait_before_any_global_access(METHOD, "tf32", tmp_path)


# ------------------------------------------------------------------------------------------- on a GPU
@pytest.fixture(scope="module")
def gpu():
    """PyCUDA's primary context on a GPU that runs the rung, and its arch."""
    return rung_gpu(METHOD)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (17, 65, 33), (257, 129, 511), (3, 5, 4097), (9, 1, 130)])
def test_the_prepass_writes_b_transposed_and_nothing_past_k(gpu, tmp_path, m, n, k):
    b = np.random.default_rng([m, n, k]).uniform(-5, 5, (k, n)).astype(np.float32)
    pitch = pitch_elements(k, 4)
    out, = run_prepass(gpu, tmp_path, METHOD, "tf32", np.zeros((m, k), np.float32), b,
                       [np.full((n, pitch), np.nan, np.float32)])
    np.testing.assert_array_equal(out[:, :k], b.T)  # bit for bit: a copy, no rounding
    assert np.isnan(out[:, k:]).all(), "the pitch's padding is not written (the tensor map stops at k)"
