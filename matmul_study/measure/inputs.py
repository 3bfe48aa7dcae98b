"""Reproducible inputs: the same seed, shape and dtype give the same matrices for every method."""

from __future__ import annotations

import numpy as np

from matmul_study.core import dtypes

# The largest finite e4m3 value: a per-tensor scale maps each tensor's largest magnitude onto it.
E4M3_MAX = 448.0
# Rows of A (and columns of B) over which the quantization error of a scaled dtype is measured: its full product
# would cost as much as the reference itself.
QUANTIZATION_SAMPLE = 64


class Operands(tuple):
    """(A, B), unpacked as a pair, with what a scaled dtype carries besides: `scales`, float32 (scale_a, scale_b)
    such that the value of an element is its stored value times its operand's scale (ones for the other dtypes),
    and `quantization`, the relative Frobenius error of the product of the quantized inputs against that of the
    fp32 values they were rounded from (a slice: QUANTIZATION_SAMPLE rows of A and columns of B), or None."""

    scales: np.ndarray
    quantization: dict | None

    def __new__(cls, a, b, scales=None, quantization=None):
        self = super().__new__(cls, (a, b))
        self.scales = np.ones(2, np.float32) if scales is None else np.asarray(scales, np.float32)
        self.quantization = quantization
        return self

    @property
    def scale(self) -> float:
        """scale_a * scale_b: the factor between the product of the stored values and the result."""
        return float(self.scales[0]) * float(self.scales[1])


def generate(m: int, k: int, n: int, dtype: dtypes.DType | str, seed: int, low: float = -5,
             high: float = 5) -> Operands:
    """A (m x k) and B (k x n), uniform in [low, high]; integers for the exact dtypes (int8: its whole range,
    DType.value_range), refused where k is too large for their int32 sums to be exact; fp16 and bf16 rounded from
    fp32; the 8-bit floats scaled per tensor and rounded from fp32 (quantize). tf32 inputs are plain fp32: the
    rounding to tf32 happens inside the tensor cores."""
    record = dtypes.get(dtype)
    rng = np.random.default_rng([seed, m, k, n])
    if record.exact:
        record.check_exact_k(k, low, high)
        lo, hi = record.input_range(low, high)
        return Operands(*(rng.integers(lo, hi, size=s, endpoint=True, dtype=record.numpy) for s in ((m, k), (k, n))))
    base = np.float64 if record.storage == "float64" else np.float32
    # random(dtype=float32) draws fp32 directly: half the time and memory of drawing fp64 and casting.
    mats = [(rng.random(s, dtype=base) * base(high - low) + base(low)) for s in ((m, k), (k, n))]
    if record.scaled:
        return quantize(*mats, record)
    return Operands(*(x.astype(record.numpy, copy=False) for x in mats))


def quantize(a: np.ndarray, b: np.ndarray, record: dtypes.DType) -> Operands:
    """Per-tensor scaling, as FP8 training and inference recipes do it: scale = amax / 448 (amax: the tensor's
    largest magnitude), stored value = e4m3(x / scale), rounded to nearest. An all-zero tensor gets scale 1."""
    scales = np.array([np.abs(x).max(initial=0.0) / E4M3_MAX or 1.0 for x in (a, b)], np.float32)
    aq, bq = ((x / s).astype(record.numpy) for x, s in zip((a, b), scales))
    return Operands(aq, bq, scales, quantization_error(a, b, aq, bq, scales))


def quantization_error(a, b, aq, bq, scales) -> dict:
    """The relative Frobenius error that quantizing alone puts into the product, on a slice of it: rows of A times
    B and A times columns of B, the dequantized inputs against the fp32 ones. In fp32 arithmetic: its own rounding
    (about 1e-6) is far below e4m3's (a few %), and fp32 BLAS keeps this under a second at 8192³."""
    rows, cols = slice(0, min(QUANTIZATION_SAMPLE, a.shape[0])), slice(0, min(QUANTIZATION_SAMPLE, b.shape[1]))
    a32, b32 = a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
    aq32, bq32 = aq.astype(np.float32) * scales[0], bq.astype(np.float32) * scales[1]
    exact = np.concatenate([(a32[rows] @ b32).ravel(), (a32 @ b32[:, cols]).ravel()]).astype(np.float64)
    got = np.concatenate([(aq32[rows] @ bq32).ravel(), (aq32 @ bq32[:, cols]).ravel()]).astype(np.float64)
    norm = np.linalg.norm(exact)
    return {"rel_fro_error": float(np.linalg.norm(got - exact) / norm) if norm else 0.0,
            "scope": f"{rows.stop} rows of A x B and A x {cols.stop} columns of B",
            "scales": [float(s) for s in scales]}
