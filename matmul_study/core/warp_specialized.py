"""The warp-specialised Hopper family (kernels 12-17, kernels/warp_specialized/): the one record of a build's
configuration (WsConfig), from which its compile definitions, its launch, its tile and its split-K workspace all come;
the configurations (variants) of its pipeline, each its rung's record with one axis moved; the 3xTF32 rung's
pre-pass; and `ws_rung`, which makes a method of the family from its operands and its record.

The kernel receives every fact of the record as a WGMMA_WS_* definition and has no defaults of its own: a missing
one stops the build, and kernels/warp_specialized/config.cuh checks the rest (among them that its shared-memory
layout takes exactly the bytes that `WsConfig.shared_bytes` gives the launch, alignment slack included)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, ClassVar, NamedTuple

from matmul_study.core.backends import PYCUDA
from matmul_study.core.configs import (BLOCK_CLUSTERS, BLOCK_OWN_TILES, DEFAULT, FEW_COLUMNS_WHOLE_SMALL,
                                       PROMOTED_OWN_TILES, PROMOTED_SHORT_TILE_STEPS, PROMOTED_SLOW_MEMORY,
                                       PROMOTED_SWAP_TRANSPOSE_SHARE,
                                       PROMOTED_TWIN_FILL, PROMOTED_TWIN_TILES, PROMOTED_WHOLE_SMALL,
                                       SMALL_SPLIT_BYTES_STEPS, SWAP_KEEP_SLICES, WIDER_PROMOTED_RATE, Choice,
                                       SwapTwin, TileBuilds, WholeSmall, few_columns_halves, few_columns_twin,
                                       few_rows_twin, half_empty_twins, k_group_twin, narrow_twin, token_twins,
                                       narrow_within_one_wave,
                                       persistent_split_k, small_split_first, swapped_problem, twin_bounds,
                                       slow_memory_twins, whole_small_tiles, wider_promoted_tiles, within_class)
from matmul_study.core.specs import (PROMOTED, Launch, Method, Prepass, PrepassOutput, Problem, Requirements,
                                     TensorMap, Variant, cdiv, shared_opt_in_bytes)

HOPPER = Requirements(min_compute_capability=(9, 0), arch_specific=True, modules=("cuda.bindings",))

# The most dynamic shared memory a block may opt in to on sm_90 (227 KiB): a record's default stage count is the most
# stages that fit in it, and the kernel refuses a layout past it.
SM90_SHARED_BYTES = shared_opt_in_bytes("sm_90a")
# A K-major Bt tile is read in boxes of 128 rows, or of its own width where narrower (WsConfig.bt_box_rows).
BT_BOX_ROWS = 128


@dataclass(frozen=True)
class WsConfig:
    """One build of the warp-specialised pipeline, the single source of its contract with the host: `defines` (the
    -D definitions the kernel requires, WGMMA_WS_*), `launch` (threads, dynamic shared memory, cluster, persistent
    grid), `tile` and `workspace_bytes` are all derived from these fields. A rung's default build is one record
    (ws_rung); each of its variants is that record with one axis moved (dataclasses.replace)."""

    bk: int  # k per step: one 128-byte swizzle row of the operands' elements (64 fp16/bf16, 32 tf32, 128 bytes)
    bn: int = 256  # tile width: 256, or 128 (twice the tiles, half the work each), or 64 (for an N of 64 or less)
    bm: int = 128  # tile rows: 128 (two consumer warpgroups), or 64 (one: twice the tiles again)
    # consumer warpgroups per 64 rows: 1, or 2 that take alternate k steps, each into its own accumulators (64-row
    # tiles of at most 128 columns, without the paced drain: the sums meet in the epilogue's staging)
    k_groups: int = 1
    stages: int | None = None  # pipeline stages; None: the most that fit in an SM's shared memory (stage_count)
    cluster: int = 2  # CTAs per cluster along M, sharing B by multicast
    # ... or along N, sharing A (the swapped 16-bit operands at 64-row tiles: the CTAs of one strip of weights, each
    # with its own tokens, take turns by k step to multicast the strip; config.cuh)
    cluster_along_n: bool = False
    split_k: int = 1  # slices per tile along K (1: whole tiles), summed in order through a workspace
    streamk: bool = True  # split the last wave by k steps where that pays (the kernel ignores it in split-K builds)
    # ... where that saves each cluster at least this many k steps (the split's fix-up costs about as many)
    streamk_min_saved: int = 32
    # A CTA on every SM (in whole clusters) even where the tiles are fewer, so that the stream-K tail, which is then
    # every tile, shares their k steps out over all of them; False: at most a CTA a tile, the rest of the SMs idle.
    full_grid: bool = False
    promote: bool = False  # tensor-core sums (FP8, tf32) promoted into fp32 accumulators every k step
    # A promoted step's column parts (bn 256) take A from registers, read once a step (e4m3 only), not each from
    # shared memory:
    a_registers: bool = False
    # Promoted steps in column parts (bn 256) go in chunks of `promote_chunk` (below the stage count) with a single
    # final wait, and each tensor-core sum runs `promote_every` of them (a divisor of the chunk) before it is added:
    promote_chunk: int = 1
    promote_every: int = 1
    # Scratch sets of a promoted build's whole k steps (bn up to 192): 2, each step issued before the last one's sum
    # is added (three sets of accumulators: 192 registers at bn 128); or 1, each step's sum waited for and added
    # before the next is issued, while the other consumer warpgroup's wgmmas run (two sets: 192 registers at bn 192)
    promote_sets: int = 2
    # B as it is (row-major, N-major) in the stages, and each k step's K-major Bt tile written into a ring of this
    # many buffers by the producer warpgroup's idle warps (32-bit operands: tf32), instead of all of B transposed
    # before the kernel; no cluster (each CTA writes its own). 0: the operands' own B.
    bt_buffers: int = 0
    # Block scales (block-scaled operands) in a ring of this many shared-memory slots, each a k step's scales of the
    # tile's rows and its B scale, which the producer warpgroup's second warp copies ahead of the consumers. 0: none.
    scale_slots: int = 0
    # The kernel computes Cᵀ = Bᵀ·Aᵀ (tf32: B's N-major rows read into registers as wgmma's A, A's rows as its K-major
    # B, C stored transposed), so B needs no transpose; whole tiles or split-K slices (no stream-K tail or paced
    # drain). Its tile rows are the problem's columns: the launch takes (n, m, k) for (m, n, k) (kernel_problem).
    swap_ab: bool = False
    # Knobs that change no launch, stated here too so that a build is one list of facts:
    balanced: bool = True  # unsplit tails go to the fewest clusters that keep the number of waves
    group_order: int = 0  # tile order: 0 the operands' own, 1 groups of cluster-rows, 2 of cluster-columns
    group_m: int = 8  # cluster tiles per group of the tile order
    drain_every: int = 2  # paced drain of the epilogue every so many k steps (0: every tile stored whole)

    # Its shared memory (kernels/warp_specialized/config.cuh, LAYOUT_BYTES): the slack that aligns the stages to
    # 1024 bytes, each stage's BM rows of A and bn columns of B at 128 bytes each, the epilogue's staging (a 16x64
    # fp32 chunk per consumer warp), a full and an empty mbarrier per stage, and a Bt ring or a scale ring
    # where a build has one.
    ALIGN_SLACK: ClassVar[int] = 1024
    ROW_BYTES: ClassVar[int] = 128
    CHUNK_BYTES: ClassVar[int] = 16 * 64 * 4  # one consumer warp's staging chunk
    BARRIER_BYTES: ClassVar[int] = 2 * 8
    ACC_BYTES: ClassVar[int] = 4  # an accumulator of a split-K partial tile, and a tile's counter
    SCALE_BYTES: ClassVar[int] = 4  # an fp32 block scale
    # Every build's launch bound: the family's most threads (a producer and two consumer warpgroups), so that ptxas
    # budgets 65536 / 384 = 168 registers a thread at entry in each; setmaxnreg then moves them between warpgroups
    # (config.cuh, ENTRY_REGS). A 256-thread build keeps it too, and its consumers still rise to 232.
    LAUNCH_THREADS: ClassVar[int] = 384

    @property
    def BM(self) -> int:
        """Tile rows, 64 per consumer warpgroup (the kernel asserts it against its warpgroups)."""
        return self.bm

    @property
    def consumers(self) -> int:
        return self.bm // 64 * self.k_groups

    @property
    def THREADS(self) -> int:
        """A producer warpgroup and a consumer warpgroup per 64 rows: 384 at bm 128, 256 at bm 64."""
        return 128 * (self.consumers + 1)

    @property
    def STAGING_BYTES(self) -> int:
        """The epilogue's staging: a chunk per consumer warp, four warps per consumer warpgroup."""
        return self.consumers * 4 * self.CHUNK_BYTES

    @property
    def bt_smem(self) -> bool:
        """Whether the kernel writes Bt in shared memory itself (a ring of bt_buffers)."""
        return self.bt_buffers > 0

    @property
    def bt_ring_bytes(self) -> int:
        """The Bt ring's buffers and their two barriers each where the kernel writes Bt itself (bt_buffers): bn rows
        of BK elements, 128 bytes a row; none otherwise."""
        return self.bt_buffers * (self.bn * self.ROW_BYTES + self.BARRIER_BYTES)

    @property
    def scale_ring_bytes(self) -> int:
        """The scale ring's slots and their two barriers each (scale_slots): a slot holds BM floats of A's scales
        and B's one, padded to 16 bytes; none otherwise."""
        return self.scale_slots * ((self.BM + 4) * self.SCALE_BYTES + self.BARRIER_BYTES)

    @property
    def beside_stages_bytes(self) -> int:
        """What the layout holds besides its stages: the alignment slack, the epilogue's staging, and the Bt ring or
        the scale ring where the build has one."""
        return self.ALIGN_SLACK + self.STAGING_BYTES + self.bt_ring_bytes + self.scale_ring_bytes

    @property
    def stage_bytes(self) -> int:
        """Bytes of one pipeline stage: A (BM rows) and B (bn columns), 128 bytes each."""
        return (self.BM + self.bn) * self.ROW_BYTES

    @property
    def stage_count(self) -> int:
        """`stages`, or where None the most that fit in SM90_SHARED_BYTES (4 at bn 256, 6 at bn 128, 8 at bn 64)."""
        if self.stages is not None:
            return self.stages
        return (SM90_SHARED_BYTES - self.beside_stages_bytes) // (self.stage_bytes + self.BARRIER_BYTES)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of the launch (WGMMA_WS_SMEM_BYTES), as the kernel lays it out."""
        return self.beside_stages_bytes + self.stage_count * (self.stage_bytes + self.BARRIER_BYTES)

    @property
    def bt_box_rows(self) -> int:
        """Rows of a box of a K-major Bᵀ (tf32 and 8-bit operands; WGMMA_WS_BT_BOX_ROWS): BT_BOX_ROWS, or the whole
        tile where its width is not a multiple of that (64 and 192 columns: one box). The tensor map's box (ws_rung)
        and the kernel's copies (config.cuh) both take it."""
        return self.bn if self.bn % BT_BOX_ROWS else BT_BOX_ROWS

    @property
    def defines(self) -> tuple[str, ...]:
        """The build's compile definitions: every WGMMA_WS_* that kernels/warp_specialized/config.cuh requires."""
        values = {"THREADS": self.THREADS, "LAUNCH_THREADS": self.LAUNCH_THREADS, "K_GROUPS": self.k_groups,
                  "BM": self.BM, "BN": self.bn, "BK": self.bk, "STAGES": self.stage_count,
                  "SMEM_BYTES": self.shared_bytes, "BT_BOX_ROWS": self.bt_box_rows, "BT_BUFFERS": self.bt_buffers,
                  "SCALE_SLOTS": self.scale_slots, "CLUSTER": self.cluster,
                  "CLUSTER_ALONG_N": int(self.cluster_along_n), "SPLIT_K": self.split_k,
                  "STREAMK": int(self.streamk), "STREAMK_MIN_SAVED": self.streamk_min_saved,
                  "PROMOTE": int(self.promote), "A_REGS": int(self.a_registers),
                  "PROMOTE_CHUNK": self.promote_chunk, "PROMOTE_EVERY": self.promote_every,
                  "PROMOTE_SETS": self.promote_sets,
                  "SWAP_AB": int(self.swap_ab), "BALANCED": int(self.balanced),
                  "GROUP_ORDER": self.group_order, "GROUP_M": self.group_m, "DRAIN_EVERY": self.drain_every}
        return tuple(f"WGMMA_WS_{name}={value}" for name, value in values.items())

    def tile(self, block: int = 0, dtype: str | None = None) -> tuple[int, int, int]:
        """The traffic model's unit of work (Method.tile): BM x bn tiles, bk per k step."""
        return self.BM, self.bn, self.bk

    def cluster_tiles(self, p: Problem) -> int:
        """The cluster tiles of the kernel's problem `p` (config.cuh, cluster_rows x cluster_cols): `cluster` tiles
        down M, or along N where cluster_along_n."""
        down, along = (1, self.cluster) if self.cluster_along_n else (self.cluster, 1)
        return cdiv(p.m, self.BM * down) * cdiv(p.n, self.bn * along)

    def launch(self, p: Problem) -> Launch:
        """Persistent grid of THREADS-thread CTAs (a producer and two consumer warpgroups) over BM x bn tiles, in
        clusters, launched as a programmatic dependent of the previous kernel: a CTA a cluster tile's tile and a
        split build's slice, up to one CTA per SM, in whole clusters."""
        if self.swap_ab:  # the kernel's problem is Cᵀ's: n x m
            return replace(replace(self, swap_ab=False).launch(self.kernel_problem(p)), transposed=True)
        items = self.cluster_tiles(p) * self.split_k
        clusters = p.sm_count // self.cluster if self.full_grid else min(p.sm_count // self.cluster, items)
        blocks = max(1, clusters) * self.cluster
        return Launch((blocks, 1, 1), (self.THREADS, 1, 1), self.shared_bytes, (self.cluster, 1, 1), persistent=True,
                      dependent=True)

    def kernel_problem(self, p: Problem) -> Problem:
        """The problem the kernel tiles: `p`, or Cᵀ's (n x m) where it computes Cᵀ = Bᵀ·Aᵀ (swap_ab)."""
        return replace(p, m=p.n, n=p.m) if self.swap_ab else p

    def workspace_bytes(self, p: Problem) -> int:
        """A split-K build's workspace (kernels/warp_specialized/epilogue.cuh, host contract): per BM x bn CTA tile
        (cluster tiles x `cluster` of them, so a last cluster row past m still has its own) `split_k` partial tiles
        of 32-bit accumulators, then one 32-bit counter per CTA tile (of the kernel's problem: Cᵀ's where swap_ab)."""
        cta_tiles = self.cluster_tiles(self.kernel_problem(p)) * self.cluster
        return cta_tiles * (self.split_k * self.BM * self.bn * self.ACC_BYTES + self.ACC_BYTES)

    def variant(self, name: str, description: str = "") -> "WsVariant":
        """This record as a named build: its defines, launch, tile, and a workspace where it splits K."""
        return WsVariant(name, self.defines, description, launch=self.launch, tile=self.tile,
                         workspace=self.workspace_bytes if self.split_k > 1 else None,
                         accuracy=PROMOTED if self.promote else "", config=self)


