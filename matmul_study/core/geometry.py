"""Launch geometry of the one-block-per-tile kernels: square thread blocks, persistent grids, and the launch contract
of kernels 05-11 stated once per configuration (BlockTile; TileFamily where it depends on the dtype and the
device's shared memory), from which both their -D definitions and their launches come, and split-K builds over any
of them (kernels/split_k.cuh). The warp-specialised Hopper family has its own module, core/warp_specialized.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from matmul_study.core import dtypes as dt
from matmul_study.core.specs import Launch, Problem, StreamB, Variant, cdiv, shared_opt_in_bytes


def square_thread_blocks(p: Problem) -> Launch:
    """BLOCK x BLOCK threads, one per element of C; x walks columns so B reads and C writes coalesce."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1))


def square_thread_blocks_dynamic_tiles(p: Problem) -> Launch:
    """As above, plus two BLOCK x BLOCK tiles (A and B) in dynamic shared memory."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1),
                  2 * p.block * p.block * p.dtype.itemsize)


@dataclass(frozen=True)
class BlockTile:
    """The launch contract of one configuration of a kernel whose block computes a tile_m x tile_n tile of C, k in
    slices of tile_k, stated once: the kernel is compiled with it (defines: -D{name}_BM, _BN, _BK, _THREADS, then
    _STAGES, _SMEM_BYTES and _MMA_K where it has them) and keeps no copy of its own, only static_asserts that it can
    work with it (the thread count is its warp layout's, the tile divides as it needs, its shared-memory layout fits
    the bytes); the launch gives the same numbers (grid over the tiles of C, threads, dynamic shared memory).

    `layout` gives the dynamic shared memory of the kernel's layout for this configuration (None: the kernel has
    only static shared memory), so that a change of tile or stages changes the definitions and the launch together;
    the kernel's static_assert (and the compile test of one byte less) keeps it equal to what the kernel uses."""
    name: str  # the definitions' prefix
    tile_m: int
    tile_n: int
    tile_k: int
    threads: int
    stages: int | None = None  # shared-memory stages of a pipeline whose depth is a parameter of the kernel
    layout: Callable[["BlockTile"], int] | None = field(default=None, compare=False)
    # tile_k counts units of this many bytes of a row of A, the same slice in every dtype (kernel 10: 2, its k slice
    # of 32 units is 16 fp16, 8 tf32 or 32 int8 elements); None: elements of the dtype.
    unit_bytes: int | None = None
    # Launched as a programmatic dependent of the previous kernel (Launch.dependent): the kernel waits for the
    # previous grid (griddepcontrol.wait) before its first global access.
    dependent: bool = False
    # The k of the kernel's tensor-core instruction where the kernel takes it as a build fact (-D{name}_MMA_K;
    # 08_dmma.cu: m16n8k4 or m16n8k8); None: the kernel's instruction is its own.
    mma_k: int | None = None
    # The blocks an SM should hold at once: __launch_bounds__' second number, which caps ptxas's registers a thread
    # (65536 / threads / blocks_per_sm), where a kernel's bytes in flight, not its registers, decide (kernel 18).
    blocks_per_sm: int = 1

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory a block of this configuration is launched with."""
        return self.layout(self) if self.layout else 0

    def defines(self, arch: str | None = None) -> tuple[str, ...]:
        """The -D definitions ("NAME=VALUE") the kernel is compiled with; the same for every target."""
        values = {"BM": self.tile_m, "BN": self.tile_n, "BK": self.tile_k, "THREADS": self.threads,
                  "STAGES": self.stages, "SMEM_BYTES": self.shared_bytes if self.layout else None,
                  "MMA_K": self.mma_k}
        return tuple(f"{self.name}_{key}={value}" for key, value in values.items() if value is not None)

    def launch(self, p: Problem) -> Launch:
        """One block per tile_m x tile_n tile of C, grid (tiles along n, tiles along m)."""
        return Launch((cdiv(p.n, self.tile_n), cdiv(p.m, self.tile_m), 1), (self.threads, 1, 1), self.shared_bytes,
                      dependent=self.dependent)

    def tile(self, block: int = 0, dtype: str = "") -> tuple[int, int, int]:
        """(tile_m, tile_n, tile_k), as Method.tile takes it, tile_k in elements of `dtype` (the block does not
        matter, the dtype only where the slice is counted in bytes: unit_bytes)."""
        if self.unit_bytes and dtype:
            return self.tile_m, self.tile_n, self.tile_k * self.unit_bytes // dt.get(dtype).itemsize
        return self.tile_m, self.tile_n, self.tile_k

    @property
    def launch_bounds(self) -> tuple[int, int]:
        """__launch_bounds__(threads, blocks_per_sm): by default one block per SM."""
        return self.threads, self.blocks_per_sm


@dataclass(frozen=True, eq=False)
class TileFamily:
    """A kernel entry whose configuration depends on the dtype and, where it lists several for one dtype (in order
    of preference), on the shared memory a block may opt in to: a target compiles the first whose shared memory
    fits its GPUs' limit (specs.shared_opt_in_bytes), and a launch gives the first that fits the device's
    (Problem.max_shared_bytes, from the same table), so the two make the same choice. The interface is
    BlockTile's: defines(arch), launch(problem), tile(block, dtype)."""
    name: str  # the method's prefix: its split-K builds' definition is {name}_SPLIT_K
    configs: dict[str, tuple[BlockTile, ...]]  # dtype -> configurations in order of preference

    def config(self, dtype: str, max_shared_bytes: int) -> BlockTile:
        """The first configuration whose shared memory a block may have, else the last (the smallest)."""
        options = self.configs[dtype]
        return next((c for c in options if c.shared_bytes <= max_shared_bytes), options[-1])

    def defines(self, arch: str | None = None) -> tuple[str, ...]:
        """The -D definitions of every dtype's configuration for the nvcc target `arch` (sm_XY, compute_XY). Without
        one, only those of the dtypes with a single configuration: the others' entries then fail to compile."""
        chosen = [self.config(dtype, shared_opt_in_bytes(arch)) if arch is not None else options[0]
                  for dtype, options in self.configs.items() if arch is not None or len(options) == 1]
        out: dict[str, str] = {}
        for config in chosen:
            for define in config.defines():
                key, _, value = define.partition("=")
                if out.setdefault(key, value) != value:
                    raise ValueError(f"{self.name}: two configurations define {key} differently")
        return tuple(f"{key}={value}" for key, value in out.items())

    def launch(self, p: Problem) -> Launch:
        return self.config(p.dtype.name, p.max_shared_bytes).launch(p)

    def tile(self, block: int, dtype: str) -> tuple[int, int, int]:
        """The first (preferred) configuration's tile: the traffic model's and the split-K heuristic's."""
        return self.configs[dtype][0].tile()

    @property
    def launch_bounds(self) -> tuple[int, int]:
        bounds = {c.launch_bounds for options in self.configs.values() for c in options}
        if len(bounds) != 1:
            raise ValueError(f"{self.name}: the generated wrapper has one __launch_bounds__, the configurations "
                             f"{sorted(bounds)}")
        return bounds.pop()


