"""The cuBLASLt FP8 vendor line (matmul_study/launch/cublaslt.py): its backend and the install command it names, the
lazy dispatch from launchers.make, the padding rule and the checks made before any library is imported, on any
CPU; on a GPU with nvmath-python, the GEMM on odd and even shapes against the fp64 product of the dequantized inputs.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from matmul_study.launch import cublaslt, launchers
from matmul_study.core import dtypes, specs
from matmul_study.core.backends import CUBLASLT

REPO = Path(__file__).resolve().parent.parent


def lt_method(variants=("fast_accum",)) -> specs.Method:
    """The line as the registry holds it (built here, so that these tests do not depend on its entry)."""
    return specs.Method("cublaslt", "cuBLASLt FP8 GEMM through nvmath-python", ("float8_e4m3",), backend=CUBLASLT,
                           reference_line=True, variants=tuple(specs.Variant(v) for v in variants))


def problem(m: int, n: int, k: int, dtype: str = "float8_e4m3") -> specs.Problem:
    return specs.Problem(m, n, k, 0, dtypes.get(dtype))


def test_a_missing_nvmath_is_reported_with_the_install_command():
    assert CUBLASLT.available(lambda module: module == "nvmath") == (True, "")
    ok, why = CUBLASLT.available(lambda module: False)
    assert not ok and why == "nvmath is not installed (pip install -e '.[fp8]')"
    reason = lt_method().unmet_requirement(None, lambda module: module != "nvmath")
    assert reason == "nvmath is not installed (pip install -e '.[fp8]'), so cublaslt is not run"
    # The command installs what the backend looks for.
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith("nvmath-python") for requirement in extras["fp8"])


def test_make_imports_the_cublaslt_module_only_when_a_job_needs_it():
    # A fresh interpreter: importing the launchers loads neither the module nor nvmath; make() finds the launcher in
    # its own module by the backend's name, and the launcher checks the variant before importing nvmath.
    script = """
import sys
from matmul_study.launch import launchers
from matmul_study.core import dtypes, specs
from matmul_study.core.backends import CUBLASLT
assert "matmul_study.launch.cublaslt" not in sys.modules
method = specs.Method("cublaslt", "test", ("float8_e4m3",), backend=CUBLASLT)
p = specs.Problem(64, 64, 64, 0, dtypes.get("float8_e4m3"))
try:
    launchers.make(method, p, launchers.DeviceBuffers(None, None, None, None), None, "no_such_variant")
except KeyError as exc:
    print(exc)
print(sorted(name for name in ("matmul_study.launch.cublaslt", "nvmath") if name in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['"cublaslt has no variant \'no_such_variant\'; its variants: default"',
                                        "['matmul_study.launch.cublaslt']"]


def test_make_hands_the_job_to_the_cublaslt_launcher(monkeypatch):
    calls = []
    monkeypatch.setattr(cublaslt, "cublaslt", lambda *args: calls.append(args) or "launcher")
    method, p = lt_method(), problem(100, 37, 250)
    buffers = launchers.DeviceBuffers("a", "b", "c", "scales")
    assert launchers.make(method, p, buffers, None, "fast_accum") == "launcher"
    assert calls == [(method, p, buffers, None, method.variants[0])]  # the name resolved once, to its record


@pytest.mark.parametrize("n,k,expected", [(1, 1, (4, 16)), (33, 65, (36, 80)), (36, 17, (36, 32)),
                                          (250, 48, (252, 48)), (4096, 8192, (4096, 8192))])
def test_n_is_padded_to_a_multiple_of_4_and_k_to_one_of_16(n, k, expected):
    assert cublaslt.padded(n, k) == expected


def test_the_launcher_refuses_what_it_cannot_run_before_importing_any_library():
    # This CPU environment has no nvmath: getting past a check would raise ImportError instead.
    buffers = launchers.DeviceBuffers(None, None, None, scales=object())
    with pytest.raises(KeyError, match="its variants: default, fast_accum"):
        launchers.make(lt_method(), problem(64, 64, 64), buffers, None, "no_such_variant")
    with pytest.raises(ValueError, match="no settings for variant 'split_k'; it knows default, fast_accum"):
        launchers.make(lt_method(("fast_accum", "split_k")), problem(64, 64, 64), buffers, None, "split_k")
    with pytest.raises(ValueError, match="runs float8_e4m3, float8_e4m3_block, not float16"):
        cublaslt.cublaslt(lt_method(), problem(64, 64, 64, "float16"), buffers)
    with pytest.raises(ValueError, match=r"needs its per-tensor scales on the device \(DeviceBuffers.scales"):
        launchers.make(lt_method(), problem(64, 64, 64), launchers.DeviceBuffers(None, None, None), None,
                       "fast_accum")


# ------------------------------------------------------------------------------------------------- GPU
def fp8_device(usable, why: str):
    """pycuda.driver, with the primary context of a GPU whose compute capability `usable` accepts; else skip,
    saying `why` and what this GPU has."""
    cuda = pytest.importorskip("pycuda.driver")
    pytest.importorskip("nvmath")
    try:
        import pycuda.autoprimaryctx
    except Exception as exc:  # no driver or no device
        pytest.skip(f"no usable CUDA device: {exc}")
    capability = pycuda.autoprimaryctx.device.compute_capability()
    if not usable(capability):
        pytest.skip(f"{why}; this GPU has {capability}")
    return cuda


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [None, "fast_accum"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 65, 33), (100, 37, 250), (33, 64, 36), (256, 256, 256),
                                   (513, 1000, 384)])
