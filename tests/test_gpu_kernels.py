"""Each compiled kernel against a float64 reference, on a real GPU, launched exactly as the pipeline launches it.

Skipped cleanly where PyCUDA or a CUDA device is missing (CI). Shapes are awkward on purpose: 1x1x1, primes and
sizes just past a tile, so every edge guard, zero fill and padded tensor map is exercised. A method this GPU
cannot run (a Hopper rung elsewhere) is skipped with its reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from matmul_study.core import dtypes, geometry, registry
from matmul_study.core.warp_specialized import WS_BYTES, WS_SMALL_SPLITS, promoted_ladder

from matmul_study.measure import inputs

from matmul_study.launch import kernels
from matmul_study.core.backends import module_available
from matmul_study.core.geometry import WARPTILED, WARPTILED_MBARRIER
from matmul_study.core.specs import Problem, shared_opt_in_bytes

pytestmark = pytest.mark.gpu

cuda = pytest.importorskip("pycuda.driver")
try:
    import pycuda.autoprimaryctx  # noqa: F401  (creates the context on device 0)
except Exception as exc:  # no driver, no device, or a PyCUDA too old to have autoprimaryctx
    pytest.skip(f"no usable CUDA device: {exc}", allow_module_level=True)

import pycuda.gpuarray as gpuarray  # noqa: E402

from matmul_study.launch import launchers  # noqa: E402
from matmul_study.launch.launchers import DeviceBuffers  # noqa: E402
from matmul_study.measure import gpu_job  # noqa: E402
from matmul_study.measure.verify import dequantized  # noqa: E402

DEVICE = cuda.Context.get_device()
CC = DEVICE.compute_capability()
ARCH = f"sm_{CC[0]}{CC[1]}"
SM_COUNT = DEVICE.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)

SHAPES = [(1, 1, 1), (17, 33, 65), (100, 37, 250), (257, 511, 129), (256, 256, 256), (1000, 1200, 800)]  # (m, k, n)
GUARD = 256  # extra sentinel elements after C; a write past its end shows up there
SEED = 20240611


def blocks_for(method: str) -> list[int]:
    m = registry.get(method)
    if not m.block_axis:
        return [0]
    blocks = [16, 32]
    if method.startswith("tiled"):
        blocks += [8, 24]  # tiles that don't divide the shapes evenly, 24 not a power of two either
    if m.blocks is not None:
        blocks = [b for b in blocks if b in m.blocks]
    return blocks


CASES = [
    pytest.param(method, dtype, block, shape, id=f"{method}-{dtype}-b{block}-{shape[0]}x{shape[1]}x{shape[2]}")
    for method in registry.compiled_methods()
    for dtype in registry.get(method).dtypes
    for block in blocks_for(method)
    for shape in SHAPES
]


@pytest.fixture(scope="module")
def cubin_for(tmp_path_factory):
    """Compile each (method, dtype, template block) once, as the pipeline's compile rule does."""
    root, cache = tmp_path_factory.mktemp("cubins"), {}

    def get(method, dtype, block):
        key = (method, dtype, kernels.template_block(method, block))
        if key not in cache:
            cache[key] = str(root / f"{method}_{dtype}_b{key[2]}.cubin")
            kernels.compile_cubin(method, dtype, block, ARCH, cache[key])
        return cache[key]

    return get


@pytest.mark.parametrize("method,dtype,block,shape", CASES)
def test_kernel_matches_reference(cubin_for, method, dtype, block, shape):
    check_kernel(cubin_for, method, dtype, block, shape)


def is_persistent(method: str, dtype: str) -> bool:
    problem = Problem(4096, 4096, 4096, blocks_for(method)[0], dtypes.get(dtype), SM_COUNT)
    return registry.get(method).launch(problem).persistent


# Persistent grids with several tiles per CTA (tile changes, the paced drain of kernel 12's epilogue) and, on a
# 132-SM GPU, a tail split by k steps (1000x2200x4300: 68 cluster tiles on 66 clusters; partial sums added in C,
# flags). Launched twice, C poisoned before each launch: the second launch needs the flags the first one reset.
PERSISTENT_SHAPES = [(2100, 200, 3000), (1000, 2200, 4300)]  # (m, k, n)
PERSISTENT_CASES = [
    pytest.param(method, dtype, shape, id=f"{method}-{dtype}-{shape[0]}x{shape[1]}x{shape[2]}")
    for method in registry.compiled_methods()
    for dtype in registry.get(method).dtypes
    if is_persistent(method, dtype)
    for shape in PERSISTENT_SHAPES
]


@pytest.mark.parametrize("method,dtype,shape", PERSISTENT_CASES)
def test_persistent_kernel_with_several_tiles_per_block_matches_reference(cubin_for, method, dtype, shape):
    check_kernel(cubin_for, method, dtype, blocks_for(method)[0], shape, launches=2)


