"""int8: the dtype record (exact int32 sums and the bound on k that keeps them exact), its inputs, which methods run
it, the int8 rung's build and its byte transpose; on a GPU, cuBLAS's int8 call checked exactly like our kernel.

The int8 rung's own GPU checks (odd shapes, k not a multiple of 32, the stream-K tail) come from
tests/test_gpu_kernels.py, which runs every registry method on each of its dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest

from matmul_study.launch import kernels
from matmul_study.core import configs, dtypes, registry
from matmul_study.measure import inputs
from matmul_study.measure.verify import verify_on_host
from own_tiles import own_choice


def test_int8_record_is_exact_int32_with_cublas_integer_types():
    r = dtypes.get("int8")
    assert r.exact and r.tolerance == 0.0
    assert (r.numpy, r.output, r.itemsize) == (np.dtype(np.int8), np.dtype(np.int32), 1)
    assert (r.c_input, r.c_accumulator, r.c_output) == ("int8_t", "int", "int")
    assert r.cublas_types == ("CUDA_R_8I", "CUDA_R_32I", "CUBLAS_COMPUTE_32I")


def test_int8_inputs_span_the_whole_type_whatever_the_config_range():
    a, b = inputs.generate(200, 300, 100, "int8", seed=3, low=-5, high=5)
    assert a.dtype == b.dtype == np.int8
    assert a.min() == -128 and a.max() == 127  # 60,000 draws: every value of the 256 turns up
    # int32 still follows the config's range.
    ai, _ = inputs.generate(64, 64, 64, "int32", seed=3, low=-5, high=5)
    assert ai.dtype == np.int32 and (ai.min(), ai.max()) == (-5, 5)


def test_exactness_bound_on_k():
    r = dtypes.get("int8")
    limit = r.max_exact_k(-5, 5)  # the config range does not apply to int8
    assert limit == 131071 == (2**31 - 1) // 128**2
    # The worst case at the limit fits in int32, one more k step does not.
    assert limit * 128**2 <= 2**31 - 1 < (limit + 1) * 128**2
    assert dtypes.get("int32").max_exact_k(-5, 5) == (2**31 - 1) // 25
    assert dtypes.get("float32").max_exact_k(-5, 5) > 0  # defined, but only checked for exact dtypes


def test_larger_k_is_refused_with_the_bound_named():
    inputs.generate(1, 131071, 1, "int8", seed=1)  # the largest exact k is accepted
    with pytest.raises(ValueError) as err:
        inputs.generate(1, 131072, 1, "int8", seed=1)
    message = str(err.value)
    assert "k = 131072" in message and "131071" in message and "[-128, 127]" in message and "overflow" in message
    dtypes.get("float16").check_exact_k(10**9, -5, 5)  # inexact dtypes have no such bound


def test_int8_reference_is_exact_and_a_one_off_fails():
    a, b = inputs.generate(33, 129, 65, "int8", seed=5)
    c = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    ok = verify_on_host(a, b, c, dtypes.get("int8"), True, 8, 0)
    assert ok.passed and ok.max_abs_error == 0.0
    c[7, 11] += 1
    assert not verify_on_host(a, b, c, dtypes.get("int8"), True, 8, 0).passed
    # The fp64 reference of worst-case inputs at the bound is exact: -128 * -128 summed 131071 times.
    worst = dtypes.to_float64(np.full((1, 131071), -128, np.int8), dtypes.get("int8"))
    assert (worst @ worst.T).item() == 131071 * 16384


def test_the_int8_rungs_and_cublas_run_int8():
    runs = {name for name, m in registry.METHODS.items() if "int8" in m.dtypes}
    assert runs == {"mma_async_copy", "wgmma_int8", "cublas"}


def test_grid_prunes_int8_for_methods_without_it(make_config):
    from matmul_study.pipeline import grid

    jobs, pruned = grid.build(make_config(methods=["naive", "wgmma_tf32", "wgmma_int8", "cublas"],
                                          dtypes=["int8", "tf32"]), have_module=lambda name: True)
    assert set(jobs[jobs["dtype"] == "int8"]["method"]) == {"wgmma_int8", "cublas"}
    reasons = pruned[pruned["dtype"] == "int8"].set_index("method")["reason"]
    assert set(reasons.index) == {"naive", "wgmma_tf32"}
    assert reasons["naive"] == "naive supports float32, float64, int32 only"


def test_int8_splits_meet_in_an_int32_workspace_and_are_weighed_like_16_bits():
    # 16-bit's tiles and splits: the split builds' partials are the int32 accumulators, 4 bytes each, and the
    # generated kernel takes them as int*. The heuristic weighs them all, as 16-bit's does, and runs the 128x256 tiles
    # without a cluster where they make one wave at most (configs.ONE_WAVE_OWN_TILES): its own tiles' rule, which its
    # twins' (Cᵀ = Bᵀ·Aᵀ) asks for Cᵀ's problem (test_configs.py weighs that).
    m = registry.get("wgmma_int8")
    splits = {v.name for v in m.variants if v.workspace is not None}
    assert {"splitk4", "splitk32", "bn128_splitk4", "bm64_bn128_splitk16", "bn64_splitk8"} <= splits
    p = configs.job_problem(dtypes.get("int8"), 0, 4096, 4096, 64, sm_count=132)
    assert m.variant("bn64_splitk4").workspace(p) == 32 * (4 * 128 * 64 * 4 + 4)
    source = kernels.module_source("wgmma_int8", [("int8", 0)], "bn64_splitk4")
    assert "int* __restrict__ workspace" in source and "C, m, n, k, workspace);" in source
    assert kernels.trailing_arguments("wgmma_int8", "int8") == ()
    # (m, k, n) -> the pick; on an H200 (x cuBLAS, small-problems/tiles-int8.txt, tiles-small-splits-int8.txt): 1.17,
    # 1.13, 1.27, 1.10, 1.40
    picks = {(1024, 16384, 64): "bn64_splitk8", (128, 32768, 128): "bm64_bn64_kg2_splitk16", (1024, 1024, 1024): "bn64",
             (512, 16384, 512): "bm64_bn128_splitk4", (2048, 2048, 2048): "cluster1", (4096, 4096, 4096): "default"}
    for shape, pick in picks.items():
        choice = own_choice(m, configs.job_problem(dtypes.get("int8"), 0, *shape, sm_count=132))
        assert choice.variant == pick, (shape, choice)
    assert "one wave at most" in configs.choose(m, configs.job_problem(dtypes.get("int8"), 0, 2048, 2048, 2048,
                                                                       sm_count=132)).reason


def test_int8_rung_issues_s8_wgmma_with_int_accumulators(tmp_path):
    source = kernels.module_source("wgmma_int8", [("int8", 0)])
    assert "int* __restrict__ C" in source and "wgmma_int8_matmul<int8_t>" in source
    cmd = kernels.nvcc_command(tmp_path / "m.cu", tmp_path / "m.ptx", "sm_90a", kernels.compile_options("wgmma_int8"),
                               target="ptx")
    (tmp_path / "m.cu").write_text(source)
    done = kernels.run_nvcc(cmd)
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "m.ptx").read_text()
    wgmmas = ptx.count("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8")
    assert wgmmas >= 4 and wgmmas % 4 == 0  # a stage (BK 128) is 4 x k32, in every copy of the main loop
    assert "m64n256k16.f32" not in ptx and "k8.f32.tf32" not in ptx
    assert "red.global.add.f32" not in ptx and "red.global.add.v2.f32" not in ptx  # the tail adds integers


@pytest.mark.parametrize("variant,shape", [("bn128", "m64n128k32"), ("bm64_bn128_splitk4", "m64n128k32"),
                                           ("bn64_splitk4", "m64n64k32")])
def test_int8_narrower_tiles_issue_their_s8_wgmma_and_sum_int32_partials(tmp_path, variant, shape):
    (tmp_path / "m.cu").write_text(kernels.module_source("wgmma_int8", [("int8", 0)], variant))
    cmd = kernels.nvcc_command(tmp_path / "m.cu", tmp_path / "m.ptx", "sm_90a",
                               kernels.compile_options("wgmma_int8", variant), target="ptx")
    done = kernels.run_nvcc(cmd)
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "m.ptx").read_text()
    assert f"wgmma.mma_async.sync.aligned.{shape}.s32.s8.s8" in ptx and "m64n256k32" not in ptx
    split = registry.get("wgmma_int8").variant(variant).workspace is not None
    # a split build's partials leave and come back as int4 quads through L2, and nothing is added as a float
    assert ("st.global.cg.v4.u32" in ptx or "st.global.cg.v4.s32" in ptx) == split
    assert "add.f32" not in ptx and "add.rn.f32" not in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_transpose_bytes_compiles(tmp_path, arch):
    result = kernels.compile_with_nvcc(kernels.TRANSPOSE_BYTES_SOURCE, arch, tmp_path)
    assert result.returncode == 0, f"nvcc failed for transpose_bytes.cu on {arch}:\n{result.stderr}"
    assert b"transpose_bytes" in (tmp_path / "module.cubin").read_bytes()


# ------------------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("shape", ["1x1x1", "17x65x33", "257x511x129", "1000x2200x4300", "1024"])
def test_cublas_int8_is_exact_and_so_is_ours(shape):
    # cuBLAS's int8 call (B transposed first, "TN"; padded copies where k is not a multiple of 4) and the rung,
    # on the same inputs, both equal to the fp64 reference element for element.
    pytest.importorskip("pycuda.driver")
    pytest.importorskip("cupy")
    from matmul_study.core.backends import module_available
    from matmul_study.measure import compare
    from matmul_study.measure.gpu_device import GpuUnavailable

    try:
        bench = compare.Bench()
    except GpuUnavailable as exc:
        pytest.skip(str(exc))
    why = registry.get("wgmma_int8").unmet_requirement(bench.device.compute_capability(), module_available)
    if why:
        pytest.skip(why)
    _, check = bench.prepare(compare.make_case("wgmma_int8", None, "int8", shape))
    for name in ("ours", "cublas"):
        result = check(name)
        assert result.passed and result.max_abs_error == 0.0 and result.unwritten == 0, (name, result)
