"""The 3xFP16 rung (kernels/19_wgmma_3xfp16.cu, method wgmma_3xfp16): the host's sizes of its split operands, its
scales and its pre-pass against the kernel's own (nvcc, no GPU), the split's arithmetic as a model on the CPU, and
on a Hopper GPU the pre-pass against that model and the accuracy the rung reaches (SGEMM's class) on rows and
columns of very different magnitudes.

The rung's results on odd shapes are checked with every other kernel's in tests/test_gpu_kernels.py."""

from __future__ import annotations

import numpy as np
import pytest

from matmul_study.core import configs, dtypes, registry
from matmul_study.core.specs import Problem, cdiv
from matmul_study.core.warp_specialized import (SPLIT_FP16_COLUMNS, SPLIT_FP16_HELD, SPLIT_FP16_ROWS, split_fp16_kp,
                                                split_fp16_row_threads)
from matmul_study.launch import kernels
from matmul_study.launch.operands import pitch_elements
from prepass_checks import (assert_both_kernels_wait_before_any_global_access, assert_the_kernel_agrees,
                            needs_nvcc, rung_gpu, run_prepass)

METHOD = "wgmma_3xfp16"
FP32 = dtypes.get("float32")
# (m, n, k): k a multiple of 64 or not, n a multiple of 8 or not, tiles cut by every edge; 1x1x1.
SHAPES = [(1, 1, 1), (17, 65, 33), (257, 129, 511), (100, 250, 37), (64, 64, 64), (1000, 1200, 4096), (3, 5, 4097)]


