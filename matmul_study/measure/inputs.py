"""Reproducible inputs: the same seed, shape and dtype give the same matrices for every method."""

from __future__ import annotations

import numpy as np

from matmul_study.core import dtypes


def generate(m: int, k: int, n: int, dtype: dtypes.DType | str, seed: int, low: float = -5, high: float = 5):
    """A (m x k) and B (k x n), uniform in [low, high]; integers for the exact dtypes (int8: its whole range,
    DType.value_range), refused where k is too large for their int32 sums to be exact; fp16 and bf16 rounded from
    fp32. tf32 inputs are plain fp32: the rounding to tf32 happens inside the tensor cores."""
    record = dtypes.get(dtype)
    rng = np.random.default_rng([seed, m, k, n])
    if record.exact:
        record.check_exact_k(k, low, high)
        lo, hi = record.input_range(low, high)
        return tuple(rng.integers(lo, hi, size=s, endpoint=True, dtype=record.numpy) for s in ((m, k), (k, n)))
    base = np.float64 if record.storage == "float64" else np.float32
    # random(dtype=float32) draws fp32 directly: half the time and memory of drawing fp64 and casting.
    mats = [(rng.random(s, dtype=base) * base(high - low) + base(low)) for s in ((m, k), (k, n))]
    return tuple(x.astype(record.numpy, copy=False) for x in mats)
