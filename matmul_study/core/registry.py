"""The methods the study can run: one entry per method, the single place a new kernel is registered.

A CUDA method names its `kernels/*.cu` file, the C++ template call that instantiates it, its launch geometry
and what it needs of the GPU. `matmul_study.launch.kernels` turns (method, dtype, block) into an `extern "C"` wrapper
around that call, so the driver can find the kernel by a plain name. The order of METHODS is the ladder's order:
tables, legends and the schema's list of names all come from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from matmul_study.core import configs
from matmul_study.core import dtypes as dt
from matmul_study.core.backends import CUBLAS, CUBLASLT, NUMPY, PYCUDA
from matmul_study.core.geometry import (DECODE_SLICE_BYTES, DECODE_TILE_MS, DECODE_TILE_N, DMMA, DMMA_DECODE_MAX_SPLIT,
                                        FEW_ROWS, FEW_ROWS_DTYPES, FEW_ROWS_SPLITS, FEW_ROWS_TILE_MS, few_rows_build,
                                        few_rows_family, few_rows_variants,
                                        DMMA_DECODE_ROWS, DMMA_DECODE_TILE_MS, MMA_ASYNC_COPY, REGISTER_TILED,
                                        WARPTILED, WARPTILED_DECODE_MAX_SPLIT, WARPTILED_DECODE_RESIDENT,
                                        STREAM_B, WARPTILED_DECODE_ROWS, WARPTILED_DECODE_TILE_MS, WARPTILED_MBARRIER,
                                        WARPTILED_ONE_WAVE, WARPTILED_ONE_WAVE_TILE, WARPTILED_TOKEN_TILE,
                                        WARPTILED_TALL_DECODE, WARPTILED_WIDE_DECODE, WARPTILED_WIDE_DECODE_TILE,
                                        WGMMA_TMA,
                                        WMMA, WMMA_TILED, BlockTile, TallTiles, decode_variants, dmma_decode_variants,
                                        dmma_narrow_variants, dmma_small_variants, dmma_square_variants,
                                        square_thread_blocks, square_thread_blocks_dynamic_tiles, tile_split_k_variants,
                                        warptiled_decode_variants, warptiled_deep_split_variants,
                                        warptiled_narrow_variants, warptiled_one_wave_variant,
                                        warptiled_small_variants, warptiled_token_variants,
                                        warptiled_wide_decode_variants)
from matmul_study.core.specs import (FAST_ACCUMULATION, PROMOTED, THREE_TF32, Method, Requirements, TensorMap,
                                     Variant)
from matmul_study.core.warp_specialized import (BT_SMEM_SUFFIX, HOPPER, NARROWEST_BN, NARROW_BN, SHORT_BM,
                                                SPLIT_FP16_PREPASS, SPLIT_TF32_PREPASS, SWAP_TWINS_BYTES,
                                                TRANSPOSE_TF32_PREPASS, WS_16BIT,
                                                WS_BM64_SPLITS, WS_BYTES, WS_FP8_BLOCK, WS_TF32, a_registers_variant,
                                                bt_smem_variants, bytes_choose, few_columns_twins_first,
                                                few_rows_twins_first, fp8_block_choose, fp8_block_variants,
                                                decode_twins_first,
                                                one_set_promoted_variants, promote_chunk_variants,
                                                promoted_class_choose, promoted_ladder, promoted_variants,
                                                small_splits_first, swap_k_group_variants, swap_twins, swap_variants,
                                                ws_bm64_variants, ws_bn128_variants, ws_bn192_variant, ws_bn64_variants,
                                                ws_k_group_variants, ws_rung, ws_tile_builds, ws_variants)

SIMT_DTYPES = ("float32", "float64", "int32")


def _tiled(block: int, dtype: str) -> tuple[int, int, int]:
    return block, block, block


# The warp-specialised rungs' builds (each its rung's record with one axis moved), which their heuristics weigh too.
WS_16BIT_OWN_VARIANTS = (*ws_variants(WS_16BIT, groups_along_n=True, clusters=(1, 2, 4)),
                         *ws_bn128_variants(WS_16BIT), ws_bn192_variant(WS_16BIT),
                         *ws_bm64_variants(WS_16BIT, splits=WS_BM64_SPLITS), *ws_k_group_variants(WS_16BIT),
                         *ws_bn64_variants(WS_16BIT))
# ... and the twins that compute Cᵀ = Bᵀ·Aᵀ (B's rows read M-major by wgmma) of its 128-row tiles and splits, and of
# its 64x64 tiles with two k groups
WS_16BIT_VARIANTS = (*WS_16BIT_OWN_VARIANTS, *swap_variants(WS_16BIT, WS_16BIT_OWN_VARIANTS, rows=WS_16BIT.BM),
                     *swap_k_group_variants(WS_16BIT))
# 3xFP16 (kernel 19): the 16-bit record with its sums promoted (in quarters of the columns), and a few of its axes.
WS_3XFP16 = replace(WS_16BIT, promote=True)
# The least of K a slice of 3xFP16's split builds keeps (configs.promoted_tiles): between 1024^3's 256, where splitk4
# lost to bn128, and 16x3584x3584's 896, where it won (an H100, results/reference/NVIDIA_H100/3xfp16/suite.txt).
SPLIT_3XFP16_SLICE_K = 512
WS_3XFP16_VARIANTS = (
    *(v for v in ws_variants(WS_3XFP16, groups_along_n=True, clusters=(1, 2), splits=(2, 4))
      if v.name in ("cluster1", "no_streamk", "splitk2", "splitk4")),
    *promote_chunk_variants(WS_16BIT, "fp16"),
    replace(WS_3XFP16, bn=NARROW_BN).variant(
        f"bn{NARROW_BN}",
        f"128x{NARROW_BN} tiles, each k step's fp16 sums promoted whole (two scratch sets of 64 beside the fp32 set): "
        "twice the tiles, for problems whose 128x256 tiles leave most SMs idle"),
)
WS_TF32_OWN_VARIANTS = (*ws_variants(WS_TF32, groups_along_n=False, clusters=(1, 2)), *ws_bn128_variants(WS_TF32),
                        ws_bn192_variant(WS_TF32), *ws_bm64_variants(WS_TF32, splits=WS_BM64_SPLITS),
                        *ws_k_group_variants(WS_TF32),
                        *ws_bn64_variants(WS_TF32), *bt_smem_variants(WS_TF32))
# ... and the twins of its tiles and splits that compute Cᵀ = Bᵀ·Aᵀ (B read as it is)
WS_TF32_VARIANTS = (*WS_TF32_OWN_VARIANTS, *swap_variants(WS_TF32, WS_TF32_OWN_VARIANTS))
# int8's builds: 16-bit's tiles and splits (its split-K slices meet in an int32 workspace).
# tf32's tiles whose builds also write Bt in shared memory (their <tile>_smem_bt and <tile>_splitk<S>_smem_bt twins)
TF32_BT_TILES = {f"bn{NARROW_BN}": (WS_TF32.BM, NARROW_BN), f"bm{SHORT_BM}_bn{NARROW_BN}": (SHORT_BM, NARROW_BN)}
WS_INT8_OWN_VARIANTS = (*ws_variants(WS_BYTES, groups_along_n=False, clusters=(1, 2)), *ws_bn128_variants(WS_BYTES),
                        ws_bn192_variant(WS_BYTES), *ws_bm64_variants(WS_BYTES, splits=WS_BM64_SPLITS),
                        *ws_k_group_variants(WS_BYTES),
                        *ws_bn64_variants(WS_BYTES))
# ... and the twins of its 128-row tiles and splits that compute Cᵀ = Bᵀ·Aᵀ (B read as it is, no transpose)
WS_INT8_VARIANTS = (*WS_INT8_OWN_VARIANTS, *swap_variants(WS_BYTES, WS_INT8_OWN_VARIANTS, rows=WS_BYTES.BM,
                                                                 builds=SWAP_TWINS_BYTES))
WS_FP8_OWN_VARIANTS = (*ws_variants(WS_BYTES, groups_along_n=False, clusters=(1, 2)),
                       *promoted_variants(WS_BYTES, "FP8", "DeepGEMM's remedy, cuBLASLt's default"),
                       a_registers_variant(WS_BYTES), *promote_chunk_variants(WS_BYTES, "FP8"),
                       *one_set_promoted_variants(WS_BYTES, "FP8", clusters=(1, 2)),
                       ws_bn192_variant(WS_BYTES), *ws_bm64_variants(WS_BYTES, splits=WS_BM64_SPLITS),
                       *ws_k_group_variants(WS_BYTES), *ws_bn64_variants(WS_BYTES),
                       *promoted_ladder(WS_BYTES)[1].values())
WS_FP8_VARIANTS = (*WS_FP8_OWN_VARIANTS, *swap_variants(WS_BYTES, WS_FP8_OWN_VARIANTS, rows=WS_BYTES.BM,
                                                               builds=SWAP_TWINS_BYTES))

# Where the tile models also weigh kernels 7's and 8's builds (TileRates.ragged_fill): their default tiles (one
# block an SM) fill their waves to less than this (dmma 1536^3: 144 tiles of 128 x 128, two waves filled to 55 %,
# and 2304^3, 82 %; warptiled fp32 2304^3: 162 tiles of 128 x 256, 61 %). Not 2048^3, 4096^3 or 8192^3 (97 %), nor
# warptiled fp64, which dmma answers for, and whose sweeps ran too few of its splits at such shapes.
RAGGED_FILL = 0.9
# Kernel 20's decode tiles (mma_3xtf32): kernel 10's of 16 and 32 rows (its entry below says why not 64).
MMA_3XTF32_TILE_MS = tuple(t for t in DECODE_TILE_MS if t <= 32)

WARPTILED_WIDE_DECODE_VARIANTS = warptiled_wide_decode_variants()
WARPTILED_VARIANTS = (*tile_split_k_variants(WARPTILED), *warptiled_decode_variants(),
                      *WARPTILED_WIDE_DECODE_VARIANTS, *warptiled_narrow_variants(),
                      *warptiled_token_variants(), *warptiled_small_variants(), warptiled_one_wave_variant(),
                      *warptiled_deep_split_variants())
# The builds kernel 7's tile models weigh: all but the fp32 16 x 256 decode tiles, the decode rule's alone (the models
# have no facts for them).
WARPTILED_BUILDS = {v.name: v for v in WARPTILED_VARIANTS if v not in WARPTILED_WIDE_DECODE_VARIANTS}
# Kernel 7's tile model (configs.simt_tile_model), fitted per dtype (bench/fit_tile_model.py) to every build at 15
# shapes past the token rows whose default tiles leave most SMs idle (an H200;
# results/reference/NVIDIA_H200/small-problems/simt-tiles-fit-*.txt): the pick is the best build at 13 of them in
# fp32 and 11 of 13 measured in fp64, and loses at most 3.2 % (fp32) and 4.7 % (fp64); at 11 shapes it never saw
# (simt-tiles-check-*.txt), 3.2 % and 2.3 % on average, at most 9.5 % and 8 %. fp64's sweep did not run the
# default tiles' splits at its first four shapes; the suite's pipeline run measured the picks there. fp32's facts
# then descended (--descend) over those sweeps, the 32x64 tiles and 16 squares of 256-3072 (simt-squares-*.txt),
# where its waves of default tiles are ragged too: 2 % lost on average at 41 shapes, at most 12 %. With the decode
# and narrow tiles split 32 ways (geometry.WARPTILED_DEEP_SPLIT, measured later at those shapes and the small tiles'
# 72, simt-split32-*-float32.txt): a lone block of 4 warps at 0.7 of the rate instead of 0.6, so that 128 blocks of
# 32 rows split 32 ways (one an SM) beat 256 of 16 rows (two), which read B twice as often (128x128x32768: 0.91 of
# cuBLAS against 0.80), and the 32x64 tiles a rate of their own, 80, so that they are weighed at any N
# (144x144x20000: 0.83 against 0.63 in 16-row tiles): 2.0 % lost on average at the 41, at most 12 %; the whole rule
# over the small tiles' 72 shapes 1.8 % where they were fitted, 4.0 % held out (2.2 % and 4.0 % without the builds).
WARPTILED_TILE_RATES = {
    "float32": configs.TileRates({16: 80.0, 32: 100.0, (32, 64): 80.0, 128: 120.0}, {4: 0.7, 8: 0.8}, block_us=1.0,
                                 partial_gbps=100.0, ragged_fill=RAGGED_FILL, inside_fill=True),
    "float64": configs.TileRates({16: 30.0, 32: 60.0, 128: 70.0}, {4: 0.5, 8: 1.0}, block_us=1.0,
                                 partial_gbps=50.0),
}
# ... and of its fp32 small tiles (64 x 128 and 64 x 64, 4 warps, several to an SM; configs.smaller_tiles weighs them
# where the model above picks the default tiles, whole or split), and against its decode and narrow tiles where the
# model above picks them past the token rows, with the builds' registers in their residency
# (WARPTILED_SMALL_REGISTERS). The blocks past the busiest SM's last full round of resident ones run at the share of
# their own warps (last_round): a ragged second round costs a round, so 832 blocks of 64 x 64 split 4 ways (1.6 rounds
# of 4 an SM) beat 624 split 3 ways (1.2 rounds) at 1000x800x1200 (0.90 against 0.78 of cuBLAS). Fitted to every build
# at 50 shapes on an H200, the small builds as registered (after their deep splits were bound to more blocks an SM,
# geometry.WARPTILED_SMALL_BOUNDS) measured in one process (small-problems/simt-small-tiles-pass-float32.txt), the
# others in simt-small-tiles-four-blocks-{1,2}-float32.txt: a descent over each fact, then a grid over the small tiles'
# rates and shares, 12 resident warps at 0.9 of the rate among them (64 x 64 split 3 ways, 3 an SM, ran 0.78 at
# 128x4096x4096 where split 4 ways, 4 an SM, ran 0.83). Over the 50 the pick loses 1.4 % on average to the best build
# measured (the facts before, on the same sweep, 2.7 %), and at the 22 shapes of the former check sweeps 1.9 % (3.2 %);
# the grid's point was chosen by both, so the 22 are not held out clean: the descent alone, 1.1-1.3 % where fitted,
# lost 3.5-5.2 % there. bench/fit_tile_model.py --model small (or beside) --descend weighs the facts by the whole
# rule's picks over those tables (its docstring has the command): on the rule since a partial tile counts at its part
# inside C (inside_fill), 1.1 % where fitted, 1.9 % held out. The rates are the model's weights, not rates an SM
# reaches: the decode tiles' take the cost of their blocks' slots, which the model does not count, above the SM's 253
# multiply-adds a nanosecond. Against the picks
# before the bound builds, each measured in its own sweep (x cuBLAS): the geometric mean over the 72 shapes 0.901 ->
# 0.928 (the best build at each, 0.944), up by more than 3 % at 26 (1536^3 0.88 -> 1.09, 1152^3 0.94 -> 1.04,
# 2200x500x1500 0.82 -> 0.95, 4096x64x4096 0.88 -> 1.00, 3500x300x1200 0.76 -> 0.89), down at 9: 128x4096x4096
# 0.87 -> 0.83 (the 64 x 128 tiles split 4 ways at two blocks an SM, whose staged sum ran fastest there: one round of
# blocks gains nothing from a third), 512x512x16384 0.85 -> 0.81 (a miss of the model: 64 x 64 tiles split 8 ways
# where the 64 x 128 ones split 16 ways ran 0.84), 768^3 1.05 -> 0.98, 2500x200x2500 0.84 -> 0.77, 4000x120x6000
# 0.80 -> 0.74, 10000x64x1000 1.39 -> 1.32.
WARPTILED_SMALL_TILE_RATES = {
    "float32": configs.TileRates({64: 160.0, (64, 64): 140.0, 128: 120.0}, {4: 0.4, 8: 0.8, 12: 0.9}, block_us=0.5,
                                 partial_gbps=100.0, ragged_fill=RAGGED_FILL, last_round=True, inside_fill=True),
}
WARPTILED_BESIDE_TILE_RATES = {
    "float32": configs.TileRates({16: 220.0, 32: 280.0, 64: 280.0, (64, 64): 240.0, 128: 200.0}, {4: 0.6, 8: 0.8},
                                 block_us=0.25, partial_gbps=200.0, ragged_fill=RAGGED_FILL, last_round=True,
                                 inside_fill=True),
}


def warptiled_tile_model(rates: dict[str, configs.TileRates], registers: dict[str, int] | None = None):
    """Kernel 7's tile model with one of its fitted sets of facts (`rates`): the same builds, launches and
    split-K rule, weighed at those rates; `registers`: the builds whose residency their registers bound."""
    return configs.simt_tile_model(WARPTILED.tile, WARPTILED.launch, WARPTILED_BUILDS, rates,
                                   configs.one_wave(configs.wave_split_k(WARPTILED.tile), WARPTILED.tile,
                                                    WARPTILED_ONE_WAVE, WARPTILED_ONE_WAVE_TILE.shared_bytes),
                                   registers=registers)


DMMA_VARIANTS = (*tile_split_k_variants(DMMA), *dmma_decode_variants(), *dmma_narrow_variants(),
                 *dmma_square_variants(), *dmma_small_variants())
# Kernel 8's tile model, fitted (bench/fit_tile_model.py --descend over a coarse grid, from the best of random starts)
# to every build at 62 shapes past the token rows or in the model's reach, on an H200, every build launched as a
# programmatic dependent (the decode tiles too, which the study launches plainly): 51 of
# small-problems/dmma-mmak-all-float64.txt, whose 12 deep-K shapes dmma-deep-k-all-float64.txt measured again with
# the 32-row tiles split 32 and 64 ways, and 14 of 33-64 token rows (dmma-token-rows-all-float64.txt). The pick loses
# 2.2 % on average to the best build measured, at most 18 % (192x192x16384: 32x32 tiles split 16 ways 0.60x cuBLAS,
# 8 ways 0.73). At 24 shapes held out (dmma-mmak-held-out-float64.txt, dmma-deep-k-held-out-float64.txt,
# dmma-deep-squares-all-float64.txt) 3.3 %, at most 16 % (200x200x30000: split 8 ways 0.61, 32 ways 0.72); a finer
# grid fits a little better but does worse held out (3.9 %). The busiest SM's blocks past its last full round of
# resident ones run at the share of their own warps (last_round): without it the model lost 3.2 % and 4.7 %, and at
# 1024x1024x4096 took 64x64 tiles split 2 ways (4 blocks an SM, 3 resident: 0.91) over whole 64x128 tiles (1.03).
# A split has a time of its own beside its partials' bytes (split_us): at 512^3 the 32x64 tiles ran at 0.95x cuBLAS
# whole and 0.69x split 2 ways on twice the blocks, so a split's count and its last slice's trips to L2 cost more
# than the partials' bytes say. Its 64x64, 128x64 and 32-row tiles have rates of their own, so the model weighs them
# on every shape; the 128x64 tiles' is low because the 64-row tiles in m16n8k8 outran them at every shape of the
# sweep but one (8192x64x4096, by 1.7 %): it keeps them out of the picks. The blocks an SM holds count its registers
# too (DMMA_REGISTERS): the 64x64 tiles in m16n8k8 take 186 a thread, two blocks an SM where shared memory and threads
# allow three, and lost where three were resident (1152^3 0.83 -> 0.76 of cuBLAS).
DMMA_TILE_RATES = {
    "float64": configs.TileRates({16: 100.0, 32: 60.0, 64: 140.0, 128: 140.0, (64, 64): 140.0, (128, 64): 40.0,
                                  (32, 32): 100.0, (32, 64): 120.0},
                                 {4: 0.6, 8: 0.9}, block_us=4.0, partial_gbps=25.0, ragged_fill=RAGGED_FILL,
                                 split_us=4.0, last_round=True),
}

# Registers a thread of each dmma build (ptxas, nvcc 13.0, sm_90; test_simt_split_k compiles them and compares): the
# tile model's residency counts them beside shared memory and threads.
DMMA_REGISTERS = {
    "default": 224, "splitk2": 254, "splitk4": 254, "splitk8": 254, "splitk16": 254, "splitk32": 254, "m16": 110,
    "m16_splitk2": 110, "m16_splitk4": 146, "m16_splitk8": 178, "m16_splitk16": 178, "m32": 158, "m32_splitk2": 160,
    "m32_splitk4": 210, "m32_splitk8": 214, "m32_splitk16": 214, "n64": 238, "n64_splitk2": 254, "n64_splitk4": 254,
    "n64_splitk8": 254, "n64_splitk16": 254, "bm64": 175, "bm64_splitk2": 168, "bm64_splitk4": 208,
    "bm64_splitk8": 210, "bm64_bn64": 186, "bm64_bn64_splitk2": 168, "bm64_bn64_splitk4": 208,
    "bm64_bn64_splitk8": 210, "bm32_bn32": 142, "bm32_bn32_splitk2": 142, "bm32_bn32_splitk4": 146,
    "bm32_bn32_splitk8": 174, "bm32_bn32_splitk16": 174, "bm32_bn64": 128, "bm32_bn64_splitk2": 122,
    "bm32_bn64_splitk4": 146, "bm32_bn64_splitk8": 174, "bm32_bn64_splitk16": 174, "bm32_bn32_splitk32": 174,
    "bm32_bn32_splitk64": 174, "bm32_bn64_splitk32": 174, "bm32_bn64_splitk64": 174,
}

# Registers a thread of kernel 7's fp32 small tiles (ptxas, nvcc 13.0, sm_90; test_simt_split_k compiles them and
# compares): the small tiles' models (WARPTILED_SMALL_TILE_RATES, WARPTILED_BESIDE_TILE_RATES) count them in a
# build's residency beside shared memory and threads: the 64 x 64 builds are bound to 4 blocks an SM and the 64 x 128
# ones split 3 ways or more to 3, their deep splits' sums loading fewer partials a pass so that they fit
# (geometry.WARPTILED_SMALL_BOUNDS).
WARPTILED_SMALL_REGISTERS = {
    "m64_n64": 119, "m64_n64_splitk2": 119, "m64_n64_splitk3": 119, "m64_n64_splitk4": 128, "m64_n64_splitk8": 119,
    "m64_n64_splitk16": 119, "m64_n128": 167, "m64_n128_splitk2": 167, "m64_n128_splitk3": 167,
    "m64_n128_splitk4": 167, "m64_n128_splitk8": 167, "m64_n128_splitk16": 167,
}

# The registers of the builds whose residency registers may bound, by method.
TILE_REGISTERS = {"dmma": DMMA_REGISTERS}
# The builds each method's tile models weigh, where not all of its variants (bench/fit_tile_model.py, tile_fit).
TILE_BUILDS = {"warptiled": WARPTILED_BUILDS}


def warptiled_choose(main: dict[str, configs.TileRates] = WARPTILED_TILE_RATES,
                     small: dict[str, configs.TileRates] = WARPTILED_SMALL_TILE_RATES,
                     beside: dict[str, configs.TileRates] = WARPTILED_BESIDE_TILE_RATES, small_fill: float = RAGGED_FILL
                     ) -> Callable[[object, tuple[str, ...]], configs.Choice]:
    """Kernel 7's heuristic with its three tile models' facts. A few token rows: the decode tiles (BM x 128, BM 16 or
    32) that hold them, K split into slices of 16 k steps or more, and in fp32 M of at most 8 its 8 x 256 tiles
    (configs.simt_token_tiles); a narrow N, or more rows where the default tiles leave most SMs idle, hold a few
    columns or (fp32) fill their waves to less than RAGGED_FILL: the build the tile model (`main`) gives the least
    time; else the default tiles, split where few. Where that picks the default tiles with short slices, or with
    slices of any depth where they fill their waves to less than `small_fill` (partial tiles at their part inside C),
    or past the token rows the decode or narrow tiles, the small tiles' models (`small`, `beside`) weigh the 64 x 64
    and 64 x 128 tiles beside the pick (configs.smaller_tiles)."""
    return simt_choose(
        WARPTILED_DECODE_ROWS, WARPTILED_DECODE_TILE_MS, WARPTILED_DECODE_MAX_SPLIT, "the CUDA cores",
        configs.smaller_tiles(
            warptiled_tile_model(main), warptiled_tile_model(small, WARPTILED_SMALL_REGISTERS),
            frozenset(v.name for v in warptiled_small_variants()), WARPTILED.tile(0, "float32")[2],
            frozenset(v.name for v in (*warptiled_decode_variants(), *warptiled_narrow_variants(),
                                       *warptiled_deep_split_variants())),
            WARPTILED_DECODE_ROWS, warptiled_tile_model(beside, WARPTILED_SMALL_REGISTERS),
            default_tile=WARPTILED.tile(0, "float32")[:2], ragged_fill=small_fill),
        token_tile=WARPTILED_TOKEN_TILE, resident=WARPTILED_DECODE_RESIDENT,
        half_rows=WARPTILED_TOKEN_TILE.tile(0, "float32")[:2],
        wide={("float32", 16): (WARPTILED_WIDE_DECODE_TILE.tile_n, WARPTILED_WIDE_DECODE)}, tall=WARPTILED_TALL_DECODE)


# Every fitted set of a method's tile models' facts, by model (bench/fit_tile_model.py starts from them with
# --descend): "main" the tile model's, which it weighs where that model applies; the others' by the whole heuristic's
# picks, made from the sets as keyword arguments by model (TILE_RULES).
TILE_MODELS = {"warptiled": {"main": WARPTILED_TILE_RATES, "small": WARPTILED_SMALL_TILE_RATES,
                             "beside": WARPTILED_BESIDE_TILE_RATES},
               "dmma": {"main": DMMA_TILE_RATES}}
TILE_RULES = {"warptiled": warptiled_choose}


def simt_choose(rows: int, tile_ms: tuple[int, ...], max_split: int, units: str,
                model: Callable[[object, tuple[str, ...]], configs.Choice], token_tile: BlockTile | None = None,
                resident: dict[tuple[str, int], int] | None = None, half_rows: tuple[int, int] | None = None,
                wide: dict[tuple[str, int], tuple[int, str]] | None = None, tall: tuple[TallTiles, ...] = ()
                ) -> Callable[[object, tuple[str, ...]], configs.Choice]:
    """The heuristic of kernels 7 and 8: up to `rows` token rows, the decode tiles (BM x 128, BM in `tile_ms`, K
    in at most `max_split` slices, and by the wave of blocks an SM holds where `resident` knows it, with the
    `half_rows` tiles beside them, the `wide` tiles where their blocks come close to one an SM, and the first of the
    `tall` tiles that makes its blocks where one row of them holds the rows with as few rows of zeros), unless N is
    too narrow for them to fill half the SMs; there and past the token rows, the tile `model`. With a `token_tile`, M
    of at most its rows goes to its builds first (configs.simt_token_tiles)."""
    decode = configs.simt_decode_tiles(tile_ms, DECODE_TILE_N, DECODE_SLICE_BYTES, max_split=max_split, units=units,
                                       narrow=model, resident=resident, half_rows=half_rows, wide=wide, tall=tall)
    if token_tile is not None:
        decode = configs.simt_token_tiles(token_tile, decode, units=units)
    return configs.token_rows(rows, decode, model)


METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method(
            "numpy",
            "numpy matmul on the CPU (BLAS), the CPU reference line",
            ("float32", "float64"),
            backend=NUMPY,
            reference_line=True,
        ),
        Method(
            "naive",
            "one thread per element of C, global memory only",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="01_naive.cu",
            template="naive_matmul<{T}, {Acc}>",
            launch=square_thread_blocks,
            tile=lambda block, dtype: (1, 1, 1),  # each thread reads its own row of A and column of B
        ),
        Method(
            "tiled_runtime_block",
            "the tiled kernel with the tile size read at run time (dynamic shared memory), inner loop kept rolled",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="02_tiled_runtime_block.cu",
            template="tiled_runtime_block_matmul<{T}, {Acc}>",
            launch=square_thread_blocks_dynamic_tiles,
            tile=_tiled,
        ),
        Method(
            "tiled",
            "the source study's kernel: BLOCK x BLOCK shared-memory tiles, BLOCK fixed at compile time",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="03_tiled.cu",
            template="tiled_matmul<{T}, {Acc}, {BLOCK}>",
            launch=square_thread_blocks,
            tile=_tiled,
        ),
        Method(
            "tiled_unrolled",
            "the tiled kernel with an explicit #pragma unroll on the inner loop (the A100 post's step)",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="04_tiled_unrolled.cu",
            template="tiled_unrolled_matmul<{T}, {Acc}, {BLOCK}>",
            launch=square_thread_blocks,
            tile=_tiled,
        ),
        Method(
            "wmma",
            "tensor cores through nvcuda::wmma, fp16 in, fp32 accumulate; one warp per 16x16 tile of C",
            ("float16",),
            backend=PYCUDA,
            source="05_wmma.cu",
            template="wmma_matmul",
            launch=WMMA.launch,
            # The traffic model's unit is a warp's 16x16 tile of C (the m16n16k16 fragment): it loads its own strips.
            tile=lambda block, dtype: (16, 16, 16),
            contract_defines=WMMA.defines,
        ),
        Method(
            "register_tiled",
            "128x128 block tiles, BK=8, each of 256 threads computing an 8x8 sub-tile of C in registers",
            ("float32", "float64"),
            backend=PYCUDA,
            source="06_register_tiled.cu",
            template="register_tiled_matmul<{T}, {Acc}>",
            launch=REGISTER_TILED.launch,
            tile=REGISTER_TILED.tile,
            contract_defines=REGISTER_TILED.defines,
        ),
        Method(
            "warptiled",
            "SIMT: 8 warps of 64x64 (fp32) or 64x32 (fp64) warp tiles, register double buffering, A transposed "
            "in shared memory for LDS.128, a 3-4 stage cp.async pipeline, grouped block order",
            ("float32", "float64"),
            backend=PYCUDA,
            source="07_warptiled.cu",
            template="warptiled_matmul<{T}, {Acc}>",
            launch=WARPTILED.launch,
            tile=WARPTILED.tile,
            contract_defines=WARPTILED.defines,
            launch_bounds=WARPTILED.launch_bounds,
            variants=WARPTILED_VARIANTS,
            waits_for_previous_grid=True,  # on sm_90 and newer (griddepcontrol); its default tiles launch so
            choose=warptiled_choose(),
        ),
        Method(
            "warptiled_mbarrier",
            "SIMT fp32: warptiled with a full and an empty mbarrier per stage instead of a block barrier per "
            "k slice (warps drift up to a slice apart), 4 stages of BK 32; a second tile configuration, for the "
            "study's answer to take the faster per shape",
            ("float32",),
            backend=PYCUDA,
            source="07_warptiled.cu",
            template="warptiled_mbarrier_matmul<{T}, {Acc}>",
            launch=WARPTILED_MBARRIER.launch,
            tile=WARPTILED_MBARRIER.tile,
            contract_defines=WARPTILED_MBARRIER.defines,
            launch_bounds=WARPTILED_MBARRIER.launch_bounds,
            default_study=False,
        ),
        Method(
            "dmma",
            "fp64 on the tensor cores: mma.sync m16n8k4 (DMMA), 128x128x16 block tiles of 8 warps, a 4-stage "
            "cp.async pipeline, grouped block order",
            ("float64",),
            backend=PYCUDA,
            source="08_dmma.cu",
            template="dmma_matmul<{T}, {Acc}>",
            launch=DMMA.launch,
            tile=DMMA.tile,
            contract_defines=DMMA.defines,
            launch_bounds=DMMA.launch_bounds,
            variants=DMMA_VARIANTS,
            # As kernel 7: a few token rows take the decode tiles (BM x 128, BM 16 or 32), K in at most 4 slices;
            # a narrow N, or more rows where the default tiles leave most SMs idle, hold a few columns or fill their
            # waves to less than RAGGED_FILL, the build the tile model gives the least time (its 128x64 and 64-row
            # tiles among them); else the default tiles, split where few (a k step costs DMMA half the time it
            # costs the SIMT rungs: twice their minimum depth a slice).
            choose=simt_choose(
                DMMA_DECODE_ROWS, DMMA_DECODE_TILE_MS, DMMA_DECODE_MAX_SPLIT, "the tensor cores (DMMA)",
                configs.simt_tile_model(DMMA.tile, DMMA.launch, {v.name: v for v in DMMA_VARIANTS}, DMMA_TILE_RATES,
                                        configs.wave_split_k(DMMA.tile, min_slice_k=128),
                                        registers=DMMA_REGISTERS)),
            waits_for_previous_grid=True,  # on sm_90 and newer (griddepcontrol); launched so (geometry.DMMA)
        ),
        Method(
            "wmma_tiled",
            "tensor cores, 8 warps per 128x128 tile of C, each warp 64x32 from shared-memory tiles (BK=32)",
            ("float16",),
            backend=PYCUDA,
            source="09_wmma_tiled.cu",
            template="wmma_tiled_matmul",
            launch=WMMA_TILED.launch,
            tile=WMMA_TILED.tile,
            contract_defines=WMMA_TILED.defines,
        ),
        Method(
            "mma_async_copy",
            "the pre-Hopper rung: Ampere-style warp-level mma.sync (m16n8k16 in 16 bits, m16n8k8 tf32, m16n8k32 "
            "int8 and FP8 with sums promoted into fp32 every 32 k) on row-major A and B as given, 128x256 block "
            "tiles of 8 warps (64x64 each), k slices of 64 bytes, a 4-stage cp.async pipeline through "
            "XOR-swizzled shared memory, grouped block order",
            ("float16", "bfloat16", "tf32", "int8", "float8_e4m3"),
            backend=PYCUDA,
            source="10_mma_async_copy.cu",
            template="mma_async_copy_matmul<{T}, {Acc}>",
            launch=MMA_ASYNC_COPY.launch,
            tile=MMA_ASYNC_COPY.tile,
            contract_defines=MMA_ASYNC_COPY.defines,
            launch_bounds=MMA_ASYNC_COPY.launch_bounds,
            requires=Requirements(min_compute_capability=(8, 0),
                                  dtype_compute_capability=(("float8_e4m3", (8, 9)),)),
            variants=decode_variants(),
            choose=configs.decode_tiles(DECODE_TILE_MS, DECODE_TILE_N, DECODE_SLICE_BYTES,
                                        widest={"float8_e4m3": 32}, two_per_sm_from={"tf32": 64},
                                        default_tile=(MMA_ASYNC_COPY.tile_m, MMA_ASYNC_COPY.tile_n)),
            waits_for_previous_grid=True,  # on sm_90 and newer (griddepcontrol)
            accuracy=PROMOTED,  # in FP8: each mma's k-32 sum is added into fp32 registers
            stream_b=STREAM_B,
        ),
        Method(
            "wgmma_tma",
            "Hopper's first rung: one warpgroup per 64x128 tile of C, wgmma fed by TMA tiles on one mbarrier, "
            "one stage (no overlap of copy and math)",
            ("float16", "bfloat16"),
            backend=PYCUDA,
            source="11_wgmma_tma.cu",
            template="wgmma_tma_matmul<{T}>",
            launch=WGMMA_TMA.launch,
            tile=WGMMA_TMA.tile,
            contract_defines=WGMMA_TMA.defines,
            # A's box is a tile_m x tile_k tile; B's a tile_k x 64 strip (one 128-byte swizzle row of 2-byte elements).
            tensor_maps=(TensorMap("A", WGMMA_TMA.tile_m, WGMMA_TMA.tile_k), TensorMap("B", WGMMA_TMA.tile_k, 64)),
            launch_bounds=WGMMA_TMA.launch_bounds,
            requires=HOPPER,
        ),
        ws_rung(
            "wgmma_warp_specialized",
            "Hopper, fast: a TMA producer warpgroup and two wgmma consumer warpgroups (setmaxnreg), "
            f"{WS_16BIT.BM}x{WS_16BIT.bn} tiles, {WS_16BIT.stage_count} stages, persistent grid in grouped order, "
            f"{WS_16BIT.cluster}-CTA clusters sharing B by TMA multicast",
            ("float16", "bfloat16"), "12_wgmma_warp_specialized.cu", "wgmma_ws_matmul<{T}>", WS_16BIT, ("A", "B"),
            variants=WS_16BIT_VARIANTS,
            choose=decode_twins_first(small_splits_first(
                configs.persistent_split_k(*WS_16BIT.tile(), narrow_n=NARROW_BN,
                                           builds=ws_tile_builds(WS_16BIT, WS_16BIT_OWN_VARIANTS),
                                           few_columns=NARROWEST_BN, own_tiles=configs.ONE_WAVE_OWN_TILES),
                WS_16BIT, WS_16BIT_OWN_VARIANTS), WS_16BIT, WS_16BIT_VARIANTS),
        ),
        ws_rung(
            "wgmma_tf32",
            "Hopper tf32: wgmma_warp_specialized's pipeline with both operands K-major (wgmma m64n256k8 tf32); B is "
            "transposed on every launch by a pre-pass kernel that lets the GEMM launch under it, and that transpose "
            "is timed with the kernel, or, in its *_smem_bt builds, read as it is and each k step's Bt tile written "
            "in shared memory by the kernel, or, in its swap* builds, read as it is into registers as wgmma's A of "
            "Cᵀ = Bᵀ·Aᵀ",
            ("tf32",), "13_wgmma_tf32.cu", "wgmma_tf32_matmul<{T}>", WS_TF32, ("A", "BT"),
            prepass=TRANSPOSE_TF32_PREPASS,
            requires=Requirements((9, 0), arch_specific=True, modules=("cuda.bindings",)),
            variants=WS_TF32_VARIANTS,
            # Where B is most of the bytes, the kernel writes Bt in shared memory (its 128x128 and 64x128 builds);
            # elsewhere B is transposed before it, and the wave model weighs the tiles and splits.
            # Splits of a deep K that fill the SMs over a few rows of tiles write Bt themselves too (bt_twin).
            # Any of those picks with a twin that computes Cᵀ = Bᵀ·Aᵀ goes to the twin where that takes no longer
            # (swap_twin).
            # Where the pick still leaves most SMs idle, the 64x64 splits take its place (small_splits_first).
            # At a few columns (N <= 64) from 128 rows, the twin of 64x128 tiles over Cᵀ, split to fill one wave
            # (few_columns_twins_first); at a few rows (M <= 64), the twin of 128x64 tiles whose busiest SM runs
            # the fewest k steps (few_rows_twins_first).
            choose=few_rows_twins_first(few_columns_twins_first(small_splits_first(configs.swap_twin(
                configs.b_heavy(
                    configs.bt_twin(configs.persistent_split_k(*WS_TF32.tile(), narrow_n=NARROW_BN,
                                                               builds=ws_tile_builds(WS_TF32, WS_TF32_VARIANTS),
                                                               few_columns=NARROWEST_BN,
                                                               own_tiles=configs.ONE_WAVE_OWN_TILES),
                                    {"": (WS_TF32.BM, WS_TF32.bn), **TF32_BT_TILES}, BT_SMEM_SUFFIX),
                    TF32_BT_TILES, BT_SMEM_SUFFIX),
                swap_twins(WS_TF32, WS_TF32_VARIANTS), WS_TF32.bk, WS_TF32.streamk_min_saved),
                WS_TF32, WS_TF32_VARIANTS), WS_TF32, WS_TF32_VARIANTS), WS_TF32, WS_TF32_VARIANTS),
        ),
        ws_rung(
            "wgmma_3xtf32",
            "Hopper fp32 at tensor-core speed (3xTF32): a pre-pass splits A and B into big and small tf32 parts "
            "(and transposes B), then wgmma_tf32's pipeline sums big·small + small·big + big·big over K' = 3k; "
            "the pre-pass is timed with the GEMM. The default build's tensor-core sums run over all of K' (an "
            "error above SGEMM's: a trade); its promoted builds, the study's pick, add the sums into fp32 "
            "accumulators every k step or two, below SGEMM's error",
            ("float32",), "14_wgmma_3xtf32.cu", "wgmma_3xtf32_matmul<{T}>", WS_TF32, ("A3", "BT3"),
            prepass=SPLIT_TF32_PREPASS,
            products=3,
            accuracy=THREE_TF32,
            arithmetic="tf32",
            # wgmma_tf32's configurations; split-K slices also shorten each tensor-core sum (its accuracy), and
            # promote and bn128_promote end each one every k step, promote2 every two: SGEMM's accuracy class
            # (specs.CLASS_DTYPES).
            variants=(*ws_variants(WS_TF32, groups_along_n=False, clusters=(1, 2)),
                      *promoted_variants(WS_TF32, "tf32", "the tensor cores' truncation kept to 32 k"),
                      *promote_chunk_variants(WS_TF32, "tf32"), *one_set_promoted_variants(WS_TF32, "tf32")),
            choose=configs.promoted_tiles(*WS_TF32.tile()[:2], NARROW_BN, wide="promote2"),
        ),
        ws_rung(
            "wgmma_int8",
            "Hopper int8: wgmma_warp_specialized's pipeline on int8 operands, both K-major (wgmma m64n256k32 s8, "
            "exact int32 accumulation and output; split-K slices meet in an int32 workspace); B is transposed on "
            "every launch by a byte-transpose kernel (kernels/transpose_bytes.cu), and that transpose is timed with "
            "the kernel, but in the swap builds, which compute Cᵀ = Bᵀ·Aᵀ with B's rows read into registers as "
            "wgmma's A",
            ("int8",), "15_wgmma_int8.cu", "wgmma_int8_matmul<{T}>", WS_BYTES, ("A", "BT"),
            variants=WS_INT8_VARIANTS,
            # the 8-bit heuristic (warp_specialized.bytes_choose), its own tiles without a cluster within one wave
            choose=bytes_choose(WS_BYTES, WS_INT8_VARIANTS, narrow_n=NARROW_BN, own_tiles=configs.ONE_WAVE_OWN_TILES),
        ),
        ws_rung(
            "wgmma_fp8",
            "Hopper FP8: the int8 rung's pipeline on e4m3 operands with per-tensor scales (wgmma m64n256k32 e4m3, "
            "fp32 accumulation, the scales applied to the accumulators as they leave); B is transposed on every "
            "launch by the byte-transpose kernel, timed with the GEMM, but in the swap builds (Cᵀ = Bᵀ·Aᵀ, B's rows "
            "read into registers as wgmma's A)",
            ("float8_e4m3",), "16_wgmma_fp8.cu", "wgmma_fp8_matmul<{T}>", WS_BYTES, ("A", "BT"),
            variants=WS_FP8_VARIANTS,
            # the 8-bit heuristic, its own tiles without a cluster where K is whole k steps (configs.PART_K_CLUSTERS)
            choose=bytes_choose(WS_BYTES, WS_FP8_VARIANTS, own_tiles=configs.FP8_OWN_TILES),
            accuracy=FAST_ACCUMULATION,  # but the promoted builds (promote, bn128_promote and its ladder): PROMOTED
            # Its promoted class beside the pick: the split-K heuristic over the ladder of the 128x128 tiles, the
            # fastest promoted build at 2048^3-8192^3 (0.94-0.96 x cuBLASLt's promoted line, promote 0.88-0.95; an
            # H200, results/reference/NVIDIA_H200/precision/), split and at 64x128 and 128x64 where those leave SMs
            # idle: past the decode rows 0.84-1.08 where bn128_promote ran 0.13-0.83 and kernel 10 0.30-0.86
            # (M x N x K: 512x512x16384 0.96, 4096x64x4096 0.93; small-problems/fp8-promoted-ladder.txt).
            class_choose=promoted_class_choose(WS_BYTES),
        ),
        ws_rung(
            "wgmma_fp8_block",
            "Hopper FP8 with block scales (DeepSeek-V3's: A 1x128, B 128x128): wgmma_fp8's 128x128-tile build with "
            "promoted sums (m64n128k32 e4m3), each k step's partial (one 128-k scale block) added into the fp32 "
            "accumulators times its rows' A scales and its tile's B scale; B transposed on every launch by the "
            "byte-transpose kernel, timed with the GEMM",
            ("float8_e4m3_block",), "17_wgmma_fp8_block.cu", "wgmma_fp8_block_matmul<{T}>", WS_FP8_BLOCK,
            ("A", "BT"),
            variants=fp8_block_variants(WS_FP8_BLOCK),
            # The promoted 128x128 tiles' rule for their cluster (configs.PROMOTED_OWN_TILES): its tiles are those
            # tiles, and measured the same way (2048^3 and 4096^3 faster without a cluster, 8192^3 not), there without
            # the stream-K tail too (configs.BLOCK_OWN_TILES) up to 24 k steps a tile, and the clusters without the
            # tail (configs.BLOCK_CLUSTERS) past that; its 64x128 tiles where the 128x128 ones fill at most half the
            # SMs.
            choose=fp8_block_choose(WS_FP8_BLOCK),
            accuracy=PROMOTED,
        ),
        ws_rung(
            "wgmma_3xfp16",
            "Hopper fp32 at fp16 tensor-core speed (3xFP16): a pre-pass scales each row of A and column of B by a "
            "power of two and splits them into big and small fp16 parts, then the 16-bit rung's pipeline sums "
            "big·small + small·big + big·big over K' = 3k with its tensor-core sums promoted into fp32 accumulators "
            "every k step (64 k), and the epilogue undoes the scales: SGEMM's accuracy class at twice 3xTF32's "
            "tensor-core rate; the pre-pass is timed with the GEMM",
            ("float32",), "19_wgmma_3xfp16.cu", "wgmma_3xfp16_matmul<{T}>", WS_3XFP16, ("A3", "B3"),
            prepass=SPLIT_FP16_PREPASS,
            products=3,
            arithmetic="float16",
            variants=WS_3XFP16_VARIANTS,
            # its 128x256 tiles promoted every two k steps where they fill half a wave, else its 128x128 ones, or
            # its 128x256 tiles split 4 ways where those fill less than half a wave too and K is deep (promote2 over
            # the default build, an H100: 2048^3-8192^3 1.00-1.06x but 3072^3 0.99x, its error 2.0e-7-2.4e-7
            # against SGEMM's 8.1e-7-1.6e-6; results/reference/NVIDIA_H100/3xfp16/)
            choose=configs.promoted_tiles(*WS_3XFP16.tile()[:2], NARROW_BN, wide="promote2", narrow="bn128",
                                          min_slice_k=SPLIT_3XFP16_SLICE_K),
        ),
        Method(
            "few_rows",
            "a few token rows (M of 1 to 8) on the CUDA cores: B's rows streamed from global memory into registers in "
            "16-byte vectors, no shared-memory tiles; tiles of 1 to 8 rows x 64 vectors of columns, 8 warps side by "
            "side, K split through a workspace where the tiles are few (fp32 arithmetic, fp64 in fp64: tf32's too, as "
            "the tf32 vendor line's at a few rows)",
            FEW_ROWS_DTYPES,
            backend=PYCUDA,
            source="18_few_rows.cu",
            template="few_rows_matmul<{T}, {Acc}>",
            launch=FEW_ROWS.launch,
            tile=FEW_ROWS.tile,
            contract_defines=FEW_ROWS.defines,
            launch_bounds=FEW_ROWS.launch_bounds,
            variants=few_rows_variants(),
            waits_for_previous_grid=True,  # on sm_90 and newer (griddepcontrol); launched so (geometry.FEW_ROWS)
            # The fewest rows that hold M, then the fewest slices of K whose blocks make two waves (fitted to a sweep
            # of every build: configs.FEW_ROWS_WAVES). A study runs it on problems of 8 rows or fewer only (max_rows).
            choose=configs.few_rows_tiles(FEW_ROWS_TILE_MS, FEW_ROWS_SPLITS, few_rows_family, few_rows_build),
            default_study=False,
            max_rows=FEW_ROWS_TILE_MS[-1],
            arithmetic=tuple((d, "float32") for d in FEW_ROWS_DTYPES if d != "float64"),  # FMAs on the CUDA cores
        ),
        Method(
            "mma_3xtf32",
            "fp32 in SGEMM's accuracy class on the tf32 tensor cores with no pre-pass: kernel 10's pipeline "
            "(mma.sync m16n8k8, cp.async stages, its decode tiles and split K) with each fp32 fragment split in "
            "registers into big and small tf32 parts, three mmas a tile and k step (big·small + small·big + "
            "big·big) from zero, their sum added into fp32 accumulators; the operands are read once, as fp32, as "
            "SGEMM reads them",
            ("float32",),
            backend=PYCUDA,
            source="20_mma_3xtf32.cu",
            template="mma_3xtf32_matmul<{T}>",
            launch=MMA_ASYNC_COPY.launch,
            tile=MMA_ASYNC_COPY.tile,
            contract_defines=MMA_ASYNC_COPY.defines,
            launch_bounds=MMA_ASYNC_COPY.launch_bounds,
            requires=Requirements(min_compute_capability=(8, 0)),
            # Kernel 10's decode tiles of 16 and 32 rows: at 64 rows the fragments' parts and a row tile's four mma
            # tiles pass 255 registers a thread (ptxas, nvcc 13.0: 40-104 bytes of spills), so M past 32 runs in
            # row tiles of 32, as FP8's in kernel 10 (its second set of sums).
            variants=decode_variants(MMA_3XTF32_TILE_MS),
            # The least work on the busiest SM, one block an SM counted as two (fitted to every build at 8 shapes).
            choose=configs.paired_decode_tiles(MMA_3XTF32_TILE_MS, DECODE_TILE_N, DECODE_SLICE_BYTES,
                                               default_tile=(MMA_ASYNC_COPY.tile_m, MMA_ASYNC_COPY.tile_n),
                                               token_rows=max(DECODE_TILE_MS)),
            waits_for_previous_grid=True,  # on sm_90 and newer (griddepcontrol)
            products=3,
            arithmetic="tf32",
            default_study=False,
            stream_b=STREAM_B,
        ),
        Method(
            "cublas",
            "cuBLAS GEMM through CuPy (gemmEx with the dtype's data and compute types); the vendor line",
            ("float16", "bfloat16", "tf32", "float32", "float64", "int8"),
            backend=CUBLAS,
            reference_line=True,
        ),
        Method(
            "cublaslt",
            "cuBLASLt FP8 GEMM through nvmath-python's bindings (e4m3 with per-tensor scale pointers, or block "
            "scales: VEC128 for A, BLK128x128 for B; fp32 accumulation and output); B is transposed first on every "
            "call (cuBLASLt's FP8 wants both operands K-major), timed with the GEMM; the vendor line for FP8",
            ("float8_e4m3", "float8_e4m3_block"),
            backend=CUBLASLT,
            reference_line=True,
            # FP8 from Ada on; block scales from Hopper on (cuBLASLt 12.9: measured on Hopper only)
            requires=Requirements(min_compute_capability=(8, 9),
                                  dtype_compute_capability=(("float8_e4m3_block", (9, 0)),)),
            accuracy=PROMOTED,
            # The vendor line of each accuracy class: a study runs both (configs.plan).
            variants=(Variant("fast_accum", description="CUBLASLT_MATMUL_DESC_FAST_ACCUM on: the tensor cores' own "
                                                        "accumulation over all of k, without cuBLASLt's promotion "
                                                        "(float8_e4m3 only: block scales are applied to each 128-k "
                                                        "partial)", dtypes=("float8_e4m3",),
                              accuracy=FAST_ACCUMULATION),),
        ),
    ]
}


def register(method: Method) -> None:
    """Add a method (a kernel of one's own, or a test's throwaway one) after the built-in ones."""
    METHODS[method.name] = method


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(METHODS)}") from None


def vendor_methods() -> tuple[str, ...]:
    """The vendor libraries' GPU lines (cuBLAS, cuBLASLt): each dtype has one of them, its "× cuBLAS" denominator."""
    return tuple(name for name, m in METHODS.items() if m.reference_line and m.on_gpu)


