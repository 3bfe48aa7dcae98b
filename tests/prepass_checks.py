"""Checks shared by the tests of the warp-specialised rungs that run a pre-pass before their GEMM (wgmma_tf32's
transpose, wgmma_3xtf32's and wgmma_3xfp16's splits): the kernel's sizes against the host's, both kernels waiting
for the previous grid before they touch global memory, the GPU the rung needs, and nvcc for the checks that compile."""

from __future__ import annotations

import os
import shutil

import pytest

from matmul_study.core import registry
from matmul_study.launch import kernels

# CI sets MATMUL_STUDY_REQUIRE_NVCC=1: there a missing nvcc is a failure, not a skip.
NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")


def assert_the_kernel_agrees(method: str, checks: list[str], guard: str, tmp_path) -> None:
    """`checks` (static_asserts of the kernel's own sizes against the host's numbers) compile in `method`'s source
    with its default build's definitions, and `guard`, one that must fail, stops the compile with its message."""
    source = f'#include "{registry.get(method).source}"\n' + "\n".join(checks) + "\n"
    options = kernels.compile_options(method)  # the registry's definitions of the default build
    result = kernels.compile_with_nvcc(source, "sm_90a", tmp_path, options)
    assert result.returncode == 0, result.stderr
    failed = kernels.compile_with_nvcc(source + guard + "\n", "sm_90a", tmp_path / "broken", options)
    message = guard.split('"')[1]
    assert failed.returncode != 0 and message in failed.stderr


def assert_both_kernels_wait_before_any_global_access(method: str, dtype: str, tmp_path) -> None:
    """The module of `method`'s default build in `dtype` as PTX: exactly the pre-pass and the GEMM, each waiting for
    the previous grid (griddepcontrol.wait) before its first global access, and each letting its dependent launch."""
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, [(dtype, 0)]))
    command = kernels.nvcc_command(source, tmp_path / "module.ptx", "sm_90a", kernels.compile_options(method), "ptx")
    assert kernels.run_nvcc(command).returncode == 0
    entries = (tmp_path / "module.ptx").read_text().split(".entry ")[1:]
    assert sorted(e.split("(")[0] for e in entries) == sorted([registry.get(method).prepass.symbol,
                                                               kernels.symbol(method, dtype, 0)])
    for body in entries:
        first_wait = body.index("griddepcontrol.wait")
        accesses = [body.find(op) for op in ("cp.async.bulk.tensor", "st.global", "ld.global", "red.global")]
        assert min(i for i in accesses if i >= 0) > first_wait
        assert "griddepcontrol.launch_dependents" in body


def rung_gpu(method: str):
    """PyCUDA's primary context on a GPU that runs `method`, and its arch (sm_XY); skips where there is none."""
    cuda = pytest.importorskip("pycuda.driver")
    try:
        import pycuda.autoprimaryctx  # noqa: F401
    except Exception as exc:  # no driver or no device
        pytest.skip(f"no usable CUDA device: {exc}")
    from matmul_study.core.backends import module_available

    cc = cuda.Context.get_device().compute_capability()
    why = registry.get(method).unmet_requirement(cc, module_available)
    if why:
        pytest.skip(why)
    return cuda, f"sm_{cc[0]}{cc[1]}"


def run_prepass(gpu, tmp_path, method: str, dtype: str, a, b, outputs: list) -> list:
    """`method`'s pre-pass alone, as its launcher runs it (the registry's grid and block), over host arrays `a` (m x k)
    and `b` (k x n) into `outputs`, host arrays it copies to the device first (poisoned, so that an element the
    pre-pass leaves unwritten shows): their contents afterwards, in order. `gpu` is rung_gpu's (cuda, arch)."""
    import numpy as np
    import pycuda.gpuarray as gpuarray

    from matmul_study.core import dtypes
    from matmul_study.core.specs import Problem

    cuda, arch = gpu
    (m, k), n = a.shape, b.shape[1]
    cubin = str(tmp_path / "module.cubin")
    kernels.compile_cubin(method, dtype, 0, arch, cubin)
    spec = registry.get(method).prepass
    launch = spec.launch(Problem(m, n, k, 0, dtypes.get(dtype)))
    func = cuda.module_from_file(cubin).get_function(spec.symbol)
    device = [gpuarray.to_gpu(x) for x in (a, b, *outputs)]
    func(*(x.gpudata for x in device), np.int32(m), np.int32(n), np.int32(k), grid=launch.grid, block=launch.threads)
    return [x.get() for x in device[2:]]

