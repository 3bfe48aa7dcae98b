"""Verification against an fp64 reference: poison, compare, decide.

The reference is always computed in float64 from the exact inputs the method saw (fp16 inputs upcast), so
the error measures the method's arithmetic, not the rounding of the inputs. The checks take the job's dtype record
(its tolerance, storage and scales), never its name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from matmul_study.core import dtypes

INT_SENTINEL = np.iinfo(np.int32).min  # no product of inputs in [-5, 5] can reach it


def poison_value(out_dtype) -> float | int:
    return INT_SENTINEL if np.dtype(out_dtype).kind == "i" else np.nan


def unwritten(c, xp=np) -> int:
    """Elements still holding the poison (or NaN for any reason); xp is numpy or cupy."""
    if c.dtype.kind == "i":
        # xp.equal, not `==`: CuPy's operators given a Python scalar import cupyx.scipy, which costs a GPU job
        # 0.3-0.5 s of start-up on the H200's image (its ufuncs called by name do not).
        return int(xp.count_nonzero(xp.equal(c, INT_SENTINEL)))
    return int(xp.count_nonzero(xp.isnan(c)))


@dataclass
class Verification:
    max_abs_error: float
    rel_fro_error: float
    tolerance: float
    scope: str
    reference: str
    unwritten: int
    passed: bool

    def as_dict(self) -> dict:
        return asdict(self)


def compare(c, ref, dtype: dtypes.DType, scope: str, reference: str, xp=np) -> Verification:
    """Compare output (or sampled part of it) with an fp64 reference of the same shape, on host or device, at the
    dtype's tolerance."""
    tol = dtype.tolerance
    missing = unwritten(c, xp)
    diff = c.astype(xp.float64) - ref
    ref_norm = float(xp.linalg.norm(ref))
    err_norm = float(xp.linalg.norm(diff))
    if not np.isfinite(err_norm):
        rel = float("inf")
    else:
        rel = err_norm / ref_norm if ref_norm > 0 else err_norm
    max_abs = float(xp.max(xp.abs(diff))) if diff.size else 0.0
    if not np.isfinite(max_abs):
        max_abs = float("inf")
    passed = missing == 0 and np.isfinite(rel) and rel <= tol
    return Verification(max_abs, rel, tol, scope, reference, missing, bool(passed))


def sample_indices(size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted distinct indices, always including the first and last (edges are where guards go wrong)."""
    if size <= count:
        return np.arange(size)
    picks = rng.choice(np.arange(1, size - 1), size=count - 2, replace=False)
    return np.sort(np.concatenate([[0, size - 1], picks]))


def verify_on_host(a: np.ndarray, b: np.ndarray, c: np.ndarray, record: dtypes.DType, full: bool, samples: int,
                   seed: int, scale: float = 1.0, block_scales=None) -> Verification:
    """numpy fp64 reference: the whole product when `full`, else sampled rows and columns of it. `scale`: a scaled
    dtype's scale_a * scale_b (inputs.Operands.scale), by which the product of the stored values is multiplied.
    `block_scales`: a block-scaled dtype's scale buffer (inputs.Operands.scales), by which each stored value is
    multiplied before the product (dtypes.dequantize_blocks); required for those dtypes."""
    if record.block_scaled:
        a64, b64 = dequantized(a, b, record, block_scales)
    else:
        a64, b64 = dtypes.to_float64(a, record), dtypes.to_float64(b, record) * scale
    if full:
        return compare(c, a64 @ b64, record, "full", "numpy float64")
    rng = np.random.default_rng(seed)
    rows = sample_indices(a.shape[0], samples, rng)
    cols = sample_indices(b.shape[1], samples, rng)
    got = np.concatenate([c[rows, :].ravel(), c[:, cols].ravel()])
    ref = np.concatenate([(a64[rows, :] @ b64).ravel(), (a64 @ b64[:, cols]).ravel()])
    result = compare(got, ref, record, f"sampled {len(rows)} rows + {len(cols)} columns", "numpy float64")
    # Unwritten elements outside the sample are still counted: the NaN check over all of C is cheap.
    result.unwritten = unwritten(c)
    result.passed = result.passed and result.unwritten == 0
    return result


def dequantized(a, b, record: dtypes.DType, block_scales, xp=np):
    """A block-scaled dtype's operands as fp64 values (stored value times its block's scale), on the host or, with
    xp = cupy, on the device: the operands of its reference product."""
    if block_scales is None:
        raise ValueError(f"{record.name}: verification needs block_scales, the inputs' scale buffer "
                         "(inputs.Operands.scales, dtypes.block_scale_layout), and none was given")
    return dtypes.dequantize_blocks(dtypes.to_float64(a, record, xp), dtypes.to_float64(b, record, xp), block_scales,
                                    record, xp)