# Split-K builds of the warp-specialised pipeline (WGMMA_WS_SPLIT_K) sum a tile's slices in slice order through a
# workspace, so launches on the same inputs give the same bits (the stream-K tail's L2 reductions do not). Shapes
# (m, k, n): k not a multiple of the split (uneven slices), fewer k steps than slices (the split is cut to them),
# m or n of 1, 17 or 129, and several tiles of several slices each; three launches, C poisoned before each (the
# later ones need the counters the first one reset).
SPLIT_K_BUILDS = [("wgmma_warp_specialized", "splitk4", "float16"), ("wgmma_warp_specialized", "splitk8", "bfloat16"),
                  ("wgmma_warp_specialized", "splitk16", "float16"), ("wgmma_warp_specialized", "splitk32", "bfloat16"),
                  ("wgmma_warp_specialized", "bn128_splitk2", "bfloat16"),
                  ("wgmma_warp_specialized", "bm64_bn64_kg2_splitk32", "float16"),
                  ("wgmma_warp_specialized", "swap_bn64_splitk8", "bfloat16"),
                  ("wgmma_warp_specialized", "swap_bn128_splitk4", "float16"),
                  ("wgmma_tf32", "splitk4", "tf32"), ("wgmma_fp8", "splitk4", "float8_e4m3"),
                  ("wgmma_fp8", "bn128_promote_splitk4", "float8_e4m3"),
                  ("wgmma_fp8", "bm64_bn128_promote_splitk16", "float8_e4m3"),
                  ("wgmma_fp8_block", "splitk4", "float8_e4m3_block"),
                  *(("wgmma_3xfp16", v, "float32") for v in ("splitk2", "splitk4"))]
SPLIT_K_SHAPES = [(129, 3001, 17), (1, 1000, 129), (17, 100, 1), (300, 8193, 520)]