def test_cublaslt_fp8_matches_the_fp64_product_of_the_dequantized_inputs(shape, variant):
    # (m, k, n): k not a multiple of 16 or n not one of 4 (padded copies), m odd (never padded), n = 36 (taken as
    # it is) and aligned shapes. Launched twice, C poisoned before each: the padded buffers and the transpose are
    # reused from launch to launch.
    cuda = fp8_device(lambda cc: cc >= (8, 9), "FP8 tensor cores need compute capability 8.9 or newer")
    from matmul_study.measure import gpu_job, inputs
    from matmul_study.measure.verify import verify_on_host

    m, k, n = shape
    record = dtypes.get("float8_e4m3")
    operands = inputs.generate(m, k, n, record, seed=11)
    assert operands.scale != 1.0  # a launcher that ignored the scales would fail the check
    buffers = gpu_job.upload(*operands, record, operands.scales)
    launch = launchers.make(lt_method(), problem(m, n, k), buffers, None, variant)
    for _ in range(2):
        gpu_job.poisoned_launch(cuda, launch, buffers.c, record)
        check = verify_on_host(*operands, buffers.c.get(), record, True, 0, 0, operands.scale)
        assert check.passed and check.unwritten == 0, check
    assert isinstance(launch.algorithm["id"], int) and launch.algorithm["workspace_bytes"] >= 0


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 65), (257, 511, 129), (100, 37, 250), (33, 384, 36),
                                   (256, 256, 256), (513, 1000, 384), (128, 8192, 256)])
def test_cublaslt_block_scaled_fp8_matches_the_fp64_product_of_the_dequantized_inputs(shape):
    # (m, k, n) of float8_e4m3_block: k not a multiple of 128 (a partial last scale block, padded to a whole one),
    # m not a multiple of 4 (padded: cuBLASLt's VEC128 scales), n past a 128-column scale block, aligned shapes and
    # a deep K. The scales are relaid into cuBLASLt's layouts (cublaslt.BLOCK_SCALE_MODES, an assumption this
    # checks: a wrong layout weights the blocks wrongly and fails the fp64 comparison). Launched twice, C poisoned
    # before each.
    cuda = fp8_device(lambda cc: cc == (9, 0), "cuBLASLt's 128-element FP8 block scales are Hopper's (9.0)")
    from matmul_study.measure import gpu_job, inputs
    from matmul_study.measure.verify import verify_on_host

    m, k, n = shape
    record = dtypes.get("float8_e4m3_block")
    operands = inputs.generate(m, k, n, record, seed=11)
    buffers = gpu_job.upload(*operands, record, operands.scales)
    method = specs.Method("cublaslt", "cuBLASLt FP8 GEMM through nvmath-python", ("float8_e4m3_block",),
                             backend=CUBLASLT, reference_line=True)
    launch = launchers.make(method, problem(m, n, k, "float8_e4m3_block"), buffers, None, None)
    for _ in range(2):
        gpu_job.poisoned_launch(cuda, launch, buffers.c, record)
        check = verify_on_host(*operands, buffers.c.get(), record, True, 0, 0, block_scales=operands.scales)
        assert check.passed and check.unwritten == 0, check
    assert isinstance(launch.algorithm["id"], int)
