"""FP8 (float8_e4m3): the dtype record, per-tensor scaled inputs and their quantization error, the scaled
reference, and the FP8 rung's builds (its scales argument; its 128x128 tiles with and without promoted sums). The
rung's GPU checks (odd shapes, k not a multiple of 32, split-K bits, the promoted error) come from
tests/test_gpu_kernels.py, which runs every registry method on each of its dtypes."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from matmul_study.launch import kernels
from matmul_study.core import dtypes, registry, specs
from matmul_study.measure import inputs
from matmul_study.measure.verify import verify_on_host
from matmul_study.core.warp_specialized import NARROW_BN, SM90_SHARED_BYTES
from own_tiles import own_choice

FP8 = dtypes.get("float8_e4m3")
NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")


def test_record_is_a_scaled_one_byte_float_with_fp32_output():
    assert FP8.scaled and not FP8.exact and FP8.itemsize == 1
    assert FP8.numpy == np.dtype(ml_dtypes.float8_e4m3fn) and FP8.device_view == np.dtype(np.uint8)
    assert FP8.output == np.dtype(np.float32) and FP8.cublas_types is None
    assert {name for name in dtypes.NAMES if dtypes.get(name).scaled} == {"float8_e4m3", "float8_e4m3_block"}


def test_raw_bytes_convert_to_the_values_they_encode():
    values = np.array([0.0, 1.5, -448.0, 2.0**-9, 0.3125, -17.0], np.float32).astype(FP8.numpy)
    expected = values.astype(np.float64)
    np.testing.assert_array_equal(dtypes.to_float64(values.view(np.uint8), FP8), expected)
    np.testing.assert_array_equal(dtypes.to_float64(values, FP8), expected)


def test_inputs_are_scaled_per_tensor_onto_the_e4m3_range():
    ops = inputs.generate(200, 300, 100, "float8_e4m3", seed=3, low=-5, high=5)
    a, b = ops
    assert a.dtype == b.dtype == FP8.numpy
    # Each tensor's largest magnitude lands on 448 (e4m3's largest finite value) and nothing overflows.
    for x in (a, b):
        assert np.abs(x.astype(np.float32)).max() == inputs.E4M3_MAX
        assert np.isfinite(x.astype(np.float32)).all()
    # The scales are amax / 448 of the fp32 draws, which lie in [-5, 5].
    assert ops.scales.dtype == np.float32 and ((4.9 / 448 < ops.scales) & (ops.scales <= 5 / 448)).all()
    assert ops.scale == pytest.approx(float(ops.scales[0]) * float(ops.scales[1]))
    again = inputs.generate(200, 300, 100, "float8_e4m3", seed=3, low=-5, high=5)
    assert again[0].tobytes() == a.tobytes() and (again.scales == ops.scales).all()


def test_quantization_error_is_measured_and_of_e4m3s_size():
    ops = inputs.generate(128, 512, 96, "float8_e4m3", seed=1)
    q = ops.quantization
    # 3 mantissa bits: a relative rounding error of up to 2^-4 per element, a few % in the product.
    assert 0.005 < q["rel_fro_error"] < 0.08
    assert q["scales"] == pytest.approx(list(ops.scales)) and "64 rows" in q["scope"]
    # Other dtypes carry unit scales and no quantization record.
    plain = inputs.generate(8, 8, 8, "float16", seed=1)
    assert plain.quantization is None and plain.scale == 1.0


def test_reference_applies_the_scales():
    ops = inputs.generate(33, 129, 65, "float8_e4m3", seed=5)
    a, b = ops
    product = a.astype(np.float64) @ b.astype(np.float64)
    right = (product * ops.scale).astype(np.float32)
    assert verify_on_host(a, b, right, FP8, True, 8, 0, ops.scale).passed
    # The product of the stored values without the scales is a wrong result.
    assert not verify_on_host(a, b, product.astype(np.float32), FP8, True, 8, 0, ops.scale).passed


def test_fp8_rung_takes_its_scales_after_a_workspace_or_null():
    default = kernels.wrapper("wgmma_fp8", "float8_e4m3", 0)
    assert "int k, const float* __restrict__ scales)" in default
    assert "C, m, n, k, nullptr, scales);" in default
    split = kernels.wrapper("wgmma_fp8", "float8_e4m3", 0, "splitk4")
    assert "int k, float* __restrict__ workspace, const float* __restrict__ scales)" in split
    assert "C, m, n, k, workspace, scales);" in split
    # Unscaled dtypes' kernels keep their arguments.
    assert "scales" not in kernels.wrapper("wgmma_warp_specialized", "float16", 0, "splitk4")


def test_fp8_rung_is_a_hopper_kernel_with_split_k_builds():
    m = registry.get("wgmma_fp8")
    assert m.dtypes == ("float8_e4m3",)
    assert m.unmet_requirement((8, 9), lambda name: True) is not None  # sm_90a only
    assert m.unmet_requirement((9, 0), lambda name: True) is None
    assert {"splitk4", "cluster1", "no_streamk"} <= {v.name for v in m.variants}
    small = specs.Problem(256, 256, 8192, 0, FP8)
    # 2 tiles of 128x256: K split, in 64x128 tiles (on an H200 1.00x cuBLASLt's fast-accumulation line split 16 ways,
    # 1.03 split 8, against the 128x256 tiles' 0.65 split 16 ways; small-problems/tiles-deep-k-splitk16-float8_e4m3.txt,
    # tiles-decode-splits-float8_e4m3.txt)
    assert own_choice(m, small).variant == "bm64_bn128_splitk16"  # its own tiles' rule (tests/own_tiles.py)


@pytest.mark.parametrize("method, dtype, variant, expected", [
    ("wgmma_fp8", "float8_e4m3", None, ("scales",)),
    ("wgmma_fp8", "float8_e4m3", "splitk4", ("workspace", "scales")),
    ("wgmma_warp_specialized", "float16", "splitk4", ("workspace",)),
    ("wgmma_int8", "int8", None, ()),
])
def test_the_kernel_takes_exactly_the_pointers_its_launcher_passes(method, dtype, variant, expected):
    # The launcher appends one pointer per name of trailing_arguments; the wrapper must declare the same, in order
    # (a kernel reading its scales from the slot of a workspace it does not have faults on the GPU).
    assert kernels.trailing_arguments(method, dtype, variant) == expected
    signature = kernels.wrapper(method, dtype, 0, variant).split(")\n{")[0]
    declared = [p.split()[-1] for p in signature.split("int k")[1].split(",")[1:]]
    assert tuple(declared) == expected


FP8_TILE_BUILDS = ("bn128", "bn128_promote")


def test_fp8_128x128_builds_are_the_control_and_the_promoted_accumulation():
    m = registry.get("wgmma_fp8")
    bn128, promote = (m.variant(name) for name in FP8_TILE_BUILDS)
    # The rung's record with the tile width moved, then promotion on top: nothing else differs.
    assert bn128.config == replace(m.config, bn=NARROW_BN) and not bn128.config.promote
    assert promote.config == replace(bn128.config, promote=True)
    bm, _, bk = m.tile(0, "float8_e4m3")
    for name in FP8_TILE_BUILDS:
        assert m.variant(name).tile(0, "float8_e4m3") == (bm, NARROW_BN, bk) and m.variant(name).workspace is None
        # 512^3: 4 x 4 tiles of 128x128 (16 CTAs in clusters of 2) where 128x256 tiles give 8; as many stages of
        # the narrow tiles as fit.
        launch, wide = m.launch_for(specs.Problem(512, 512, 512, 0, FP8), name), m.launch_for(specs.Problem(
            512, 512, 512, 0, FP8))
        assert launch.grid == (16, 1, 1) and (launch.cluster, launch.threads) == (wide.cluster, wide.threads)
        config = m.variant(name).config
        assert launch.shared_bytes == config.shared_bytes <= SM90_SHARED_BYTES
        assert replace(config, stages=config.stage_count + 1).shared_bytes > SM90_SHARED_BYTES
        assert launch.persistent and launch.dependent
        assert m.launch_for(specs.Problem(4096, 4096, 4096, 0, FP8), name).grid == (132, 1, 1)
    assert m.launch_for(specs.Problem(512, 512, 512, 0, FP8)).grid == (8, 1, 1)
    # The heuristic does not trade the default's speed for accuracy on its own: these are asked for by name.
    names = tuple(v.name for v in m.variants)
    for shape in ((512, 512, 512), (256, 256, 8192), (4096, 4096, 4096)):
        assert m.choose(specs.Problem(*shape, 0, FP8), names).variant not in FP8_TILE_BUILDS


def fp8_build(variant: str, tmp_path, target: str, extra: tuple[str, ...] = ()) -> tuple[str, str]:
    """The FP8 rung's `variant` compiled to `target` ("ptx" or "cubin"): (the PTX or "", nvcc's messages)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source("wgmma_fp8", [("float8_e4m3", 0)], variant))
    output = tmp_path / f"module.{target}"
    options = [*kernels.compile_options("wgmma_fp8", variant), *extra]
    result = kernels.run_nvcc(kernels.nvcc_command(source, output, "sm_90a", options, target))
    assert result.returncode == 0, result.stderr
    return (output.read_text() if target == "ptx" else ""), result.stdout + result.stderr


