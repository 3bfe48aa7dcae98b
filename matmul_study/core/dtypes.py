"""Element types: one record per config name, the single place that says what a dtype means.

A record says how the inputs are stored (numpy, with ml_dtypes for bfloat16), which C++ types a kernel is
instantiated with, what the output is, how the arithmetic is done (IEEE, tf32 tensor-core math, exact
integers, or 8-bit floats with per-tensor or per-block scales), how close to the fp64 reference a result must be,
how cuBLAS is asked for it, and where the dtype sorts in tables and figures. A block-scaled dtype's scales travel
in one fp32 buffer whose layout is defined here (block_scale_layout), for the kernels, the library launchers and
the verification alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    # numpy storage of the inputs; bfloat16 comes from ml_dtypes, numpy has none.
    storage: str
    # C++ types: the kernel's input, its accumulator and its output.
    c_input: str
    c_accumulator: str
    c_output: str
    # "ieee": the storage type's own arithmetic; "tf32": fp32 storage, tensor cores round to 10 mantissa bits;
    # "exact": integers, which must match the reference bit for bit; "scaled": 8-bit floats with fp32 scales (an
    # element's value is its stored value times its scale): one per tensor, applied to the fp32 result, or one per
    # block where scale_block says so.
    math: str
    # Relative Frobenius error allowed against the fp64 reference of the same (already rounded) inputs.
    tolerance: float
    description: str
    # cuBLAS names (cudaDataType of A/B, of C, and cublasComputeType_t); None: cuBLAS has no such GEMM.
    cublas_types: tuple[str, str, str] | None = None
    # Integer inputs drawn from this closed range whatever the config's distribution says (None: the config's
    # [low, high]); int8 takes its whole range, so that every sign and magnitude reaches the tensor cores.
    value_range: tuple[int, int] | None = None
    # A scaled dtype's scale granularity: None, one scale per tensor; else the block edge S of DeepSeek-V3's layout,
    # one scale per row of A and S k (1 x S blocks) and one per S x S block of B (block_scale_layout).
    scale_block: int | None = None

    @property
    def numpy(self) -> np.dtype:
        """The inputs' numpy dtype (ml_dtypes' types for bfloat16 and the 8-bit floats, which numpy lacks)."""
        if self.storage in ML_DTYPES:
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, self.storage))
        return np.dtype(self.storage)

    @property
    def output(self) -> np.dtype:
        return np.dtype(OUTPUT_STORAGE[self.c_output])

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def device_view(self) -> np.dtype:
        """How the inputs travel to the GPU: ml_dtypes' types as their raw bits (bfloat16 as uint16, the 8-bit floats
        as uint8), which PyCUDA and CuPy both accept."""
        if self.storage in ML_DTYPES:
            return np.dtype(np.uint16) if self.itemsize == 2 else np.dtype(np.uint8)
        return self.numpy

    @property
    def exact(self) -> bool:
        return self.math == "exact"

    @property
    def scaled(self) -> bool:
        """Inputs that carry scales (the 8-bit floats), per tensor or per block: see matmul_study.measure.inputs."""
        return self.math == "scaled"

    @property
    def block_scaled(self) -> bool:
        """Scales per block (scale_block), not per tensor: the result has no single factor, and the reference is the
        product of the dequantized inputs (dequantize_blocks)."""
        return self.scaled and self.scale_block is not None

    def input_range(self, low: float, high: float) -> tuple[int, int]:
        """The closed integer range an exact dtype's inputs are drawn from, given the config's [low, high]."""
        return self.value_range or (math.ceil(low), math.floor(high))

    def max_exact_k(self, low: float, high: float) -> int:
        """The largest k for which every sum of k products of inputs in input_range(low, high) fits in the int32
        output, so that the int32 result is exact and equal to the fp64 reference (exact as well: the sums stay
        far below 2^53). For int8's whole range |product| <= 128 * 128 = 2^14, so k <= (2^31 - 1) // 2^14, that
        is 131071."""
        lo, hi = self.input_range(low, high)
        largest = max(abs(lo), abs(hi)) ** 2
        return INT32_MAX // largest if largest else INT32_MAX

    def check_exact_k(self, k: int, low: float, high: float) -> None:
        """Refuse a k whose int32 sums could overflow (ValueError naming the bound); no-op for inexact dtypes."""
        if not self.exact:
            return
        limit = self.max_exact_k(low, high)
        if k > limit:
            lo, hi = self.input_range(low, high)
            raise ValueError(
                f"{self.name}: k = {k} is larger than {limit}, the largest k for which int32 sums of k products of "
                f"inputs in [{lo}, {hi}] cannot overflow (k * {max(abs(lo), abs(hi)) ** 2} <= 2^31 - 1), so the "
                f"result would not be exact; use shapes with k <= {limit}")


OUTPUT_STORAGE = {"float": "float32", "double": "float64", "int": "int32"}
ML_DTYPES = ("bfloat16", "float8_e4m3fn")  # storage names that numpy takes from ml_dtypes
INT32_MAX = 2**31 - 1

# Display order is the order of this list: tensor-core floating-point types first (fewest bits first), then the
# IEEE types, then integers (int8 runs on the tensor cores too, but sorts with the exact types).
DTYPE_LIST = [
    # FP8 e4m3 with per-tensor scales (Hopper's tensor cores, cuBLASLt): the inputs are drawn as fp32, scaled so
    # that each tensor's largest magnitude lands on e4m3's largest finite value (448), and rounded to e4m3; the
    # GEMM returns scale_a * scale_b * (A·B) in fp32. The result is checked against the fp64 product of the
    # dequantized inputs (the stored e4m3 values times their scales), so the tolerance covers the GEMM alone (its
    # fp32 accumulation: the tensor cores keep fewer bits while they add up k products, docs/tensor-cores.md); the
    # quantization's own error is measured apart (inputs.Operands.quantization).
    DType("float8_e4m3", "float8_e4m3fn", "__nv_fp8_e4m3", "float", "float", "scaled", 1e-2,
          "fp8 e4m3 inputs with per-tensor fp32 scales, fp32 accumulation and output"),
    # The same storage with DeepSeek-V3's block scales: one fp32 scale per row of A and 128 k, one per 128 x 128
    # block of B, each block's largest magnitude on 448; C = sum over k blocks kb of (A_kb · B_kb) times
    # sa[row, kb] * sb[kb, col / 128]. Checked the same way, against the fp64 product of the dequantized inputs
    # (each stored value times its block's scale).
    DType("float8_e4m3_block", "float8_e4m3fn", "__nv_fp8_e4m3", "float", "float", "scaled", 1e-2,
          "fp8 e4m3 inputs with fp32 block scales (A: 1x128, B: 128x128, DeepSeek-V3's), fp32 accumulation and "
          "output", scale_block=128),
    DType("float16", "float16", "__half", "float", "float", "ieee", 1e-3,
          "fp16 inputs, fp32 accumulation and output",
          ("CUDA_R_16F", "CUDA_R_32F", "CUBLAS_COMPUTE_32F")),
    DType("bfloat16", "bfloat16", "__nv_bfloat16", "float", "float", "ieee", 1e-3,
          "bf16 inputs, fp32 accumulation and output",
          ("CUDA_R_16BF", "CUDA_R_32F", "CUBLAS_COMPUTE_32F")),
    # tf32 rounds the fp32 inputs inside the tensor core (about 3e-4 relative error at these sizes): it is
    # compared with the reference of the fp32 inputs, so its tolerance is far above float32's.
    DType("tf32", "float32", "float", "float", "float", "tf32", 2e-3,
          "fp32 storage, tensor-core tf32 math, fp32 output",
          ("CUDA_R_32F", "CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32")),
    # 1e-4 keeps a tf32 result from ever passing as float32 (cuBLAS's COMPUTE_32F uses no tf32 unless asked).
    DType("float32", "float32", "float", "float", "float", "ieee", 1e-4, "IEEE fp32",
          ("CUDA_R_32F", "CUDA_R_32F", "CUBLAS_COMPUTE_32F")),
    DType("float64", "float64", "double", "double", "double", "ieee", 1e-11, "IEEE fp64",
          ("CUDA_R_64F", "CUDA_R_64F", "CUBLAS_COMPUTE_64F")),
    DType("int32", "int32", "int", "int", "int", "exact", 0.0, "32-bit integers, exact"),
    # Tensor-core integers: int8 in [-128, 127], exact int32 sums (k <= 131071) and output. cuBLAS computes it
    # with CUBLAS_COMPUTE_32I, whose alpha and beta are int32.
    DType("int8", "int8", "int8_t", "int", "int", "exact", 0.0, "int8 inputs, exact int32 accumulation and output",
          ("CUDA_R_8I", "CUDA_R_32I", "CUBLAS_COMPUTE_32I"), value_range=(-128, 127)),
]
DTYPES: dict[str, DType] = {d.name: d for d in DTYPE_LIST}
NAMES = tuple(DTYPES)


def get(name: "str | DType") -> DType:
    """The record of a config name; a record passes through, so code handed a job's resolved record never looks
    it up again."""
    if isinstance(name, DType):
        return name
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; known dtypes: {', '.join(NAMES)}") from None


def to_float64(x, dtype: DType, xp=np):
    """fp64 copy of inputs as stored on the device or host (bfloat16 may arrive as its raw uint16 bits, the 8-bit
    floats as their raw bytes). The values as stored: a scaled dtype's scales are not applied."""
    if dtype.storage == "bfloat16" and x.dtype == np.uint16:
        # bf16 is the top half of an fp32: shift the bits up and reinterpret.
        # xp.left_shift, not `<<`: CuPy's operators given a Python scalar import cupyx.scipy (verify.py).
        return xp.left_shift(x.astype(xp.uint32), xp.uint32(16)).view(xp.float32).astype(xp.float64)
    if dtype.itemsize == 1 and dtype.storage in ML_DTYPES and x.dtype == np.uint8:
        # 256 possible bytes: look each one up in the table of their values.
        table = xp.asarray(np.arange(256, dtype=np.uint8).view(dtype.numpy).astype(np.float64))
        return table[x]
    return x.astype(xp.float64)


