"""The warp-specialised Hopper family (kernels 12-17): its shared-memory arithmetic, persistent launches, split-K
workspaces, the configurations (variants) of its pipeline, the 3xTF32 rung's pre-pass, and `ws_rung`, which makes a
method of the family from its operands."""

from __future__ import annotations

from typing import Callable

from matmul_study.core.backends import PYCUDA
from matmul_study.core.geometry import persistent
from matmul_study.core.specs import (Launch, Method, Prepass, PrepassOutput, Problem, Requirements, TensorMap,
                                     Variant, cdiv)

HOPPER = Requirements(min_compute_capability=(9, 0), arch_specific=True, modules=("cuda.bindings",))



# The warp-specialised Hopper kernel (kernels/12_wgmma_warp_specialized.cu) and its tf32 rung share one pipeline and
# one shared-memory layout: a 1 KiB alignment slack, `stages` stages of A (128 rows) and B (`bn` columns: the tile
# width, 256 or 128) at 128 bytes per row or column (fp16/bf16 BK 64, tf32 BK 32), the consumers' epilogue staging
# (8 warps x 16x64 fp32) and a full and an empty mbarrier per stage: wgmma_ws::SMEM_BYTES, checked against this by
# tests/test_kernels_compile.py.
WS_STAGES = 4  # the kernel's default at BN 256 (WGMMA_WS_STAGES: the most 48 KiB stages that fit)
WS_BN128_STAGES = 6  # and at BN 128 (WGMMA_WS_BN=128: the most 32 KiB stages that fit)
WS_CLUSTER = 2  # the kernel's default (WGMMA_WS_CLUSTER)


def ws_stages(stages: int | None, bn: int) -> int:
    """`stages`, or where None the kernel's default for tiles `bn` wide."""
    return stages if stages is not None else WS_BN128_STAGES if bn == 128 else WS_STAGES


def ws_shared_bytes(stages: int | None = None, bn: int = 256) -> int:
    """Dynamic shared memory of a wgmma_warp_specialized / wgmma_tf32 build with `stages` pipeline stages (None:
    the kernel's default) and tiles `bn` columns wide."""
    stages = ws_stages(stages, bn)
    stage = (128 + bn) * 128
    staging = 2 * 4 * 16 * 64 * 4
    return 1024 + stages * stage + staging + 2 * stages * 8