@needs_nvcc
def test_fp8_128x128_builds_issue_m64n128k32_and_only_the_promoted_one_adds_partials(tmp_path):
    control, _ = fp8_build("bn128", tmp_path / "bn128", "ptx")
    promoted, _ = fp8_build("bn128_promote", tmp_path / "promote", "ptx")
    for code in (control, promoted):
        assert "m64n128k32.f32.e4m3.e4m3" in code and "m64n256k32" not in code
    # Each k step's partial is added into the fp32 set: 64 adds per step, in a chain of 8 steps and a remainder step
    # (the stream-K tail's atom.global.add.f32 in both is not counted).
    adds = [len(re.findall(r"^\s*add\.f32", code, re.MULTILINE)) for code in (control, promoted)]
    assert adds == [0, 9 * 64]


@needs_nvcc
def test_promoted_build_keeps_its_wgmmas_pipelined_without_spills(tmp_path):
    # Three accumulator sets of 64 fit a consumer's 232 registers; ptxas says where it serialises the wgmmas
    # (C7514, C7515: "Potential Performance Loss") or spills.
    _, report = fp8_build("bn128_promote", tmp_path, "cubin", ("-Xptxas", "-v"))
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "Potential Performance Loss" not in report, report


def test_the_register_a_build_is_promote_with_a_read_once_a_step():
    m = registry.get("wgmma_fp8")
    promote, rs = m.variant("promote"), m.variant("promote_rs")
    assert rs.config == replace(promote.config, a_registers=True) and rs.accuracy == promote.accuracy
    assert "WGMMA_WS_A_REGS=1" in rs.defines and "WGMMA_WS_A_REGS=0" in promote.defines
    assert rs.launch(specs.Problem(4096, 4096, 4096, 0, FP8)) == promote.launch(specs.Problem(4096, 4096, 4096, 0, FP8))
    # Asked for by name: the heuristic picks among builds measured on a GPU.
    names = tuple(v.name for v in m.variants)
    for shape in ((512, 512, 512), (4096, 4096, 4096), (8192, 8192, 8192)):
        assert m.choose(specs.Problem(*shape, 0, FP8), names).variant != "promote_rs"