@dataclass(frozen=True)
class WsVariant(Variant):
    """A build of the family: a Variant that keeps the record it was derived from."""
    config: WsConfig | None = None


@dataclass(frozen=True)
class WsMethod(Method):
    """A method of the family: its default build is its record too (`config`), so that the default's definitions
    and launch come from the same place as every variant's. Method.compile_options carries none of them, so no
    definition is passed twice."""
    config: WsConfig | None = None

    def variant(self, name: str | None) -> Variant:
        if name in (None, "", "default"):
            return self.config.variant("default")
        return super().variant(name)


# The rungs' default records (the registry's ws_rung entries). A k step is one 128-byte swizzle row of the operands.
WS_16BIT = WsConfig(bk=64)  # fp16 / bf16 (kernel 12)
WS_TF32 = WsConfig(bk=32)  # tf32, and 3xTF32's split operands (kernels 13, 14)
WS_BYTES = WsConfig(bk=128)  # int8 and e4m3 (kernels 15, 16)
NARROW_BN = 128  # the 128x128-tile builds' width (variants bn128*)
# The block-scaled FP8 rung (kernel 17): every build is wgmma_fp8's bn128_promote (promoted_variants).
# (three scale slots: what fits beside six stages of 128x128 tiles; the loader runs up to three steps ahead)
WS_FP8_BLOCK = replace(WS_BYTES, bn=NARROW_BN, promote=True, scale_slots=3)

WS_SPLITS = (2, 4, 8, 16, 32)  # split-K variants of the warp-specialised pipeline (WGMMA_WS_SPLIT_K)


def ws_variants(base: WsConfig, groups_along_n: bool, clusters: tuple[int, ...],
                splits: tuple[int, ...] = WS_SPLITS) -> tuple[Variant, ...]:
    """The configuration axes of the warp-specialised pipeline, each moved away from the rung's record `base` by
    one step: clusters (those the operands allow), stages, the stream-K tail, balanced waves, the tile order (the
    operands' own order is the default: groups along N or along M) and group size, the paced drain of the epilogue,
    and split-K (`splits`; none for operands whose partials the workspace cannot hold)."""
    def moved(name: str, description: str, **axis) -> Variant:
        return replace(base, **axis).variant(name, description)

    stages = base.stage_count
    cluster_variants = tuple(
        moved(f"cluster{c}",
              "no cluster: every CTA loads all of B (48 KiB per k step from L2 instead of 32)" if c == 1 else
              f"clusters of {c} CTAs along M, each loading 1/{c} of B and multicasting it (fewer clusters fit "
              "at once: 30 of 4 on 132 SMs)", cluster=c)
        for c in clusters if c != base.cluster)
    order = (moved("row_groups",
                   "tile order in groups of cluster-rows walked column by column (the default groups columns)",
                   group_order=1)
             if groups_along_n else
             moved("column_groups",
                   "tile order in groups of cluster-columns walked row by row (the default groups rows)",
                   group_order=2))
    return (
        *cluster_variants,
        moved("stages3", f"3 pipeline stages instead of {stages} (less copy latency covered)", stages=3),
        moved("no_streamk", "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would "
                            "pay", streamk=False),
        moved("unbalanced",
              "every cluster takes tiles, instead of the fewest clusters that keep the number of waves",
              balanced=False),
        order,
        moved("group4", f"tile groups of 4 cluster tiles instead of {base.group_m}", group_m=4),
        moved("group16", f"tile groups of 16 cluster tiles instead of {base.group_m}", group_m=16),
        moved("drain0", "no paced drain: every tile is stored whole at its end, none during the next tile's k steps",
              drain_every=0),
        moved("drain4", f"paced drain every 4 k steps instead of {base.drain_every}", drain_every=4),
        *(moved(f"splitk{s}", f"split-K: each tile's k steps in {s} slices on {s} clusters, summed in slice order "
                              "through a workspace (deterministic); no stream-K tail. For too few tiles or deep K",
                split_k=s)
          for s in splits),
    )


WS_BN128_SPLITS = (2, 4, 8, 16)  # split-K builds of the 128x128 tiles (8 and 16: deep K, few tiles)


def ws_bn128_variants(base: WsConfig) -> tuple[Variant, ...]:
    """The 128x128-tile builds of a rung (bn NARROW_BN: each consumer warpgroup 64x128, wgmma m64n128k16 in fp16 and
    bf16, m64n128k8 in tf32), for problems whose 128x256 tiles leave most SMs idle: twice the tiles, each half the work;
    as many stages of their size as fit, 4 as the control; split-K on top where even those tiles are few."""
    narrow = replace(base, bn=NARROW_BN)
    tiles = f"{narrow.BM}x{narrow.bn} tiles"
    stage = f"stages of {narrow.stage_bytes // 1024} KiB"
    return (
        narrow.variant(f"bn{NARROW_BN}",
                       f"{tiles} (twice as many, half the work each) and {narrow.stage_count} {stage}"),
        replace(narrow, stages=4).variant(
            f"bn{NARROW_BN}_stages4",
            f"{tiles} with 4 stages instead of {narrow.stage_count} (the copy latency covered at half the math per "
            "stage)"),
        *(replace(narrow, split_k=s).variant(
            f"bn{NARROW_BN}_splitk{s}",
            f"{tiles}, each tile's k steps in {s} slices on {s} clusters, summed in slice order through a workspace "
            "(deterministic); no stream-K tail")
          for s in WS_BN128_SPLITS),
    )