# ------------------------------------------------------------------------------------------- the split, modelled
def split_fp16(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pre-pass's arithmetic (operands_3xfp16.cuh) in numpy: each row (axis 1) or column (axis 0) of fp32 `x`
    scaled by 2^e, e bringing its largest magnitude into [2^14, 2^15) (0 for a row of zeros), then big = fp16(x 2^e)
    and small = fp16(x 2^e - big), both rounded to nearest even; and the inverse scales 2^-e."""
    x = x.astype(np.float32)
    top = np.abs(x).max(axis=axis, keepdims=True) if x.size else np.zeros((1, 1), np.float32)
    _, exponent = np.frexp(top)
    e = np.where(top > 0, 15 - exponent, 0).astype(np.int32)
    y = np.ldexp(x, e).astype(np.float32)
    big = y.astype(np.float16)
    small = (y - big.astype(np.float32)).astype(np.float16)
    return big, small, np.ldexp(np.float32(1), -e).astype(np.float32).reshape(-1)


def test_the_split_keeps_22_bits_of_every_element_near_its_rows_largest():
    # big + small reproduces x 2^e to 2^-22 of it wherever small is a normal fp16 number, and to fp16's smallest
    # subnormal (2^-24, 2^-38 of the scaled largest) below that; big never overflows.
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((64, 300)) * 10.0 ** rng.integers(-30, 31, (64, 1))).astype(np.float32)
    x[:, 0] *= 1e-6  # elements far below their row's largest
    x[3] = 0  # a row of zeros
    big, small, inverse = split_fp16(x, axis=1)
    assert np.isfinite(big).all() and (np.abs(big) < 2 ** 15).all()
    recon = (big.astype(np.float64) + small.astype(np.float64)) * inverse[:, None]
    err = np.abs(recon - x)
    scale = np.abs(x).max(axis=1, keepdims=True)
    assert (err <= np.maximum(2.0 ** -22 * np.abs(x), 2.0 ** -38 * scale)).all()
    assert not recon[3].any() and inverse[3] == 1


def test_the_three_products_reproduce_an_fp32_product_to_sgemms_accuracy():
    # The scheme itself, in fp64 arithmetic (no tensor-core truncation): big·small + small·big + big·big over
    # scaled rows and columns of magnitudes 1e-30 to 1e30, unscaled, against the exact product. fp32's own rounding
    # of the inputs' product is about 2^-24 a term; the dropped small·small is 2^-22 of each.
    rng = np.random.default_rng(11)
    m, k, n = 40, 513, 30
    a = (rng.uniform(-5, 5, (m, k)) * 10.0 ** rng.integers(-30, 31, (m, 1))).astype(np.float32)
    b = (rng.uniform(-5, 5, (k, n)) * 10.0 ** rng.integers(-30, 31, (1, n))).astype(np.float32)
    ab, as_, ra = split_fp16(a, axis=1)
    bb, bs, rb = split_fp16(b, axis=0)
    f = np.float64
    c = (ab.astype(f) @ bs.astype(f) + as_.astype(f) @ bb.astype(f) + ab.astype(f) @ bb.astype(f))
    c *= ra.astype(f)[:, None] * rb.astype(f)[None, :]
    exact = a.astype(f) @ b.astype(f)
    # Each element against its own row's and column's magnitudes (the Frobenius norm of C is its largest rows').
    norm = np.abs(a).astype(f) @ np.abs(b).astype(f)
    assert (np.abs(c - exact) <= 2.0 ** -20 * norm).all()


# ------------------------------------------------------------------------------------------- the host's sizes
@pytest.mark.parametrize("k,kp", [(1, 64), (63, 64), (64, 64), (65, 128), (4096, 4096), (4097, 4160)])
def test_each_block_of_k_is_padded_to_whole_k_steps(k, kp):
    # A block of k is a whole number of the 16-bit GEMM's k steps of 64 halves, so no k step straddles two blocks.
    assert split_fp16_kp(k) == kp and kp % registry.get(METHOD).config.bk == 0


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_prepass_writes_fp16_operands_and_the_scales_the_gemm_takes(m, n, k):
    method = registry.get(METHOD)
    p = Problem(m, n, k, 0, FP32)
    kp = split_fp16_kp(k)
    outputs = {o.name: (o.shape(p), o.storage) for o in method.prepass.outputs}
    assert outputs == {"A3": ((m, 2 * kp), "float16"), "B3": ((2 * kp, n), "float16"), "S3": ((1, m + n), None)}
    # The GEMM's maps read the two fp16 operands, B3 in 64-column strips as the 16-bit rung reads B; it takes S3 as
    # its scales, after a workspace pointer (null in a whole-tile build).
    assert {spec.operand: (spec.box_rows, spec.box_cols) for spec in method.tensor_maps} == {
        "A3": (128, 64), "B3": (64, 64)}
    assert method.prepass.scales == "S3"
    assert kernels.trailing_arguments(METHOD, "float32") == ("scales",)
    assert kernels.trailing_arguments(METHOD, "float32", "splitk2") == ("workspace", "scales")
    assert "C, m, n, k, nullptr, scales)" in kernels.wrapper(METHOD, "float32", 0)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_the_prepass_has_a_block_per_32_columns_of_b_and_per_rows_of_a_that_fill_it(m, n, k):
    # A row of A takes a warp up to k = 256 (8 elements a thread), twice as many threads each time k doubles, and a
    # whole block of 1024 past k = 4096.
    rows = {1: 32, 33: 32, 37: 32, 64: 32, 511: 16, 4096: 2, 4097: 1}[k]
    launch = registry.get(METHOD).prepass.launch(Problem(m, n, k, 0, FP32))
    assert launch.grid == (cdiv(n, 32) + cdiv(m, rows), 1, 1)
    assert launch.threads == (32, 32, 1) and launch.shared_bytes == 0
    # It waits for the previous GEMM before overwriting the buffers that GEMM reads.
    assert launch.dependent and not launch.clustered


def test_every_build_is_promoted_and_compared_with_sgemm():
    # Each of the rung's builds promotes its tensor-core sums (their fp32 accumulation truncates), so each is in
    # fp32's one class, SGEMM's.
    method = registry.get(METHOD)
    assert method.config.promote and all(v.config.promote for v in method.variants)
    assert all(method.accuracy_of(v, "float32") == "" for v in (None, *(v.name for v in method.variants)))
    assert METHOD in registry.default_methods()


def test_the_pick_is_promoted_every_two_k_steps_where_the_wide_tiles_fill_half_a_wave():
    # An H100, x SGEMM: promote2 3.55-3.58 and 4.24-4.26 at 4096^3 and 8192^3, the default build 3.52-3.54 and
    # 4.02-4.04; at 512^3 and 1024^3 the 128x128 tiles (0.72-0.73 and 1.82-1.84 against 0.49 and 1.08).
    method = registry.get(METHOD)
    f32 = dtypes.get("float32")
    for shape in ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)):
        assert configs.choose(method, Problem(*shape, 0, f32)).variant == "promote2", shape
    for shape in ((512, 512, 512), (1024, 1024, 1024)):
        pick = configs.choose(method, Problem(*shape, 0, f32))
        assert pick.variant == "bn128" and "128x128" in pick.reason, shape


def test_k_is_split_where_even_the_narrow_tiles_leave_most_sms_idle_and_k_is_deep():
    # An H100, x SGEMM (results/reference/NVIDIA_H100/3xfp16/suite.txt): splitk4 against bn128 at 1024x1024x8192
    # 1.62 / 1.59, 256x4096x14336 1.29 / 1.20, 512x512x16384 0.62 / 0.44; at 1024^3 (256 of K a slice) 1.34 / 1.85,
    # splitk2 1.40; at 4096x64x4096 (one column of tiles either way) 0.35 / 0.41.
    method = registry.get(METHOD)
    f32 = dtypes.get("float32")
    for shape in ((1024, 1024, 8192), (256, 4096, 14336), (512, 512, 16384), (16, 4096, 4096)):
        pick = configs.choose(method, Problem(*shape, 0, f32))
        assert pick.variant == "splitk4" and "split 4 ways" in pick.reason, shape
    for shape in ((1024, 1024, 1024), (512, 512, 512), (4096, 64, 4096), (1000, 1200, 800)):
        assert configs.choose(method, Problem(*shape, 0, f32)).variant == "bn128", shape
    # a split of 2 (as many work items as the 128x128 tiles) is not taken in place of them
    assert method.choose(Problem(1024, 1024, 1024, 0, f32), ("bn128", "splitk2")).variant == "bn128"
    # where the narrow tiles fill half a wave, they are taken whole: 1024x1024x8192 on 120 SMs
    assert configs.choose(method, Problem(1024, 1024, 8192, 0, f32, sm_count=120)).variant == "bn128"
    assert configs.choose(method, Problem(2048, 2048, 8192, 0, f32)).variant == "promote2"


@pytest.mark.parametrize("variant", ["default", "splitk2"])
def test_the_gemm_is_given_the_scales_its_prepass_wrote(variant):
    # The launcher hands the GEMM S3, the pre-pass's output, as its scales (after the workspace of a split build),
    # not the job's own (a float32 job has none).
    from types import SimpleNamespace

    from matmul_study.launch import launchers

    method = registry.get(METHOD)
    build = method.variant(variant)
    buffers = launchers.DeviceBuffers(None, None, None)
    operands = {"A3": SimpleNamespace(pointer=0xA3), "B3": SimpleNamespace(pointer=0xB3),
                "S3": SimpleNamespace(pointer=0x53)}
    pointers = launchers.trailing_arguments_of(method, Problem(100, 250, 37, 0, FP32), build, buffers,
                                               0x90 if build.workspace else None, operands)
    assert [x.value for x in pointers] == ([0x90] if build.workspace else []) + [0x53]


@needs_nvcc
def test_the_kernel_agrees_with_the_registry_on_sizes(tmp_path):
    # The kernel computes K', its row pitches and its tile count itself: a registry that disagreed would size the
    # buffers, the tensor maps or the pre-pass grid for another layout.
    products = registry.get(METHOD).products  # K' = products x the padded k: the model's reads and FLOP too
    checks = [f"static_assert(wgmma_3xfp16::wide_k({k}) == {products * split_fp16_kp(k)}, \"wide_k({k})\");"
              for _, _, k in SHAPES]
    for m, n, k in SHAPES:
        a3 = pitch_elements(2 * split_fp16_kp(k), 2)
        b3 = pitch_elements(n, 2)
        blocks = registry.get(METHOD).prepass.launch(Problem(m, n, k, 0, FP32)).grid[0]
        checks += [f"static_assert(wgmma_3xfp16::a3_pitch({k}) == {a3}, \"a3 pitch {k}\");",
                   f"static_assert(wgmma_3xfp16::b3_pitch({n}) == {b3}, \"b3 pitch {n}\");",
                   f"static_assert(wgmma_3xfp16::prepass_blocks({m}, {n}, {k}) == {blocks}, \"blocks {m}x{n}x{k}\");",
                   f"static_assert(wgmma_3xfp16::row_threads({k}) == {split_fp16_row_threads(k)}, \"row {k}\");"]
    checks.append(f"static_assert(wgmma_3xfp16::K_ALIGN == {registry.get(METHOD).config.bk}, \"k step\");")
    checks.append(f"static_assert(wgmma_3xfp16::ROWS == {SPLIT_FP16_ROWS} && wgmma_3xfp16::COLUMNS == "
                  f"{SPLIT_FP16_COLUMNS} && wgmma_3xfp16::HELD == {SPLIT_FP16_HELD}, \"the pre-pass's block\");")
    assert_the_kernel_agrees(METHOD, checks, "static_assert(wgmma_3xfp16::b3_pitch(1) == 1, \"guard: no padding\");",
                             tmp_path)


@needs_nvcc
def test_the_prepass_and_the_gemm_wait_for_the_previous_grid_before_any_global_access(tmp_path):
    assert_both_kernels_wait_before_any_global_access(METHOD, "float32", tmp_path)


# ------------------------------------------------------------------------------------------- on a GPU
@pytest.fixture(scope="module")
def gpu():
    """PyCUDA's primary context on a GPU that runs the rung, and its arch."""
    return rung_gpu(METHOD)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(17, 65, 33), (257, 129, 511), (3, 5, 4097), (5, 33, 8257), (70, 9, 1000)])