@needs_nvcc
def test_the_register_a_build_reads_a_once_per_k_step_and_its_quarters_take_it_from_registers(tmp_path):
    code, _ = fp8_build("promote_rs", tmp_path / "rs", "ptx")
    shared, _ = fp8_build("promote", tmp_path / "ss", "ptx")
    quarter = r"wgmma\.mma_async\.sync\.aligned\.m64n64k32\.f32\.e4m3\.e4m3\s+\{[^}]*\},\s*"
    # A from registers: {a0, a1, a2, a3} where the shared build has a descriptor; 4 k32 slices x 4 quarters a step.
    from_registers = re.findall(quarter + r"\{%r\d+, %r\d+, %r\d+, %r\d+\}", code)
    from_shared = re.findall(quarter + r"%rd\d+", shared)
    assert len(from_registers) == len(from_shared) == 16 and not re.findall(quarter + r"%rd\d+", code)
    # The step's four slices of A, one ldmatrix each (the shared build has none).
    assert code.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4 and "ldmatrix" not in shared


@needs_nvcc
def test_a_register_a_build_without_promoted_quarters_fails_to_compile(tmp_path):
    # WGMMA_WS_A_REGS is for the promoted 128x256 build's quarters only: elsewhere nothing would read A twice.
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source("wgmma_fp8", [("float8_e4m3", 0)]))
    options = [o.replace("WGMMA_WS_A_REGS=0", "WGMMA_WS_A_REGS=1") for o in kernels.compile_options("wgmma_fp8")]
    command = kernels.nvcc_command(source, tmp_path / "module.cubin", "sm_90a", options)
    result = kernels.run_nvcc(command)
    assert result.returncode != 0 and "WGMMA_WS_A_REGS: for promoted builds in column parts only" in result.stderr


def test_a_kernel_of_scaled_operands_is_given_the_jobs_scales_or_a_clear_error():
    # FP8's kernels take the job's per-tensor scales after the workspace; without them on the device the launcher
    # says so, instead of passing a null pointer the kernel would read.
    from types import SimpleNamespace

    from matmul_study.launch import launchers

    method, p = registry.get("wgmma_fp8"), specs.Problem(100, 250, 300, 0, dtypes.get("float8_e4m3"))
    build = method.variant("splitk4")
    scaled = launchers.DeviceBuffers(None, None, None, SimpleNamespace(gpudata=0x5C))
    assert [x.value for x in launchers.trailing_arguments_of(method, p, build, scaled, 0x90)] == [0x90, 0x5C]
    with pytest.raises(ValueError, match="wgmma_fp8 in float8_e4m3 needs its scales on the device"):
        launchers.trailing_arguments_of(method, p, build, launchers.DeviceBuffers(None, None, None), 0x90)