THREE_STRIPS_BN = 192  # the 128x192-tile build's width (variant bn192)


def ws_bn192_variant(base: WsConfig) -> Variant:
    """The 128x192-tile build of a rung (bn THREE_STRIPS_BN: each consumer warpgroup 64x192, wgmma m64n192, 96
    accumulators a thread), without a cluster (three 64-column strips of B, or one 192-row box of Bt, do not halve):
    for problems whose 128x256 tiles make a wave of about half the SMs and whose 128x128 tiles make a second one. At
    1536^3 on 132 SMs: 72 tiles of 128x256 (one wave, 55 % of the SMs), 144 of 128x128 (two waves), 96 of 128x192
    (one wave, 3/4 of a 128x256 tile's work each)."""
    wide = replace(base, bn=THREE_STRIPS_BN, cluster=1)
    return wide.variant(f"bn{THREE_STRIPS_BN}",
                        f"{wide.BM}x{wide.bn} tiles without a cluster, {wide.stage_count} stages of "
                        f"{wide.stage_bytes // 1024} KiB: 3/4 of a 128x256 tile's work, where those make one wave of "
                        "about half the SMs and 128x128 tiles a second one")


NARROWEST_BN = 64  # the 128x64-tile builds' width (variants bn64*)
WS_BN64_SPLITS = (2, 4, 8)  # their split-K builds


def ws_bn64_variants(base: WsConfig) -> tuple[Variant, ...]:
    """The 128x64-tile builds of a rung (bn NARROWEST_BN: each consumer warpgroup 64x64, wgmma m64n64), for an N of
    64 or less, where wider tiles multiply columns past N: there a 128x128 tile does twice the math of a 128x64 one
    for the same rows of A, and the rows of A are what such a problem streams from memory (4096 x 4096 x 64: 32 MiB
    of A against 512 KiB of B). Without a cluster (a CTA multicasts whole 64-column strips of B, and there is one);
    as many stages as fit (8 of 24 KiB); and K split 2, 4 or 8 ways, for the few tiles that a few columns make."""
    narrow = replace(base, bn=NARROWEST_BN, cluster=1)
    tiles = f"{narrow.BM}x{narrow.bn} tiles without a cluster"
    return (
        narrow.variant(f"bn{NARROWEST_BN}",
                       f"{tiles}, {narrow.stage_count} stages of {narrow.stage_bytes // 1024} KiB: for an N of "
                       f"{NARROWEST_BN} or less, half the math of 128-column tiles for the same bytes of A"),
        *(replace(narrow, split_k=s).variant(
            f"bn{NARROWEST_BN}_splitk{s}",
            f"{tiles}, each tile's k steps in {s} slices on {s} CTAs, summed in slice order through a workspace "
            "(deterministic): a few columns against many rows")
          for s in WS_BN64_SPLITS),
    )


SHORT_BM = 64  # the 64-row-tile builds' rows (variants bm64*): one consumer warpgroup


WS_BM64_SPLITS = (2, 4, 8, 16)  # split-K builds of the 64x128 tiles, without a cluster: decode rows, deep K


def ws_bm64_variants(base: WsConfig, widths: tuple[int, ...] = (256, NARROW_BN),
                     splits: tuple[int, ...] = ()) -> tuple[Variant, ...]:
    """The 64-row-tile builds of a rung (bm SHORT_BM: one consumer warpgroup, 256 threads), for problems that even
    128x128 tiles leave short of a wave (1024^3: 64 of those on 132 SMs, 128 of 64x128): at each of `widths` (the
    rung's own width named bm64, 128 columns bm64_bn128), as many stages as fit, which at half the rows of A a stage
    is more of them. And `splits`: the 64x128 tiles with K split S ways and no cluster (bm64_bn128_splitk<S>), for
    a few token rows against a weight matrix: at M = 64, 4096 columns are 32 tiles, and a cluster of two along M
    would give each tile a CTA whose rows are all past M."""
    out = []
    for bn in widths:
        short = replace(base, bm=SHORT_BM, bn=bn)
        name = f"bm{SHORT_BM}" if bn == base.bn else f"bm{SHORT_BM}_bn{bn}"
        out.append(short.variant(
            name, f"{short.BM}x{short.bn} tiles, one consumer warpgroup ({short.THREADS} threads), "
                  f"{short.stage_count} stages of {short.stage_bytes // 1024} KiB: "
                  f"{base.BM // short.BM * base.bn // short.bn}x the tiles of {base.BM}x{base.bn} ones"))
    narrow = replace(base, bm=SHORT_BM, bn=NARROW_BN, cluster=1)
    out += [replace(narrow, split_k=s).variant(
        f"bm{SHORT_BM}_bn{NARROW_BN}_splitk{s}",
        f"{narrow.BM}x{narrow.bn} tiles without a cluster, each tile's k steps in {s} slices on {s} CTAs, summed in "
        "slice order through a workspace (deterministic): a few rows against a weight matrix")
        for s in splits]
    return tuple(out)


K_GROUPS_SUFFIX = "kg2"  # the 64-row-tile builds with two consumer warpgroups taking alternate k steps
WS_SMALL_SPLITS = (4, 8, 16, 32)  # split-K builds of the 64x64 two-k-group tiles: deep K, a few of them
# tf32's 64x64 splits that write Bt in shared memory go to 64 slices: each CTA writes its own slice's Bt, so more of
# them share that work. On an H200 (x cuBLAS, small-problems/tiles-small-splits64-*.txt) 64 slices against 32:
# 64x64x65536 0.74 against 0.48, 64x128x32768 1.01 / 0.77, 32x128x32768 0.98 / 0.75, 64x64x16384 1.00 / 0.88. The
# other dtypes' 64x64 splits lost at 64 slices wherever 32 fit (splitk64-*.txt: fp16 64x64x65536 0.84 against 0.93,
# int8 1.25 / 1.35, FP8 0.97 / 1.05): the sum of 64 partials costs more than the shorter slices save.
WS_SMALL_BT_SPLITS = (*WS_SMALL_SPLITS, 64)


def k_group_tile(base: WsConfig, bn: int = NARROWEST_BN) -> WsConfig:
    """`base`'s record of 64-row tiles `bn` wide run by two consumer warpgroups on alternate k steps: no paced drain
    (config.cuh refuses it with two k groups: the groups' sums meet in the staging chunks), and no cluster (a cluster
    shares B out in 64-column strips or halves of its box, and a tile of 64 columns has one; the 16-bit twins take
    clusters that multicast their box of A's rows in turns: swap_k_group_variants)."""
    return replace(base, bm=SHORT_BM, bn=bn, cluster=1, k_groups=2, drain_every=0)


def ws_k_group_variants(base: WsConfig) -> tuple[Variant, ...]:
    """The 64-row-tile builds of a rung with two consumer warpgroups that take alternate k steps of every tile, each
    into accumulators of its own, the second handing its sums to the first through shared memory at the tile's end
    (k_groups 2; kernels/warp_specialized/kernel.cuh): 64x128 (bm64_bn128_kg2) and 64x64 (bm64_bn64_kg2), without a
    cluster. A single warpgroup keeps one wgmma group in flight, and each group waits for the one before it on the
    same accumulators; two warpgroups on separate accumulators keep the tensor cores busy meanwhile, as a 128-row
    tile's two do. cuBLAS runs such tiles so at 1024x1024x8192 fp16 (64x128, 384 threads; ncu on an H200)."""
    out = []
    for bn in (NARROW_BN, NARROWEST_BN):
        c = k_group_tile(base, bn)
        out.append(c.variant(
            f"bm{SHORT_BM}_bn{bn}_{K_GROUPS_SUFFIX}",
            f"{c.BM}x{c.bn} tiles without a cluster, two consumer warpgroups taking alternate k steps into "
            f"accumulators of their own, summed at the tile's end ({c.THREADS} threads), {c.stage_count} stages of "
            f"{c.stage_bytes // 1024} KiB"))
    small = k_group_tile(base)
    out += [replace(small, split_k=s).variant(
        f"bm{SHORT_BM}_bn{NARROWEST_BN}_{K_GROUPS_SUFFIX}_splitk{s}",
        f"{small.BM}x{small.bn} tiles with two k groups, each tile's k steps in {s} slices on {s} CTAs, summed in "
        "slice order through a workspace (deterministic): a deep K against a few tiles")
        for s in WS_SMALL_SPLITS]
    return tuple(out)


class KGroupTwin(NamedTuple):
    """One twin of the 16-bit rung's 64x64 tiles with two k groups (swap_k_group_variants): `tokens` of A's rows a
    tile, in clusters of `cluster` CTAs (along B's columns, sharing the tokens; or along the tokens, sharing each
    strip of weights: `along_n`), K in `split` slices, or whole with the stream-K tail (`streamk`)."""
    tokens: int
    cluster: int = 1
    split: int = 1
    along_n: bool = False
    streamk: bool = False

    @property
    def name(self) -> str:
        """Its build's name: swap_bm64_bn<tokens>_kg2[_cluster<C>][_along_n][_splitk<S>][_streamk]."""
        return swap_twin_name(f"bm{SHORT_BM}_bn{self.tokens}_{K_GROUPS_SUFFIX}"
                              + (f"_cluster{self.cluster}" if self.cluster > 1 else "")
                              + (f"_{SWAP_SHARED_WEIGHTS_SUFFIX}" if self.along_n else "")
                              + (f"_splitk{self.split}" if self.split > 1 else "")
                              + (f"_{STREAMK_SUFFIX}" if self.streamk else ""))


# The twins: 64 of A's rows (the tokens) a tile, whole and split without a cluster, and in clusters of 2 and 4 that
# share the tokens by multicast; 32 a tile (SWAP_TOKEN_BN, cuBLAS's decode tile), whole and split twice, and whole in
# clusters of 2 along the tokens that share each strip of weights (cuBLAS's decode kernel: SWAP_SHARED_WEIGHTS_SUFFIX).
# And whole with the stream-K tail on a CTA an SM (full_grid), at every SM count a wave that ends at once: the last
# partial wave of tiles (all of them, where they are fewer than the clusters: a decode step's 40-80 strips of weights
# on 132 SMs) split by k steps over every cluster, however little each split saves (STREAMK_ANY_SAVING).
SWAP_TOKEN_BN = 32
K_GROUP_TWIN_BUILDS = (
    *(KGroupTwin(NARROWEST_BN, c, s) for c, s in ((1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1), (4, 2))),
    KGroupTwin(SWAP_TOKEN_BN), KGroupTwin(SWAP_TOKEN_BN, split=2), KGroupTwin(SWAP_TOKEN_BN, 2, along_n=True),
    KGroupTwin(NARROWEST_BN, streamk=True), KGroupTwin(SWAP_TOKEN_BN, streamk=True),
    KGroupTwin(SWAP_TOKEN_BN, 2, along_n=True, streamk=True))
