"""Launch geometry of the one-block-per-tile kernels: square thread blocks, fixed tiles, persistent grids, tiles that
depend on the dtype and the device's shared memory, and split-K builds over any of them (kernels/split_k.cuh). The
warp-specialised Hopper family has its own module, core/warp_specialized.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from matmul_study.core import dtypes as dt
from matmul_study.core.specs import Launch, Problem, Variant, cdiv


def square_thread_blocks(p: Problem) -> Launch:
    """BLOCK x BLOCK threads, one per element of C; x walks columns so B reads and C writes coalesce."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1))


def square_thread_blocks_dynamic_tiles(p: Problem) -> Launch:
    """As above, plus two BLOCK x BLOCK tiles (A and B) in dynamic shared memory."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1),
                  2 * p.block * p.block * p.dtype.itemsize)


def fixed_tiles(tile_m: int, tile_n: int, threads: int,
                shared_bytes: Callable[[dt.DType], int] | int = 0) -> Callable[[Problem], Launch]:
    """Kernels whose block computes a fixed tile_m x tile_n tile of C with a fixed thread count."""

    def launch(p: Problem) -> Launch:
        smem = shared_bytes(p.dtype) if callable(shared_bytes) else shared_bytes
        return Launch((cdiv(p.n, tile_n), cdiv(p.m, tile_m), 1), (threads, 1, 1), smem)

    return launch


def persistent(tile_m: int, tile_n: int, threads: int, shared_bytes: Callable[[dt.DType], int] | int,
               cluster: int = 1, dependent: bool = False) -> Callable[[Problem], Launch]:
    """One block per SM (rounded down to whole clusters), each walking tiles of C until none are left."""

    def launch(p: Problem) -> Launch:
        smem = shared_bytes(p.dtype) if callable(shared_bytes) else shared_bytes
        tiles = cdiv(p.m, tile_m) * cdiv(p.n, tile_n)
        blocks = max(cluster, min(p.sm_count // cluster, cdiv(tiles, cluster)) * cluster)
        return Launch((blocks, 1, 1), (threads, 1, 1), smem, (cluster, 1, 1), persistent=True, dependent=dependent)

    return launch



def _tiled(block: int, dtype: str) -> tuple[int, int, int]:
    return block, block, block


Geometry = tuple[int, int, int, int, int]  # tile_m, tile_n, tile_k, threads, shared bytes


def tiles_by_dtype(geometry: dict[str, Geometry | list[Geometry]]) -> tuple[Callable, Callable]:
    """(launch, tile) for kernels whose tile depends on the dtype: {dtype: geometry, or a list of them in order of
    preference}. A launch takes the first whose shared memory the device allows a block (the configuration compiled
    for the device's arch must fit in it); the tile is the first's."""
    options = {dtype: g if isinstance(g, list) else [g] for dtype, g in geometry.items()}

    def launch(p: Problem) -> Launch:
        fitting = [g for g in options[p.dtype.name] if g[4] <= p.max_shared_bytes] or options[p.dtype.name][-1:]
        tile_m, tile_n, _, threads, smem = fitting[0]
        return Launch((cdiv(p.n, tile_n), cdiv(p.m, tile_m), 1), (threads, 1, 1), smem)

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return options[dtype][0][:3]

    return launch, tile


# warptiled (07_warptiled.cu) compiles, per target, the first configuration that fits the opt-in shared memory of
# that target's GPUs (warptiled::target_smem_optin: 163 KB on sm_80/87, 227 KB on sm_90/100/103, else 99 KB), and
# the launch gives the first that fits the device's own limit: the same choice for a cubin of the device's arch. A
# target the kernel does not know compiles the small one and, should its GPU allow more, gets the big size: part
# unused, harmless. The reverse (an sm_90 cubin on an sm_86 GPU) traps.
# warptiled fp32: BK 32 (149 KB) or BK 16; fp64 one configuration.
WARPTILED_LAUNCH, WARPTILED_TILE = tiles_by_dtype({"float32": [(128, 256, 32, 256, 148_992),
                                                               (128, 256, 16, 256, 74_496)],
                                                   "float64": (128, 128, 8, 256, 66_048)})
# warptiled_mbarrier fp32: BK 32 with 4 stages (199 KB: sm_90/100/103) or BK 16.
WARPTILED_MBARRIER_LAUNCH, WARPTILED_MBARRIER_TILE = tiles_by_dtype({"float32": [(128, 256, 32, 256, 198_656),
                                                                                 (128, 256, 16, 256, 99_328)]})


# dmma (08_dmma.cu): dmma::DefaultConfig, 128x128x16 tiles, 256 threads, 149,504 bytes of shared memory.
DMMA_LAUNCH, DMMA_TILE = tiles_by_dtype({"float64": (128, 128, 16, 256, 149_504)})


def tile_split_k_variants(define: str, launch: Callable[[Problem], Launch],
                          tile: Callable[[int, str], tuple[int, int, int]], splits: tuple[int, ...] = (2, 4, 8, 16, 32)
                          ) -> tuple[Variant, ...]:
    """Split-K builds of a kernel with one block per output tile (kernels/split_k.cuh, host contract): -D{define}=S,
    the method's launch with grid z = S, and a workspace of S partial tiles of tile_m x tile_n accumulators per
    output tile (the launch's grid x times y of them), then a 32-bit counter per tile."""

    def variant(s: int) -> Variant:
        def split_launch(p: Problem) -> Launch:
            base = launch(p)
            return replace(base, grid=(base.grid[0], base.grid[1], s))

        def workspace(p: Problem) -> int:
            grid = launch(p).grid
            tile_m, tile_n, _ = tile(p.block, p.dtype.name)
            return grid[0] * grid[1] * (s * tile_m * tile_n * p.dtype.output.itemsize + 4)

        return Variant(f"splitk{s}", (f"{define}={s}",),
                       f"split-K: each tile's k steps in {s} slices on {s} blocks (grid z); the last slice to finish "
                       "sums the partials in slice order through a workspace (deterministic). For too few tiles or "
                       "deep K", launch=split_launch, workspace=workspace)

    return tuple(variant(s) for s in splits)
