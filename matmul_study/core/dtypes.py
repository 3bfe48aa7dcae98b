"""Element types: one record per config name, the single place that says what a dtype means.

A record says how the inputs are stored (numpy, with ml_dtypes for bfloat16), which C++ types a kernel is
instantiated with, what the output is, how the arithmetic is done (IEEE, tf32 tensor-core math, exact
integers, or 8-bit floats with per-tensor scales), how close to the fp64 reference a result must be, how cuBLAS is asked for it, and where the dtype
sorts in tables and figures.
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
    # "exact": integers, which must match the reference bit for bit; "scaled": 8-bit floats, each operand with a
    # per-tensor fp32 scale (its value is the stored value times the scale), applied to the fp32 result.
    math: str
    # Relative Frobenius error allowed against the fp64 reference of the same (already rounded) inputs.
    tolerance: float
    description: str
    # cuBLAS names (cudaDataType of A/B, of C, and cublasComputeType_t); None: cuBLAS has no such GEMM.
    cublas_types: tuple[str, str, str] | None = None
    # Integer inputs drawn from this closed range whatever the config's distribution says (None: the config's
    # [low, high]); int8 takes its whole range, so that every sign and magnitude reaches the tensor cores.
    value_range: tuple[int, int] | None = None

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
        """Inputs that carry per-tensor scales (the 8-bit floats): see matmul_study.measure.inputs."""
        return self.math == "scaled"

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
