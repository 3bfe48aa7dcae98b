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
    """(A, B), unpacked as a pair, with what a scaled dtype carries besides: `scales`, float32, such that the value of
    an element is its stored value times its scale: per tensor (scale_a, scale_b), per block the one buffer of
    dtypes.block_scale_layout (ones(2) for the other dtypes); and `quantization`, the relative Frobenius error of the
    product of the quantized inputs against that of the fp32 values they were rounded from (a slice:
    QUANTIZATION_SAMPLE rows of A and columns of B), or None. The quantization record of block-scaled operands names
    their block edge (scale_block), so that operands read back from a file (input_cache) still say what their
    scales are."""

    scales: np.ndarray
    quantization: dict | None

    def __new__(cls, a, b, scales=None, quantization=None):
        self = super().__new__(cls, (a, b))
        self.scales = np.ones(2, np.float32) if scales is None else np.asarray(scales, np.float32)
        self.quantization = quantization
        return self

    @property
    def scale_block(self) -> int | None:
        """The block edge of block-scaled operands (dtypes.DType.scale_block), None for per-tensor or no scales."""
        return (self.quantization or {}).get("scale_block")

    @property
    def scale(self) -> float:
        """scale_a * scale_b: the factor between the product of the stored values and the result, for per-tensor
        scales. Block scales have no such factor: their reference dequantizes each block (dtypes.dequantize_blocks,
        the verification's block_scales), and asking for one raises ValueError."""
        if self.scale_block is not None:
            raise ValueError(f"Operands.scale: block-scaled operands ({self.scale_block}-element blocks, "
                             f"{self.scales.size} scales) have no single factor; pass Operands.scales as the "
                             "verification's block_scales (dtypes.dequantize_blocks)")
        return float(self.scales[0]) * float(self.scales[1])


def generate(m: int, k: int, n: int, dtype: dtypes.DType | str, seed: int, low: float = -5,
             high: float = 5) -> Operands:
    """A (m x k) and B (k x n), uniform in [low, high]; integers for the exact dtypes (int8: its whole range,
    DType.value_range), refused where k is too large for their int32 sums to be exact; fp16 and bf16 rounded from
    fp32; the 8-bit floats scaled per tensor (quantize) or per block (quantize_blocks) and rounded from fp32. tf32
    inputs are plain fp32: the rounding to tf32 happens inside the tensor cores."""
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
        return quantize_blocks(*mats, record) if record.block_scaled else quantize(*mats, record)
    return Operands(*(x.astype(record.numpy, copy=False) for x in mats))


def quantize(a: np.ndarray, b: np.ndarray, record: dtypes.DType) -> Operands:
    """Per-tensor scaling, as FP8 training and inference recipes do it: scale = amax / 448 (amax: the tensor's
    largest magnitude), stored value = e4m3(x / scale), rounded to nearest. An all-zero tensor gets scale 1."""
    scales = np.array([np.abs(x).max(initial=0.0) / E4M3_MAX or 1.0 for x in (a, b)], np.float32)
    aq, bq = ((x / s).astype(record.numpy) for x, s in zip((a, b), scales))
    error = quantization_error(a, b, aq.astype(np.float32) * scales[0], bq.astype(np.float32) * scales[1])
    return Operands(aq, bq, scales, {**error, "scales": [float(s) for s in scales]})


def quantize_blocks(a: np.ndarray, b: np.ndarray, record: dtypes.DType) -> Operands:
    """Block scaling, DeepSeek-V3's recipe (S = record.scale_block, 128): one scale per 1 x S slice of a row of A
    and per S x S block of B, scale = the block's amax / 448 (an all-zero block, or the zeros past the matrix's
    edge alone, gets 1), stored value = e4m3(x / scale) rounded to nearest. The scales go in the one buffer of
    dtypes.block_scale_layout. Whole-array numpy (the blocks as axes of a reshape; a zero-padded copy only where k
    or n is not a multiple of S)."""
    size = record.scale_block
    sa = _block_scales(_block_amax(a, 1, size))  # m x kb
    sb = _block_scales(_block_amax(b, size, size))  # kb x nb
    aq = _divide_blockwise(a, sa, 1, size).astype(record.numpy)
    bq = _divide_blockwise(b, sb, size, size).astype(record.numpy)
    scales = np.concatenate([sa.T.ravel(), sb.ravel()])
    # Dequantized in fp32, as the per-tensor error is computed, by the verification's own dequantizer.
    error = quantization_error(a, b, *dtypes.dequantize_blocks(aq.astype(np.float32), bq.astype(np.float32), scales,
                                                               record))
    return Operands(aq, bq, scales, {**error, "scale_block": size,
                                     "scale_range": [float(scales.min()), float(scales.max())]})


def _padded(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """x itself, or a zero-padded copy of it rows x cols (zeros change no block's amax and quantize to zero)."""
    if x.shape == (rows, cols):
        return x
    return np.pad(x, ((0, rows - x.shape[0]), (0, cols - x.shape[1])))


def _block_amax(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The largest magnitude of each rows x cols block of x (edge blocks as far as x goes): a
    ceil(r / rows) x ceil(c / cols) array. From the max and the min, not abs(x): no temporary of x's size."""
    blocks = _padded(x, -(-x.shape[0] // rows) * rows, -(-x.shape[1] // cols) * cols)
    blocks = blocks.reshape(blocks.shape[0] // rows, rows, blocks.shape[1] // cols, cols)
    return np.maximum(blocks.max(axis=(1, 3)), -blocks.min(axis=(1, 3)))


def _block_scales(amax: np.ndarray) -> np.ndarray:
    """float32 scales that put each block's largest magnitude on E4M3_MAX; 1 for all-zero blocks."""
    return np.where(amax > 0, amax / np.float32(E4M3_MAX), np.float32(1.0)).astype(np.float32)


def _divide_blockwise(x: np.ndarray, scale: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """x divided by the scale of each element's rows x cols block (scale: ceil(r / rows) x ceil(c / cols))."""
    r, c = x.shape
    padded = _padded(x, scale.shape[0] * rows, scale.shape[1] * cols)
    out = np.divide(padded.reshape(scale.shape[0], rows, scale.shape[1], cols), scale[:, None, :, None])
    return out.reshape(padded.shape)[:r, :c]


def quantization_error(a, b, a_dequantized, b_dequantized) -> dict:
    """The relative Frobenius error that quantizing alone puts into the product, on a slice of it: rows of A times
    B and A times columns of B, the dequantized inputs (fp32: the stored values times their scales) against the
    fp32 ones. In fp32 arithmetic: its own rounding (about 1e-6) is far below e4m3's (a few %), and fp32 BLAS keeps
    this under a second at 8192³."""
    rows, cols = slice(0, min(QUANTIZATION_SAMPLE, a.shape[0])), slice(0, min(QUANTIZATION_SAMPLE, b.shape[1]))
    a32, b32 = a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
    aq32, bq32 = a_dequantized, b_dequantized
    exact = np.concatenate([(a32[rows] @ b32).ravel(), (a32 @ b32[:, cols]).ravel()]).astype(np.float64)
    got = np.concatenate([(aq32[rows] @ bq32).ravel(), (aq32 @ bq32[:, cols]).ravel()]).astype(np.float64)
    norm = np.linalg.norm(exact)
    return {"rel_fro_error": float(np.linalg.norm(got - exact) / norm) if norm else 0.0,
            "scope": f"{rows.stop} rows of A x B and A x {cols.stop} columns of B"}
