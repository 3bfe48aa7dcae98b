"""Reproducible inputs: the same seed, shape and dtype give the same matrices for every method."""

from __future__ import annotations

import math

import numpy as np


def generate(m: int, k: int, n: int, dtype: str, seed: int, low: float = -5, high: float = 5):
    """A (m x k) and B (k x n), uniform in [low, high]; integers for int32; fp16 rounded from fp32."""
    rng = np.random.default_rng([seed, m, k, n])
    if dtype == "int32":
        lo, hi = math.ceil(low), math.floor(high)
        return tuple(rng.integers(lo, hi, size=s, endpoint=True, dtype=np.int32) for s in ((m, k), (k, n)))
    base = np.float64 if dtype == "float64" else np.float32
    # random(dtype=float32) draws fp32 directly: half the time and memory of drawing fp64 and casting.
    mats = [(rng.random(s, dtype=base) * base(high - low) + base(low)) for s in ((m, k), (k, n))]
    return tuple(x.astype(dtype, copy=False) for x in mats)