def ws_launch(stages: int | None = None, cluster: int = WS_CLUSTER, split: int = 1, bn: int = 256
              ) -> Callable[[Problem], Launch]:
    """Persistent grid of 384-thread CTAs (a producer and two consumer warpgroups) over 128 x `bn` tiles, in clusters
    along M, launched as a programmatic dependent of the previous kernel. A split-K build (split > 1) has
    `split` work items per cluster tile (256 x bn with clusters of 2), so its grid is as large as those items,
    up to one CTA per SM."""
    smem = ws_shared_bytes(stages, bn)
    if split == 1:
        return persistent(128, bn, 384, shared_bytes=smem, cluster=cluster, dependent=True)

    def launch(p: Problem) -> Launch:
        items = cdiv(p.m, 128 * cluster) * cdiv(p.n, bn) * split
        blocks = max(1, min(p.sm_count // cluster, items)) * cluster
        return Launch((blocks, 1, 1), (384, 1, 1), smem, (cluster, 1, 1), persistent=True, dependent=True)

    return launch


WS_SPLITS = (2, 4, 8, 16, 32)  # split-K variants of the warp-specialised pipeline (WGMMA_WS_SPLIT_K)


def ws_split_workspace(split: int, cluster: int = WS_CLUSTER, bn: int = 256) -> Callable[[Problem], int]:
    """A split-K build's workspace (kernels/12_wgmma_warp_specialized.cu, host contract): per 128 x `bn` CTA tile
    (cluster tiles x `cluster` of them, so a last cluster row past m still has its own) `split` fp32 partial
    tiles, then one 32-bit counter per CTA tile."""

    def workspace(p: Problem) -> int:
        cta_tiles = cdiv(p.m, 128 * cluster) * cluster * cdiv(p.n, bn)
        return cta_tiles * (split * 128 * bn * 4 + 4)

    return workspace


def ws_variants(groups_along_n: bool, clusters: tuple[int, ...]) -> tuple[Variant, ...]:
    """The configuration axes of the warp-specialised pipeline (compile definitions WGMMA_WS_*), each moved away
    from the default by one step: clusters (those the operands allow), stages, the stream-K tail, balanced waves,
    the tile order (the operands' own order is the default: groups along N or along M) and group size, and the
    paced drain of the epilogue."""
    cluster_variants = tuple(
        Variant(f"cluster{c}", (f"WGMMA_WS_CLUSTER={c}",),
                "no cluster: every CTA loads all of B (48 KiB per k step from L2 instead of 32)" if c == 1 else
                f"clusters of {c} CTAs along M, each loading 1/{c} of B and multicasting it (fewer clusters fit "
                "at once: 30 of 4 on 132 SMs)",
                launch=ws_launch(cluster=c))
        for c in clusters if c != WS_CLUSTER)
    order = (Variant("row_groups", ("WGMMA_WS_GROUP_ORDER=1",),
                     "tile order in groups of cluster-rows walked column by column (the default groups columns)")
             if groups_along_n else
             Variant("column_groups", ("WGMMA_WS_GROUP_ORDER=2",),
                     "tile order in groups of cluster-columns walked row by row (the default groups rows)"))
    return (
        *cluster_variants,
        Variant("stages3", ("WGMMA_WS_STAGES=3",), "3 pipeline stages instead of 4 (less copy latency covered)",
                launch=ws_launch(stages=3)),
        Variant("no_streamk", ("WGMMA_WS_STREAMK=0",),
                "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would pay"),
        Variant("unbalanced", ("WGMMA_WS_BALANCED=0",),
                "every cluster takes tiles, instead of the fewest clusters that keep the number of waves"),
        order,
        Variant("group4", ("WGMMA_WS_GROUP_M=4",), "tile groups of 4 cluster tiles instead of 8"),
        Variant("group16", ("WGMMA_WS_GROUP_M=16",), "tile groups of 16 cluster tiles instead of 8"),
        Variant("drain0", ("WGMMA_WS_DRAIN_EVERY=0",),
                "no paced drain: every tile is stored whole at its end, none during the next tile's k steps"),
        Variant("drain4", ("WGMMA_WS_DRAIN_EVERY=4",), "paced drain every 4 k steps instead of 2"),
        *(Variant(f"splitk{s}", (f"WGMMA_WS_SPLIT_K={s}",),
                  f"split-K: each tile's k steps in {s} slices on {s} clusters, summed in slice order through a "
                  "workspace (deterministic); no stream-K tail. For too few tiles or deep K",
                  launch=ws_launch(split=s), workspace=ws_split_workspace(s))
          for s in WS_SPLITS),
    )


WS_BN128_SPLITS = (2, 4)  # split-K builds of the 128x128 tiles


def ws_bn128_variants() -> tuple[Variant, ...]:
    """The 128x128-tile builds of the fp16/bf16 pipeline (WGMMA_WS_BN=128: each consumer warpgroup 64x128, wgmma
    m64n128k16), for problems whose 128x256 tiles leave most SMs idle: twice the tiles, each half the work; 6
    stages of 32 KiB by default (what fits), 4 as the control; split-K on top where even those tiles are few."""
    bn128 = "WGMMA_WS_BN=128"

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return 128, 128, 64

    return (
        Variant("bn128", (bn128,), "128x128 tiles (twice as many, half the work each) and 6 stages of 32 KiB",
                launch=ws_launch(bn=128), tile=tile),
        Variant("bn128_stages4", (bn128, "WGMMA_WS_STAGES=4"),
                "128x128 tiles with 4 stages instead of 6 (the copy latency covered at half the math per stage)",
                launch=ws_launch(stages=4, bn=128), tile=tile),
        *(Variant(f"bn128_splitk{s}", (bn128, f"WGMMA_WS_SPLIT_K={s}"),
                  f"128x128 tiles, each tile's k steps in {s} slices on {s} clusters, summed in slice order through a "
                  "workspace (deterministic); no stream-K tail",
                  launch=ws_launch(split=s, bn=128), tile=tile, workspace=ws_split_workspace(s, bn=128))
          for s in WS_BN128_SPLITS),
    )


def fp8_bn128_variants() -> tuple[Variant, ...]:
    """The FP8 rung's 128x128-tile builds (WGMMA_WS_BN=128: m64n128k32, 6 stages of 32 KiB), where a consumer's
    registers hold the promoted accumulation (WGMMA_WS_PROMOTE, kernels/16_wgmma_fp8.cu), and the same tiles without
    it as the control that tells the promotion's cost from the tile's."""
    bn128 = "WGMMA_WS_BN=128"

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return 128, 128, 128

    return (
        Variant("bn128", (bn128,),
                "128x128 tiles, 6 stages of 32 KiB, the tensor cores' FP8 sums as they come (the control of "
                "bn128_promote): twice the tiles of 128x256 ones, each with 3/4 of their math per byte loaded",
                launch=ws_launch(bn=128), tile=tile),
        Variant("bn128_promote", (bn128, "WGMMA_WS_PROMOTE=1"),
                "128x128 tiles with each k step's FP8 sum (128 k) promoted into fp32 accumulators (DeepGEMM's "
                "remedy, cuBLASLt's default): an error that does not grow with k, for 64 fp32 adds per thread and "
                "k step, some of them not hidden under the tensor cores' work, and the smaller tiles that the "
                "three accumulator sets need",
                launch=ws_launch(bn=128), tile=tile),
    )


FP8_BLOCK_DEFINES = ("WGMMA_WS_BN=128", "WGMMA_WS_PROMOTE=1")  # wgmma_fp8_block: the bn128_promote build's
FP8_BLOCK_SPLITS = (2, 4, 8)  # its split-K builds (slices of whole k steps, so of whole scale blocks)


def fp8_block_variants() -> tuple[Variant, ...]:
    """The configurations of the block-scaled FP8 rung (kernels/17_wgmma_fp8_block.cu), whose every build is
    128x128 tiles with promoted sums (FP8_BLOCK_DEFINES, the method's compile options): the cluster, the stream-K
    tail, and split-K for too few tiles. A k step is one scale block, and slices and stream-K pieces are whole k
    steps, so every one of them weights its partials itself."""
    return (
        Variant("cluster1", ("WGMMA_WS_CLUSTER=1",),
                "no cluster: every CTA loads its own Bt tile (the 2-CTA clusters multicast it on alternate k steps)",
                launch=ws_launch(cluster=1, bn=128)),
        Variant("no_streamk", ("WGMMA_WS_STREAMK=0",),
                "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would pay"),
        *(Variant(f"splitk{s}", (f"WGMMA_WS_SPLIT_K={s}",),
                  f"split-K: each tile's k steps (scale blocks) in {s} slices on {s} clusters, summed in slice "
                  "order through a workspace (deterministic); no stream-K tail. For too few tiles or deep K",
                  launch=ws_launch(split=s, bn=128), workspace=ws_split_workspace(s, bn=128))
          for s in FP8_BLOCK_SPLITS),
    )


# The 3xTF32 rung (kernels/14_wgmma_3xtf32.cu): a pre-pass splits each fp32 operand into a big and a small tf32
# part and writes A3 = [A_big | A_small | A_big] (m x K') and BT3 = [B_smallᵀ | B_bigᵀ | B_bigᵀ] (n x K'), each
# block of k padded with zeros to 4 floats (the tensor maps' 16-byte row pitch), K' = 3 kp; wgmma_tf32's GEMM runs on
# them over K'. These mirror the kernel's wgmma_3xtf32::wide_k and prepass_blocks (checked by tests/test_3xtf32.py).
SPLIT_K_ALIGN = 4  # floats: 16 bytes
SPLIT_TILE = 32  # the pre-pass's 32 x 32 tiles, blocks of 32 x 8 threads


def split_tf32_k(k: int) -> int:
    """Columns of the 3xTF32 rung's split operands (its GEMM's K): three blocks of k rounded up to 4 floats."""
    return 3 * cdiv(k, SPLIT_K_ALIGN) * SPLIT_K_ALIGN


def split_tf32_prepass_launch(p: Problem) -> Launch:
    """One block per 32 x 32 tile: A's (m x kp) then B's (kp x n), kp = k rounded up to 4; at least one block.
    A programmatic dependent: it waits for the previous GEMM, which reads its outputs, before writing them."""
    kp = split_tf32_k(p.k) // 3
    tiles = cdiv(p.m, SPLIT_TILE) * cdiv(kp, SPLIT_TILE) + cdiv(kp, SPLIT_TILE) * cdiv(p.n, SPLIT_TILE)
    return Launch((max(1, tiles), 1, 1), (SPLIT_TILE, 8, 1), dependent=True)


SPLIT_TF32_PREPASS = Prepass(
    "wgmma_3xtf32_split",
    (PrepassOutput("A3", lambda p: (p.m, split_tf32_k(p.k))),
     PrepassOutput("BT3", lambda p: (p.n, split_tf32_k(p.k)))),
    split_tf32_prepass_launch)



def ws_rung(name: str, description: str, dtypes: tuple[str, ...], source: str, template: str, bk: int,
            operands: tuple[str, str], bn: int = 256, **fields) -> Method:
    """A rung on the warp-specialised pipeline (kernel 12, and the files that reuse it with other operands): a
    persistent grid of 384-thread CTAs over 128 x `bn` tiles (256, or 128 for a rung built at WGMMA_WS_BN=128 by its
    compile options), fed by TMA in 128-byte rows of `bk` elements, built for sm_90a. `operands` names the tensor
    maps' operands: A (or a pre-pass's A3), then B, read in 64-column strips, or a K-major Bᵀ (BT, BT3) read in
    128-row boxes like A. `fields` are the rest of the Method's (variants, choose, requires, prepass, ...)."""
    a, b = operands
    b_map = TensorMap(b, 64, 64) if b == "B" else TensorMap(b, 128, bk)
    return Method(name, description, dtypes, backend=PYCUDA, source=source, template=template, launch=ws_launch(bn=bn),
                  tile=lambda block, dtype: (128, bn, bk), tensor_maps=(TensorMap(a, 128, bk), b_map),
                  launch_bounds=(384, 1), **{"requires": HOPPER, **fields})

