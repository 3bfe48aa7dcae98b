"""The methods the study can run: one entry per method, the single place a new kernel is registered.

A CUDA method names its `kernels/*.cu` file, the C++ template call that instantiates it, and its launch
geometry. `matmul_study.kernels` turns (method, dtype, block) into an `extern "C"` wrapper around that call,
so PyCUDA can find the kernel by a plain name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# Element types the config may name: numpy name -> C++ input type, C++ accumulator/output type.
# float16 means fp16 inputs with fp32 accumulation and fp32 output (the tensor-core contract).
CTYPES = {
    "float16": ("__half", "float"),
    "float32": ("float", "float"),
    "float64": ("double", "double"),
    "int32": ("int", "int"),
}
DTYPES = tuple(CTYPES)


def output_dtype(dtype: str) -> str:
    """numpy name of the output matrix C for inputs of `dtype`."""
    return "float32" if dtype == "float16" else dtype


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    threads: tuple[int, int, int]
    shared_bytes: int = 0


def square_thread_blocks(m: int, n: int, block: int, itemsize: int) -> Launch:
    """BLOCK x BLOCK threads, one per element of C; x walks columns so B reads and C writes coalesce."""
    return Launch((cdiv(n, block), cdiv(m, block), 1), (block, block, 1))


def square_thread_blocks_dynamic_tiles(m: int, n: int, block: int, itemsize: int) -> Launch:
    """As above, plus two BLOCK x BLOCK tiles (A and B) in dynamic shared memory."""
    return Launch((cdiv(n, block), cdiv(m, block), 1), (block, block, 1), 2 * block * block * itemsize)


def fixed_tiles(tile_m: int, tile_n: int, threads: int) -> Callable[[int, int, int, int], Launch]:
    """Kernels whose block computes a fixed tile_m x tile_n tile of C with a fixed thread count."""

    def launch(m: int, n: int, block: int, itemsize: int) -> Launch:
        return Launch((cdiv(n, tile_n), cdiv(m, tile_m), 1), (threads, 1, 1))

    return launch


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    dtypes: tuple[str, ...]
    # "numpy" runs on the CPU, "pycuda" launches a kernel from `source`, "cupy" calls cuBLAS.
    backend: str
    # Whether the config's block sizes apply; methods without the axis run once per (dtype, shape).
    block_axis: bool = False
    source: str | None = None
    # C++ call with {T} (input), {Acc} (accumulator and output) and {BLOCK} placeholders.
    template: str | None = None
    launch: Callable[[int, int, int, int], Launch] | None = None
    # Block sizes the kernel supports beyond the config's 1..32 (None: all of them).
    blocks: tuple[int, ...] | None = None
    reference_line: bool = False
    # The traffic model's unit of work, as a function of the block size: (tile_m, tile_n, tile_k). A unit reads
    # its tile_m rows of A and tile_n columns of B from global memory once, and computes over whole tiles, zero
    # padding included. None: a library call, modelled as ideal (each input read once, no padding).
    tile: Callable[[int], tuple[int, int, int]] | None = None

    @property
    def on_gpu(self) -> bool:
        return self.backend != "numpy"

    @property
    def block_in_template(self) -> bool:
        return bool(self.template and "{BLOCK}" in self.template)


SIMT_DTYPES = ("float32", "float64", "int32")

METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method(
            "numpy",
            "numpy matmul on the CPU (BLAS), the CPU reference line",
            ("float32", "float64"),
            backend="numpy",
            reference_line=True,
        ),
        Method(
            "naive",
            "one thread per element of C, global memory only",
            SIMT_DTYPES,
            backend="pycuda",
            block_axis=True,
            source="1_naive.cu",
            template="naive_matmul<{T}, {Acc}>",
            launch=square_thread_blocks,
            tile=lambda block: (1, 1, 1),  # each thread reads its own row of A and column of B
        ),
        Method(
            "tiled",
            "BLOCK x BLOCK shared-memory tiles; tile size read at run time, inner loop not unrolled",
            SIMT_DTYPES,
            backend="pycuda",
            block_axis=True,
            source="2_tiled.cu",
            template="tiled_matmul<{T}, {Acc}>",
            launch=square_thread_blocks_dynamic_tiles,
            tile=lambda block: (block, block, block),
        ),
        Method(
            "tiled_unrolled",
            "the tiled kernel with the tile size a template parameter and the inner loop fully unrolled",
            SIMT_DTYPES,
            backend="pycuda",
            block_axis=True,
            source="3_tiled_unrolled.cu",
            template="tiled_unrolled_matmul<{T}, {Acc}, {BLOCK}>",
            launch=square_thread_blocks,
            tile=lambda block: (block, block, block),
        ),
        Method(
            "wmma",
            "tensor cores through nvcuda::wmma, fp16 in, fp32 accumulate; one warp per 16x16 tile of C",
            ("float16",),
            backend="pycuda",
            source="4_wmma.cu",
            template="wmma_matmul",
            launch=fixed_tiles(32, 32, 128),
            tile=lambda block: (16, 16, 16),  # one warp per 16x16 tile of C, loading its own strips
        ),
        Method(
            "register_tiled",
            "128x128 block tiles, BK=8, each of 256 threads computing an 8x8 sub-tile of C in registers",
            ("float32", "float64"),
            backend="pycuda",
            source="5_register_tiled.cu",
            template="register_tiled_matmul<{T}, {Acc}>",
            launch=fixed_tiles(128, 128, 256),
            tile=lambda block: (128, 128, 8),
        ),
        Method(
            "wmma_tiled",
            "tensor cores, 8 warps per 128x128 tile of C, each warp 64x32 from shared-memory tiles (BK=32)",
            ("float16",),
            backend="pycuda",
            source="6_wmma_tiled.cu",
            template="wmma_tiled_matmul",
            launch=fixed_tiles(128, 128, 256),
            tile=lambda block: (128, 128, 32),
        ),
        Method(
            "cublas",
            "cuBLAS through CuPy: SGEMM (TF32 off), DGEMM, and fp16-in/fp32-out GemmEx; the vendor line",
            ("float32", "float64", "float16"),
            backend="cupy",
            reference_line=True,
        ),
    ]
}

CUDA_METHODS = tuple(name for name, m in METHODS.items() if m.backend == "pycuda")


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(METHODS)}") from None