def test_the_prepass_writes_the_modelled_split_and_scales(gpu, tmp_path, m, n, k):
    # k = 33: 32 rows of A a block, 15 of them past m; 1000: 128 threads a row, 8 rows a block, the last block's 2
    # past m; 8257: a row longer than its block holds in registers (8192), read again past that.
    rng = np.random.default_rng([m, n, k])
    a = (rng.standard_normal((m, k)) * 10.0 ** rng.integers(-20, 21, (m, 1))).astype(np.float32)
    a[0] = 0  # a row of zeros: scale 1
    a[-1, -1] = 1e3 * np.abs(a[-1]).max()  # a row's largest element at its end
    b = rng.uniform(-5, 5, (k, n)).astype(np.float32)
    kp, a3_pitch, b3_pitch = split_fp16_kp(k), pitch_elements(2 * split_fp16_kp(k), 2), pitch_elements(n, 2)
    poisoned = [np.full((m, a3_pitch), np.nan, np.float16), np.full((2 * kp, b3_pitch), np.nan, np.float16),
                np.full(m + n, np.nan, np.float32)]  # every element must be written
    a3, b3, s3 = run_prepass(gpu, tmp_path, METHOD, "float32", a, b, poisoned)
    pad_k = np.zeros((m, kp - k), np.float32)
    a_big, a_small, ra = split_fp16(np.hstack([a, pad_k]), axis=1)
    b_big, b_small, rb = split_fp16(np.pad(b, ((0, kp - k), (0, b3_pitch - n))), axis=0)
    # A3 = [A_big | A_small] along k, B3 = [B_small ; B_big] along k: the correction terms first; the GEMM's third
    # block of k steps reads A3's first block and B3's second again.
    np.testing.assert_array_equal(a3, np.hstack([a_big, a_small]))
    np.testing.assert_array_equal(b3, np.vstack([b_small, b_big]))
    np.testing.assert_array_equal(s3, np.concatenate([ra, rb[:n]]))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", ["2048", "1000x2200x4300"])