@dataclass(frozen=True)
class BlockScaleLayout:
    """Where a block-scaled dtype's scales lie in its one fp32 buffer (inputs.Operands.scales on the host,
    DeviceBuffers.scales on the device), for A (m x k) times B (k x n) with blocks of edge S = dtype.scale_block:

        [ sa: kb x m, k-block-major | sb: kb x nb, k-block-major ],   kb = ceil(k / S), nb = ceil(n / S),

    sa[q, i] scaling A[i, qS : (q + 1)S] and sb[q, j] scaling B[qS : (q + 1)S, jS : (j + 1)S]. k-block-major, so that
    what one k step needs is contiguous: a kernel's consumer rows read consecutive sa values, and one buffer is one
    pointer for a kernel's arguments. Libraries with a layout of their own relay it (launch/cublaslt.py)."""
    m: int
    k: int
    n: int
    block: int

    @property
    def kb(self) -> int:
        return -(-self.k // self.block)

    @property
    def nb(self) -> int:
        return -(-self.n // self.block)

    @property
    def size(self) -> int:
        """fp32 elements of the whole buffer."""
        return self.kb * (self.m + self.nb)

    def split(self, scales, xp=np):
        """(sa, sb): views of the buffer as kb x m and kb x nb; a buffer of another size raises ValueError."""
        if scales.size != self.size:
            raise ValueError(f"block scales of {self.m}x{self.k} by {self.k}x{self.n} with {self.block}-element "
                             f"blocks: {scales.size} values given, the layout holds {self.size} (kb {self.kb} x "
                             f"(m {self.m} + nb {self.nb}))")
        flat = scales.reshape(-1)
        return flat[: self.kb * self.m].reshape(self.kb, self.m), flat[self.kb * self.m:].reshape(self.kb, self.nb)


def block_scale_layout(dtype: DType, m: int, k: int, n: int) -> BlockScaleLayout:
    """The scale buffer's layout of a block-scaled dtype for an m x k by k x n product (ValueError for other dtypes,
    which have no blocks)."""
    if not dtype.block_scaled:
        raise ValueError(f"{dtype.name} has no block scales (scale_block None); block-scaled dtypes: "
                         f"{', '.join(d.name for d in DTYPE_LIST if d.block_scaled)}")
    return BlockScaleLayout(m, k, n, dtype.scale_block)


def dequantize_blocks(a64, b64, scales, dtype: DType, xp=np):
    """A block-scaled dtype's fp64 operands (to_float64: the values as stored), A m x k and B k x n, multiplied in
    place by their blocks' scales (the buffer of block_scale_layout, on the host or the device): the values the
    GEMM multiplies. One k block at a time, so that no temporary as large as an operand is made (device memory is
    counted for the reference's own arrays only); ufuncs by name, with `out`, as CuPy wants them (verify.py)."""
    (m, k), n = a64.shape, b64.shape[1]
    layout = block_scale_layout(dtype, m, k, n)
    sa, sb = layout.split(xp.asarray(scales), xp)
    sa, sb = sa.astype(xp.float64), sb.astype(xp.float64)
    size = layout.block
    for q in range(layout.kb):
        ks = slice(q * size, min(k, (q + 1) * size))
        xp.multiply(a64[:, ks], sa[q][:, None], out=a64[:, ks])
        xp.multiply(b64[ks, :], xp.repeat(sb[q], size)[:n][None, :], out=b64[ks, :])
    return a64, b64