@pytest.mark.parametrize("shape", SPLIT_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", SPLIT_K_BUILDS)
def test_split_k_builds_give_the_same_bits_every_launch_and_the_right_product(tmp_path_factory, method, variant, dtype,
                                                                              shape):
    assert registry.get(method).variant(variant).workspace is not None
    cubin = str(tmp_path_factory.mktemp("split_k") / f"{method}_{variant}_{dtype}.cubin")
    if registry.get(method).unmet_requirement(CC, module_available) is None:
        kernels.compile_cubin(method, dtype, 0, ARCH, cubin, variant)
    check_kernel(lambda *_: cubin, method, dtype, 0, shape, launches=3, variant=variant, same_bits=True)


# The warp-specialised kernel's 128x128 tiles (WGMMA_WS_BN=128), whole and split 4 ways, in both 16-bit dtypes and
# tf32, and the FP8 and 3xTF32 rungs' with and without promoted sums (one Bt box per k step, multicast by the CTAs in
# turn; the promoted k loop's chains and remainder steps, and its single steps with one scratch set, at 128x192 (in
# clusters of 2 for FP8) and 128x128; FP8's quarters with A from registers; the quarters in
# chunks of two k steps, with each sum promoted every step or every chunk): odd shapes (every
# edge guard; 1000x1200x800 is 80 CTAs), the persistent shapes
# (several tiles per CTA, the paced drain, the stream-K tail of the fp16 builds) and 300x4300x4300 (on 132 SMs 68
# cluster tiles for 66 clusters, of 34 k steps in FP8: a tail split by k steps in every whole build), each launched
# twice; the split build three times, giving the same bits.
WS_TILE_BUILDS = [*(("wgmma_warp_specialized", v, d) for v in ("bn128", "bn128_splitk4")
                    for d in ("float16", "bfloat16")),
                  *(("wgmma_tf32", v, "tf32") for v in ("bn128", "bn128_splitk4")),
                  *(("wgmma_fp8", v, "float8_e4m3")
                    for v in ("bn128", "bn128_promote", "promote", "promote_rs", "promote2", "promote_chunk2",
                              "bn192_promote", "bn192_promote_cluster2", "bn128_promote_one_set")),
                  *(("wgmma_3xtf32", v, "float32")
                    for v in ("bn128", "bn128_promote", "promote", "promote2", "promote_chunk2", "bn192_promote",
                              "bn128_promote_one_set")),
                  # 3xFP16's whole-tile builds (the 16-bit operands promoted, a scale per row and column of C)
                  *(("wgmma_3xfp16", v.name, "float32") for v in registry.get("wgmma_3xfp16").variants
                    if v.workspace is None),
                  # 64-row tiles (WGMMA_WS_BM=64: one consumer warpgroup, A in boxes of 64 rows), every rung that has
                  # them: the same shapes, each a CTA row per 64 rows of C.
                  *(("wgmma_warp_specialized", v, d) for v in ("bm64", "bm64_bn128", "bm64_bn128_splitk4")
                    for d in ("float16", "bfloat16")),
                  *(("wgmma_tf32", v, "tf32") for v in ("bm64", "bm64_bn128", "bm64_bn128_splitk4")),
                  *(("wgmma_fp8", v, "float8_e4m3") for v in ("bm64", "bm64_bn128", "bm64_bn128_splitk4")),
                  # their other splits, at the 16-bit rung: the slices' sum as the kernel's own split-K builds'
                  *(("wgmma_warp_specialized", v, "float16") for v in ("bm64_bn128_splitk2", "bm64_bn128_splitk8")),
                  # the deepest split (a few tiles against a deep K), in every dtype that has it
                  *(("wgmma_warp_specialized", "bm64_bn128_splitk16", d) for d in ("float16", "bfloat16")),
                  ("wgmma_tf32", "bm64_bn128_splitk16", "tf32"), ("wgmma_fp8", "bm64_bn128_splitk16", "float8_e4m3"),
                  ("wgmma_int8", "bm64", "int8"),
                  # 64-row tiles with two consumer warpgroups taking alternate k steps (WGMMA_WS_K_GROUPS=2: the
                  # second's sums handed over in shared memory; 1x1x1 gives it no k step), every rung that has them
                  *((m, v, d) for v in ("bm64_bn128_kg2", "bm64_bn64_kg2")
                    for m, d in (("wgmma_warp_specialized", "float16"), ("wgmma_warp_specialized", "bfloat16"),
                                 ("wgmma_tf32", "tf32"), ("wgmma_int8", "int8"), ("wgmma_fp8", "float8_e4m3"))),
                  # and the 64x64 ones split (a deep K against a few tiles): every split in fp16, the two deepest in
                  # every other dtype (past 8 slices the sum loads a quad of each slice in batches of 8)
                  *(("wgmma_warp_specialized", f"bm64_bn64_kg2_splitk{s}", "float16") for s in WS_SMALL_SPLITS),
                  *((m, f"bm64_bn64_kg2_splitk{s}", d) for s in WS_SMALL_SPLITS[-2:]
                    for m, d in (("wgmma_warp_specialized", "bfloat16"), ("wgmma_tf32", "tf32"),
                                 ("wgmma_int8", "int8"), ("wgmma_fp8", "float8_e4m3"))),
                  # 128x64 tiles (WGMMA_WS_BN=64, no cluster; tf32 and FP8 read Bt in boxes of 64 rows), whole and
                  # split, in every rung that has them
                  *(("wgmma_warp_specialized", v, d) for v in ("bn64", "bn64_splitk4")
                    for d in ("float16", "bfloat16")),
                  *(("wgmma_warp_specialized", v, "float16") for v in ("bn64_splitk2", "bn64_splitk8")),
                  *(("wgmma_tf32", v, "tf32") for v in ("bn64", "bn64_splitk8")),
                  *(("wgmma_fp8", v, "float8_e4m3") for v in ("bn64", "bn64_splitk4")),
                  # 128x128 tiles split 8 and 16 ways (deep K), in the 16-bit dtypes, tf32 and int8
                  ("wgmma_warp_specialized", "bn128_splitk8", "float16"),
                  ("wgmma_warp_specialized", "bn128_splitk16", "bfloat16"), ("wgmma_tf32", "bn128_splitk8", "tf32"),
                  ("wgmma_int8", "bn128_splitk16", "int8"),
                  # int8's narrower tiles (m64n128k32 and m64n64k32 s8) and split-K slices summed in an int32
                  # workspace, one build of each kind
                  *(("wgmma_int8", v, "int8") for v in ("bn128", "bn128_splitk4", "splitk4", "bm64_bn128",
                                                        "bm64_bn128_splitk16", "bn64", "bn64_splitk8")),
                  # 128x192 tiles (m64n192, three 64-column strips of B or one 192-row box of Bt), every rung's
                  *((m, "bn192", d) for m, d in (("wgmma_warp_specialized", "float16"),
                                                  ("wgmma_warp_specialized", "bfloat16"), ("wgmma_tf32", "tf32"),
                                                  ("wgmma_int8", "int8"), ("wgmma_fp8", "float8_e4m3"))),
                  # tf32 reading B as it is and writing each k step's Bt in shared memory (WGMMA_WS_BT_SMEM): every
                  # such build (its own producer path, at every tile and split)
                  *(("wgmma_tf32", v.name, "tf32") for v in registry.get("wgmma_tf32").variants if v.config.bt_smem),
                  # tf32 computing Cᵀ = Bᵀ·Aᵀ (WGMMA_WS_SWAP_AB: B's rows read into registers, C stored transposed):
                  # the twins of the 128x256, 64x128-split, 128x64-split and 128x192 tiles (every twin: SWAP_SHAPES)
                  *(("wgmma_tf32", v, "tf32") for v in ("swap", "swap_bm64_bn128_splitk4", "swap_bn64_splitk8",
                                                        "swap_bn192")),
                  # FP8's promoted class (promoted_ladder): its 128x128 tiles split, its 64x128 tiles (one consumer
                  # warpgroup alternating two scratch sets) whole and split and their twin of two k groups, its
                  # 128x64 tiles whole and split
                  *(("wgmma_fp8", v.name, "float8_e4m3") for v in promoted_ladder(WS_BYTES)[1].values())]
WS_TILE_SHAPES = [(1, 1, 1), (17, 33, 65), (257, 511, 129), (1000, 1200, 800), *PERSISTENT_SHAPES, (300, 4300, 4300)]


@pytest.mark.parametrize("shape", WS_TILE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", WS_TILE_BUILDS)
def test_128x128_tile_builds_match_reference(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


def check_build(variant_cubin, method, variant, dtype, shape, l2_bytes=None) -> np.ndarray:
    """One registered build against fp64 on `shape`, launched twice; a split-K build three times, the same bits. Its
    C comes back. `l2_bytes`: the L2 the launch plans for, where not this device's (Problem.l2_bytes)."""
    split = registry.get(method).variant(variant).workspace is not None
    return check_kernel(lambda *_: variant_cubin(method, variant, dtype), method, dtype, 0, shape,
                        launches=3 if split else 2, variant=variant, same_bits=split, l2_bytes=l2_bytes)


# (m, k, n): a row or a column of C, M and N one past a tile of the kernel's (its rows are C's columns), K one past a
# k step
SWAP_SHAPES = [(1, 300, 777), (777, 300, 1), (257, 33, 129), (129, 4097, 257), (4096, 64, 130)]


# Every build that swaps A and B: tf32's (OpTf32Swapped), the 8-bit rungs' (OpBytesSwapped: B's rows through
# ldmatrix.trans and byte permutes, a thread's rows of Cᵀ in adjacent pairs) and the 16-bit rung's (Op16Swapped: B's
# strips read M-major by wgmma; in fp16, and bf16 at its decode twins); (m, k, n) as above (K of 33 and 4097: A's
# 16-bit rows unaligned), and for the 8-bit operands K one past a k step of 128 and N not a multiple of 16 (B's rows
# padded for the tensor map).
SWAP_BUILDS = [(m, v.name, d) for m, d in (("wgmma_tf32", "tf32"), ("wgmma_int8", "int8"), ("wgmma_fp8", "float8_e4m3"),
                                           ("wgmma_warp_specialized", "float16"))
               for v in registry.get(m).variants if v.config.swap_ab]
SWAP_BUILDS += [("wgmma_warp_specialized", v.name, "bfloat16") for v in registry.get("wgmma_warp_specialized").variants
                if v.config.swap_ab and v.config.bn == 64]


@pytest.mark.parametrize("shape", [*SWAP_SHAPES, (300, 129, 1000)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", SWAP_BUILDS)
def test_builds_that_swap_a_and_b_store_c_not_its_transpose(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


# The 16-bit twins of the 64-row tiles with two k groups (swap_k_group_variants: 64 or 32 tokens a tile), at token
# rows: M (the kernel's N) of 7, 17, 33 and 65 (one past 32 and 64), K odd (A's rows unaligned) and not a multiple of
# the slices, N not a multiple of 8; in fp16 and bf16; (m, k, n).
K_GROUP_TWINS = [("wgmma_warp_specialized", v.name, d) for v in registry.get("wgmma_warp_specialized").variants
                 if v.config.swap_ab and v.config.k_groups == 2 for d in ("float16", "bfloat16")]


@pytest.mark.parametrize("shape", [(7, 4097, 1030), (17, 999, 260), (33, 333, 129), (65, 2051, 264), (64, 4096, 4100)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", K_GROUP_TWINS)
def test_the_two_k_group_twins_sum_both_groups_at_token_rows(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


@pytest.mark.parametrize("shape", [(257, 511, 129), (300, 4300, 4300)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,dtype,promote", [("wgmma_fp8", "float8_e4m3", "promote"),
                                                   ("wgmma_3xtf32", "float32", "promote"),
                                                   ("wgmma_3xfp16", "float32", "default")])
def test_promoted_quarters_in_chunks_give_promotes_bits(variant_cubin, method, dtype, promote, shape):
    # promote_chunk2 runs the sums and adds of `promote` (the build promoted every k step in quarters), in the same
    # order, two k steps per chunk with one final wait: every bit of C must be its (an odd number of k steps, and a
    # stream-K tail at 300x4300x4300).
    ours, control = (check_build(variant_cubin, method, v, dtype, shape) for v in ("promote_chunk2", promote))
    assert ours.tobytes() == control.tobytes()


# The block-scaled FP8 rung's builds (kernels/17_wgmma_fp8_block.cu: every build 128x128 tiles with promoted sums,
# each k step weighted by its block scales): odd shapes with k not a multiple of 128 (a last scale block of 1, 33,
# 65 or 127 k) and m past a tile (row scales read clamped), the persistent shapes and 300x4300x4300 (the stream-K
# tail: pieces of whole k steps, each weighted apart), launched twice; the split builds three times, the same bits.
FP8_BLOCK_BUILDS = [("wgmma_fp8_block", v, "float8_e4m3_block")
                    for v in ("default", *(v.name for v in registry.get("wgmma_fp8_block").variants))]
FP8_BLOCK_SHAPES = [(1, 1, 1), (17, 33, 65), (257, 511, 129), (129, 255, 300), (1000, 1200, 800), *PERSISTENT_SHAPES,
                    (300, 4300, 4300)]


@pytest.mark.parametrize("shape", FP8_BLOCK_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", FP8_BLOCK_BUILDS)
def test_block_scaled_fp8_builds_match_reference(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


# Split-K builds of the one-block-per-tile kernels (kernels/split_k.cuh): every registered split of warptiled and
# dmma in each dtype, compiled once each, with the same checks. Shapes (m, k, n): 1x1x1 and 17x100x1 (fewer k steps
# than slices: empty slices store zeros and count), ragged edges and k (257x511x129, 129x3001x17), several tiles
# of deep uneven slices (300x8193x520).
TILE_SPLIT_K_BUILDS = [(m, v.name, dtype) for m in ("warptiled", "dmma") for v in registry.get(m).variants
                       if v.workspace is not None for dtype in v.dtypes or registry.get(m).dtypes]
# (61 x 4099 x 1030: 49-64 token rows, which take kernel 7's 64x128 tiles in fp32, with unaligned rows and a ragged N)
TILE_SPLIT_K_SHAPES = [(1, 1, 1), (17, 100, 1), (257, 511, 129), (129, 3001, 17), (300, 8193, 520), (61, 4099, 1030)]


@pytest.fixture(scope="module")
def variant_cubin(tmp_path_factory):
    """Compile each (method, variant, dtype) once."""
    root, cache = tmp_path_factory.mktemp("variants"), {}

    def get(method, variant, dtype):
        if (method, variant, dtype) not in cache:
            cache[method, variant, dtype] = str(root / f"{method}_{variant}_{dtype}.cubin")
            kernels.compile_cubin(method, dtype, 0, ARCH, cache[method, variant, dtype], variant)
        return cache[method, variant, dtype]

    return get


def test_every_tile_split_k_variant_is_checked():
    assert {v for _, v, _ in TILE_SPLIT_K_BUILDS} >= {"splitk2", "splitk4", "splitk8", "splitk16"}
    assert {(m, d) for m, _, d in TILE_SPLIT_K_BUILDS} == {("warptiled", "float32"), ("warptiled", "float64"),
                                                         ("dmma", "float64")}


@pytest.mark.parametrize("shape", TILE_SPLIT_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", TILE_SPLIT_K_BUILDS)
def test_tile_split_k_builds_give_the_same_bits_every_launch_and_the_right_product(variant_cubin, method, variant,
                                                                                   dtype, shape):
    check_kernel(lambda *_: variant_cubin(method, variant, dtype), method, dtype, 0, shape, launches=3,
                 variant=variant, same_bits=True)


# Kernel 10's decode builds (BM x 128 tiles, one row of 4 warps; split K through split_k.cuh): every registered
# build in every dtype of the method (16-bit, tf32, int8 with int32 partials, FP8 with scales) and of kernel 20 (its
# 3xTF32 policy, fp32), and kernel 7's (fp32 and fp64, BM x 128 tiles of 4 warps side by side), on decode shapes
# (m, k, n) with M of 1, 7, 17, 33 and 65 (past one tile of 64), N not a multiple of 8 (rows of B through
# registers) or of the 128-column tile, K not a multiple of the slices or of a k step, and unaligned rows (k odd:
# A's rows not 16-byte aligned); split builds three times, the same bits.
DECODE_BUILDS = [(m, v.name, d) for m in ("mma_async_copy", "mma_3xtf32", "warptiled", "dmma")
                 for v in registry.get(m).variants
                 if v.name.startswith("m") for d in v.dtypes or registry.get(m).dtypes]
DECODE_SHAPES = [(1, 1, 1), (7, 1000, 300), (17, 4099, 1030), (33, 333, 129), (65, 2048, 264), (16, 8193, 4101)]


@pytest.mark.parametrize("shape", DECODE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", DECODE_BUILDS)
def test_decode_builds_match_reference(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


# B's L2 policy chosen at launch (specs.StreamB): every build of kernels 10 and 20, its decode builds and its default,
# launched with B's whole chunks copied under evict_first (an L2 of 1 byte: every launch of one row of tiles streams
# B), on (m, k, n) with M within one row of every build's tiles, N a multiple of 16 (B's rows 16-byte aligned, the
# path the policy changes) but not of the 128-column tile, K not a multiple of the slices or of a k step, and odd
# (A's rows unaligned); split builds three times, the same bits.
STREAMED_BUILDS = [(m, v, d) for m in ("mma_async_copy", "mma_3xtf32")
                   for v in (None, *(v.name for v in registry.get(m).variants)) for d in registry.get(m).dtypes]
STREAMED_SHAPES = [(16, 4099, 1040), (1, 999, 4096), (7, 8193, 2064)]


@pytest.mark.parametrize("shape", STREAMED_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", STREAMED_BUILDS)
def test_builds_that_stream_b_match_reference(variant_cubin, method, variant, dtype, shape):
    m, k, n = shape
    meth, problem = registry.get(method), Problem(m, n, k, 0, dtypes.get(dtype), SM_COUNT, l2_bytes=1)
    assert meth.stream_b(problem, meth.launch_for(problem, variant)), "the launch must stream B"
    check_build(variant_cubin, method, variant, dtype, shape, l2_bytes=1)


# Kernel 18's builds (1, 2, 4, 8 or 16 rows x 64 16-byte vectors of columns, B streamed into registers; K split
# through split_k.cuh's sum with its holders), every one in every dtype it has, three launches each to the same bits,
# on (m, k, n) with M of 1, 3, 7 and 8, 9 (past one tile of 8: two row tiles, the last one row), 16 and 17 (past one
# tile of 16), N of 1 and not a multiple of a vector (B's rows not 16-byte aligned: element by element) or of the
# tile, K not a multiple of the slices or of the 16 rows of an unrolled step, past the 256 rows of k that the 16-row
# builds stage of A at a time, and odd (A's rows unaligned), and a K shorter than the slices (empty slices).
FEW_ROWS = registry.get("few_rows")
FEW_ROWS_BUILDS = [("few_rows", None, d) for d in FEW_ROWS.dtypes] + [  # None: the default build
    ("few_rows", v.name, d) for v in FEW_ROWS.variants for d in v.dtypes or FEW_ROWS.dtypes]
FEW_ROWS_SHAPES = [(1, 1, 1), (7, 1000, 300), (3, 4099, 1030), (8, 333, 129), (9, 2048, 264), (1, 8193, 4101),
                   (2, 17, 513), (16, 1001, 257), (17, 600, 1030)]


@pytest.mark.parametrize("shape", FEW_ROWS_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", FEW_ROWS_BUILDS)
def test_few_rows_builds_give_the_same_bits_every_launch_and_the_right_product(variant_cubin, method, variant, dtype,
                                                                              shape):
    check_kernel(lambda *_: variant_cubin(method, variant, dtype), method, dtype, 0, shape, launches=3,
                 variant=variant, same_bits=True)


# dmma's narrow builds (128 x 64 tiles of 4 warps, whole or split) on few columns: N of 1, 17, 64 and 65 (past one
# tile), ragged M and K, and a deep uneven K.
NARROW_BUILDS = [("dmma", v.name, "float64") for v in registry.get("dmma").variants if v.name.startswith("n")]
NARROW_SHAPES = [(1, 1, 1), (129, 3001, 17), (4097, 1000, 64), (257, 511, 65), (300, 8193, 64)]


@pytest.mark.parametrize("shape", NARROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", NARROW_BUILDS)
def test_narrow_builds_match_reference(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


# dmma's 64-row builds (64 x 128 tiles of 8 warps, 64 x 64 of 4, a warp per 32 x 32; whole or split): M of 1 and 65
# (past one tile), ragged N and K, unaligned rows (k odd), several tiles of a deep uneven K; split builds three
# times, the same bits.
SQUARE_BUILDS = [("dmma", v.name, "float64") for v in registry.get("dmma").variants if v.name.startswith("bm64")]
SQUARE_SHAPES = [(1, 1, 1), (65, 1000, 129), (257, 511, 65), (130, 3001, 200), (300, 8193, 520)]


def test_every_64_row_dmma_build_is_checked():
    assert {v for _, v, _ in SQUARE_BUILDS} == {
        base + (f"_splitk{s}" if s > 1 else "") for base in ("bm64", "bm64_bn64") for s in geometry.DMMA_SQUARE_SPLITS}


@pytest.mark.parametrize("shape", SQUARE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("method,variant,dtype", SQUARE_BUILDS)
def test_64_row_dmma_builds_match_reference(variant_cubin, method, variant, dtype, shape):
    check_build(variant_cubin, method, variant, dtype, shape)


@pytest.fixture(scope="module")
def warptiled_fp32_ptx(tmp_path_factory):
    """warptiled float32 as PTX for a virtual arch, which the driver compiles for this GPU when it is loaded:
    compute_86 (a 99 KB target) holds the BK-16 configuration, compute_80 the BK-32 one (the compile tests check)."""
    root = tmp_path_factory.mktemp("ptx")

    def get(arch, method="warptiled"):
        path = root / f"{method}_float32_{arch}.ptx"
        if not path.exists():
            source = kernels.module_source(method, [("float32", 0)])
            options = kernels.compile_options(method, None, arch)
            path.write_bytes(kernels.compile_with_pycuda(source, arch, options, target="ptx"))
        return str(path)

    return get


@pytest.mark.parametrize("method,family", [("warptiled", WARPTILED), ("warptiled_mbarrier", WARPTILED_MBARRIER)])
@pytest.mark.parametrize("shape", [(17, 33, 65), (257, 511, 129), (1000, 1200, 800)])
def test_warptiled_fp32_fallback_for_gpus_with_less_shared_memory(warptiled_fp32_ptx, method, family, shape):
    # A 99 KB GPU (sm_86/89/120) runs the BK-16 build with the launch its opt-in limit gets: the same here.
    m, k, n = shape
    limit = shared_opt_in_bytes("sm_86")
    assert registry.get(method).launch(Problem(m, n, k, 0, dtypes.get("float32"), SM_COUNT, limit)) \
        .shared_bytes == family.configs["float32"][-1].shared_bytes
    fallback = warptiled_fp32_ptx("compute_86", method)
    check_kernel(lambda *_: fallback, method, "float32", 0, shape, max_shared_bytes=limit)


# Launches warptiled float32 from the module file argv[1] as on a device whose blocks may opt in to argv[2] bytes;
# exit status 3 if the launch fails.
LAUNCH_WARPTILED = """
import os, sys
import numpy as np
import pycuda.autoprimaryctx
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
from matmul_study.core import dtypes, geometry, registry
from matmul_study.launch import launchers
from matmul_study.core.specs import Problem

buffers = launchers.DeviceBuffers(*(gpuarray.zeros(64 * 64, np.float32) for _ in range(3)))
problem = Problem(64, 64, 64, 0, dtypes.get("float32"), 1, int(sys.argv[2]))
try:
    launchers.make(registry.get("warptiled"), problem, buffers, sys.argv[1])()
    cuda.Context.synchronize()
except cuda.Error as exc:
    print(type(exc).__name__, exc, flush=True)
    os._exit(3)  # the context is unusable now; skip its teardown
"""


def test_warptiled_fp32_traps_when_launched_with_less_shared_memory_than_it_was_compiled_for(warptiled_fp32_ptx):
    # The BK-32 build (compute_80) given a 99 KB GPU's launch must fail, not compute garbage. In subprocesses: a
    # trap leaves the CUDA context unusable.
    opt_in = shared_opt_in_bytes(CC)  # as the pipeline launches on this GPU
    if opt_in < WARPTILED.configs["float32"][0].shared_bytes:
        pytest.skip("this GPU cannot give the BK-32 build the shared memory it needs")
    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}

    def launch(max_shared_bytes: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", LAUNCH_WARPTILED, warptiled_fp32_ptx("compute_80"),
                               str(max_shared_bytes)], capture_output=True, text=True, env=env, cwd=repo)

    runs = launch(opt_in)  # the control: with this GPU's own limit the launch gives the BK-32 size and succeeds
    assert runs.returncode == 0, runs.stdout + runs.stderr
    traps = launch(shared_opt_in_bytes("sm_86"))  # the BK-16 size
    assert traps.returncode == 3, traps.stdout + traps.stderr


def check_kernel(cubin_for, method, dtype, block, shape, max_shared_bytes=None, launches=1, variant=None,
                 same_bits=False, l2_bytes=None):
    """One (method, dtype, block) on one (m, k, n), launched `launches` times with C poisoned before each; the last
    result checked against the fp64 reference, and returned. same_bits: every launch must give the same bytes.
    `cubin_for` gives the module of the method's default build, or of `variant`. `l2_bytes`: as check_build's."""
    meth, record = registry.get(method), dtypes.get(dtype)
    unmet = meth.unmet_requirement(CC, module_available)
    if unmet:
        pytest.skip(unmet)
    m, k, n = shape
    operands = inputs.generate(m, k, n, dtype, SEED)
    a, b = operands
    sentinel = np.iinfo(np.int32).min if record.exact else np.nan
    c_and_guard = gpuarray.to_gpu(np.full(m * n + GUARD, sentinel, dtype=record.output))
    uploaded = gpu_job.upload(a, b, record, operands.scales)  # the pipeline's buffers (and a scaled dtype's scales)
    buffers = DeviceBuffers(uploaded.a, uploaded.b, c_and_guard[: m * n], uploaded.scales)
    shared = max_shared_bytes or shared_opt_in_bytes(CC)  # as the pipeline launches on this GPU
    launch = launchers.make(meth, Problem(m, n, k, block, record, SM_COUNT, shared, l2_bytes=l2_bytes), buffers,
                            cubin_for(method, dtype, block), variant)
    results = []
    for _ in range(launches):
        buffers.c.fill(sentinel)  # each launch must write all of C
        launch()
        cuda.Context.synchronize()
        results.append(c_and_guard.get())
    out = results[-1]
    if same_bits:
        assert all(r.tobytes() == out.tobytes() for r in results), "launches on the same inputs gave different bits"
    c, guard = out[: m * n].reshape(m, n), out[m * n:]

    # The reference multiplies exactly the (possibly rounded) inputs the kernel saw, times a scaled dtype's scales
    # (per block: each stored value times its block's scale).
    if record.block_scaled:
        ref = np.matmul(*dequantized(a, b, record, operands.scales))
    else:
        ref = dtypes.to_float64(a, record) @ dtypes.to_float64(b, record) * operands.scale
    if record.exact:
        assert not (guard != sentinel).any(), "kernel wrote past the end of C"
        assert not (c == sentinel).any(), "some elements of C were never written"
        np.testing.assert_array_equal(c.astype(np.int64), ref.astype(np.int64))
    else:
        assert np.isnan(guard).all(), "kernel wrote past the end of C"
        assert not np.isnan(c).any(), "some elements of C were never written"
        err = np.linalg.norm(c.astype(np.float64) - ref) / max(np.linalg.norm(ref), np.finfo(np.float64).tiny)
        assert err <= record.tolerance, f"relative Frobenius error {err:.3e} > {record.tolerance:.0e}"
    return c


def checks_beside_vendor(method, variant, dtype, shape):
    """The verifications of `method`'s build and of its vendor line on one case (bench/compare.py's protocol, C
    poisoned before each); skips where the method cannot run on this GPU."""
    from matmul_study.measure import compare

    why = registry.get(method).unmet_requirement(CC, module_available)
    if why:
        pytest.skip(why)
    _, check = compare.Bench().prepare(compare.make_case(method, variant, dtype, shape))
    return check("ours"), check("cublas")


@pytest.mark.parametrize("shape", ["2048", "1000x2200x4300"])
def test_tf32_rung_rounds_like_cublas(shape):
    # The tf32 rung reads fp32 through tensor maps typed TFLOAT32, so the copy engine rounds to nearest; raw fp32
    # bits would be truncated by wgmma, at about 2.6x cuBLAS's error. Where cuBLAS itself runs tf32 (an error well
    # above fp32's), ours must stay within 1.5x of it.
    ours, theirs = checks_beside_vendor("wgmma_tf32", None, "tf32", shape)
    assert ours.passed and theirs.passed
    assert theirs.rel_fro_error > 1e-5, "cuBLAS did not run tf32 here: the comparison says nothing"
    assert ours.rel_fro_error <= 1.5 * theirs.rel_fro_error


@pytest.mark.parametrize("variant,control", [("promote", "default"), ("promote_rs", "default"),
                                             ("promote2", "default"), ("promote_chunk2", "default"),
                                             ("bn128_promote", "bn128"), ("bm64_bn128_promote", "bm64_bn128"),
                                             ("bm64_bn128_promote_splitk4", "bm64_bn128_splitk4"),
                                             ("bn64_promote_splitk4", "bn64_splitk4"), ("bn192_promote", "bn192"),
                                             ("bn192_promote_cluster2", "bn192"),
                                             ("bn128_promote_one_set", "bn128")])
def test_fp8_promoted_sums_err_like_cublaslt(variant, control):
    # The FP8 wgmma adds with fewer bits than fp32, so over k = 8192 the unpromoted 128x128 build errs well above
    # cuBLASLt's default (which promotes); adding each k step's sum into fp32 accumulators must bring ours to within
    # 2x of it.
    ours, theirs = checks_beside_vendor("wgmma_fp8", variant, "float8_e4m3", "2048x2048x8192")
    control, _ = checks_beside_vendor("wgmma_fp8", control, "float8_e4m3", "2048x2048x8192")
    assert ours.passed and theirs.passed and control.passed
    assert control.rel_fro_error > 2 * theirs.rel_fro_error, "no accumulation error to remove here: says nothing"
    assert ours.rel_fro_error <= 2 * theirs.rel_fro_error


@pytest.mark.parametrize("shape", ["2048x2048x8192", "1000x2200x4300"])
@pytest.mark.parametrize("variant,control", [("promote", "default"), ("promote2", "default"),
                                             ("promote_chunk2", "default"), ("bn128_promote", "bn128"),
                                             ("bn192_promote", "default"), ("bn128_promote_one_set", "bn128")])
def test_3xtf32_promoted_sums_err_like_sgemm(shape, variant, control):
    # The tf32 wgmma truncates as it adds, so over a deep k the 3xTF32 sums drift well past SGEMM's error (the
    # control, the same tiles unpromoted); adding each k step's sum into fp32 accumulators must bring ours to within
    # 2x of cuBLAS SGEMM's (IEEE fp32 FMAs), the bar of fp32's accuracy class.
    ours, theirs = checks_beside_vendor("wgmma_3xtf32", variant, "float32", shape)
    control, _ = checks_beside_vendor("wgmma_3xtf32", control, "float32", shape)
    assert ours.passed and theirs.passed and control.passed
    assert control.rel_fro_error > 2 * theirs.rel_fro_error, "no accumulation error to remove here: says nothing"
    assert ours.rel_fro_error <= 2 * theirs.rel_fro_error


def test_fp8_block_scaled_error_is_cublaslts():
    # Both promote every 128-k block's sum into fp32 (the scales need it), so ours must err within 2x of cuBLASLt's
    # block-scaled GEMM at a deep K; both against the fp64 product of the dequantized inputs.
    ours, theirs = checks_beside_vendor("wgmma_fp8_block", None, "float8_e4m3_block", "2048x2048x8192")
    assert ours.passed and theirs.passed
    assert ours.rel_fro_error <= 2 * theirs.rel_fro_error


@pytest.mark.parametrize("rows,row_bytes,src_pitch,dst_pitch",
                         [(1, 1, 1, 16), (6000, 56, 56, 64), (17, 130, 130, 144), (3, 1000, 1000, 1008),
                          (5, 64, 80, 64), (2000, 8194, 8194, 8208), (16, 16388, 16388, 16400)])
def test_the_row_copy_moves_each_row_and_leaves_the_padding(rows, row_bytes, src_pitch, dst_pitch):
    # operands.RowCopy (kernels/copy_rows.cu), the padded operands' copy on every launch, in units of 1 to 16 bytes
    # (by the pitches above: 1, 8, 2, 8, 16, 2, 4): each row's bytes land at the destination's pitch, in order; the
    # bytes past them in each destination row keep what they held; a source pitch past the row (a library's padded C
    # copied back) is skipped.
    from matmul_study.launch.operands import RowCopy

    rng = np.random.default_rng(SEED)
    src = gpuarray.to_gpu(rng.integers(0, 256, rows * src_pitch, dtype=np.uint8))
    dst = gpuarray.to_gpu(np.full(rows * dst_pitch, 0xA5, np.uint8))
    RowCopy(int(src.gpudata), int(dst.gpudata), rows, row_bytes, src_pitch, dst_pitch)()
    cuda.Context.synchronize()
    got, want = dst.get().reshape(rows, dst_pitch), src.get().reshape(rows, src_pitch)
    assert np.array_equal(got[:, :row_bytes], want[:, :row_bytes])
    assert (got[:, row_bytes:] == 0xA5).all()