def vendor_method(dtype: str) -> str:
    """The vendor's line for a dtype: the first GPU reference-line method that runs it (cuBLAS; cuBLASLt for FP8)."""
    for name, m in METHODS.items():
        if m.reference_line and m.on_gpu and dtype in m.dtypes:
            return name
    raise KeyError(f"no vendor library method runs {dtype!r}")


def default_methods() -> tuple[str, ...]:
    """The default study's methods (config `methods: default`), in ladder order."""
    return tuple(name for name, m in METHODS.items() if m.default_study)


def compiled_methods() -> tuple[str, ...]:
    return tuple(name for name, m in METHODS.items() if m.compiled)



@dataclass(frozen=True)
class JobRecords:
    """A base for what names one job (a method, its variant and a dtype, as the fields `method`, `variant` and
    `dtype` of the subclass): its records, resolved once at construction (an unknown name raises KeyError naming
    the known ones) and handed on, so that nothing downstream looks a name up again."""
    method_record: Method = field(init=False, repr=False, compare=False)
    variant_record: Variant = field(init=False, repr=False, compare=False)
    dtype_record: dt.DType = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "method_record", get(self.method))
        object.__setattr__(self, "variant_record", self.method_record.variant(self.variant))
        object.__setattr__(self, "dtype_record", dt.get(self.dtype))
