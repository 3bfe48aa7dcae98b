"""Each CUDA kernel against a float64 numpy reference, on a real GPU through PyCUDA.

Skipped cleanly where PyCUDA or a CUDA device is missing (CI). Shapes are awkward on purpose: 1x1x1, primes and
sizes just past a tile, so every edge guard and zero fill is exercised.
"""

from __future__ import annotations

import numpy as np
import pytest

from matmul_study import kernels, registry

pytestmark = pytest.mark.gpu

cuda = pytest.importorskip("pycuda.driver")
try:
    import pycuda.autoprimaryctx  # noqa: F401  (creates the context on device 0)
except Exception as exc:  # no driver, no device, or a PyCUDA too old to have autoprimaryctx
    pytest.skip(f"no usable CUDA device: {exc}", allow_module_level=True)

import pycuda.gpuarray as gpuarray  # noqa: E402
from pycuda.compiler import SourceModule  # noqa: E402

CC = cuda.Context.get_device().compute_capability()
ARCH = f"sm_{CC[0]}{CC[1]}"

SHAPES = [(1, 1, 1), (17, 33, 65), (100, 37, 250), (257, 511, 129), (256, 256, 256)]  # (m, k, n)
TOLERANCE = {"float64": 1e-11, "float32": 1e-4, "float16": 1e-3, "int32": 0.0}
INT32_MIN = np.iinfo(np.int32).min
GUARD = 256  # extra sentinel elements after C; a write past its end shows up there
SEED = 20240611


def blocks_for(method: str) -> list[int]:
    m = registry.get(method)
    if not m.block_axis:
        return [0]
    blocks = [16, 32]
    if method in ("tiled", "tiled_unrolled"):
        blocks += [8, 24]  # tiles that don't divide the shapes evenly, 24 not a power of two either
    if m.blocks is not None:
        blocks = [b for b in blocks if b in m.blocks]
    return blocks


CASES = [
    pytest.param(method, dtype, block, shape, id=f"{method}-{dtype}-b{block}-{shape[0]}x{shape[1]}x{shape[2]}")
    for method in registry.CUDA_METHODS
    for dtype in registry.get(method).dtypes
    for block in blocks_for(method)
    for shape in SHAPES
]


@pytest.fixture(scope="module")
def module_for():
    """Compile each method's module once (all its dtype x block instances) and reuse it."""
    cache = {}

    def get(method):
        if method not in cache:
            m = registry.get(method)
            instances = [(d, b) for d in m.dtypes for b in blocks_for(method)]
            cache[method] = SourceModule(
                kernels.module_source(method, instances),
                no_extern_c=True,
                arch=ARCH,
                options=list(kernels.COMPILE_OPTIONS),
                include_dirs=[str(kernels.KERNEL_DIR)],
            )
        return cache[method]

    return get


def random_matrix(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-5, 5, size=shape, endpoint=True, dtype=np.int32)
    if dtype == "float16":
        return rng.uniform(-5, 5, size=shape).astype(np.float32).astype(np.float16)
    return rng.uniform(-5, 5, size=shape).astype(dtype)


@pytest.mark.parametrize("method,dtype,block,shape", CASES)
def test_kernel_matches_reference(module_for, method, dtype, block, shape):
    if dtype == "float16" and CC < (7, 0):
        pytest.skip("tensor cores need compute capability 7.0")
    m, k, n = shape
    rng = np.random.default_rng(SEED)
    a = random_matrix(rng, (m, k), dtype)
    b = random_matrix(rng, (k, n), dtype)
    out_dtype = np.dtype(registry.output_dtype(dtype))
    sentinel = INT32_MIN if dtype == "int32" else np.nan

    a_gpu = gpuarray.to_gpu(a)
    b_gpu = gpuarray.to_gpu(b)
    c_gpu = gpuarray.to_gpu(np.full(m * n + GUARD, sentinel, dtype=out_dtype))

    fn = module_for(method).get_function(kernels.symbol(method, dtype, kernels.template_block(method, block)))
    launch = registry.get(method).launch(m, n, block, np.dtype(dtype).itemsize)
    fn(
        a_gpu.gpudata, b_gpu.gpudata, c_gpu.gpudata, np.int32(m), np.int32(n), np.int32(k),
        block=tuple(launch.threads), grid=tuple(launch.grid), shared=launch.shared_bytes,
    )
    cuda.Context.synchronize()
    out = c_gpu.get()
    c, guard = out[: m * n].reshape(m, n), out[m * n :]

    # The reference multiplies exactly the (possibly rounded) inputs the kernel saw.
    ref = a.astype(np.float64) @ b.astype(np.float64)

    if dtype == "int32":
        assert not (guard != INT32_MIN).any(), "kernel wrote past the end of C"
        assert not (c == INT32_MIN).any(), "some elements of C were never written"
        np.testing.assert_array_equal(c.astype(np.int64), ref.astype(np.int64))
    else:
        assert np.isnan(guard).all(), "kernel wrote past the end of C"
        assert not np.isnan(c).any(), "some elements of C were never written"
        err = np.linalg.norm(c.astype(np.float64) - ref) / max(np.linalg.norm(ref), np.finfo(np.float64).tiny)
        assert err < TOLERANCE[dtype], f"relative Frobenius error {err:.3e} >= {TOLERANCE[dtype]:.0e}"