def test_3xfp16_errs_like_sgemm(gpu, shape):
    # Its sums promoted every k step, the rung's error is at most SGEMM's (3xTF32's promoted builds: 2.3e-7 against
    # 1.1e-6 at 4096^3 on an H200); a sum left in the tensor cores over all of K would err 4-12x more.
    from matmul_study.measure import compare

    _, check = compare.Bench().prepare(compare.make_case(METHOD, None, "float32", shape))
    ours, sgemm = check("ours"), check("cublas")
    errors = f"3xFP16 {ours.rel_fro_error:.2e}, SGEMM {sgemm.rel_fro_error:.2e}"
    print(errors)
    assert ours.passed and sgemm.passed, errors
    assert ours.rel_fro_error <= sgemm.rel_fro_error, errors


@pytest.mark.gpu
def test_rows_and_columns_of_very_different_magnitudes_keep_fp32_accuracy(gpu, tmp_path):
    # Rows of A and columns of B from 1e-15 to 1e15 (beyond fp16's range either way; C stays inside fp32's): each
    # element of C, divided by its row's and column's magnitudes, must be the unscaled product to SGEMM's accuracy.
    cuda, arch = gpu
    import pycuda.gpuarray as gpuarray
    from matmul_study.launch import launchers

    m, k, n = 300, 1000, 257
    rng = np.random.default_rng(5)
    ea, eb = rng.integers(-15, 16, m), rng.integers(-15, 16, n)
    u, v = rng.uniform(-5, 5, (m, k)), rng.uniform(-5, 5, (k, n))
    a = (u * 10.0 ** ea[:, None]).astype(np.float32)
    b = (v * 10.0 ** eb[None, :]).astype(np.float32)
    cubin = str(tmp_path / "module.cubin")
    kernels.compile_cubin(METHOD, "float32", 0, arch, cubin)
    c = gpuarray.to_gpu(np.full(m * n, np.nan, np.float32))
    buffers = launchers.DeviceBuffers(gpuarray.to_gpu(a.ravel()), gpuarray.to_gpu(b.ravel()), c)
    sms = cuda.Context.get_device().get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    launchers.make(registry.get(METHOD), Problem(m, n, k, 0, FP32, sms), buffers, cubin)()
    cuda.Context.synchronize()
    scale = 10.0 ** ea[:, None] * 10.0 ** eb[None, :]
    ours = c.get().reshape(m, n).astype(np.float64) / scale
    exact = (a.astype(np.float64) @ b.astype(np.float64)) / scale
    err = np.linalg.norm(ours - exact) / np.linalg.norm(exact)
    assert err <= 2e-6, f"relative error {err:.2e} after unscaling"
