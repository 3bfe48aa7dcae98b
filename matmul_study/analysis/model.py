"""Analytic model of a kernel's work and global-memory traffic, from its registry tile.

A unit of work (a thread for naive, a thread block for tiled kernels, a warp for wmma) computes a
tile_m x tile_n tile of C and reads its tile_m rows of A and tile_n columns of B once, with guarded loads
(nothing outside the matrices is read). So each element of A is read once per column of units, ceil(n/tile_n)
times, and each element of B once per row of units, ceil(m/tile_m) times. Caches are ignored: this is what the
kernel asks of memory as written, an upper bound on DRAM traffic.
"""

from __future__ import annotations

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import cdiv
from matmul_study.core.records import flops


def padded(x: int, tile: int) -> int:
    return cdiv(x, tile) * tile


def model(method: str, m: int, k: int, n: int, block: int, dtype: str) -> dict:
    meth = registry.get(method)
    record = dtypes.get(dtype)
    item, out_item = record.itemsize, record.output.itemsize
    useful = flops(m, k, n)
    if meth.tile is None:
        issued = useful
        reads = (m * k + k * n) * item
    else:
        tm, tn, tk = meth.tile(block, dtype)
        # Zero-filled padding is multiplied too: whole tiles are computed.
        issued = flops(padded(m, tm), padded(k, tk), padded(n, tn))
        reads = (m * k * cdiv(n, tn) + k * n * cdiv(m, tm)) * item
    written = m * n * out_item
    return {
        "method": method, "dtype": dtype, "block": block, "m": m, "k": k, "n": n,
        "flops_useful": useful,
        "flops_issued": issued,
        "bytes_read": reads,
        "bytes_written": written,
        "intensity": useful / (reads + written),
    }