SWAP_SHARED_WEIGHTS_SUFFIX = "along_n"
STREAMK_SUFFIX = "streamk"
STREAMK_ANY_SAVING = 0  # WGMMA_WS_STREAMK_MIN_SAVED: split the tail wherever it saves a k step


def swap_k_group_variants(base: WsConfig, builds: tuple[KGroupTwin, ...] = K_GROUP_TWIN_BUILDS) -> tuple[Variant, ...]:
    """Twins of a 16-bit rung's 64-row tiles with two k groups that compute Cᵀ = Bᵀ·Aᵀ (Op16Swapped): 64 of B's
    columns by `tokens` of A's rows (64, or 32), two consumer warpgroups taking alternate k steps and summing at the
    tile's end, K whole or split, one twin per record of `builds`.
    At 64 token rows the 32-token tiles are cuBLAS's shape of work: its decode kernel at 64x4096x4096 (fp16, an H200,
    ncu) runs 128 CTAs of 64 weight columns by 32 tokens, two consumer warpgroups and a producer, each CTA over all
    of K, a cluster of two sharing the weights by multicast. The builds `along_n` are that cluster: along
    the tokens (cluster_along_n), its CTAs take turns to multicast each k step's strip of weights, each copying its
    own tokens (..._cluster<C>_along_n); without it, the two CTAs of a strip read it from L2 each. The 64-token tiles
    make 64 CTAs there, 128 split twice, each over half of K; the other clusters lie along B's columns and
    share the tokens: their CTAs take turns to multicast each k step's rows of A (config.cuh, load_bt), so that A is
    read from L2 once per cluster, not once per CTA (at 64x4096x4096 A's reads are as many bytes as B's without
    one). The two groups' sums meet in the consumers' staging chunks, which the twins keep though their epilogue
    stores each element by itself. On an H100 the clusters of 64-token tiles lost wherever the whole twin led (the
    turns tie each stage to both CTAs' consumers), so the rung's heuristic weighs the whole 64-token twin alone
    (decode_twins_first). The builds `streamk` are whole twins with the stream-K tail (..._streamk): where the
    strips of weights are fewer than the SMs, or leave a partial last wave, that wave's k steps are shared out over
    every cluster, and a tile's pieces meet in C by L2 reductions (their order, and so C's last bits, may vary)."""
    out = []
    for build in builds:
        tokens, cluster, s, along_n, tail = build
        c = swap_twin_config(replace(k_group_tile(base, tokens), cluster=cluster, split_k=s,
                                     cluster_along_n=along_n))
        if tail:
            c = replace(c, streamk=True, streamk_min_saved=STREAMK_ANY_SAVING, full_grid=True)
        along, shares = ("A's rows", "B's columns") if along_n else ("B's columns", "A's rows")
        shared = (f"clusters of {cluster} CTAs along {along} taking turns to multicast {shares}" if cluster > 1
                  else "no cluster")
        split = f", K split {s} ways (summed in slice order through a workspace)" if s > 1 else ""
        if tail:
            split = (", the last partial wave of tiles split by k steps over every cluster (stream-K), the pieces "
                     "added in C by L2 reductions")
        out.append(c.variant(build.name,
                             f"Cᵀ = Bᵀ·Aᵀ with B's rows read M-major by wgmma as its A: tiles of {c.BM} columns x "
                             f"{c.bn} rows of C, two consumer warpgroups taking alternate k steps, {shared}{split}"))
    return tuple(out)


BT_SMEM_SUFFIX = "smem_bt"  # the builds that write Bt in shared memory (bt_buffers) end their names with it
# Their Bt ring: 4 buffers, so that the writers run up to three k steps ahead of the tensor cores (with 2, one step:
# each handoff's latency showed); 2 at 256 columns, where 4 buffers of 32 KiB leave no room for two stages.
BT_RING = 4


def bt_smem_variants(base: WsConfig) -> tuple[Variant, ...]:
    """The builds of a 32-bit rung (tf32) that read B as it is and write each k step's K-major Bt tile in shared
    memory (bt_smem, kernels/warp_specialized/mainloop.cuh), instead of transposing all of B before the kernel:
    without a cluster, at each tile of the rung's other builds (128x256, 128x128, 64x256, 64x128, 128x64) and the
    splits that deep K and few tiles take. For a few hundred rows against a weight matrix, where B is most of the
    bytes and the transpose moves all of them twice."""
    def ring(**tile) -> WsConfig:
        c = replace(base, cluster=1, **tile)
        return replace(c, bt_buffers=2 if c.bn == 256 else BT_RING)

    small = f"bm{SHORT_BM}_bn{NARROWEST_BN}_{K_GROUPS_SUFFIX}"
    builds = {"": ring(), f"bn{NARROW_BN}": ring(bn=NARROW_BN), f"bm{SHORT_BM}": ring(bm=SHORT_BM),
              f"bm{SHORT_BM}_bn{NARROW_BN}": ring(bm=SHORT_BM, bn=NARROW_BN),
              f"bn{NARROWEST_BN}": ring(bn=NARROWEST_BN),
              small: ring(bm=SHORT_BM, bn=NARROWEST_BN, k_groups=2, drain_every=0)}
    splits = {"": (4, 8, 16), f"bn{NARROW_BN}": WS_BN128_SPLITS, f"bm{SHORT_BM}_bn{NARROW_BN}": WS_BM64_SPLITS,
              f"bn{NARROWEST_BN}": WS_BN64_SPLITS, small: WS_SMALL_BT_SPLITS}
    out = []
    for tiles, config in builds.items():
        for s in (1, *splits.get(tiles, ())):
            if tiles == small and s == 1:
                continue  # the 64x64 tiles' Bt builds are for a deep K: split
            name = "_".join(part for part in (tiles, f"splitk{s}" if s > 1 else "", BT_SMEM_SUFFIX) if part)
            out.append(replace(config, split_k=s).variant(
                name, f"{config.BM}x{config.bn} tiles without a cluster"
                      + (", two consumer warpgroups taking alternate k steps" if config.k_groups == 2 else "")
                      + (f", each tile's k steps in {s} slices summed in slice order through a workspace" if s > 1
                         else "")
                      + ", B read as it is and each k step's Bt tile written K-major in shared memory by the "
                        "producer warpgroup, instead of all of B transposed before the kernel"))
    return tuple(out)


SWAP_PREFIX = "swap"
# The builds that have twins computing Cᵀ = Bᵀ·Aᵀ (swap_variants): the rung's whole tiles and their splits that the
# heuristic picks (not its two-k-group tiles: the 16-bit rung's 64x64 ones have twins of their own,
# swap_k_group_variants).
SWAP_TWINS = ("", "cluster1", f"bn{NARROW_BN}", *(f"bn{NARROW_BN}_splitk{s}" for s in WS_BN128_SPLITS),
              f"bn{THREE_STRIPS_BN}", f"bm{SHORT_BM}", f"bm{SHORT_BM}_bn{NARROW_BN}",
              *(f"bm{SHORT_BM}_bn{NARROW_BN}_splitk{s}" for s in WS_BM64_SPLITS),
              f"bn{NARROWEST_BN}", *(f"bn{NARROWEST_BN}_splitk{s}" for s in WS_BN64_SPLITS))


def swap_twin_name(build: str) -> str:
    """The name of `build`'s twin that computes Cᵀ = Bᵀ·Aᵀ ("" or "default": the rung's own tiles): swap_<build>."""
    return SWAP_PREFIX if build in ("", "default") else f"{SWAP_PREFIX}_{build}"


def swap_twin_config(config: WsConfig) -> WsConfig:
    """The record of `config`'s twin that computes Cᵀ = Bᵀ·Aᵀ: the same tile, cluster and split laid the other way,
    without the stream-K tail and the paced drain (config.cuh refuses both with WGMMA_WS_SWAP_AB)."""
    return replace(config, swap_ab=True, streamk=False, drain_every=0)


def records(base: WsConfig, variants: tuple[Variant, ...]) -> dict[str, WsConfig]:
    """A rung's builds by name, "" for its record `base`, then its `variants`' records."""
    return {"": base, **{v.name: v.config for v in variants if isinstance(v, WsVariant)}}


def swap_twins(base: WsConfig, variants: tuple[Variant, ...]) -> dict[str, SwapTwin]:
    """The rung's builds (its record `base`, "default", then `variants`) that have a twin computing Cᵀ = Bᵀ·Aᵀ among
    `variants`, for configs.swap_twin: those of SWAP_TWINS, and those that write Bᵀ in shared memory at their tiles
    and splits (<build>_smem_bt; the default's: smem_bt), each with its tile, cluster, slices and its twin's cluster;
    and the builds of two k groups that transpose B (bm64_bn128_kg2...), which have no twin of their own: the twin of
    the 128-row tile of their columns split twice as far, whose items are as many and as large (a 64 x 128 tile over
    all of K against a 128 x 128 one over half of it), and for a K too short to split, that tile's twin split as the
    build is."""
    by_name = records(base, variants)

    def twin_of(rows: int, bn: int, split: int) -> str | None:
        """The twin of the build of rows x bn tiles (one k group, B transposed) split `split` ways, where both are."""
        own = next((n for n, o in by_name.items() if n in SWAP_TWINS and not o.bt_smem and o.k_groups == 1
                    and (o.BM, o.bn, o.split_k) == (rows, bn, split)), None)
        return swap_twin_name(own) if own is not None and swap_twin_name(own) in by_name else None

    out = {}
    for name, c in by_name.items():
        if c.swap_ab:
            continue
        if c.k_groups > 1:
            if c.bt_smem:
                continue
            rows, slices = c.BM * c.k_groups, c.split_k * c.k_groups
            twin = twin_of(rows, c.bn, slices)
            if twin is not None:
                out[name] = SwapTwin(twin, c.BM, c.bn, c.cluster, by_name[twin].cluster, c.split_k, True, rows,
                                     slices, twin_of(rows, c.bn, c.split_k))
            continue
        own = name if not c.bt_smem else "" if name == BT_SMEM_SUFFIX else name.removesuffix(f"_{BT_SMEM_SUFFIX}")
        twin = by_name.get(swap_twin_name(own))
        if own in SWAP_TWINS and twin is not None:
            out[name or "default"] = SwapTwin(swap_twin_name(own), c.BM, c.bn, c.cluster, twin.cluster, c.split_k,
                                              not c.bt_smem)
    return out


