"""FP8 (float8_e4m3): the dtype record, per-tensor scaled inputs and their quantization error, the scaled
reference, and the FP8 rung's build (its scales argument). The rung's GPU checks (odd shapes, k not a multiple of
32, split-K bits) come from tests/test_gpu_kernels.py, which runs every registry method on each of its dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from matmul_study.build import kernels
from matmul_study.core import dtypes, registry
from matmul_study.measure import inputs
from matmul_study.measure.verify import verify_on_host

FP8 = dtypes.get("float8_e4m3")


def test_record_is_a_scaled_one_byte_float_with_fp32_output():
    assert FP8.scaled and not FP8.exact and FP8.itemsize == 1
    assert FP8.numpy == np.dtype(ml_dtypes.float8_e4m3fn) and FP8.device_view == np.dtype(np.uint8)
    assert FP8.output == np.dtype(np.float32) and FP8.cublas_types is None
    assert not any(dtypes.get(name).scaled for name in dtypes.NAMES if name != "float8_e4m3")


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
    small = registry.Problem(256, 256, 8192, 0, FP8)
    assert m.choose(small, tuple(v.name for v in m.variants)).variant.startswith("splitk")


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