# ---- the records of kernels 05-11 ------------------------------------------------------------------------------

# 05_wmma.cu: one warp per 16 x 16 tile of C (the wmma fragment, m16n16k16), 2 x 2 warps per block; static shared
# memory only (each warp's staging tiles).
WMMA = BlockTile("WMMA", 32, 32, 16, 128)

# 06_register_tiled.cu: 128 x 128 tiles, k slices of 8, 256 threads of 8 x 8 outputs each; both slices' buffers in
# static shared memory.
REGISTER_TILED = BlockTile("REGISTER_TILED", 128, 128, 8, 256)


def _warptiled_layout(itemsize: int) -> Callable[[BlockTile], int]:
    """07_warptiled.cu's shared memory: per stage A transposed (tile_k rows of tile_m, padded by one 16-byte vector)
    and B (tile_k rows of tile_n)."""
    return lambda c: c.stages * c.tile_k * (c.tile_m + 16 // itemsize + c.tile_n) * itemsize


# 07_warptiled.cu, method warptiled (a block barrier per k slice), 8 warps. fp32: BK 32 where a block may have its
# 149 KB (fewer barriers per k: +1.4-1.8 % over BK 16 in an H200 sweep), else BK 16 (sm_86/89/120/121: 99 KB);
# fp64 one configuration. A target the table does not know compiles the last. Launched as programmatic dependents of
# the previous kernel (the kernel waits for its grid before the first copy), as kernel 8's tiles are; its decode,
# token-row, narrow and small tiles plainly.
_WARPTILED_F32 = BlockTile("WARPTILED_F32", 128, 256, 32, 256, stages=3, layout=_warptiled_layout(4), dependent=True)
WARPTILED = TileFamily("WARPTILED", {
    "float32": (_WARPTILED_F32, replace(_WARPTILED_F32, tile_k=16)),
    "float64": (BlockTile("WARPTILED_F64", 128, 128, 8, 256, stages=4, layout=_warptiled_layout(8), dependent=True),),
})
# Its one-wave build (variant bk16, fp32): the same 128 x 256 tiles with k slices of 16 in 6 stages (149 KB, the
# default build's bytes), for problems whose default tiles make one wave at most, one block an SM (2048^3: 128 tiles
# on 132 SMs), where no other block's math covers a block's pipeline fill and drain: the first slice's math starts
# after 16 rows of k instead of 32. On an H200 (x cuBLAS, launched plainly) 2048^3 0.947 against 0.913,
# 2048x2048x8192 0.942 against 0.913, 1664x2560x2048 0.950 against 0.916; past one wave the default tiles lead
# (2048x4096x2048 0.953 against 0.949, 4096^3 0.952 against 0.945; small-problems/warptiled-bk16-float32.txt).
WARPTILED_ONE_WAVE = "bk16"
WARPTILED_ONE_WAVE_TILE = replace(_WARPTILED_F32, tile_k=16, stages=6)


def warptiled_one_wave_variant() -> Variant:
    """kernel 7's one-wave build (fp32): WARPTILED_ONE_WAVE_TILE, as variant WARPTILED_ONE_WAVE."""
    family = TileFamily("WARPTILED", {"float32": (WARPTILED_ONE_WAVE_TILE,)})
    return replace(family_split_variant(
        family, 1, WARPTILED_ONE_WAVE, f"one wave: 128x256 tiles with k slices of {WARPTILED_ONE_WAVE_TILE.tile_k} in "
                                       f"{WARPTILED_ONE_WAVE_TILE.stages} stages, for problems whose default tiles "
                                       "make one wave at most"), dtypes=("float32",))
# Method warptiled_mbarrier (fp32; a full and an empty mbarrier per stage): 4 stages of BK 32 (199 KB: sm_90/100/103)
# or of BK 16.
_WARPTILED_MBARRIER_F32 = BlockTile("WARPTILED_MBARRIER_F32", 128, 256, 32, 256, stages=4,
                                    layout=_warptiled_layout(4))
WARPTILED_MBARRIER = TileFamily("WARPTILED_MBARRIER", {
    "float32": (_WARPTILED_MBARRIER_F32, replace(_WARPTILED_MBARRIER_F32, tile_k=16)),
})

# 08_dmma.cu: 128 x 128 x 16 tiles of 8 warps (64 x 32 each), 4 stages; rows padded by 4 doubles (A: tile_k + 4,
# B: tile_n + 4); m16n8k4 (the 64 x 32 warps' 64 accumulators leave no room for m16n8k8's fragments held twice: 2048^3
# 0.90x cuBLAS with it against 0.98, small-problems/dmma-mma-k-float64.txt). The 64- and 32-row tiles take m16n8k8
# (DMMA_SMALL_WARP_MMA_K); the decode tiles, whose few rows stream B at the memory's pace, ran the same in either
# shape (within 1 % at seven shapes of 1-32 rows, small-problems/dmma-decode-mmak{4,8}-float64.txt) and keep m16n8k4.
# Every build but the decode tiles (dmma_decode_family) is launched as a programmatic dependent of the previous kernel
# (the kernel waits for its grid before the first copy): on an H200, back to back, 512^3 in 64x64 tiles split 4 ways
# ran at 0.67-0.68x cuBLAS plainly and 0.77x so, 128x4096x4096 in 64x128 tiles split 2 ways 0.97-0.98 -> 0.98-0.99,
# 2048^3 and 8192^3 within 0.6 % (small-problems/dmma-launch-{plain,dependent}-*.txt).
_DMMA = BlockTile("DMMA", 128, 128, 16, 256, stages=4, layout=lambda c: (
    c.stages * (c.tile_m * (c.tile_k + 4) + c.tile_k * (c.tile_n + 4)) * 8), dependent=True, mma_k=4)
DMMA = TileFamily("DMMA", {"float64": (_DMMA,)})

# 09_wmma_tiled.cu: 128 x 128 tiles of 8 warps (64 x 32 each), k slices of 32 double-buffered in static shared memory.
WMMA_TILED = BlockTile("WMMA_TILED", 128, 128, 32, 256)

# 10_mma_async_copy.cu: 128 x 256 tiles of 8 warps (64 x 64 each), k slices of 64 bytes a row (32 fp16, 16 tf32, 64
# int8 or e4m3), 4 stages (swizzled, no padding; the same bytes in every dtype).
MMA_ASYNC_COPY = BlockTile("MMA_ASYNC_COPY", 128, 256, 32, 256, stages=4, unit_bytes=2,
                           layout=lambda c: c.stages * (c.tile_m * c.tile_k + c.tile_k * c.tile_n) * 2)
# Its decode builds (variants m<BM>[_splitk<S>]): one row of 4 warps over a BM x 128 tile, BM the token rows (16, 32
# or 64), k slices of 128 bytes a row (16 KiB of B a stage), 4 stages: 72-96 KiB, two blocks per SM.
DECODE_TILE_MS = (16, 32, 64)
DECODE_TILE_N = 128
DECODE_SLICE_BYTES = 128  # of each row: 64 fp16, 32 tf32, 128 int8 or e4m3 elements
DECODE_SPLITS = (1, 2, 3, 4, 8, 16, 32)
# B's L2 policy for kernels 10 and 20, chosen at launch (specs.StreamB): B copied under evict_first where one row of
# tiles reads it and it passes this share of the L2. Fitted on an H100 (50 MiB of L2), the decode picks with B
# streamed and plain in one run, twice (results/reference/NVIDIA_H100/decode-l2-policy/share-fit.txt): at 0.64-0.80
# of the L2 streaming cost 7-53 % in every dtype (but int8 and FP8 at 0.80: 0.0 and +1.6 %), since the next launch of
# a burst found B in L2 no longer; at 0.88-2.24 it saved 2.4-7.7 % in every dtype (fp16 16x6144x4096, 0.96: 0.94 ->
# 1.00 of cuBLAS).
STREAM_B = StreamB(share=0.84)


# 07_warptiled.cu's decode builds (variants m<BM>[_splitk<S>], BM 16 or 32): BM x 128 tiles of 4 warps side by side
# along N (the kernel lays a block of fewer than 64 rows out so), k slices of 128 bytes a row (32 fp32, 16 fp64), 4
# stages: 74-84 KB, so every target takes them.
WARPTILED_DECODE_TILE_MS = (16, 32)
# The most token rows the heuristic gives them: on an H200 (x cuBLAS) 96x4096x4096 ran at 0.91 (fp32) and 0.40
# (fp64) in three row tiles of 32, against the default tiles' 0.72 and 0.31; at 128 rows the default tiles won (0.78
# and 0.40 against 0.73 and 0.36).
WARPTILED_DECODE_ROWS = 96
WARPTILED_DECODE_MAX_SPLIT = 8  # configs.simt_decode_tiles: 8 slices beat 4 and 2 at 16x4096x4096 (3.07, 3.02, 1.75)
WARPTILED_DECODE_SPLITS = (1, 2, 4, 8, 16)
# The blocks of a decode build that an SM holds at once, where measured (configs.resident_wave_split): the fp32 16-row
# tiles, 3 (Nsight Compute on an H200: 142 registers a thread and 75.8 KB of shared memory, each a limit of 3).
WARPTILED_DECODE_RESIDENT = {("float32", 16): 3}


def warptiled_decode_family(tile_m: int, tile_n: int = DECODE_TILE_N) -> TileFamily:
    """07_warptiled.cu's decode tiles of `tile_m` rows and `tile_n` columns (a warp per 32), in each of its dtypes."""
    return TileFamily("WARPTILED", {
        "float32": (BlockTile("WARPTILED_F32", tile_m, tile_n, 32, tile_n, stages=4, layout=_warptiled_layout(4)),),
        "float64": (BlockTile("WARPTILED_F64", tile_m, tile_n, 16, tile_n, stages=4, layout=_warptiled_layout(8)),),
    })


# Its fp32 builds of 8 token rows (variants m8[_splitk<S>]), for M of a few rows: 8 x 256 tiles of 4 warps side by
# side (8 x 64 each), k slices of 64 bytes a row (16 fp32: 16 KiB of B a stage, as the 16-row tiles' 128-byte slices
# of 128 columns), 4 stages: 67 KB, three to an SM.
WARPTILED_TOKEN_TILE = BlockTile("WARPTILED_F32", 8, 256, 16, 128, stages=4, layout=_warptiled_layout(4))
WARPTILED_TOKEN_SPLITS = (1, 2, 4, 8, 16)


def warptiled_token_variants() -> tuple[Variant, ...]:
    """kernel 7's fp32 builds of 8 token rows, whole or split."""
    family = TileFamily("WARPTILED", {"float32": (WARPTILED_TOKEN_TILE,)})
    return tuple(replace(v, dtypes=("float32",)) for v in _split_builds(
        "m8", WARPTILED_TOKEN_SPLITS, lambda s, name, how: family_split_variant(
            family, s, name, f"token-row tiles: 8x256, 4 warps side by side along N, k slices of 64 bytes a row, "
                             f"4 stages{how}")))


# Its narrow builds (variants m32_n64[_splitk<S>]): 32 x 64 tiles of 2 warps side by side, for a few columns (at
# N = 64 the decode tiles multiply as many columns past N as in it), 4 stages: 51 KB (fp32), 66 KB (fp64).
WARPTILED_NARROW_TILE = (32, 64)
WARPTILED_NARROW_SPLITS = (1, 2, 4, 8, 16)


def warptiled_narrow_variants(splits: tuple[int, ...] = WARPTILED_NARROW_SPLITS) -> tuple[Variant, ...]:
    """kernel 7's narrow builds: WARPTILED_NARROW_TILE tiles, whole or split `splits` ways."""
    rows, cols = WARPTILED_NARROW_TILE
    family = warptiled_decode_family(rows, cols)
    return _split_builds(f"m{rows}_n{cols}", splits, lambda s, name, how: family_split_variant(
        family, s, name, f"narrow tiles: {rows}x{cols}, 2 warps side by side along N, k slices of 128 bytes a row, "
                         f"4 stages{how}"))


# Its fp32 decode and narrow tiles split 32 ways too (m16_splitk32, m32_splitk32, m32_n64_splitk32), for deep K with few
# tiles: at 128x128x32768 (M x N x K) 128 blocks of 32 x 128 split 32 ways read B half as often as 128 of 16 x 128 split
# 16 ways, at 0.91 of cuBLAS on an H200 against 0.79; 16x256x16384 in 16-row tiles 1.07 against 0.69, 144x144x20000 in
# 32 x 64 tiles 0.83 against 0.58 (small-problems/simt-split32-all-float32.txt). fp32 only: dmma answers fp64.
WARPTILED_DEEP_SPLIT = 32


def warptiled_deep_split_variants() -> tuple[Variant, ...]:
    """kernel 7's fp32 decode and narrow tiles split WARPTILED_DEEP_SPLIT ways."""
    splits = (WARPTILED_DEEP_SPLIT,)
    return tuple(replace(v, dtypes=("float32",))
                 for v in (*warptiled_decode_variants(splits), *warptiled_narrow_variants(splits)))


# Its fp32 small tiles (variants m64_n<BN>[_splitk<S>]): 64 x 64 and 64 x 128 tiles of 4 warps side by side along N
# (64 x 16 and 64 x 32 each), k slices of 64 bytes a row, 4 stages: 34 and 50 KB, several blocks to an SM. For
# mid-sized problems whose 128 x 256 tiles leave most SMs idle (cuBLAS runs SGEMM there on 64 x 64 tiles of 4 warps,
# split 3 ways at 1000x800x1200).
WARPTILED_SMALL_TILES = ((64, 64), (64, 128))
WARPTILED_SMALL_SLICE_K = 16  # fp32 elements of a row a k slice (64 bytes)


@dataclass(frozen=True)
class TallTiles:
    """A build of taller tiles that the decode rule weighs beside its decode tiles (configs.simt_decode_tiles' `tall`):
    `rows` x `cols` tiles in k slices of `slice_bytes` a row, taken where K split as the decode tiles split it makes
    `blocks_per_sm` blocks an SM or more, else split further, up to configs.TALL_MAX_SPLIT ways in slices of
    `further_slice_steps` k steps or more, where that makes `further_blocks_per_sm`. With `resident`, the blocks an
    SM holds at once, the split is then set by the busiest SM (configs.busiest_sm_split)."""
    rows: int
    cols: int
    slice_bytes: int
    name: str
    blocks_per_sm: float
    further_blocks_per_sm: float
    further_slice_steps: int
    resident: int = 0


# The blocks of the 64 x 128 tiles that an SM holds at once: 167 registers a thread (registry.WARPTILED_SMALL_REGISTERS)
# leave room for 3 blocks of 4 warps, and their splits are bound to 3 (WARPTILED_SMALL_BOUNDS).
WARPTILED_SMALL_RESIDENT = 3
# The small tiles are the decode rule's `tall` builds too: from 49 to 64 token rows one row of them, the 64 x 128
# tiles where their blocks come 1.5 an SM split as the decode tiles split (64x4096x4096 split 8 ways, 0.91 of cuBLAS
# against the 32-row tiles' 0.81) or two split further in slices of 8 k steps or more (64x3072x3072 split 16 ways,
# 1.01 against 0.81); else the 64 x 64 tiles, twice as many blocks, where two an SM come in slices of 16 k steps
# or more (x cuBLAS on an H200, small-problems/rows-49-64-few-columns-float32.txt: 64x1536x4096 split 16 ways 1.11
# against the 32-row tiles' 0.93, 64x1792x4096 1.27 against 1.24, 64x2048x4096 0.94 against 0.92, 60x1536x8192
# 1.11 against 0.94; not at 64x1024x4096, 256 blocks, 0.85 against 0.92, nor at 56x2048x2048, slices of 8 steps,
# 0.83 against 0.95). The 64 x 128 tiles' split is set by the busiest SM (on an H100, x cuBLAS,
# NVIDIA_H100/tall-splits/: 56x8192x4096 split 4 ways, 256 blocks, 0.93 against 0.89 in 8; 52x14336x4096 split 8
# ways, 896 blocks, 0.89 against 0.80 in 4).
WARPTILED_TALL_DECODE = (
    TallTiles(64, 128, WARPTILED_SMALL_SLICE_K * 4, "m64_n128", 1.5, 2, 8, resident=WARPTILED_SMALL_RESIDENT),
    TallTiles(64, 64, WARPTILED_SMALL_SLICE_K * 4, "m64_n64", 2, 2, 16),
)
WARPTILED_SMALL_SPLITS = (1, 2, 3, 4, 8, 16)
# Each small build that is compiled for more blocks an SM than its own registers allow (__launch_bounds__(128,
# blocks)), and the partials its split sum then loads a pass (split_k.cuh's SPLIT_K_PASS; 0: as many as its staging
# holds): tile -> {slices: (blocks, partials a pass)}. The others take the method's bounds.
# - The 64 x 64 tiles, 4 blocks: up to 4 slices 119-128 registers without a spill, where the split sum's staging
#   took 4 slices to 144 (three blocks). x cuBLAS on an H200, one process, split 4 ways at 3 and 4 blocks:
#   1000x800x1200 0.81 -> 0.90, 128x4096x4096 0.55 -> 0.83, 1024^3 0.80 -> 0.92, 768^3 0.90 -> 1.02, 1536^3
#   0.95 -> 1.01 (M x N x K; small-problems/simt-b4-float32.txt). Split 8 or 16 ways they staged 4 partials at 181-200
#   registers (two blocks), and spilled 284 bytes under the bound; 2 a pass, 119 registers, no spill.
# - The 64 x 128 tiles split 3 or more ways, 3 blocks: their staging of 2 partials took 206-212 registers (two
#   blocks); 1 a pass, 167, no spill. Whole or split 2 ways they take 167 unbound, three blocks already; bound
#   (when they took 159-161 unbound), they ran 1 % and 2.6 % slower (geometric means over 72 shapes, small-problems/
#   simt-small-tiles-pass-float32.txt, the builds "_free" unbound).
# Against the same splits at two blocks, one process on an H200 (small-problems/simt-pass-float32.txt, 72 shapes, the
# new builds "_p1b3" and "_p2b4"): the 64 x 64 ones split 8 and 16 ways 0.96-1.33x their former speed, 1.10x or more
# at 52 and 58 of the 72; the 64 x 128 ones 0.82-1.40x, the best of them faster than every former small build by more
# than 2 % at 27 shapes (1536^3 1.01 -> 1.09 of cuBLAS, 1152^3 0.97 -> 1.04, 896x896x2048 0.96 -> 1.07, 4096x64x4096
# 0.93 -> 1.00). The summed slices' loads, one or two partials in flight, cost the deep-K shapes of few tiles 2-5 %
# (128x128x32768, 256x256x8192, 512x128x8192), where the decode tiles are the pick.
WARPTILED_SMALL_BOUNDS = {
    (64, 64): {1: (4, 0), 2: (4, 0), 3: (4, 0), 4: (4, 0), 8: (4, 2), 16: (4, 2)},
    (64, 128): {s: (WARPTILED_SMALL_RESIDENT, 1) for s in (3, 4, 8, 16)},
}


def warptiled_small_variants() -> tuple[Variant, ...]:
    """kernel 7's fp32 small tiles: WARPTILED_SMALL_TILES of 4 warps, whole or split, some bound to more blocks an SM
    and summing fewer partials a pass (WARPTILED_SMALL_BOUNDS)."""

    def builds(rows: int, cols: int) -> tuple[Variant, ...]:
        tile = BlockTile("WARPTILED_F32", rows, cols, WARPTILED_SMALL_SLICE_K, 128, stages=4,
                         layout=_warptiled_layout(4))
        family = TileFamily("WARPTILED", {"float32": (tile,)})

        def build(s: int, name: str, how: str) -> Variant:
            blocks, each = WARPTILED_SMALL_BOUNDS[rows, cols].get(s, (0, 0))
            bound = f", {blocks} blocks an SM" if blocks else ""
            passes = f", {each} partial{'s' if each > 1 else ''} a pass" if each else ""
            v = family_split_variant(family, s, name, f"small tiles: {rows}x{cols}, 4 warps side by side along N, k "
                                                      f"slices of 64 bytes a row, 4 stages{bound}{how}{passes}")
            return replace(v, dtypes=("float32",), launch_bounds=(tile.threads, blocks) if blocks else None,
                           defines=(*v.defines, *((f"SPLIT_K_PASS={each}",) if each else ())))

        return _split_builds(f"m{rows}_n{cols}", WARPTILED_SMALL_SPLITS, build)

    return tuple(v for rows, cols in WARPTILED_SMALL_TILES for v in builds(rows, cols))


def decode_tile(tile_m: int) -> BlockTile:
    return replace(MMA_ASYNC_COPY, tile_m=tile_m, tile_n=DECODE_TILE_N,
                   tile_k=DECODE_SLICE_BYTES // MMA_ASYNC_COPY.unit_bytes, threads=128)

# 11_wgmma_tma.cu: one warpgroup per 64 x 128 tile (wgmma m64n128k16), k slices of 64, one stage: A and B tiles on a
# 1024-byte boundary (alignment slack) and the stage's 16-byte mbarrier.
WGMMA_TMA = BlockTile("WGMMA_TMA", 64, 128, 64, 128, stages=1,
                      layout=lambda c: 1024 + c.stages * ((c.tile_m * c.tile_k + c.tile_k * c.tile_n) * 2 + 16))


def _split_build(name: str, defines: tuple[str, ...], description: str, s: int,
                 config_for: Callable[[Problem], BlockTile],
                 tile: Callable[[int, str], tuple[int, int, int]] | None = None) -> Variant:
    """A build with its k steps in `s` slices (kernels/split_k.cuh; s = 1: whole tiles): the configuration the problem
    launches (`config_for`) with grid z = s, and a workspace of s partial tiles of tile_m x tile_n accumulators per
    output tile (the launch's grid x times y of them), then a 32-bit counter per tile."""

    def launch(p: Problem) -> Launch:
        base = config_for(p).launch(p)
        return replace(base, grid=(base.grid[0], base.grid[1], s))

    def workspace(p: Problem) -> int:
        config = config_for(p)
        grid = config.launch(p).grid
        return grid[0] * grid[1] * (s * config.tile_m * config.tile_n * p.dtype.output.itemsize + 4)

    return Variant(name, defines, description, launch=launch, tile=tile, workspace=workspace if s > 1 else None)


def split_variant(config: BlockTile, s: int, name: str, description: str) -> Variant:
    """A build of one configuration with its k steps in `s` slices (_split_build): the configuration's whole
    contract as definitions (they replace the method's, key by key) plus {name}_SPLIT_K, and its tile."""
    return _split_build(name, (*config.defines(), f"{config.name}_SPLIT_K={s}"), description, s, lambda p: config,
                        config.tile)


def family_split_variant(family: TileFamily, s: int, name: str, description: str) -> Variant:
    """split_variant for a family with a configuration of its own in each dtype: every dtype's contract as
    definitions plus {family.name}_SPLIT_K, and the problem's dtype's configuration."""
    return _split_build(name, (*family.defines(), f"{family.name}_SPLIT_K={s}"), description, s,
                        lambda p: family.config(p.dtype.name, p.max_shared_bytes), family.tile)


# 08_dmma.cu's decode builds (variants m<BM>[_splitk<S>], BM 16 or 32): BM x 128 tiles of 4 warps side by side along
# N (BM x 32 each), its own k slices of 16 and 4 stages: 78-88 KB, two to an SM.
DMMA_DECODE_TILE_MS = (16, 32)
DMMA_DECODE_SPLITS = (1, 2, 4, 8, 16)
# The most token rows the heuristic gives them (on an H200 0.97-1.10 of cuBLAS at 1-32 rows, against 0.30-0.50 for
# the default tiles split; small-problems/dmma-decode-float64.txt). Past them the tile model weighs these builds
# beside every other: at 33-64 rows its 64-row tiles, split, hold all the rows in one tile where 16- or 32-row tiles
# stream B two to four times (at 14 shapes of 33-64 rows against 2048-28672 columns, 0.70-1.07 of cuBLAS, mean 0.89,
# against the decode tiles' 0.65-0.98, mean 0.81; small-problems/dmma-token-rows-all-float64.txt).
DMMA_DECODE_ROWS = 32
# Their splits: at every decode shape measured, 4 slices of a 4096-deep K beat 8 (1x4096x4096 0.99 against 0.92):
# a DMMA k step takes half the time of a SIMT fp64 one, so a slice's partial weighs twice as much against it.
DMMA_DECODE_MAX_SPLIT = 4


def dmma_decode_family(tile_m: int) -> TileFamily:
    """08_dmma.cu's decode tiles of `tile_m` rows, launched plainly: their few rows stream B at the memory's pace,
    and as dependents the next launch's blocks wait on SMs that the last ones could use (1x4096x4096 0.99 -> 0.94-0.95
    of cuBLAS, small-problems/dmma-launch-*.txt)."""
    return TileFamily("DMMA", {"float64": (replace(_DMMA, tile_m=tile_m, tile_n=DECODE_TILE_N, threads=128,
                                                   dependent=False),)})


# 08_dmma.cu's narrow builds (variants n64[_splitk<S>]): 128 x 64 tiles of 4 warps (2 x 2 of 64 x 32), for a few
# columns (at N = 64 the default 128 x 128 tiles multiply as many columns past N as in it), 3 stages: 88 KB, two to
# an SM.
DMMA_NARROW_TILE_N = 64
DMMA_NARROW_SPLITS = (1, 2, 4, 8, 16)


def dmma_narrow_variants() -> tuple[Variant, ...]:
    """kernel 8's narrow builds: 128 x DMMA_NARROW_TILE_N tiles, whole or split."""
    family = TileFamily("DMMA", {"float64": (replace(_DMMA, tile_n=DMMA_NARROW_TILE_N, threads=128, stages=3),)})
    return _split_builds(f"n{DMMA_NARROW_TILE_N}", DMMA_NARROW_SPLITS, lambda s, name, how: family_split_variant(
        family, s, name, f"narrow tiles: 128x{DMMA_NARROW_TILE_N}, 4 warps of 64x32, 3 stages{how}"))


# 08_dmma.cu's 64-row builds (variants bm64[_splitk<S>]: 64 x 128 tiles of 8 warps; bm64_bn64[_splitk<S>]: 64 x 64
# of 4), warps of 32 x 32, 4 stages (106 KB and 74 KB). For squares of 512-3072, where the 128 x 128 tiles are too
# few for the SMs or leave a last wave mostly empty, and the decode tiles stream B for 16 or 32 rows at a time.
# ptxas (nvcc 13.0) gives them 168-210 registers a thread in m16n8k8 (registry.DMMA_REGISTERS), so an SM holds one
# 64 x 128 block, three 64 x 64 ones split 2 ways and two whole or split 4 or 8 ways (in m16n8k4, 162 registers,
# three whole). Held to two 64 x 128 blocks (128 registers) they ran 12 % slower at 1024^3, and their splits spilled
# (small-problems/dmma-squares-capped-float64.txt).
DMMA_SQUARE_TILES = ((64, 128), (64, 64))
# The 64- and 32-row tiles' warps (32 x 32, 16 x 32: 32 or 16 accumulators a thread) multiply in m16n8k8, half the
# mma instructions of m16n8k4 for the same fragments' loads, as cuBLAS's DGEMM at these tiles does (m16n8k8 and
# m16n8k16, small-problems/ncu-dmma-512.txt). On an H200, x cuBLAS, with k slices of 16 in 4 stages: 32 x 64 tiles
# 1.02 at 512^3 (m16n8k4 0.97), 64 x 64 1.02 at 1024^3 (0.81), 64 x 128 split 2 ways 1.02 at 128x4096x4096 (the
# pick with m16n8k4, 0.95); m16n8k16 (fragments too large to hold twice) ran slower in each
# (small-problems/dmma-mma-k-float64.txt).
DMMA_SMALL_WARP_MMA_K = 8
DMMA_SQUARE_SPLITS = (1, 2, 4, 8)


def dmma_square_variants() -> tuple[Variant, ...]:
    """kernel 8's 64-row builds: DMMA_SQUARE_TILES, a warp per 32 x 32, whole or split."""
    def builds(rows: int, cols: int) -> tuple[Variant, ...]:
        threads = 32 * (rows // 32) * (cols // 32)
        family = TileFamily("DMMA", {"float64": (replace(_DMMA, tile_m=rows, tile_n=cols, threads=threads,
                                                         mma_k=DMMA_SMALL_WARP_MMA_K),)})
        base = f"bm{rows}" + (f"_bn{cols}" if cols != _DMMA.tile_n else "")
        return _split_builds(base, DMMA_SQUARE_SPLITS, lambda s, name, how: family_split_variant(
            family, s, name, f"64-row tiles: {rows}x{cols}, {threads // 32} warps of 32x32 in "
                             f"m16n8k{DMMA_SMALL_WARP_MMA_K}, 4 stages{how}"))

    return tuple(v for rows, cols in DMMA_SQUARE_TILES for v in builds(rows, cols))


# 08_dmma.cu's 32-row builds (variants bm32_bn32[_splitk<S>]: 32 x 32 tiles of 2 warps; bm32_bn64[_splitk<S>]:
# 32 x 64 tiles of 4), warps of 16 x 32, 4 stages (39 and 54 KB). For the squares of 384-768 and their like, where
# even 64 x 64 tiles make too few blocks to keep the SMs' DMMA units busy without a split: 512^3 is 256 whole 32 x 32
# tiles, several small blocks an SM, whose warps hide each other's latency, and no partial sums. On an H200 (x cuBLAS,
# launched plainly) 512^3 0.87 and 0.86 whole, against the 64 x 64 tiles split 4 ways' 0.67; 384^3 0.89 and 0.87
# (small-problems/dmma-x-float64.txt).
DMMA_SMALL_TILES = ((32, 32), (32, 64))
# Split up to 64 ways: where a deep K lies under a few tiles (128x128x32768: 16 tiles of 32 x 32) 16 slices left the
# SMs short of warps; on an H200 x cuBLAS 128x128x32768 ran 1.06 in 32 x 64 tiles split 32 ways (0.75 in 16),
# 64x64x65536 0.92 in 32 x 32 tiles split 64 ways (0.43 in 16) (small-problems/dmma-deep-k-all-float64.txt).
DMMA_SMALL_SPLITS = (1, 2, 4, 8, 16, 32, 64)


def dmma_small_variants() -> tuple[Variant, ...]:
    """kernel 8's 32-row builds: DMMA_SMALL_TILES, a warp per 16 x 32, whole or split."""
    def builds(rows: int, cols: int) -> tuple[Variant, ...]:
        threads = 32 * (rows // 16) * (cols // 32)
        family = TileFamily("DMMA", {"float64": (replace(_DMMA, tile_m=rows, tile_n=cols, threads=threads,
                                                         mma_k=DMMA_SMALL_WARP_MMA_K),)})
        return _split_builds(f"bm{rows}_bn{cols}", DMMA_SMALL_SPLITS, lambda s, name, how: family_split_variant(
            family, s, name, f"32-row tiles: {rows}x{cols}, {threads // 32} warps of 16x32 in "
                             f"m16n8k{DMMA_SMALL_WARP_MMA_K}, 4 stages{how}"))

    return tuple(v for rows, cols in DMMA_SMALL_TILES for v in builds(rows, cols))


def _split_builds(base: str, splits: tuple[int, ...], build: Callable[[int, str, str], Variant]
                  ) -> tuple[Variant, ...]:
    """Builds `base` (whole tiles, S = 1) and `base`_splitk<S>, each made by build(S, name, how it splits)."""
    return tuple(build(s, base + (f"_splitk{s}" if s > 1 else ""),
                       f", each tile's k steps in {s} slices on {s} blocks (grid z), summed in slice order through a "
                       "workspace (deterministic)" if s > 1 else "")
                 for s in splits)


def _decode_builds(tile_ms: tuple[int, ...], splits: tuple[int, ...],
                   build: Callable[[int, int, str, str], Variant]) -> tuple[Variant, ...]:
    """Decode builds m<BM> (whole tiles) and m<BM>_splitk<S>, each made by build(BM, S, name, how it splits)."""
    return tuple(variant for tile_m in tile_ms
                 for variant in _split_builds(f"m{tile_m}", splits,
                                              lambda s, name, how, tile_m=tile_m: build(tile_m, s, name, how)))


def decode_variants(tile_ms: tuple[int, ...] = DECODE_TILE_MS) -> tuple[Variant, ...]:
    """kernel 10's decode builds, BM in `tile_ms` (a subset of DECODE_TILE_MS)."""
    def build(tile_m: int, s: int, name: str, how: str) -> Variant:
        config = decode_tile(tile_m)
        return split_variant(config, s, name,
                             f"decode tiles: {tile_m}x{config.tile_n}, one row of 4 warps, k slices of "
                             f"{config.tile_k * config.unit_bytes} bytes a row, "
                             f"{config.stages} stages ({config.shared_bytes // 1024} KiB){how}")

    return _decode_builds(tile_ms, DECODE_SPLITS, build)


def _side_by_side_decode_variants(family_of: Callable[[int], TileFamily], tile_ms: tuple[int, ...],
                                  splits: tuple[int, ...], slice_words: str) -> tuple[Variant, ...]:
    """Decode builds of a kernel whose tiles of fewer than 64 rows lay 4 warps side by side along N (kernels 7
    and 8): family_of(BM)'s configuration, whole or split."""
    def build(tile_m: int, s: int, name: str, how: str) -> Variant:
        return family_split_variant(family_of(tile_m), s, name,
                                    f"decode tiles: {tile_m}x{DECODE_TILE_N}, 4 warps side by side along N, k slices "
                                    f"of {slice_words}, 4 stages{how}")

    return _decode_builds(tile_ms, splits, build)


def warptiled_decode_variants(splits: tuple[int, ...] = WARPTILED_DECODE_SPLITS) -> tuple[Variant, ...]:
    """kernel 7's decode builds, BM in WARPTILED_DECODE_TILE_MS, whole or split `splits` ways."""
    return _side_by_side_decode_variants(warptiled_decode_family, WARPTILED_DECODE_TILE_MS, splits, "128 bytes a row")


# Its fp32 16 x 256 decode tiles (variants m16_n256[_splitk<S>]): 4 warps side by side, each 16 x 64 (two 4 x 4 chunks a
# lane, each A fragment used twice), k slices of 128 bytes a row, 3 stages: 104 KB and 168 registers, two blocks an SM.
# Where their blocks come close to one an SM they stream B faster than the 16 x 128 tiles (configs.simt_decode_tiles'
# `wide`; small-problems/simt-decode-n256-float32.txt).
WARPTILED_WIDE_DECODE = "m16_n256"
WARPTILED_WIDE_DECODE_TILE = BlockTile("WARPTILED_F32", 16, 256, 32, 128, stages=3, layout=_warptiled_layout(4))


def warptiled_wide_decode_variants() -> tuple[Variant, ...]:
    """kernel 7's fp32 16 x 256 decode tiles (WARPTILED_WIDE_DECODE_TILE), whole or split WARPTILED_DECODE_SPLITS
    ways."""
    tile = WARPTILED_WIDE_DECODE_TILE
    family = TileFamily("WARPTILED", {"float32": (tile,)})

    def build(s: int, name: str, how: str) -> Variant:
        v = family_split_variant(family, s, name, f"decode tiles: {tile.tile_m}x{tile.tile_n}, 4 warps side by side "
                                                  f"along N (16 x 64 each), k slices of 128 bytes a row, "
                                                  f"{tile.stages} stages{how}")
        return replace(v, dtypes=("float32",))

    return _split_builds(WARPTILED_WIDE_DECODE, WARPTILED_DECODE_SPLITS, build)


def dmma_decode_variants() -> tuple[Variant, ...]:
    """kernel 8's decode builds, BM in DMMA_DECODE_TILE_MS."""
    return _side_by_side_decode_variants(dmma_decode_family, DMMA_DECODE_TILE_MS, DMMA_DECODE_SPLITS, "16")


def tile_split_k_variants(family: TileFamily, splits: tuple[int, ...] = (2, 4, 8, 16, 32)) -> tuple[Variant, ...]:
    """Split-K builds of a kernel with one block per output tile (kernels/split_k.cuh, host contract, _split_build):
    -D{family.name}_SPLIT_K=S over the method's own configuration (the one the problem launches)."""
    return tuple(_split_build(
        f"splitk{s}", (f"{family.name}_SPLIT_K={s}",),
        f"split-K: each tile's k steps in {s} slices on {s} blocks (grid z); the last slice to finish sums the "
        "partials in slice order through a workspace (deterministic). For too few tiles or deep K", s,
        lambda p: family.config(p.dtype.name, p.max_shared_bytes)) for s in splits)


# ---- the record of kernel 18 ----------------------------------------------------------------------------------

# 18_few_rows.cu: a few token rows on the CUDA cores, B streamed into registers. A block is BM rows x 8 warps side by
# side along N, each warp 8 lanes of one 16-byte vector along N x 4 lanes along k, so BN = 64 vectors' elements
# (512 halves, 256 floats, 128 doubles); one unrolled step reads FEW_ROWS_BK rows of B (4 lanes x 4 rows). Its
# builds: BM in FEW_ROWS_TILE_MS (m1, the default, then m2, m4, m8), whole or k split FEW_ROWS_SPLITS ways; and
# FEW_ROWS_RUNS_TILE_M rows (m16, m16_splitk<S>) in fp32, tf32 and fp64 only, whose k lanes take runs of 4 rows of k
# with A staged in shared memory (FEW_ROWS_A_VECTORS): a bench runs them at up to 16 rows (Variant.max_rows); the
# heuristic does not pick them (at 16 rows kernel 7 ran faster: docs/classic-and-simt.md), and a study leaves kernel
# 18 at 8 rows.
FEW_ROWS_TILE_MS = (1, 2, 4, 8)
FEW_ROWS_RUNS_TILE_M = 16
FEW_ROWS_RUNS_DTYPES = ("tf32", "float32", "float64")
FEW_ROWS_SPLITS = (1, 2, 4, 8, 16, 32)
FEW_ROWS_THREADS = 256
FEW_ROWS_BK = 16
# tf32 too: at a few rows the tf32 line (cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32) computes in fp32, as this kernel
# does (docs/tensor-cores.md, kernel 10's decode builds), so both are fp32 arithmetic on fp32 storage.
FEW_ROWS_DTYPES = ("float16", "bfloat16", "tf32", "float32", "float64")
# The blocks an SM holds at once by its registers (__launch_bounds__): at 256 threads, up to 80 registers a thread
# for 3, 128 for 2. A block keeps 256 x 64 bytes of B in flight, so the more the better, as far as the tile's
# accumulators and A's values fit without spills (ptxas -v, nvcc 13.0: none at these bounds; at 4 blocks bf16 spilled
# 8 bytes, and 8 rows of 16-bit elements, 64 accumulators a thread, 88 bytes at 2: those take 168-206 registers, one
# block an SM). In the split sum each of the 4 lanes of k loads FEW_ROWS_SPLIT_PASS[BM] of its slices' partials a pass
# (split_k.cuh's SPLIT_K_PASS): all of them at 32 slices of one row, as many as fit the stream's registers at more.
# The 16-row builds hold 64 fp32 accumulators a thread (32 doubles) and two steps of B: two blocks an SM (128
# registers), one partial a pass in their split sum.
FEW_ROWS_BLOCKS_PER_SM = {1: 3, 2: 3, 4: 2, 8: 1, 16: 2}
FEW_ROWS_SPLIT_PASS = {1: 8, 2: 4, 4: 2, 8: 2, 16: 1}


def few_rows_family(tile_m: int) -> TileFamily:
    """Kernel 18's configuration of BM = tile_m rows, one per element size (FEW_ROWS_B2, _B4, _B8), launched as a
    programmatic dependent of the previous kernel (it waits for that grid before its first global access)."""
    def tile(itemsize: int) -> BlockTile:
        return BlockTile(f"FEW_ROWS_B{itemsize}", tile_m, 64 * (16 // itemsize), FEW_ROWS_BK, FEW_ROWS_THREADS,
                         dependent=True, blocks_per_sm=FEW_ROWS_BLOCKS_PER_SM[tile_m])

    return TileFamily("FEW_ROWS", {d: (tile(dt.get(d).itemsize),) for d in FEW_ROWS_DTYPES})


FEW_ROWS = few_rows_family(FEW_ROWS_TILE_MS[0])


def few_rows_build(tile_m: int, s: int) -> str:
    """The name of kernel 18's build of tile_m rows split s ways: default (m1 whole), splitk<s>, m<BM>, m<BM>_splitk<s>."""
    rows = "" if tile_m == FEW_ROWS_TILE_MS[0] else f"m{tile_m}"
    split = f"splitk{s}" if s > 1 else ""
    return "_".join(w for w in (rows, split) if w) or "default"


def few_rows_variants() -> tuple[Variant, ...]:
    """Kernel 18's builds but its default: every BM of FEW_ROWS_TILE_MS, whole or split FEW_ROWS_SPLITS ways, and the
    same of FEW_ROWS_RUNS_TILE_M rows with runs of k (FEW_ROWS_RUNS_DTYPES)."""
    out = []
    for tile_m in (*FEW_ROWS_TILE_MS, FEW_ROWS_RUNS_TILE_M):
        family = few_rows_family(tile_m)
        runs = tile_m == FEW_ROWS_RUNS_TILE_M
        for s in FEW_ROWS_SPLITS:
            name = few_rows_build(tile_m, s)
            if name == "default":
                continue
            split = (f", k in {s} slices on {s} blocks (grid z), summed in slice order through a workspace "
                     "(deterministic)" if s > 1 else "")
            lanes = (", each k lane taking runs of 4 rows of k, A staged in shared memory 256 rows of k at a time, "
                     "the next step's B in flight during this step's math" if runs else "")
            v = family_split_variant(family, s, name, f"{tile_m} rows x 64 16-byte vectors of columns, 8 warps side "
                                                      f"by side, B's rows streamed into registers{lanes}{split}")
            passes = (f"SPLIT_K_PASS={FEW_ROWS_SPLIT_PASS[tile_m]}",) if s > 1 else ()
            extra = dict(dtypes=FEW_ROWS_RUNS_DTYPES, max_rows=tile_m) if runs else {}
            out.append(replace(v, defines=(*v.defines, *passes, *(("FEW_ROWS_A_VECTORS=1",) if runs else ())),
                               launch_bounds=family.launch_bounds, **extra))
    return tuple(out)