# The 8-bit rungs' builds with twins (swap_variants): SWAP_TWINS' of 128 rows, and their own tiles split, which
# FP8 has where it has no 128x128 splits.
SWAP_TWINS_BYTES = (*SWAP_TWINS, *(f"splitk{s}" for s in (4, 8, 16)))


def deep_splits(variants: tuple[Variant, ...], slices: int) -> frozenset[str]:
    """The rung's builds among `variants` that split K `slices` ways or more, but the twins (configs.swapped_problem
    keeps them)."""
    return frozenset(v.name for v in variants
                     if isinstance(v, WsVariant) and v.config.split_k >= slices and not v.config.swap_ab)


def swapped_names(variants: tuple[Variant, ...]) -> dict[str, str]:
    """The rung's builds that have a twin computing Cᵀ = Bᵀ·Aᵀ among `variants` (swap_variants), each with its twin's
    name ("default" for the rung's record), for configs.swapped_problem."""
    names = {v.name for v in variants}
    return {build or DEFAULT: swap_twin_name(build) for build in SWAP_TWINS_BYTES if swap_twin_name(build) in names}


def swap_variants(base: WsConfig, variants: tuple[Variant, ...], rows: int | None = None,
                  builds: tuple[str, ...] = SWAP_TWINS) -> tuple[Variant, ...]:
    """The twins of a rung's builds named in SWAP_TWINS (its record `base` for ""; `variants` the rest) that compute
    Cᵀ = Bᵀ·Aᵀ (swap_ab; kernels/warp_specialized/operands_tf32.cuh, OpTf32Swapped, and operands_bytes.cuh,
    OpBytesSwapped): B as it is, each k step's rows read from shared memory into registers as wgmma's A, so that no
    pass before the kernel transposes B (twice its bytes through HBM and a launch, timed with the GEMM); 16-bit B
    (operands_16bit.cuh, Op16Swapped) needs no registers, as wgmma reads its A M-major too: there the twin makes a
    few rows of A wgmma's N and B's columns the tile's rows, as decode steps want. The same
    tile, cluster and split, laid the other way (BM of B's columns by bn of A's rows), without the stream-K tail and
    the paced drain (configs.swap_twin picks tf32's). `rows`: only the twins of the rung's builds of tiles of that
    many rows (the 8-bit operands' OpBytesSwapped reads its A slot as one box of 128 of B's columns); `builds`: the
    builds that have twins."""
    by_name = records(base, variants)
    what = ("Cᵀ = Bᵀ·Aᵀ with B's rows read M-major by wgmma as its A" if base.bk == WS_16BIT.bk else
            "Cᵀ = Bᵀ·Aᵀ with B's rows read into registers as wgmma's A (no transpose of B)")
    out = []
    for build in builds:
        if rows is not None and (build not in by_name or by_name[build].BM != rows):
            continue
        c = swap_twin_config(by_name[build])
        split = f", K split {c.split_k} ways" if c.split_k > 1 else ""
        cluster = f"clusters of {c.cluster} sharing A's rows" if c.cluster > 1 else "no cluster"
        out.append(c.variant(swap_twin_name(build), f"{what}: tiles of {c.BM} columns x {c.bn} rows of C, "
                                                    f"{cluster}{split}; the twin of {build or 'the default build'}"))
    return tuple(out)


def tile_records(variants: tuple[Variant, ...]) -> dict[str, tuple[int, int, int, bool]]:
    """Each build's rows and columns of its tiles, slices of K and whether it computes Cᵀ, as the rules that count
    work items from a pick's name take them."""
    return {v.name: (v.config.BM, v.config.bn, v.config.split_k, v.config.swap_ab) for v in variants}


def small_splits_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                       variants: tuple[Variant, ...]) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, a rung's heuristic, with its 64x64 splits taken in place of a final pick that leaves most SMs idle
    (configs.small_split_first): every build's tiles, slices and orientation from its record; the one-byte operands'
    slices of SMALL_SPLIT_BYTES_STEPS k steps or more."""
    steps = SMALL_SPLIT_BYTES_STEPS if base.bk == 128 else 4  # a k step of 128 one-byte elements
    return small_split_first(rest, ws_tile_builds(base, variants), tile_records(variants), base.bk, steps)


def twin_splits(variants: tuple[Variant, ...], rows: int, cols: int) -> dict[int, str]:
    """The twins among `variants` that compute Cᵀ = Bᵀ·Aᵀ over rows x cols tiles, by their slices of K (1: whole)."""
    return {v.config.split_k: v.name for v in variants
            if v.config.swap_ab and (v.config.BM, v.config.bn) == (rows, cols)}


def narrow_twins_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                       variants: tuple[Variant, ...]) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, an 8-bit rung's heuristic, with the twins of its 128x64 tiles (whole and split) taken in place of a
    wider twin where they make more work items within one wave, or at a few columns and deep slices the 64x64 splits
    with two k groups (configs.narrow_twin)."""
    return narrow_twin(rest, tile_records(variants), twin_splits(variants, base.BM, NARROWEST_BN), base.bk,
                       halves=small_split_slices(base, variants))


def small_split_slices(base: WsConfig, variants: tuple[Variant, ...]) -> dict[int, str]:
    """The rung's 64x64 tiles with two k groups over C (TileBuilds.small_splits), by their slices of K."""
    return {s: name for name, (_, _, s) in ws_tile_builds(base, variants).small_splits.items()}


def few_columns_twins_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                            variants: tuple[Variant, ...]) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, tf32's heuristic, with the twins of its 64x128 tiles (whole and split: one row of them over Cᵀ holds
    64 columns of C) taken at a few columns (configs.few_columns_twin)."""
    return few_columns_twin(rest, tile_records(variants), twin_splits(variants, SHORT_BM, NARROW_BN), base.bk)


def decode_twins_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                       variants: tuple[Variant, ...]) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, the 16-bit rung's heuristic, with the whole twin of its 64x64 tiles with two k groups taken in place of
    a split pick at 49-64 token rows (configs.k_group_twin), and the twins of 32 tokens (whole, split twice or with
    the stream-K tail) at up to 32 (configs.token_twins); both on a card of less memory bandwidth an SM."""
    records = tile_records(variants)
    twin = KGroupTwin(NARROWEST_BN).name
    tokens = KGroupTwin(SWAP_TOKEN_BN)
    return token_twins(k_group_twin(rest, records, twin), records, tokens.name, tokens._replace(split=2).name,
                       tokens._replace(streamk=True).name, base.bk)


def whole_small_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                      variants: tuple[Variant, ...], where: WholeSmall = PROMOTED_WHOLE_SMALL
                      ) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, a rung's heuristic, with its whole 64x64 tiles of two k groups taken in place of its pick over a K of
    a few tens of k steps, where `where` says (configs.whole_small_tiles)."""
    small = ws_tile_builds(base, variants).small
    return whole_small_tiles(rest, tile_records(variants), small[0] if small else "", base.bk, where)


def few_rows_twins_first(rest: Callable[[object, tuple[str, ...]], Choice], base: WsConfig,
                         variants: tuple[Variant, ...]) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, tf32's heuristic, with the twins of its 128x64 tiles (whole and split: one column of them over Cᵀ
    holds 64 rows of C) taken at a few rows where their busiest SM runs fewer k steps (configs.few_rows_twin)."""
    return few_rows_twin(rest, tile_records(variants), twin_splits(variants, base.BM, NARROWEST_BN), base.bk)


def ws_tile_builds(base: WsConfig, variants: tuple[Variant, ...]) -> TileBuilds:
    """A rung's builds that differ from its record `base` in the tile alone (bn128, bm64, bm64_bn128: the stages
    that fit them, the rest as the default; bn192 also in its cluster of 1; not the 64-column tiles, which the
    heuristic's few-columns rule weighs) or in a cluster of 1 alone (cluster1: no pairs of row tiles, which an odd
    count of them leaves one CTA short), its split builds of tiles with fewer rows than its own
    (bm64_bn128_splitk<S>), where its whole tiles split a last partial wave by k steps, the builds that run one of
    those tiles with two k groups (bm64_bn128_kg2), and its 64x64 tiles with two k groups (bm64_bn64_kg2) and their
    splits (those that write Bt in shared memory apart), for the wave model of its heuristic
    (configs.persistent_split_k)."""
    tiles = {v.name: (v.config.BM, v.config.bn, v.config.cluster) for v in variants
             if isinstance(v, WsVariant) and v.config.bn != NARROWEST_BN
             and ((v.config.BM, v.config.bn) != (base.BM, base.bn) or v.config.cluster == 1)
             and v.config == replace(base, bm=v.config.bm, bn=v.config.bn, cluster=v.config.cluster)}
    splits = {v.name: (v.config.BM, v.config.bn, v.config.split_k) for v in variants
              if isinstance(v, WsVariant) and v.config.split_k > 1 and v.config.BM != base.BM
              and v.config == replace(base, bm=v.config.bm, bn=v.config.bn, cluster=v.config.cluster,
                                      split_k=v.config.split_k)}
    by_name = {v.name: v.config for v in variants if isinstance(v, WsVariant)}
    twins = {name: f"{name}_{K_GROUPS_SUFFIX}" for name, (r, c, _) in tiles.items()
             if by_name.get(f"{name}_{K_GROUPS_SUFFIX}") == replace(by_name[name], cluster=1, k_groups=2,
                                                                    drain_every=0)}
    small = {v.name: (v.config.BM, v.config.bn) for v in variants if isinstance(v, WsVariant)
             and v.config == k_group_tile(base)}

    def small_split(v, bt_buffers: int) -> bool:
        return v.config.split_k > 1 and v.config == replace(k_group_tile(base), split_k=v.config.split_k,
                                                            bt_buffers=bt_buffers)

    small_splits = {v.name: (v.config.BM, v.config.bn, v.config.split_k) for v in variants
                    if isinstance(v, WsVariant) and small_split(v, 0)}
    small_bt_splits = {v.name: (v.config.BM, v.config.bn, v.config.split_k) for v in variants
                       if isinstance(v, WsVariant) and small_split(v, BT_RING)}
    return TileBuilds(tiles, base.cluster, splits, base.streamk_min_saved if base.streamk else None, twins,
                      next(iter(small.items()), None), small_splits, small_bt_splits)


