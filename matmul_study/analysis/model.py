"""Analytic model of a kernel's work and global-memory traffic, from its registry tile.

A unit of work (a thread for naive, a thread block for tiled kernels, a warp for wmma) computes a
tile_m x tile_n tile of C and reads its tile_m rows of A and tile_n columns of B once, with guarded loads
(nothing outside the matrices is read). So each element of A is read once per column of units, ceil(n/tile_n)
times, and each element of B once per row of units, ceil(m/tile_m) times. Caches are ignored: this is what the
kernel asks of memory as written, an upper bound on DRAM traffic.

A build with a pre-pass (Method.prepass_of) adds its traffic: it reads the user's operands it names once and writes
its outputs once; the GEMM then reads those outputs, in their own storage (3xFP16's fp16 parts). A method of several
tensor-core products per multiply-add (Method.products) issues that many times the FLOP; where a pre-pass lays the
operands' parts out along K' (3xTF32 and 3xFP16: K' = 3k) the GEMM reads them over K', and where the parts are made
in registers (kernel 20) it reads A and B over k. Useful FLOP stay 2 m n k: the intensity is useful work per byte
moved.
"""

from __future__ import annotations

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem, cdiv
from matmul_study.core.records import flops


def padded(x: int, tile: int) -> int:
    return cdiv(x, tile) * tile


def known_build(method: str, variant) -> str | None:
    """A job's build as the model takes it: its variant where `method` has one of that name, else None, the default
    build (a result of another tree's variant, or of none recorded)."""
    names = {v.name for v in registry.get(method).variants}
    return variant if isinstance(variant, str) and variant in names else None


def model(method: str, m: int, k: int, n: int, block: int, dtype: str, variant: str | None = None) -> dict:
    """The work and traffic of `method`'s build `variant` (None: its default build) on an m x k x n problem."""
    meth = registry.get(method)
    record = dtypes.get(dtype)
    item, out_item = record.itemsize, record.output.itemsize
    useful = flops(m, k, n)
    prepass = meth.prepass_of(variant)
    # The GEMM's operands: the pre-pass's outputs in their storage where it runs one, else A and B.
    storage = {o.storage for o in prepass.outputs} - {None} if prepass is not None else set()
    gemm_item = min(dtypes.get(s).itemsize for s in storage) if storage else item
    wide_k = meth.products * k if prepass is not None else k  # the parts laid out along K' by a pre-pass
    if meth.tile is None:
        issued = useful
        reads = (m * k + k * n) * item
    else:
        tm, tn, tk = meth.tile(block, dtype)
        # Zero-filled padding is multiplied too: whole tiles are computed.
        issued = meth.products * flops(padded(m, tm), padded(k, tk), padded(n, tn))
        reads = (m * wide_k * cdiv(n, tn) + wide_k * n * cdiv(m, tm)) * gemm_item
    written = m * n * out_item
    if prepass is not None:
        problem = Problem(m, n, k, block, record)
        reads += sum({"A": m * k, "B": k * n}[name] for name in prepass.reads) * item
        written += sum(rows * cols * (dtypes.get(o.storage).itemsize if o.storage else item)
                       for o in prepass.outputs for rows, cols in [o.shape(problem)])
    return {
        "method": method, "dtype": dtype, "block": block, "m": m, "k": k, "n": n,
        "flops_useful": useful,
        "flops_issued": issued,
        "bytes_read": reads,
        "bytes_written": written,
        "intensity": useful / (reads + written),
    }