def promoted_variants(base: WsConfig, operands: str, remedy: str) -> tuple[Variant, ...]:
    """The 128x128-tile builds of a rung whose tensor cores sum in fewer bits than fp32 (`operands`: FP8, or 3xTF32's
    tf32 parts; bn NARROW_BN, as many stages as fit), where a consumer's registers hold the promoted accumulation
    (WGMMA_WS_PROMOTE, kernels/warp_specialized/mainloop.cuh): `remedy` says what that buys. And the same tiles
    without it, the control that tells the promotion's cost from the tile's. And `promote`: the rung's own tiles
    with promoted sums, a quarter of the columns at a time (two scratch sets of a quarter beside the fp32 set)."""
    narrow = replace(base, bn=NARROW_BN)
    tiles = f"{narrow.BM}x{narrow.bn} tiles"
    return (
        replace(base, promote=True).variant(
            "promote",
            f"{base.BM}x{base.bn} tiles with each k step's {operands} sum ({base.bk} k) promoted into fp32 "
            f"accumulators ({remedy}), in quarters of the columns: four wgmma groups of {base.bn // 4} columns a k "
            "step, each quarter's sum added while the next one runs"),
        narrow.variant(f"bn{NARROW_BN}",
                       f"{tiles}, {narrow.stage_count} stages of {narrow.stage_bytes // 1024} KiB, the tensor cores' "
                       f"{operands} sums as they come (the control of bn{NARROW_BN}_promote): twice the tiles of "
                       f"{base.BM}x{base.bn} ones, each with 3/4 of their math per byte loaded"),
        replace(narrow, promote=True).variant(
            f"bn{NARROW_BN}_promote",
            f"{tiles} with each k step's {operands} sum ({narrow.bk} k) promoted into fp32 accumulators ({remedy}): "
            "an error that does not grow with k, for 64 fp32 adds per thread and k step, some of them not hidden "
            "under the tensor cores' work, and the smaller tiles that the three accumulator sets need"),
    )


def one_set_promoted_variants(base: WsConfig, operands: str, clusters: tuple[int, ...] = (1,)
                              ) -> tuple[Variant, ...]:
    """Promoted builds with one scratch set (WsConfig.promote_sets 1, kernels/warp_specialized/mainloop.cuh): each
    k step's `operands` sum waited for and added into fp32 before the next step is issued, while the other consumer
    warpgroup's wgmmas keep the tensor cores busy, as DeepGEMM and cuBLASLt's promoted line do. The set that frees
    makes room for 128x192 tiles (2 x 96 accumulators a thread: bn192_promote, without a cluster and, for the 8-bit
    operands' one Bt box, in clusters of 2), whose k step moves 13 % fewer bytes through shared memory per
    multiply-add than a 128x128 one's; and bn128_promote_one_set, the 128x128 tiles so, the control that tells the
    set count's cost from the tile's."""
    wide = replace(base, bn=THREE_STRIPS_BN, promote=True, promote_sets=1)
    narrow = replace(base, bn=NARROW_BN, promote=True, promote_sets=1)
    name = f"bn{THREE_STRIPS_BN}_{PROMOTE_SUFFIX}"
    return (
        *(replace(wide, cluster=c).variant(
            name + (f"_cluster{c}" if c > 1 else ""),
            f"{wide.BM}x{wide.bn} tiles, {wide.stage_count} stages of {wide.stage_bytes // 1024} KiB, "
            + (f"in clusters of {c} multicasting the Bt tile in turns, " if c > 1 else "without a cluster, ")
            + f"each k step's {operands} sum ({base.bk} k) waited for and promoted into fp32 accumulators before the "
            "next is issued (one scratch set beside the fp32 set: 2 x 96 registers a thread)")
          for c in clusters),
        narrow.variant(
            f"bn{NARROW_BN}_{PROMOTE_SUFFIX}_one_set",
            f"bn{NARROW_BN}_{PROMOTE_SUFFIX}'s {narrow.BM}x{narrow.bn} tiles with one scratch set: each k step's "
            f"{operands} sum waited for and promoted before the next is issued (the control of "
            f"bn{THREE_STRIPS_BN}_{PROMOTE_SUFFIX})"),
    )


PROMOTE_SUFFIX = "promote"
# The promoted class's splits (promoted_ladder): of its 128x128 tiles at least 4 ways and of its 128x64 ones (the
# heuristic's bar: a split must cut each SM's work 4-fold against whole tiles), of its 64x128 ones from 2 (half the
# rows: 2 slices cut it 4-fold against whole 128x128 tiles).
PROMOTED_SPLITS = {"": (4, 8, 16), f"bm{SHORT_BM}": WS_BM64_SPLITS, f"bn{NARROWEST_BN}": (4, 8)}
# ... and its 64x64 tiles with two k groups (each promotes its own k steps), whole and split as the other class's
PROMOTED_SMALL = f"bm{SHORT_BM}_bn{NARROWEST_BN}_{K_GROUPS_SUFFIX}"
# ... and the twin of its 64x128 tiles (TileBuilds.twins): two consumer warpgroups taking alternate k steps, each
# promoting its own, without a cluster
PROMOTED_TWIN = f"bm{SHORT_BM}_{K_GROUPS_SUFFIX}"


def bytes_choose(base: WsConfig, variants: tuple[Variant, ...], **tile_options
                 ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of an 8-bit rung (its fast class for FP8): the split-K heuristic over its tile builds
    (configs.persistent_split_k, with `tile_options`); their twins that compute Cᵀ = Bᵀ·Aᵀ where B's transpose would
    cost enough (configs.swapped_problem), of the 128x64 tiles where those make more work items in one wave
    (narrow_twins_first), but not where the twin's work items would fill at most half the SMs over a long K and the
    tiles' own pick makes more (configs.twin_bounds, by items); where the pick leaves most SMs idle, the 64x64
    splits (small_splits_first); and at a few columns and a K of 8-32 k steps the whole 64x64 tiles where they make a
    quarter to half a wave (whole_small_first)."""
    tiles = persistent_split_k(*base.tile(), builds=ws_tile_builds(base, variants), few_columns=NARROWEST_BN,
                               **tile_options)
    twins = twin_bounds(narrow_twins_first(swapped_problem(tiles, swapped_names(variants),
                                                           deep_splits(variants, SWAP_KEEP_SLICES)), base, variants),
                        tiles, tile_records(variants), base.bk, by_items=True)
    twins = half_empty_twins(twins, tile_records(variants), small_split_slices(base, variants), base.bk,
                             SMALL_SPLIT_BYTES_STEPS)
    return whole_small_first(small_splits_first(twins, base, variants), base, variants, FEW_COLUMNS_WHOLE_SMALL)


def promoted_ladder(base: WsConfig) -> tuple[WsConfig, dict[str, WsVariant]]:
    """The ladder of a rung's promoted class (FP8: cuBLASLt's default class), whose record is the rung's 128x128 tiles
    with promoted sums (bn128_promote, promoted_variants: three accumulator sets fit a consumer there): that record,
    and the builds that move one axis of it, each named <tile>_promote[_splitk<S>] and keyed by the name that
    configs.persistent_split_k knows it by in a rung whose record this is: its splits (splitk<S>), its 64x128 tiles
    (bm64: one consumer warpgroup, which alternates its own two scratch sets) whole and split without a cluster
    (bm64_splitk<S>), its 128x64 tiles without a cluster (bn64, for an N of 64 or less) whole and split
    (PROMOTED_SPLITS), its 64x64 tiles with two consumer warpgroups taking alternate k steps (bm64_bn64_kg2, each
    warpgroup promoting its own steps) whole and split (WS_SMALL_SPLITS: a deep K against a few tiles), and its own
    tiles without a cluster (cluster1). And the twins of the record and of those builds of 128 rows that
    SWAP_TWINS_BYTES names (swap_<build>, keyed swap[_<key>]), which compute Cᵀ = Bᵀ·Aᵀ as the other class's twins
    do, B read as it is. Every slice and tile promotes each k step's sum, so each build errs as bn128_promote does."""
    own = replace(base, bn=NARROW_BN, promote=True)
    moved = {"": (f"bn{NARROW_BN}", own), f"bm{SHORT_BM}": (f"bm{SHORT_BM}_bn{NARROW_BN}", replace(own, bm=SHORT_BM)),
             f"bn{NARROWEST_BN}": (f"bn{NARROWEST_BN}", replace(own, bn=NARROWEST_BN, cluster=1)),
             PROMOTED_SMALL: (PROMOTED_SMALL, k_group_tile(own)),
             PROMOTED_TWIN: (PROMOTED_TWIN.replace(f"bm{SHORT_BM}", f"bm{SHORT_BM}_bn{NARROW_BN}"),
                             k_group_tile(own, NARROW_BN))}
    splits = {**PROMOTED_SPLITS, PROMOTED_SMALL: WS_SMALL_SPLITS, PROMOTED_TWIN: ()}
    ladder = {}
    for key, (tile, c) in moved.items():
        for s in (1, *splits[key]):
            if key == "" and s == 1:
                continue  # the record itself: bn128_promote
            config = replace(c, split_k=s, cluster=1 if key and s > 1 else c.cluster)
            rows = (f"{config.BM}x{config.bn} tiles" + ("" if config.cluster > 1 else " without a cluster")
                    + (", two consumer warpgroups taking alternate k steps" if config.k_groups > 1 else ""))
            split = (f", each tile's k steps in {s} slices summed in slice order through a workspace (deterministic)"
                     if s > 1 else "")
            ladder["_".join(p for p in (key, f"splitk{s}" if s > 1 else "") if p)] = config.variant(
                "_".join(p for p in (tile, PROMOTE_SUFFIX, f"splitk{s}" if s > 1 else "") if p),
                f"{rows} with each k step's sum promoted into fp32 accumulators{split}: the promoted class's "
                f"{'splits' if s > 1 else 'tiles'} for problems whose 128x128 tiles leave SMs idle")
    ladder["cluster1"] = replace(own, cluster=1).variant(
        f"bn{NARROW_BN}_{PROMOTE_SUFFIX}_cluster1",
        f"{own.BM}x{own.bn} tiles without a cluster with each k step's sum promoted into fp32 accumulators: every CTA "
        "loads its own Bt tile (bn128_promote's clusters of 2 multicast it on alternate k steps)")
    builds = {"": own.variant(f"bn{NARROW_BN}_{PROMOTE_SUFFIX}"), **ladder}
    for key, v in builds.items():
        if key not in SWAP_TWINS_BYTES or v.config.BM != own.BM:
            continue
        c = swap_twin_config(v.config)
        ladder[swap_twin_name(key)] = c.variant(
            f"{SWAP_PREFIX}_{v.name}",
            f"Cᵀ = Bᵀ·Aᵀ with B's rows read into registers as wgmma's A (no transpose of B) and each k step's sum "
            f"promoted into fp32 accumulators: tiles of {c.BM} columns x {c.bn} rows of C"
            + (f", K split {c.split_k} ways" if c.split_k > 1 else "") + f"; the twin of {v.name}")
    return own, ladder


def promoted_class_choose(base: WsConfig) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung's promoted class (Method.class_choose): the split-K heuristic of the rung's other class
    (configs.persistent_split_k: whole tiles by the waves they make, a split where the tiles leave most SMs idle, 128x64
    tiles where they span N; its own tiles without a cluster up to PROMOTED_OWN_TILES_STEPS k steps an SM where K is
    whole k steps, on a card of less memory bandwidth an SM over a short K only (PROMOTED_SLOW_MEMORY; the twins' up to
    PROMOTED_OWN_TILES_WAVES waves, and where K is not, within PART_K_TWIN_WAVES: configs.PART_K_CLUSTERS), 128x64 tiles
    against 64x128 ones over at most PROMOTED_SHORT_TILE_STEPS k steps) over promoted_ladder's builds, as if their
    record were the rung's; where its pick leaves most SMs idle, the 64x64 splits (small_splits_first), at a few columns
    the 64x64 tiles of the most slices in one wave (few_columns_halves), and over a K of 16-32 k steps the whole 64x64
    tiles in place of a split (whole_small_first); where its pick is its 128x128 tiles in clusters, its 128x192 ones
    in clusters (one scratch set) where the busiest SM's work allows (configs.wider_promoted_tiles). Before those, as
    in the other class: the twins that compute Cᵀ = Bᵀ·Aᵀ where the transpose of B would cost enough
    (configs.swapped_problem, at the class's bar PROMOTED_SWAP_TRANSPOSE_SHARE; for Cᵀ's problem no 128x64 tiles past
    a wave, configs.narrow_within_one_wave), of the 128x64 tiles where those make more work items in one wave
    (narrow_twins_first), but not at a few columns nor against 64-row tiles over a long K (configs.twin_bounds). After
    them all, on a card of less memory bandwidth an SM, the twins in 128x128 tiles without a cluster in place of its
    own 128-row tiles where their busiest SM's work is at most theirs with B's transpose (configs.slow_memory_twins)."""
    own, ladder = promoted_ladder(base)
    as_known = tuple(replace(v, name=key) for key, v in ladder.items())
    builds = ws_tile_builds(own, as_known)
    halves = {**({1: builds.small[0]} if builds.small else {}),
              **{s: name for name, (_, _, s) in builds.small_splits.items()}}
    options = dict(builds=builds, few_columns=NARROWEST_BN, short_tile_steps=PROMOTED_SHORT_TILE_STEPS,
                   twin_fill=PROMOTED_TWIN_FILL)
    # the own tiles' cluster by every bar of theirs, the twins' (Cᵀ's problem) by their waves and a part K
    tiles = persistent_split_k(*own.tile(), **options, own_tiles=PROMOTED_OWN_TILES)
    twin_tiles = persistent_split_k(*own.tile(), **options, own_tiles=PROMOTED_TWIN_TILES)
    records = tile_records(as_known)
    twins = twin_bounds(narrow_twins_first(swapped_problem(
        tiles, swapped_names(as_known), deep_splits(as_known, SWAP_KEEP_SLICES), share=PROMOTED_SWAP_TRANSPOSE_SHARE,
        transposed_rest=narrow_within_one_wave(twin_tiles, records, NARROWEST_BN)), own, as_known),
        tiles, records, own.bk, few_columns=NARROWEST_BN)
    rest = whole_small_first(few_columns_halves(small_splits_first(twins, own, as_known), records, halves, own.bk),
                             own, as_known)
    names = {DEFAULT: f"bn{NARROW_BN}_{PROMOTE_SUFFIX}", **{key: v.name for key, v in ladder.items()}}
    min_saved = own.streamk_min_saved if own.streamk else None
    wide = f"bn{THREE_STRIPS_BN}_{PROMOTE_SUFFIX}_cluster{own.cluster}"
    wider = wider_promoted_tiles(
        within_class(rest, names, "the promoted class beside the pick (sums promoted into fp32 every k step, "
                                  "cuBLASLt's promoted line's)"),
        names[DEFAULT], wide, own.bk, own.cluster, min_saved, own.BM, NARROW_BN, THREE_STRIPS_BN)
    own_tiles = {names[DEFAULT]: (own.BM, NARROW_BN, own.cluster, 1.0),
                 f"{names[DEFAULT]}_cluster1": (own.BM, NARROW_BN, 1, 1.0),
                 wide: (own.BM, THREE_STRIPS_BN, own.cluster, WIDER_PROMOTED_RATE)}
    return slow_memory_twins(wider, f"swap_{names[DEFAULT]}_cluster1", own_tiles, own.bk, min_saved,
                             PROMOTED_SLOW_MEMORY, (own.BM, NARROW_BN))


def a_registers_variant(base: WsConfig) -> Variant:
    """`promote` with A from registers (WGMMA_WS_A_REGS, the e4m3 operands): each k step reads the warpgroup's A
    from shared memory once, into 16 registers per thread, and its four column quarters' wgmmas take A from there;
    `promote`'s quarters each read it again, four times an unpromoted step's A bytes."""
    return replace(base, promote=True, a_registers=True).variant(
        "promote_rs",
        f"promote's {base.BM}x{base.bn} tiles and column quarters, with each k step's A read from shared memory into "
        "registers once (ldmatrix) and given to the four quarters' wgmmas from there (promote's quarters each read "
        "it again)")


def promote_chunk_variants(base: WsConfig, operands: str, steps: int = 2) -> tuple[Variant, ...]:
    """`promote` in chunks of `steps` k steps (WGMMA_WS_PROMOTE_CHUNK): the column quarters of a chunk's steps follow
    one another with a single final wait, so the wait that empties a consumer's wgmma pipeline comes once per chunk.
    `promote_chunk{steps}` still promotes every step, so its sums are `promote`'s bit for bit; `promote{steps}` lets
    each sum run the chunk (WGMMA_WS_PROMOTE_EVERY), so that the quarters' waits and the fp32 adds come once per
    chunk too, for some of the accuracy."""
    chunked = replace(base, promote=True, promote_chunk=steps)
    held = f"{steps} stages held at a time"
    return (
        chunked.variant(
            f"promote_chunk{steps}",
            f"promote's {base.BM}x{base.bn} tiles and column quarters, each {operands} sum promoted every k step, "
            f"the quarters of {steps} steps one after another with one final wait per {steps} steps; {held}"),
        replace(chunked, promote_every=steps).variant(
            f"promote{steps}",
            f"promote's {base.BM}x{base.bn} tiles and column quarters, each {operands} sum promoted every {steps} "
            f"k steps ({steps * base.bk} k) instead of every step: the quarters' waits and adds once per {steps} "
            f"steps; {held}"),
    )


FP8_BLOCK_SPLITS = (2, 4, 8)  # its split-K builds (slices of whole k steps, so of whole scale blocks)


def fp8_block_variants(base: WsConfig) -> tuple[Variant, ...]:
    """The configurations of the block-scaled FP8 rung (kernels/17_wgmma_fp8_block.cu), whose every build has promoted
    sums in tiles of 128 columns (one column block of B's scales; its record, WS_FP8_BLOCK, 128x128): the cluster, the
    stream-K tail, split-K for too few tiles, and 64x128 tiles (one consumer warpgroup, its two scratch sets taking
    turns, as the per-tensor promoted class's bm64 builds) whole and split, without a cluster, for the small squares
    that 128x128 tiles leave most SMs short of (the heuristic, fp8_block_choose, picks the whole ones). A k step is one
    scale block, and slices and stream-K pieces are whole k steps, so every one of them weights its partials itself."""
    short = replace(base, bm=SHORT_BM, cluster=1)
    return (
        replace(base, cluster=1).variant(
            "cluster1",
            "no cluster: every CTA loads its own Bt tile (the 2-CTA clusters multicast it on alternate k steps)"),
        replace(base, streamk=False).variant(
            "no_streamk",
            "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would pay"),
        replace(base, cluster=1, streamk=False).variant(
            "cluster1_no_streamk",
            "no cluster and no stream-K tail: every CTA loads its own Bt tile, and the last wave is whole tiles"),
        *(replace(base, split_k=s).variant(
            f"splitk{s}",
            f"split-K: each tile's k steps (scale blocks) in {s} slices on {s} clusters, summed in slice order "
            "through a workspace (deterministic); no stream-K tail. For too few tiles or deep K")
          for s in FP8_BLOCK_SPLITS),
        short.variant(f"bm{SHORT_BM}", f"{SHORT_BM}x{base.bn} tiles without a cluster: one consumer warpgroup "
                                       "alternating two scratch sets, twice the tiles of the record's"),
        *(replace(short, split_k=s).variant(
            f"bm{SHORT_BM}_splitk{s}",
            f"{SHORT_BM}x{base.bn} tiles without a cluster, each tile's k steps in {s} slices summed in slice order "
            "through a workspace (deterministic)")
          for s in FP8_BLOCK_SPLITS),
    )


def fp8_block_choose(base: WsConfig) -> Callable[[object, tuple[str, ...]], Choice]:
    """The block-scaled FP8 rung's heuristic: configs.persistent_split_k over its own 128x128 tiles (without a cluster
    or a stream-K tail up to PROMOTED_OWN_TILES_WAVES waves, configs.BLOCK_OWN_TILES; split K where the tiles leave
    SMs idle and K is deep), and its 64x128 tiles (bm64) in place of a whole-tile pick where the 128x128 tiles fill at
    most half the SMs and the 64x128 ones fit one wave: twice the tiles in flight on the same bytes of B. The 2-CTA
    clusters run without the stream-K tail (configs.BLOCK_CLUSTERS) wherever they run the tiles. On an H100
    (x cuBLASLt's block-scaled line, one run; results/reference/NVIDIA_H100/few-rows-fp8-block/fp8-block-builds.txt):
    512^3 1.21 against 1.01 for cluster1, 1024^3 1.10 against 0.99; past half a wave it lost (1536^3, 288 tiles in
    three waves: 0.95 against 1.01), and its splits lost to the whole tiles at every square (0.15-0.98)."""
    tiles = persistent_split_k(*base.tile(), own_tiles=BLOCK_OWN_TILES)
    short = f"bm{SHORT_BM}"

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = tiles(problem, variants)
        own = cdiv(problem.m, base.BM) * cdiv(problem.n, base.bn)
        halves = cdiv(problem.m, SHORT_BM) * cdiv(problem.n, base.bn)
        if (short in variants and picked.variant in (DEFAULT, BLOCK_OWN_TILES.variant)
                and 2 * own <= problem.sm_count):  # (then the 64x128 tiles, at most twice as many, fit one wave)
            return Choice(short, f"{own} tiles of {base.BM}x{base.bn} fill at most half of {problem.sm_count} SMs "
                                 f"and no split pays: {halves} tiles of {SHORT_BM}x{base.bn} without a cluster, in one "
                                 "wave")
        if picked.variant == DEFAULT and BLOCK_CLUSTERS.variant in variants:
            return Choice(BLOCK_CLUSTERS.variant, f"{picked.reason}; {BLOCK_CLUSTERS.variant}: {BLOCK_CLUSTERS.reason}")
        return picked
    return choose


# The 3xTF32 rung (kernels/warp_specialized/operands_3xtf32.cuh): a pre-pass splits each fp32 operand into a big and
# a small tf32 part and writes A3 = [A_big | A_small] (m x 2 kp) and BT3 = [B_smallᵀ | B_bigᵀ] (n x 2 kp), each block
# of k padded with zeros to kp, a whole number of the GEMM's k steps (32 floats); wgmma_tf32's GEMM runs on them
# over K' = 3 kp, its third block reading the big parts again. These mirror the kernel's wgmma_3xtf32::padded_k,
# stored_k and prepass_blocks (checked by tests/test_3xtf32.py); the kernel works out K' itself.
SPLIT_K_ALIGN = WS_TF32.bk  # floats: one k step of the GEMM
SPLIT_TILE = 32  # the pre-pass's 32 x 32 tiles, blocks of 32 x 8 threads


def split_tf32_kp(k: int) -> int:
    """A block of the 3xTF32 rung's k: k rounded up to a whole number of the GEMM's k steps."""
    return cdiv(k, SPLIT_K_ALIGN) * SPLIT_K_ALIGN


def split_tf32_columns(k: int) -> int:
    """Columns of the 3xTF32 rung's split operands: two blocks of split_tf32_kp(k)."""
    return 2 * split_tf32_kp(k)


def split_tf32_prepass_launch(p: Problem) -> Launch:
    """One block per 32 x 32 tile: A's (m x kp) then B's (kp x n); at least one block. A programmatic dependent: it
    waits for the previous GEMM, which reads its outputs, before writing them."""
    kp = split_tf32_kp(p.k)
    tiles = cdiv(p.m, SPLIT_TILE) * cdiv(kp, SPLIT_TILE) + cdiv(kp, SPLIT_TILE) * cdiv(p.n, SPLIT_TILE)
    return Launch((max(1, tiles), 1, 1), (SPLIT_TILE, 8, 1), dependent=True)


# kernels/warp_specialized/transpose_tf32.cuh: a block per 64 x 64 tile of B (tf32_transpose::TILE, THREADS; the
# byte transpose of the int8 and FP8 rungs has its own, launch/operands.py)
TF32_TRANSPOSE_TILE = 64
TF32_TRANSPOSE_THREADS = 256


def transpose_tf32_launch(p: Problem) -> Launch:
    """One block per 64 x 64 tile of B (k x n); at least one. Launched in stream order, so it starts once the
    previous GEMM, which reads Bt, has ended; the GEMM after it is its programmatic dependent, launched under it.
    (Launched as a programmatic dependent of the previous GEMM too, the rung ran slower: 0.62 against 0.80x cuBLAS
    at 512^3 on an H200, docs/tensor-cores.md.)"""
    return Launch((max(1, cdiv(p.n, TF32_TRANSPOSE_TILE)), max(1, cdiv(p.k, TF32_TRANSPOSE_TILE)), 1),
                  (TF32_TRANSPOSE_THREADS, 1, 1))


# wgmma_tf32's pre-pass: Bt (n x k) from B, on every launch (its builds that write Bt in shared memory read B and
# skip it: launchers.tensor_map_kernel).
TRANSPOSE_TF32_PREPASS = Prepass("wgmma_tf32_transpose", (PrepassOutput("BT", lambda p: (p.n, p.k)),),
                                 transpose_tf32_launch, reads=("B",))


SPLIT_TF32_PREPASS = Prepass(
    "wgmma_3xtf32_split",
    (PrepassOutput("A3", lambda p: (p.m, split_tf32_columns(p.k))),
     PrepassOutput("BT3", lambda p: (p.n, split_tf32_columns(p.k)))),
    split_tf32_prepass_launch)


# kernels/warp_specialized/operands_3xfp16.cuh: a block of 32 x 32 threads (wgmma_3xfp16::COLUMNS, ROWS) per 32
# columns of B or per 1024 / split_fp16_row_threads(k) rows of A, each thread of a row holding SPLIT_FP16_HELD of its
# elements (wgmma_3xfp16::HELD); the GEMM's k step (WS_16BIT.bk, 64 halves) pads each block of k.
SPLIT_FP16_ROWS, SPLIT_FP16_COLUMNS, SPLIT_FP16_HELD = 32, 32, 8


def split_fp16_row_threads(k: int) -> int:
    """The threads that split a row of A (wgmma_3xfp16::row_threads): the fewest powers of two from a warp that hold
    its k elements at SPLIT_FP16_HELD each, all of a block's at most."""
    threads = SPLIT_FP16_COLUMNS
    while threads < SPLIT_FP16_ROWS * SPLIT_FP16_COLUMNS and threads * SPLIT_FP16_HELD < k:
        threads *= 2
    return threads


def split_fp16_kp(k: int) -> int:
    """k rounded up to the 16-bit GEMM's k step (wgmma_3xfp16::padded_k)."""
    return cdiv(k, WS_16BIT.bk) * WS_16BIT.bk


def split_fp16_prepass_launch(p: Problem) -> Launch:
    """A block per 32 columns of B, then per 1024 / split_fp16_row_threads(k) rows of A; at least one. A
    programmatic dependent: it waits for the previous GEMM, which reads its outputs, before writing them."""
    rows = SPLIT_FP16_ROWS * SPLIT_FP16_COLUMNS // split_fp16_row_threads(p.k)
    blocks = cdiv(p.n, SPLIT_FP16_COLUMNS) + cdiv(p.m, rows)
    return Launch((max(1, blocks), 1, 1), (SPLIT_FP16_COLUMNS, SPLIT_FP16_ROWS, 1), dependent=True)


# 3xFP16's pre-pass: fp32 A and B scaled per row and column and split into fp16 parts, A3 (m x 2 kp, K-major) and
# B3 (2 kp x n, N-major as the 16-bit rung reads B), and the inverse scales S3 (m + n floats) its epilogue applies.
SPLIT_FP16_PREPASS = Prepass(
    "wgmma_3xfp16_split",
    (PrepassOutput("A3", lambda p: (p.m, 2 * split_fp16_kp(p.k)), storage="float16"),
     PrepassOutput("B3", lambda p: (2 * split_fp16_kp(p.k), p.n), storage="float16"),
     PrepassOutput("S3", lambda p: (1, p.m + p.n))),
    split_fp16_prepass_launch,
    scales="S3")

# The operands a rung reads N-major as B is stored, in 64-column strips (the 16-bit rungs' B and 3xFP16's B3); every
# other operand is a K-major Bᵀ.
N_MAJOR_B = ("B", "B3")


def ws_rung(name: str, description: str, dtypes: tuple[str, ...], source: str, template: str, config: WsConfig,
            operands: tuple[str, str], **fields) -> WsMethod:
    """A rung on the warp-specialised pipeline (kernels 12-17): a persistent grid of CTAs over the tiles of its
    record `config` (default build; its variants come in `fields`), fed by TMA in 128-byte rows of config.bk
    elements, built for sm_90a. `operands` names the tensor maps' operands: A (or a pre-pass's A3), then B, read in
    64-column strips, or a K-major Bᵀ (BT, BT3) read in 128-row boxes like A. `fields` are the rest of the Method's
    (variants, choose, requires, prepass, ...)."""
    def maps(c: WsConfig) -> tuple[TensorMap, TensorMap]:
        a, b = operands
        if c.swap_ab:  # B's rows in boxes of bk rows x 128 bytes as wgmma's A, A's rows as its K-major B
            return TensorMap("B", c.bk, c.bk), TensorMap(a, c.bt_box_rows, c.bk)
        if c.bt_smem:  # B as it is, in 32-column strips of bk rows (128 bytes of 32-bit elements)
            return TensorMap(a, c.BM, c.bk), TensorMap("B", c.bk, 32)
        return (TensorMap(a, c.BM, c.bk),
                TensorMap(b, c.bk, 64) if b in N_MAJOR_B else TensorMap(b, c.bt_box_rows, c.bk))

    # A build of other tile rows than the default's reads A in boxes of its own rows, and one of tiles narrower
    # than a box of Bᵀ reads Bᵀ in boxes of its own columns. Every build has the family's launch bound
    # (WsConfig.LAUNCH_THREADS).
    own = maps(config)
    fields["variants"] = tuple(
        replace(v, tensor_maps=maps(v.config)) if isinstance(v, WsVariant) and maps(v.config) != own else v
        for v in fields.get("variants", ()))
    return WsMethod(name, description, dtypes, backend=PYCUDA, source=source, template=template, launch=config.launch,
                    tile=config.tile, tensor_maps=own, launch_bounds=(WsConfig.LAUNCH_THREADS, 1), config=config,
                    **{"requires": HOPPER, **fields})
