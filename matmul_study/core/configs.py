"""Which configuration of a method runs a problem: the per-problem heuristic, kept explainable.

A method's configurations are its registry variants (tile schedule, cluster, split-K, ...). A heuristic is a
function of the problem alone (shape, dtype, the device's SM count) that names one variant and says why, in a
sentence the report prints beside the result ("why this tile" is always answerable). The pipeline runs the choice
unless the config forces a variant or sweeps them all (`variants:` in config.yaml); a sweep measures every
configuration, and the report's regret table compares the heuristic's pick with the best one measured.

job_problem builds the Problem a pick is made for and a kernel is launched with; choose makes the pick. The grid,
the job and the regret table all go through these two, so that they cannot disagree on what the pick was.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol

from matmul_study.core.specs import TMA_ALIGNMENT, Problem, cdiv, pitch_elements

if TYPE_CHECKING:
    from matmul_study.core.dtypes import DType
    from matmul_study.core.geometry import TallTiles

DEFAULT = "default"
ONE_CONFIGURATION = "the method has one configuration"


@dataclass(frozen=True)
class Choice:
    variant: str  # "default" or the name of one of the method's variants
    reason: str


def registered_splits(variants: tuple[str, ...], build: str = "") -> list[int]:
    """The S of the split-K variants among `variants`, ascending: named splitk<S>, or <build>_splitk<S> (the splits of
    another build, e.g. bn128)."""
    prefix = f"{build}_splitk" if build else "splitk"
    return sorted(int(v.removeprefix(prefix)) for v in variants
                  if v.startswith(prefix) and v.removeprefix(prefix).isdigit())


# Each whole-tile build's rate per SM against a 128x256 tile's, where every build runs whole waves: 2048^3 on an
# H200, the mean of fp16, tf32 and FP8 (x cuBLAS in one run): 128x128 0.996, 0.980, 1.010; 64x256 0.972, 0.933,
# 0.971 (int8 0.971); 64x128 0.880, 0.775, 0.869. Fewer rows or columns load more bytes per product. 128x192 (no
# cluster), from 1536^3, where both it and the 2-CTA clusters of 128x256 tiles make one wave: 0.98 in fp16, 0.94 in
# FP8 and tf32, 0.93 in int8 (tiles-bn192-*.txt); any rate from 0.92 to 0.99 makes the same picks on the sweeps.
TILE_RATES = {(128, 256): 1.0, (128, 192): 0.95, (128, 128): 0.99, (64, 256): 0.96, (64, 128): 0.84}
# A dtype whose own rates lie far from that mean: tf32's 64-row tiles run 3-8 % below it. (fp16's and FP8's own rates,
# within 1-4 % of the mean, would move FP8's 2048^3 pick from cluster1, 1.003 x cuBLASLt, to 128x128 tiles, 0.965.)
TILE_RATES_BY_DTYPE = {"tf32": {(128, 256): 1.0, (128, 192): 0.94, (128, 128): 0.980, (64, 256): 0.933,
                                (64, 128): 0.775}}
# Past one wave of default tiles, the smaller tiles' rates, where each SM runs several tiles in turn: fitted to every
# build at 19 shapes of 2-9 waves (2304^3-6144^3 and oblongs) in five dtypes on an H200 (tiles-waves-<dtype>.txt).
# Where they make the same waves as 128x256 tiles, fp16 4096^3: 128x128 0.928 against 1.001, 64x256 0.919, 64x128
# 0.786 (tiles-waves-bm64-bn128-float16.txt); 128x192 makes 5.3 waves to 3.9 there, and ran at 0.96-0.97 of the
# default where the quantisation is alike. More tiles a SM load more bytes of A and B a product and fill and drain
# the pipeline more often. Any rate of 128x128 from 0.92 to 0.95 and of 128x192 from 0.96 to 0.98 makes the same picks
# on those sweeps. On 14 shapes measured after the fit (tiles-waves-more-*.txt) the picks lose 0.1-0.8 % on average
# per dtype to the best build measured, where the default build lost 2.4-9.6 % (cluster1 joined the candidates
# after them: see persistent_split_k).
TILE_RATES_PAST_A_WAVE = {(128, 256): 1.0, (128, 192): 0.97, (128, 128): 0.93, (64, 256): 0.92, (64, 128): 0.80}
# The stream-K split of a last partial wave (kernels/warp_specialized/tile_schedule.cuh) costs its launch about as
# much as this many k steps of a default tile: its pieces' fix-up in C. Of 8, 16, 24, 32 and 48, the one whose picks
# lose least to the best build of the committed sweeps (see persistent_split_k).
STREAMK_FIXUP_STEPS = 16
# Of splits that cut each SM's work alike, the largest tile whose slices keep this many k steps per DEEP_SLICE_AREA
# of its area (a 128x256 tile twice as many, a 64x128 one half), else the smallest (persistent_split_k). A slice of
# few k steps spends its time filling and draining the pipeline, and a larger tile's partials are more bytes to write
# and read; with enough steps its higher rate counts for more. At 512x512x16384 on an H200 (x cuBLAS;
# tiles-bn128-splits-*.txt), 128x256 tiles split 16 ways, 128x128 split 8 and 64x128 split 4: fp16 0.71, 0.85, 0.68;
# tf32 0.92, 0.95, 0.79; int8 0.85, 1.10, 1.09; at 256x1024x8192 fp16 0.83, 1.11, 0.94; 384x384x8192 fp16 0.63, 0.87,
# 0.76. tf32's k step holds half the products of fp16's (32 k of 4 bytes against 64 of 2), and int8's twice them at
# half the cost each, and both need twice the steps: tf32 at 16 k steps a slice of 128x256 tiles 0.69 against 0.92 for
# 64x128 ones (384x384x8192, tiles-equal-cuts-tf32.txt); int8 at 16 a slice of 128x128 tiles 1.08 against 1.19
# (384x384x16384), 1.04 against 1.20 at 384x384x8192 (8).
DEEP_SLICE_STEPS = 16
DEEP_SLICE_STEPS_BY_DTYPE = {"tf32": 32, "int8": 32}
DEEP_SLICE_AREA = 128 * 128
# Over at most this many k steps, the whole-tile model also weighs 128x64 tiles without a cluster (the few_columns
# builds), at the rate of 64x128 ones (the same area and bytes a k step), and takes them on equal work: two consumer
# warpgroups of 64x64 where the 64-row tile has one of 64x128, so the pipeline fills and the epilogue drains in half
# the time, which short tiles spend most of theirs on. Over more steps the wider wgmma wins. On an H200 (x cuBLAS;
# small-problems/tiles-squares-bn64.txt, tiles-int8.txt), 128x64 against 64x128: fp16 512^3 (8 k steps) 1.02
# against 0.91, 768^3 1.00 / 0.83, 1024^3 1.08 / 0.90, 1536^3 0.74 / 0.70; tf32 768^3 0.94 / 0.82, 1024^3 1.04 /
# 0.93; int8 1024^3 1.27 / 1.15, 1024x1024x8192 (64 k steps) 1.38 / 1.23; but fp16 1024x1024x8192 (128 k steps)
# 0.81 / 0.88 and tf32 (256) 0.75 / 0.87.
SHORT_TILE_STEPS = 64
# A 64-row tile's builds with two consumer warpgroups taking alternate k steps (k_groups 2, no cluster; the tile's
# twin, TileBuilds.twins) against its one warpgroup in clusters of 2, x the vendor on an H200, in one process
# (small-problems/k-groups-explore.txt, tiles-k-groups-*.txt): 1024x1024x8192 fp16 0.95 against 0.88, tf32 0.97 /
# 0.87, FP8 1.04 / 0.89, int8 1.40 / 1.18; 768x768x12288 fp16 0.77 / 0.69; 1024^3 fp16 1.06 / 0.91; 512^3 fp16 0.95 /
# 0.90. Faster at every shape of two rows of tiles or more measured, in every dtype; over one row not (16x6144x4096
# fp16 0.64 against 0.72, 65x4096x4096 0.58 against 0.69): there the pair's second CTA, whose rows lie (almost) all
# past M, loads half of B for the first. So the whole-tile model weighs the tile, and where it picks it over two rows
# of tiles or more, the twin runs it. Against 128x64 tiles (two warpgroups of 64x64) the twin wins over more k steps
# than the single warpgroup did: at 56 and 64 k steps, 1024x1024x8192 in 8-bit int8 1.45 against 1.24 and FP8 1.04
# against 0.98, fp16 1024x1024x4096 0.97 against 0.73, tf32 1024x1024x2048 1.02 against 0.99 and 1792^3 0.95 against
# 0.94; but 1024^3 (8 k steps) int8 1.21 against 1.26, fp16 (16) 1.06 against 1.09, and tf32 1000x800x1200 (38) 1.20
# against 1.37. So where the twin runs the 64x128 tiles, the whole-tile model weighs 128x64 ones over at most this
# many k steps (SHORT_TILE_STEPS where the single warpgroup does).
TWIN_SHORT_TILE_STEPS = 48
# FP8's promoted 64x128 tiles (bm64_bn128_promote) keep two k steps in flight in their one consumer warpgroup (two
# scratch sets taking turns), as a twin's two warpgroups do, and against the promoted 128x64 tiles they win over as
# many k steps (x cuBLASLt's promoted line, an H200; small-problems/fp8-promoted-ladder.txt): 1024x1024x8192 (64 k
# steps) 0.90 against 0.84, but 128x4096x4096 (32) 0.96 against 0.99, 1024^3 (8) 0.96 against 1.08.
PROMOTED_SHORT_TILE_STEPS = TWIN_SHORT_TILE_STEPS
# FP8's promoted 64x128 tiles have a twin too (bm64_bn128_kg2_promote: two consumer warpgroups, each promoting its own
# k steps, without a cluster), which wins only where its tiles leave SMs idle: every CTA loads all of its B tile,
# where the single warpgroup's clusters of 2 multicast it, and with most SMs loading, that L2 traffic shows. x
# cuBLASLt's promoted line on an H200, twin against one warpgroup (small-problems/promoted-twin-64x128-fp8.txt, the
# twin's tiles in brackets): 768x768x12288 (72) 1.04 / 0.96, 768x1024x8192 (96) 1.14 / 1.07, 1024x768x12288 (96)
# 0.98 / 0.89, 1536x512x16384 (96) 0.98 / 0.90, 896x896x8192 (98) 1.09 / 1.02; but 1024x1024x8192 (128) 0.88 / 0.92,
# 2048x512x16384 (128) 0.89 / 0.90, 1536x768x12288 (144) 0.78 / 0.84, 384x4096x14336 (192) 0.77 / 0.87. So the
# promoted class runs the twin where its tiles number at most this share of the SMs.
PROMOTED_TWIN_FILL = 0.75
# 64x64 tiles with two k groups, over short K (SHORT_TILE_STEPS) where they make one wave and M holds two rows of
# them: their rate against 128x256 tiles' in the whole-tile model. At 512^3 (64 tiles, 8 k steps in fp16) on an H200
# against 128x64 tiles (32): fp16 1.17 against 1.00 x cuBLAS, tf32 0.86 / 0.80, FP8 1.03 / 0.93, int8 1.04 / 0.95
# (small-problems/tiles-k-groups-*.txt): half the work per SM in 0.86-0.93 of the time, 0.46-0.49 of the 128x256
# rate. At that rate they win wherever both make one wave (256^3-704^3 in every dtype: 1.00-1.41 against 0.65-1.32),
# and lose where they make two and 128x64 tiles one (768^3 fp16 0.79 against 1.00, 1024^3 0.86 against 1.09). At 65
# rows, whose second row of tiles holds one row, fp16 ran at 0.50 against 0.69 for 64x128 tiles in pairs.
SMALL_TILE_RATE = 0.48
# Where the split the model takes makes work items for at most a quarter of the SMs (a few 64x128 tiles against a
# deep K: their deepest split, 16 slices, makes 16 or 32), the 64x64 tiles with two k groups split as many ways as
# keep their items within half the SMs (TileBuilds.small_splits). On an H200 (x the vendor; small-problems/
# tiles-small-splits-*.txt), fp16 against the 64x128 split: 128x128x32768 16 slices of 4 tiles 0.97 against 0.87,
# 128x128x16384 0.99 / 0.93, 96x96x32768 0.88 / 0.79, 64x128x32768 32 slices of 2 tiles 1.01 / 0.81, 64x64x65536 32
# of 1 0.92 / 0.60; int8 1.13 / 1.05, 1.24 / 1.17, 1.08 / 1.00, 1.18 / 1.08, 1.28 / 0.95. Past half the SMs the
# slices lose again (128x128x32768 in 32 slices, 128 items: fp16 0.93, int8 1.08); at 64 items of 64x128 tiles
# (256x128x16384, 128x256x8192) those stay as fast or faster (fp16 1.07 against 1.03 and 1.06 against 1.07).
SMALL_SPLIT_FROM = 4  # the taken split's items at most the SMs / this
SMALL_SPLIT_ITEMS = 2  # the 64x64 slices' items at most the SMs / this
# tf32's 64x64 splits that write Bt in shared memory (TileBuilds.small_bt_splits) run there instead, as many slices
# as fit one wave: each CTA writes its own slice's Bt, so more of them share that work, and nothing is transposed
# before the kernel, which at these shapes costs as much as the product. On an H200 (x cuBLAS,
# small-problems/tiles-small-splits-smem-bt-*.txt), 32 slices writing Bt against the transposed 16: 128x128x32768
# 0.82 against 0.59, 128x128x16384 0.92 / 0.76, 96x96x32768 0.80 / 0.63, 128x128x8192 0.97 / 0.79, 64x192x16384
# 0.95 / 0.68; in 16 slices writing Bt 0.51, 0.66, 0.50, 0.81, 0.66.


@dataclass(frozen=True)
class TileBuilds:
    """A persistent tile kernel's whole-tile builds besides its default, and how its schedule deals them out."""
    tiles: dict[str, tuple[int, int, int]]  # build name -> (rows, columns) of its tiles and CTAs per cluster
    cluster: int  # CTAs per cluster along M: the schedule deals out tiles of `cluster` row tiles at once
    # split builds of other tiles than the rung's own rows: build name -> (rows, columns, slices of K)
    splits: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # the whole-tile builds split a last partial wave by k steps where that saves each cluster at least this many
    # (None: they never split it)
    streamk_min_saved: int | None = None
    # whole-tile build -> the build of the same tiles with two consumer warpgroups taking alternate k steps (no
    # cluster), taken in its place over two rows of tiles or more (TWIN_SHORT_TILE_STEPS)
    twins: dict[str, str] = field(default_factory=dict)
    # a build of 64x64 tiles with two k groups: (name, (rows, columns)), weighed over short K (SMALL_TILE_RATE)
    small: tuple[str, tuple[int, int]] | None = None
    # its split builds: build name -> (rows, columns, slices of K), for a deep K against a few tiles (SMALL_SPLIT_FROM)
    small_splits: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # the same splits writing Bt in shared memory (tf32), which run in their place where present
    small_bt_splits: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def persistent_waves(tiles: int, clusters: int, k_steps: int, min_saved: int | None) -> tuple[float, bool]:
    """The waves of `tiles` whole tiles of `k_steps` k steps each on a persistent grid of at most `clusters`
    clusters, as kernels/warp_specialized/tile_schedule.cuh deals them out, and whether it splits the last,
    partial wave by k steps (stream-K): where that saves each cluster at least `min_saved` k steps and gives
    every cluster some. Split, the tail's tiles count by their share of a wave; whole, as a wave. (The kernel's third
    condition, a flag for each CTA of the tail, at most MAX_SK_FLAGS = 1024, holds on any GPU of fewer than 1024 SMs:
    the tail is less than a wave.)"""
    tail = tiles % clusters if tiles > clusters else 0
    if (min_saved is not None and tail and (clusters - tail) * k_steps >= min_saved * clusters
            and tail * k_steps >= clusters):
        return tiles // clusters + tail / clusters, True
    return float(cdiv(tiles, clusters)), False


class ClusterBar(Protocol):
    """A rule by which a rung's own whole tiles keep their 2-CTA cluster (a bar of OwnTiles)."""

    def keeps_cluster(self, problem, tiles: int, k_steps: int, tile_k: int) -> str | None:
        """Why `tiles` tiles of `k_steps` k steps of `tile_k` keep their cluster on `problem`, or None."""


@dataclass(frozen=True)
class OwnTiles:
    """The build that runs a rung's own whole tiles better than its default build where persistent_split_k picks
    them (the same tiles without the 2-CTA cluster), and why (`choice`): where the tiles make at most `waves` waves
    (None: at any count), and none of `bars` keeps the cluster (ClusterBar); the first bar that keeps it gives the
    reason."""
    choice: Choice
    waves: float | None = None
    bars: tuple[ClusterBar, ...] = ()

    @property
    def variant(self) -> str:
        return self.choice.variant

    def within_waves(self, problem, tiles: int) -> bool:
        """Whether `tiles` of the default tiles make at most `waves` waves on `problem`'s SMs."""
        return self.waves is None or tiles <= self.waves * problem.sm_count

    def keeps_cluster(self, problem, tiles: int, k_steps: int, tile_k: int) -> str | None:
        """Why `tiles` default tiles of `k_steps` k steps of `tile_k` keep their cluster on `problem` (the first of
        `bars` that keeps it), or None where the build without one runs them."""
        return next((why for bar in self.bars if (why := bar.keeps_cluster(problem, tiles, k_steps, tile_k))), None)


@dataclass(frozen=True)
class DeepTiles:
    """A bar of OwnTiles: the tiles keep their cluster where their k steps, all of them over the SMs, are more than
    `steps_per_sm` an SM."""
    steps_per_sm: float
    why: str

    def keeps_cluster(self, problem, tiles: int, k_steps: int, tile_k: int) -> str | None:
        if tiles * k_steps <= self.steps_per_sm * problem.sm_count:
            return None
        return (f"in its clusters, as {tiles} tiles of {k_steps} k steps are {tiles * k_steps / problem.sm_count:.0f} "
                f"an SM, more than {self.steps_per_sm:g} ({self.why})")


@dataclass(frozen=True)
class PartK:
    """A bar of OwnTiles: the tiles keep their cluster where K is no whole number of k steps and they make more than
    `waves` waves."""
    waves: float
    why: str

    def keeps_cluster(self, problem, tiles: int, k_steps: int, tile_k: int) -> str | None:
        if not problem.k % tile_k or tiles <= self.waves * problem.sm_count:
            return None
        return f"in its clusters, as K = {problem.k} is no whole number of {tile_k}-deep k steps ({self.why})"


@dataclass(frozen=True)
class LongTiles:
    """A bar of OwnTiles: the tiles keep their cluster over more than `tile_steps` k steps a tile; with
    `bytes_per_s_per_sm`, only on a card that streams less memory an SM than that (Problem.hbm_bytes_per_s over its
    SMs). A card whose bandwidth is not known plans as an H200, above such a bar."""
    tile_steps: int
    why: str
    bytes_per_s_per_sm: float | None = None

    def keeps_cluster(self, problem, tiles: int, k_steps: int, tile_k: int) -> str | None:
        if k_steps <= self.tile_steps:
            return None
        card = ""
        if self.bytes_per_s_per_sm is not None:
            hbm = problem.hbm_bytes_per_s
            if hbm is None or hbm / problem.sm_count >= self.bytes_per_s_per_sm:
                return None
            card = (f" on a card of {hbm / problem.sm_count / 1e9:.0f} GB/s of memory an SM, less than "
                    f"{self.bytes_per_s_per_sm / 1e9:.0f}")
        return f"in its clusters, as {k_steps} k steps a tile are more than {self.tile_steps}{card} ({self.why})"


# Builds that run a rung's own tiles better than its default build (persistent_split_k's own_tiles), and why. FP8's
# 128x256 tiles without a cluster, against the 2-CTA clusters (x cuBLASLt's fast-accumulation line, each in one
# process on an H200; results/reference/NVIDIA_H200/precision/): 1536^3 0.773 (0.721), 1792^3 0.838 (0.784), 2048^3
# 0.968 (0.940) and 1.003 (0.961), 2304^3 0.710 (0.699), 2560^3 0.831 (0.821), 3072^3 0.838 (0.837), 4096^3 1.011
# (1.002) and 1.010 (1.005), 8192^3 1.020 (1.021). Its operands are half fp16's bytes, so the B tile that a cluster
# multicasts saves less L2 traffic than the cluster's launch and barriers cost.
FP8_OWN_TILES_CHOICE = Choice("cluster1", "the same tiles without a cluster: as fast as the 2-CTA clusters or faster "
                                          "at every size measured (FP8, 1536^3-8192^3, on an H200)")
# int8's, 16-bit's and tf32's, the same tiles without a cluster where they make one wave at most (x cuBLAS, an
# H200): int8 1536^3 1.08 against 1.02 and 2048^3 1.38-1.40 against 1.31-1.33 (small-problems/tiles-int8.txt,
# short-grid.txt, precision/int8.txt); at the eight one-wave shapes of small-problems/cluster1-*.txt, twice each,
# fp16 2048^3 1.012 against 0.970, 2048x2048x1024 1.038 against 0.967, the others 0.3-2.5 % faster, bf16 the same,
# tf32 0.2-3 % faster (2048^3 0.858 against 0.845). A cluster's multicast saves L2 traffic that a single wave does
# not miss; over more waves it counts: int8 4096^3 0.983 against 0.979, 8192^3 0.948 against 0.957, fp16 4096^3
# 0.986 against 0.997.
ONE_WAVE_OWN_TILES = OwnTiles(Choice("cluster1", "the same tiles without a cluster, one wave at most: faster than "
                                                 "the 2-CTA clusters there (int8, 16-bit and tf32, 1024-2048 rows, on "
                                                 "an H200)"), waves=1)
# FP8's promoted 128x128 tiles (bn128_promote) without a cluster, against the 2-CTA clusters, twice each in one
# process on an H200 (x cuBLASLt's promoted line; small-problems/fp8-promoted-cluster1-*.txt): 2048^3 (1.9 waves)
# 1.037 and 1.073 (0.968 and 1.001), 3072^3 (4.4) 0.948 and 0.946 (0.922 and 0.922), 4096^3 (7.8) 0.990 and 0.989
# (0.963 and 0.962); 8192^3 (31 waves) 0.901 and 0.902 (0.950 and 0.943): where the operands far exceed L2, the B
# tile a cluster multicasts saves HBM reads as well. Block-scaled FP8 runs the same tiles (x cuBLASLt's block-scaled
# line; small-problems/fp8-block-ring-new-*.txt): 2048^3 0.928 and 0.957 (0.885 and 0.894), 4096^3 0.885 and 0.883
# (0.871 and 0.870), 4096x4096x14336 (7.8 waves) 0.867 and 0.868 (0.867 and 0.832), 8192^3 0.866 and 0.887 (0.848
# and 0.905).
PROMOTED_OWN_TILES_CHOICE = Choice("cluster1", "the same tiles without a cluster, up to 8 waves: faster than the "
                                               "2-CTA clusters there (FP8 promoted and block-scaled, 2048^3-4096^3, "
                                               "on an H200), slower at 8192^3")
PROMOTED_OWN_TILES_WAVES = 8
# Block-scaled FP8 runs those tiles without a cluster and without the stream-K tail as well (the tail's pieces each
# weight and promote their own partials before the fix-up in C; not profiled). On an H100
# (x cuBLASLt's block-scaled line, two runs on one machine; results/reference/NVIDIA_H100/fp8-block-no-streamk/),
# without the tail against with it: 1280^3 1.054 (0.992), 1536^3 1.032 (1.001), 2048^3 1.019 and 1.055 (0.966 and
# 0.998), 2048x4096x2048 1.048 (1.008), 3072^3 0.977 (0.966), 4096^3 0.952 and 0.944 (0.935 and 0.927).
# Past 24 k steps a tile they keep their 2-CTA clusters, on every card measured. On H100s (x cuBLASLt's block-scaled
# line, one process a call; results/reference/NVIDIA_H100/fp8-block-waves/ and fp8-block-no-streamk/), without a
# cluster against the clusters without the tail: 2048^3 (16 k steps) 1.00-1.07 / 0.95-0.99, 2048x8192x2048 (16, 7.8
# waves) 1.00 / 0.99, 3072^3 (24) 0.98-0.99 / 0.98; past 24 the clusters, 3584^3 0.93 / 0.97, 3840^3 0.90-0.91 /
# 0.94, 4096x3072x4096 0.92 / 0.96, 4096x4096x8192 0.90-0.92 / 0.95, 4096^3 0.92-0.93 / 0.96 (on another H100
# 0.94-0.96 / 0.95-0.96). On an H200 (results/reference/NVIDIA_H200/fp8-block-no-streamk/, two calls on one card)
# 4096^3 (32) 0.939-0.955 / 0.953-0.965.
BLOCK_LONG_TILES = LongTiles(24, "on H100s and an H200 the 2-CTA clusters ran faster past 24 k steps a tile, the "
                                 "tiles without one up to that")
BLOCK_OWN_TILES = OwnTiles(Choice("cluster1_no_streamk",
                                  "the same tiles without a cluster or a stream-K tail, up to 8 waves: faster than "
                                  "with either there (block-scaled FP8, 1280^3-4096^3, on an H100)"),
                           waves=PROMOTED_OWN_TILES_WAVES, bars=(BLOCK_LONG_TILES,))
# ... and where the clusters run the tiles (past the waves, or kept by the bar), they run without the stream-K tail,
# which ran behind at every shape measured (x the block-scaled line, the clusters without the tail against with it).
# On H100s: 1280^3 0.93 / 0.89, 1536^3 0.95-0.96 / 0.91, 2048^3 0.95-0.99 / 0.91-0.95, 3072^3 0.98 / 0.94-0.95,
# 3584^3 0.97 / 0.94, 4096^3 0.96 / 0.93, 5120^3 0.95 / 0.93, 4096x8192x4096 0.94 / 0.92, 6144^3 0.93 / 0.90-0.91
# (three calls), 5120x8192x5120 0.94 / 0.91, 8192^3 0.92-0.94 / 0.91-0.96 (0.93 / 0.92 averaged over six pairs). On
# an H200: 4096^3 0.953-0.965 / 0.927-0.929, 6144^3 0.937 / 0.916-0.934, 8192^3 0.926-0.945 / 0.919-0.926.
BLOCK_CLUSTERS = Choice("no_streamk", "the 2-CTA clusters without the stream-K tail: faster than with it at every "
                                      "shape measured (block-scaled FP8, 1280^3-8192^3, on H100s and an H200)")
# ... its own tiles by their k steps an SM as well (PROMOTED_DEEP_TILES), as many as 8 waves of 32 k steps, where the
# waves were fitted (small-problems/promoted-deep-whole-k-1.txt, one round, x the promoted line, clusters of 2
# against none, K whole): 4096x4096x8192 (7.8 waves of 64 k steps, 496 an SM) 0.96 against 0.86, 3072x3072x8192
# (279) 0.95 / 0.84, 3072x3072x12288 (419) 0.96 / 0.89, 4096x4096x5120 (310) 0.97 / 0.94; at 248 an SM or fewer the
# tiles without a cluster as fast or faster: 4096x2048x8192 0.96 / 0.97, 2048x2048x16384 0.95 / 0.96, 3584x3584x4096
# (32 k steps) 0.97 / 0.99, 4096^3 0.96 / 0.96. Not the twins (PROMOTED_OWN_TILES_WAVES), nor block-scaled FP8, whose
# 4096x4096x14336 (869 an SM) ran as fast without a cluster.
PROMOTED_OWN_TILES_STEPS = 256
PROMOTED_DEEP_TILES = DeepTiles(PROMOTED_OWN_TILES_STEPS,
                                "the cluster's multicast of B saves more the longer each SM streams")


# On a card of less memory bandwidth an SM, the promoted 128x128 tiles lose their cluster over a short K only. An
# H100 SXM streams 3.35 TB/s over its 132 SMs, 25 GB/s an SM, against an H200's 4.9 TB/s, 37 GB/s. On an H100 (x
# cuBLASLt's promoted line, the 2-CTA clusters against none, two rounds in one process;
# results/reference/NVIDIA_H100/fp8-promoted-cluster/), M x N x K: K = 2048, 2048^3 0.99 / 1.05, 2048x4096x2048
# 0.99 / 1.04, 3072x3072x2048 0.93 / 0.94; 2560^3 0.88 / 0.92; K = 3072 and more the clusters: 3072^3 0.92 / 0.88,
# 2048x2048x4096 0.92 / 0.88, 3584x3584x4096 0.96 / 0.83, 4096^3 0.93 / 0.81, 2048x2048x8192 0.91 / 0.84,
# 1536x1536x8192 0.84 / 0.76, 8192^3 0.89-0.90 / 0.74-0.76: the depth of a tile decides there, from 1.1 to 7.8
# waves. Held out (promoted-cluster-held-out.txt): 2816^3 0.95 / 0.90, 3072x4096x3584 0.96 / 0.87, 4096x2048x6144
# 0.94 / 0.83, and without a cluster 2304^3 0.93 / 0.98, 4096x4096x2048 0.98 / 1.00, but 2560x5120x2560 0.91 / 0.87.
# Not the twins that compute Cᵀ: without a cluster they ran ahead at all eight held-out shapes (2048x2048x4096 1.17
# against 1.11 in clusters, 2816^3 1.04 / 0.98, 1536x1536x8192 0.75 / 0.72). Under ncu (SMs at 1.57 GHz) the tiles
# without a cluster ran faster at 3072^3 and 4096^3 (5-7 %), reading a fifth more from HBM at 4096^3 and as much at
# 3072^3: what costs at full clock is not settled. The bar lies between the two cards measured.
# A card of less memory bandwidth an SM than this (an H100: 25 GB/s; an H200: 36), where rules fitted on an H100 hold.
SLOW_MEMORY_PER_SM = 30e9
PROMOTED_SLOW_MEMORY = LongTiles(20, "on an H100 the 2-CTA clusters ran faster past 20 k steps a tile, the tiles "
                                     "without one up to that", bytes_per_s_per_sm=SLOW_MEMORY_PER_SM)
# FP8's tiles keep their 2-CTA clusters where K is no whole number of k steps (128 bytes: the rows of A start off the
# 128-byte lines, and the last k step is partial), not only past PROMOTED_OWN_TILES_WAVES (a PartK bar): the
# fast class's tiles and twins and the promoted class's own tiles at any count, the promoted class's twins past
# PART_K_TWIN_WAVES waves. x the vendor line of the class on an H200, clusters of 2 against none, M x N x K
# (small-problems/part-k-fit-*.txt; held out, measured after: *part-k-held-out*.txt):
# promoted own tiles 4096x4096x6000 0.95 against 0.81, 3000x5000x4000 0.89 / 0.81, 4096x2048x7000 0.99 / 0.90,
# 4096x4096x4000 0.98 / 0.90, 3072x3072x4000 0.95 / 0.90, held out 3500x3500x5000 0.91 / 0.80, 3300^3 0.97 / 0.88,
# 6000x2000x3000 0.93 / 0.88, 5000x5000x3000 0.88 / 0.82 (not 3000x2000x1500, 0.99 / 1.02); the fast class's twins
# 4096x4096x6000 1.14 / 1.00, 2048x4096x2000 1.28 / 1.15, held out 3500x3500x5000 1.00 / 0.76, 3300^3 0.98 / 0.77,
# 2000x6000x1000 1.22 / 1.06, and its own tiles 16384x2048x6000 1.01 / 0.97; the promoted twins past 2.5 waves
# 2048x4096x2000 1.23 / 1.17, held out 3300^3 0.90 / 0.73, 2500x3500x2500 0.90 / 0.75, 6000x2000x3000 0.85 / 0.77,
# 2000x6000x1000 1.06 / 0.95, but within them faster without (1536x2048x3000 1.02-1.03 / 1.08-1.10, 2048x2048x3000
# 1.18 / 1.24). Where K is whole the rules above stand (2048^3: promoted 0.96 against 1.03, the fast twin 1.18 /
# 1.26). int8's twins, with 2 of 3 such K faster without a cluster, keep ONE_WAVE_OWN_TILES.
PART_K_CLUSTERS = "FP8's rows of A off the 128-byte lines and a partial last k step: the clusters' multicast pays"
PART_K_TWIN_WAVES = 2.5  # between 256 tiles (1.9 waves: faster without) and 384 (2.9: faster in clusters)
FP8_PART_K = PartK(0, PART_K_CLUSTERS)
FP8_OWN_TILES = OwnTiles(FP8_OWN_TILES_CHOICE, bars=(FP8_PART_K,))
# FP8's promoted class: its own tiles by every bar above, its twins that compute Cᵀ by their waves and a part K past
# PART_K_TWIN_WAVES only.
PROMOTED_OWN_TILES = OwnTiles(PROMOTED_OWN_TILES_CHOICE, PROMOTED_OWN_TILES_WAVES,
                              (PROMOTED_SLOW_MEMORY, PROMOTED_DEEP_TILES, FP8_PART_K))
PROMOTED_TWIN_TILES = OwnTiles(PROMOTED_OWN_TILES_CHOICE, PROMOTED_OWN_TILES_WAVES,
                               (PartK(PART_K_TWIN_WAVES, PART_K_CLUSTERS),))


class _Whole(NamedTuple):
    """A whole-tile build as persistent_split_k weighs it."""
    cost: float  # the busiest SM's work: waves of cluster tiles x the tile's area / its rate (TILE_RATES)
    name: str
    rows: int
    cols: int


class _Split(NamedTuple):
    """A split build of a persistent tile kernel, as persistent_split_k weighs it."""
    cut: float  # how many times less work each SM does than with whole base tiles
    rows: int  # its tile's rows
    width: int  # its tile's columns
    s: int  # slices of K
    name: str  # the variant
    items: int  # work items: tiles x s


def work_items(record: tuple[int, int, int, bool], problem) -> int:
    """The work items of a build on `problem`: its tiles over C (over Cᵀ where it computes Cᵀ) times its slices of K;
    `record`: its tiles' rows and columns, slices and whether it computes Cᵀ."""
    rows, cols, slices, swapped = record
    m, n = (problem.n, problem.m) if swapped else (problem.m, problem.n)
    return cdiv(m, rows) * cdiv(n, cols) * slices


def most_slices_in_one_wave(builds: dict[int, str], records: dict[str, tuple[int, int, int, bool]], problem,
                            variants: tuple[str, ...], admits: Callable[[int, str], bool]
                            ) -> tuple[int, int, str] | None:
    """Of `builds` (slices -> the build of one tile split so many ways, 1 for whole) among `variants` that `admits`
    (slices, name) takes, the one of the most slices whose work items fit one wave: (slices, items, name), or None."""
    options = [(s, work_items(records[name], problem), name) for s, name in builds.items()
               if name in variants and admits(s, name)]
    return max((option for option in options if option[1] <= problem.sm_count), default=None)


def small_split_of(builds: TileBuilds, problem, taken_items: int, k_steps: int, variants: tuple[str, ...],
                   min_k_steps_per_slice: int) -> _Split | None:
    """The split of 64x64 tiles with two k groups that runs in place of a pick of `taken_items` work items
    (SMALL_SPLIT_FROM): the most slices whose items stay within 1/SMALL_SPLIT_ITEMS of the SMs (those that write Bt
    in shared memory, where the rung has them: within one wave), each of min_k_steps_per_slice k steps or more, where
    the pick makes items for at most 1/SMALL_SPLIT_FROM of them and these make more."""
    sms = problem.sm_count
    if taken_items * SMALL_SPLIT_FROM > sms:
        return None
    pool, most = ((builds.small_bt_splits, sms) if any(name in variants for name in builds.small_bt_splits)
                  else (builds.small_splits, sms // SMALL_SPLIT_ITEMS))
    options = [_Split(0.0, r, c, s, name, work_items((r, c, s, False), problem))
               for name, (r, c, s) in pool.items() if name in variants and k_steps >= min_k_steps_per_slice * s]
    options = [f for f in options if taken_items < f.items <= most]
    return max(options, key=lambda f: f.items, default=None)


# The same split past the wave model's own splits: where a rung's final pick (its columns of 128x64 tiles, Bt
# written in shared memory where B is most of the bytes, a twin that computes Cᵀ = Bᵀ·Aᵀ) still makes work items for
# at most 1/SMALL_SPLIT_FROM of the SMs. On an H200 (x the vendor, small-problems/tiles-columns-small-splits-*.txt),
# the former pick against the 64x64 split at N = 64 and a deep K: 128x64x65536 fp16 0.45 against 1.15, int8 0.68 /
# 1.16, FP8 0.42 / 1.01, tf32 0.45 / 1.01; 96x64x32768 0.53 / 0.99, 0.87 / 1.21, 0.54 / 1.06, 0.44 / 0.90; tf32
# 16x128x65536 0.22 / 0.83, 8x64x131072 0.24 / 0.57. The 8-bit rungs' slices keep 8 k steps or more: at K = 4096 (32
# k steps of 128) int8's twins of 128x64 tiles computing Cᵀ split 8 ways ran 1.42-1.75 against 1.17-1.35 for 64x64
# tiles split 8 ways (4 k steps a slice), FP8's 1.27-1.47 against 1.08-1.22 (moved-small-first-*.txt); at
# 128x64x16384 int8 16 slices of 8 steps 1.32, 32 of 4 steps 1.23, FP8 1.19 / 1.13 (tiles-columns-small-splits-*.txt).
SMALL_SPLIT_BYTES_STEPS = 8


def small_split_first(rest: Callable[[object, tuple[str, ...]], Choice], builds: TileBuilds,
                      records: dict[str, tuple[int, int, int, bool]], tile_k: int, min_k_steps_per_slice: int = 4
                      ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a persistent tile rung with 64x64 splits (`builds`' small_splits, small_bt_splits): `rest`'s
    pick, but where its work items (`records`: build -> rows and columns of its tiles, slices of K and whether it
    computes Cᵀ) are at most 1/SMALL_SPLIT_FROM of the SMs, the 64x64 split small_split_of takes with
    `min_k_steps_per_slice` k steps a slice or more, where there is one."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        if picked.variant not in records:
            return picked
        items = work_items(records[picked.variant], problem)
        k_steps = cdiv(problem.k, tile_k)
        small = small_split_of(builds, problem, items, k_steps, variants, min_k_steps_per_slice)
        if small is None:
            return picked
        bt = " writing Bt in shared memory" if small.name in builds.small_bt_splits else ""
        return Choice(small.name, f"{picked.reason}; but those {items} work items leave most SMs idle: K split "
                                  f"{small.s} ways of {small.rows}x{small.width} tiles with two k groups{bt} ({k_steps}"
                                  f" k steps of {tile_k}, about {cdiv(k_steps, small.s)} a slice) gives "
                                  f"{small.items} work items")

    return choose


def persistent_split_k(tile_m: int, tile_n: int, tile_k: int, min_k_steps_per_slice: int = 4, min_split: int = 4,
                       narrow_n: int | None = None, builds: TileBuilds | None = None, own_tiles: OwnTiles | None = None,
                       few_columns: int | None = None, short_tile_steps: int | None = None,
                       twin_fill: float | None = None) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a persistent tile kernel with split-K variants named splitk<S>.

    Its output tiles are the work: fewer tiles than half the SMs leave most of the GPU idle, whatever the
    schedule. Splitting each tile's K range S ways multiplies the work items by S at the cost of an fp32
    reduction of S partial tiles, which pays while every slice keeps enough k steps to fill its pipeline. So the
    largest S (of the registered ones, at least `min_split`) with tiles x S <= SMs and at least
    `min_k_steps_per_slice` k steps a slice; otherwise the default build. On an H200 (bench/compare.py)
    splitk2 never beat the default build in fp16 or bf16 (512³: 0.33 against 0.43 of cuBLAS): the partial
    tiles' write and read cost what half the k steps save, hence min_split 4.

    `narrow_n`: the method also has tiles tile_m x narrow_n, builds named bn<narrow_n> and bn<narrow_n>_splitk<S>
    (kernel 12's 128x128 tiles). Where the wide tiles fill less than half a wave, the narrow ones come first: more
    tiles, each with less work, and no partial tiles to write and read. A split of either width is taken only
    where it cuts each SM's work (tile width x k steps per slice) at least `min_split`-fold against whole narrow
    tiles within one wave, the same bar as against whole wide tiles without them (at 128 against 256: bn128 splits
    of 4, wide splits of 8 or more). Of equal cuts, the largest tile whose slices keep DEEP_SLICE_STEPS k steps per
    DEEP_SLICE_AREA of its area, else the smallest, whose partials are smaller. Where the whole tiles fill half the SMs
    at most, M holds two rows of 128-row tiles and each slice keeps twice DEEP_SLICE_STEPS k steps, half the cut
    suffices: at 512x1024x8192, 64 tiles of 64x128 whole against 32 of 128x128 split 4 ways, fp16 0.79 against 0.97
    and tf32 0.64 against 0.86 (x cuBLAS, an H200; small-problems/tiles-bn128-splits-*.txt); not at token rows, where
    a split of 2 lost (64x6144x4096 fp16 0.77 against 0.87). A split's work items count the CTAs of its clusters (a
    2-CTA cluster over one row of 128-row tiles is two CTAs per tile).

    `builds`: the method's whole-tile builds of other sizes (128x128, 64x256, 64x128, and 128x192 without a cluster),
    each with its cluster, and its own tiles without a cluster (cluster1). Where the default tiles make at least half
    a wave, each build is weighed by the busiest SM's work, the waves of cluster tiles times the tile's area over its
    rate (TILE_RATES in one wave, TILE_RATES_PAST_A_WAVE past it), and the least work wins, the larger tile on ties,
    the default build on a tie with its tiles without a cluster. Those win where an odd count of row tiles leaves a
    cluster one CTA short: 1408x6144x4096, 264 tiles in two waves against 144 clusters in three, fp16 0.99 against
    0.86 (x cuBLAS, an H200; small-problems/tiles-waves-more-float16.txt); not over one row of tiles, where the pair's
    idle CTA still loads half of each B tile. Token rows that a tile of fewer rows holds (M <= 64) weigh only such
    tiles (64x256, 64x128): a 128-row tile does twice their work on the same bytes, its rows past M empty. int8 at
    16-64 rows against 37888-128256 columns (small-problems/tiles-rows-wide-int8.txt): the pick at 0.99-1.09 x cuBLAS,
    within 0.6 % of the best build at each of 9 shapes, where the former ran at 0.89-1.04 (16x57344x8192 1.01 ->
    1.09); at 16x37888x3584 FP8 0.89 -> 0.98 and int8 0.88 -> 1.01 (64x128). Past a wave, over 33 shapes in five
    dtypes (tiles-waves*.txt): fp16 2304^3 0.80 -> 1.02 (128x192), 6144x2304x2048 0.92 -> 0.94 (128x128); int8 3072^3
    0.85 -> 1.03; FP8 4096x2560x4096 0.91 -> 0.99 (128x128); the mean loss to the best build measured 0.1-0.5 % per
    dtype, where the default build lost 1.4-6.2 %. Those tiles are also the base that a split must cut each SM's work
    `min_split`-fold against. On an H200 (x cuBLAS, fp16; results/reference/NVIDIA_H200/small-problems/tiles.txt):
    512^3 64x128 0.89 (128x128 0.66), 1024^3 0.89 (0.73), 1280^3 128x128 0.95, 1536^3 64x128 0.70 (128x256 0.65),
    2048^3 128x256 0.99, 1024x1024x8192 64x128 0.88 (128x256 0.34); int8 1280^3 64x256 1.08 (128x256 0.82). The waves
    are counted as the kernel deals them out (persistent_waves): where it splits a last partial wave by k steps
    (stream-K), that wave counts by its share of the clusters, plus the split's fix-up (STREAMK_FIXUP_STEPS k steps of
    a default tile); and each dtype's rates are the mean above but tf32's (TILE_RATES_BY_DTYPE). On the committed
    sweeps of the four rungs (small-problems/tiles*.txt and deep-k-wgmma_*.txt, 236 (rung, dtype, shape) cases;
    tests/test_configs.py) that changed 5 picks, all in tf32 but one: tf32 1472^3 0.88 -> 0.96 and 1536^3 0.91 -> 0.99
    (128x128 tiles, whose 6 tiles past a wave of 66 clusters run split by k steps, against three whole waves of 64x128
    ones), 384x6144x4096 0.56 -> 0.60 and fp16 0.90 -> 0.93 (64x256), tf32 448x6144x4096 0.713 -> 0.712; what the pick
    loses to the best build measured, 0.52 % on average before, is 0.40 %, and past 3 % in 9 cases instead of 13. The
    128x192 tiles (bn192) are the pick at 54 cases of their own sweeps (tiles-bn192*.txt; 1472^3-1664^3 and 384-1536
    rows against 1536-8192 columns), the best build measured at every one: fp16 1536^3 0.73 -> 0.84 and 1024x3072x4096
    0.74 -> 1.02, FP8 1536^3 0.79 -> 0.91, int8 1664^3 1.19 -> 1.42, tf32 1536^3 0.99 -> 1.06.
    `builds.splits`: split builds of other tiles (64x128 without a cluster, for decode rows), weighed by the same
    bar: S slices of a tile cut each SM's work S x the base tile's area / theirs. At a few token rows against 4096
    columns (32 tiles of 64x128 on 132 SMs) that is 4 slices; 48 or 64 tiles stay whole. On an H200 (x cuBLAS,
    results/reference/NVIDIA_H200/small-problems/tiles-decode-*.txt), fp16 64x4096x4096: 64x128 split 4 0.88,
    split 2 0.85, whole 0.69; 64x8192x8192 (64 tiles) whole 0.98, split 2 0.91; FP8 (x cuBLASLt fast accumulation)
    48x4096x14336 split 4 1.03, whole 0.88.

    `own_tiles`: the build (and why) that runs the rung's own whole tile_m x tile_n tiles wherever the pick is them,
    where it is one of the variants, within its waves and where none of its bars keeps the cluster (OwnTiles); else
    the default build. The same tiles without the 2-CTA cluster (`cluster1`): int8's, 16-bit's and tf32's within one
    wave (ONE_WAVE_OWN_TILES); FP8's where K is whole k steps (FP8_OWN_TILES: PartK); FP8's promoted class's within
    8 waves, where K is whole k steps, up to PROMOTED_OWN_TILES_STEPS k steps an SM (DeepTiles) and on a card of less
    memory bandwidth an SM over a short K only (LongTiles): PROMOTED_OWN_TILES.

    `few_columns`: the method also has tiles tile_m x few_columns without a cluster, builds named bn<few_columns>
    and bn<few_columns>_splitk<S> (kernels 12, 13 and 16: 128x64). Where one of them spans N and M has more rows
    than that, they run the problem: whole, or K split the largest registered S (at least `min_split`) whose work
    items, tiles x S, fit one wave with `min_k_steps_per_slice` k steps a slice. Such a problem streams A, N times
    its bytes of B, and a wider tile multiplies columns of zeros for the same bytes of A: the area-over-rate model
    of the whole tiles does not see it. On an H200 (x cuBLAS; small-problems/tiles-n64-*.txt), at 64 columns:
    4096 rows and k 4096 split 4 1.10 (fp16) and 1.02 (tf32), against 0.66 and 0.89 for the best other
    build; 8192 rows whole 1.07 and 0.92 (split 2 0.94 and 0.89); 2048 rows and k 8192 split 8 1.05 and 0.99;
    16384 rows and k 2048 whole 1.04 and 1.10; 1024 rows and k 16384 split 8 1.05 and 0.97. Over at most
    SHORT_TILE_STEPS k steps the whole-tile model weighs bn<few_columns> too (TWIN_SHORT_TILE_STEPS where a twin would
    run the 64x128 tiles; `short_tile_steps` where given)."""

    columns_build = f"bn{few_columns}" if few_columns is not None else None  # the few_columns builds' whole tiles

    def twin_of(name: str, rows: int, problem, variants: tuple[str, ...]) -> str | None:
        """The build with two k groups that runs build `name`'s tiles of `rows` rows (TileBuilds.twins), where it runs
        them: over two rows of tiles or more, and with `twin_fill`, where those tiles number at most that share of
        the SMs."""
        twin = builds.twins.get(name)
        if twin not in variants or problem.m < 2 * rows:
            return None
        tiles = cdiv(problem.m, rows) * cdiv(problem.n, builds.tiles[name][1])
        return twin if twin_fill is None or tiles <= twin_fill * problem.sm_count else None

    def whole(problem, variants: tuple[str, ...], small: bool = True) -> _Whole:
        """The whole-tile build that gives the busiest SM the least work, the larger tile on ties, then the taller;
        `small`: the 64x64 tiles among them (builds.small; not as the base a split must cut against)."""
        k_steps = cdiv(problem.k, tile_k)
        if cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n) > problem.sm_count:
            rates = TILE_RATES_PAST_A_WAVE
        else:
            rates = TILE_RATES_BY_DTYPE.get(problem.dtype.name, TILE_RATES)
        weighed = []
        candidates = {DEFAULT: (tile_m, tile_n, builds.cluster), **builds.tiles}
        if problem.m <= tile_m:  # one row of tiles: the pair's idle CTA still loads half of each B tile
            candidates = {name: t for name, t in candidates.items() if t[:2] != (tile_m, tile_n) or name == DEFAULT}
        short = {name: t for name, t in candidates.items() if problem.m <= t[0] < tile_m and name in variants}
        if short:  # token rows that one shorter tile holds: only such tiles (see the docstring)
            candidates = short
        twinned = any(twin_of(name, r, problem, variants) for name, (r, c, _) in builds.tiles.items()
                      if (r, c) == (few_columns, tile_m))  # a twin would run the transposed (64x128) tiles
        short_steps = (short_tile_steps if short_tile_steps is not None
                       else TWIN_SHORT_TILE_STEPS if twinned else SHORT_TILE_STEPS)
        if (few_columns is not None and k_steps <= short_steps
                and (problem.n <= problem.m or problem.m % tile_m == 0)):
            candidates[columns_build] = (tile_m, few_columns, 1)  # at the rate of its transpose (SHORT_TILE_STEPS)
        small_rows, small_cols = builds.small[1] if builds.small else (0, 0)
        if (small and builds.small and builds.small[0] in variants and k_steps <= SHORT_TILE_STEPS
                and problem.m >= 2 * small_rows
                and cdiv(problem.m, small_rows) * cdiv(problem.n, small_cols) <= problem.sm_count):
            candidates[builds.small[0]] = (small_rows, small_cols, 1)  # at SMALL_TILE_RATE
        for name, (r, c, cluster) in candidates.items():
            if name == DEFAULT or name in variants:
                tiles = cdiv(cdiv(problem.m, r), cluster) * cdiv(problem.n, c)
                waves, split = persistent_waves(tiles, max(1, problem.sm_count // cluster), k_steps,
                                                builds.streamk_min_saved)
                fixup = STREAMK_FIXUP_STEPS / k_steps * tile_m * tile_n if split else 0.0
                rate = (SMALL_TILE_RATE if builds.small and name == builds.small[0]
                        else rates[r, c] if (r, c) in rates else rates[c, r])
                weighed.append(_Whole(waves * r * c / rate + fixup, name, r, c))
        return min(weighed, key=lambda w: (round(w.cost, 6), -w.rows * w.cols, -w.rows))

    def small_split(problem, taken: _Split, k_steps: int, variants: tuple[str, ...]) -> _Split | None:
        return (None if builds is None
                else small_split_of(builds, problem, taken.items, k_steps, variants, min_k_steps_per_slice))

    def by_tiles(problem, best: _Whole, where: str, variants: tuple[str, ...]) -> Choice:
        tiles = cdiv(problem.m, best.rows) * cdiv(problem.n, best.cols)
        if best.name == DEFAULT:
            size = "whole tiles"
        elif (best.rows, best.cols) == (tile_m, tile_n):
            size = f"the same tiles without a cluster ({tiles}), none of them left without a pair"
        else:
            size = f"{best.rows}x{best.cols} tiles instead ({tiles})"
        if best.name == columns_build:
            size += (f", without a cluster, at the rate of {best.cols}x{best.rows} tiles and first on equal work over "
                     f"{cdiv(problem.k, tile_k)} k steps (at most {SHORT_TILE_STEPS})")
        if builds.small and best.name == builds.small[0]:
            size += (f", two consumer warpgroups taking alternate k steps, over {cdiv(problem.k, tile_k)} k steps (at "
                     f"most {SHORT_TILE_STEPS}), in one wave")
        name, twin = best.name, twin_of(best.name, best.rows, problem, variants)
        if twin is not None:
            name = twin
            size += (", run by two consumer warpgroups taking alternate k steps, without a cluster (over two rows of "
                     "tiles or more" + (f", in at most {twin_fill:.0%} of the SMs," if twin_fill is not None else "")
                     + " faster than one)")
        return Choice(name, f"{where}: {size}, the least work for the busiest SM of the whole-tile builds "
                            "(waves of its clusters x tile area / the tile's rate, a last "
                            "partial wave split by k steps where the kernel splits it)")

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = pick(problem, variants)
        if picked.variant != DEFAULT or own_tiles is None or own_tiles.variant not in variants:
            return picked
        tiles, k_steps = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n), cdiv(problem.k, tile_k)
        if not own_tiles.within_waves(problem, tiles):
            return picked
        kept = own_tiles.keeps_cluster(problem, tiles, k_steps, tile_k)
        if kept is not None:
            return Choice(picked.variant, f"{picked.reason}; {kept}")
        return Choice(own_tiles.variant, f"{picked.reason}; {own_tiles.variant}: {own_tiles.choice.reason}")

    def columns(problem, variants: tuple[str, ...]) -> Choice:
        """The few_columns builds, whole or split (see above)."""
        tiles, k_steps, sms = cdiv(problem.m, tile_m), cdiv(problem.k, tile_k), problem.sm_count
        s = _fitting_split(columns_build, tiles, k_steps, variants, sms, min_k_steps_per_slice, least=min_split)
        where = (f"N = {problem.n} in one column of {tile_m}x{few_columns} tiles without a cluster, "
                 f"{tiles} tile{'s' if tiles != 1 else ''} on {sms} SMs")
        if s > 1:
            return Choice(f"{columns_build}_splitk{s}",
                          f"{where}: K split {s} ways ({k_steps} k steps of {tile_k}, about {cdiv(k_steps, s)} a "
                          f"slice) gives {tiles * s} work items")
        return Choice(columns_build, f"{where}: whole, as no split of {min_split} or more ways with "
                                     f"{min_k_steps_per_slice} k steps a slice fits one wave")

    def pick(problem, variants: tuple[str, ...]) -> Choice:
        if columns_build in variants and problem.n <= few_columns < problem.m:
            return columns(problem, variants)
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        k_steps = cdiv(problem.k, tile_k)
        sms = problem.sm_count
        where = f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on {sms} SMs"
        if 2 * tiles > sms:
            if builds is not None:
                waves = "one wave at most" if tiles <= sms else f"{tiles / sms:.2f} waves"
                return by_tiles(problem, whole(problem, variants), f"{where}, {waves}", variants)
            return Choice(DEFAULT, f"{where}: at least half a wave, so whole tiles")
        idle = f"{where} leave{'s' if tiles == 1 else ''}"
        narrow = f"bn{narrow_n}"
        base_n = narrow_n if narrow_n is not None and narrow in variants else tile_n
        # the whole tiles a split must beat: the least work for the busiest SM (whole), else the narrow ones
        base = whole(problem, variants, small=False) if builds is not None else _Whole(0.0, DEFAULT, tile_m, base_n)
        own_cluster = builds.cluster if builds is not None else 1  # the rung's own splits run in its clusters
        split_builds = [(tile_m, tile_n, s, f"splitk{s}", own_cluster) for s in registered_splits(variants)]
        if base_n != tile_n:
            split_builds += [(tile_m, narrow_n, s, f"{narrow}_splitk{s}", own_cluster)
                             for s in registered_splits(variants, narrow)]
        if builds is not None:
            split_builds += [(r, c, s, name, 1) for name, (r, c, s) in builds.splits.items() if name in variants]
        splits = [_Split(s * base.rows * base.cols / (rows * width), rows, width, s, name,
                         cdiv(cdiv(problem.m, rows), cluster) * cluster * cdiv(problem.n, width) * s)
                  for rows, width, s, name, cluster in split_builds]
        deep = DEEP_SLICE_STEPS_BY_DTYPE.get(problem.dtype.name, DEEP_SLICE_STEPS)
        base_items = cdiv(problem.m, base.rows) * cdiv(problem.n, base.cols)

        def keeps_deep(f: _Split) -> bool:  # its slices hold enough k steps for its tile's partials (DEEP_SLICE_AREA)
            return k_steps >= deep * f.s * f.rows * f.width / DEEP_SLICE_AREA

        def bar(f: _Split) -> float:  # half the cut for deep slices past token rows (see the docstring)
            full = _split_bar(problem, f, min_split)
            half = 2 * base_items <= sms and problem.m >= 2 * tile_m and k_steps >= 2 * deep * f.s
            return full / 2 if half else full

        fitting = [f for f in splits
                   if f.cut >= bar(f) and f.items <= sms and k_steps >= min_k_steps_per_slice * f.s]
        if fitting:
            taken = max(fitting, key=lambda f: (f.cut, f.rows * f.width * (1 if keeps_deep(f) else -1)))
            cut, rows, width, s, name, items = taken
            size = "" if (rows, width) == (tile_m, tile_n) else f" of {rows}x{width} tiles"
            against = ("" if (base.rows, base.cols) == (tile_m, tile_n)
                       else f", {cut:g}x less work per SM than whole {base.rows}x{base.cols} tiles")
            small = small_split(problem, taken, k_steps, variants)
            if small is not None:
                bt = small.name in builds.small_bt_splits
                return Choice(small.name,
                              f"{idle} SMs idle: K split {small.s} ways of {small.rows}x{small.width} tiles with two "
                              f"k groups{' writing Bt in shared memory' if bt else ''} ({k_steps} k steps of "
                              f"{tile_k}, about {cdiv(k_steps, small.s)} a slice) gives {small.items} work items, at "
                              f"most {'one wave' if bt else f'1/{SMALL_SPLIT_ITEMS} of the SMs'}, where {s} "
                              f"slices{size} give {items}, at most 1/{SMALL_SPLIT_FROM} of them")
            return Choice(name, f"{idle} SMs idle: K split {s} ways{size} ({k_steps} k steps of {tile_k}, about "
                                f"{cdiv(k_steps, s)} a slice) gives {items} work items{against}")
        if builds is not None:
            return by_tiles(problem, whole(problem, variants), f"{idle} most SMs idle and no split cuts each SM's work "
                                           f"{min_split}-fold within one wave", variants)
        if base_n == tile_n:
            return Choice(DEFAULT, f"{where}, but {k_steps} k steps of {tile_k} are too few to split "
                                   f"{min_split} or more ways")
        narrow_tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, narrow_n)
        return Choice(narrow, f"{idle} most SMs idle: {narrow_tiles} tile{'s' if narrow_tiles != 1 else ''} of "
                              f"{tile_m}x{narrow_n} instead, {tile_n / narrow_n:g}x less work each; no split of "
                              f"{k_steps} k steps of {tile_k} cuts each SM's work {min_split}-fold within one wave")

    return choose


def _split_bar(problem, split: _Split, min_split: int) -> float:
    """The cut a split must give (persistent_split_k): `min_split`, lowered by the tile's rows over its columns
    where its tiles span all of N. Then each CTA streams only its rows of A from memory, B staying in L2: a k step
    of a 64x128 tile brings 64 rows of A, half the bytes it brings against 128 columns of B at a few token rows, so
    twice the CTAs keep as many bytes in flight."""
    return min_split * split.rows / split.width if cdiv(problem.n, split.width) == 1 else min_split


def promoted_tiles(tile_m: int, tile_n: int, narrow_n: int, wide: str = "promote", narrow: str = "bn128_promote",
                   min_slice_k: int | None = None) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose default build is a trade of accuracy (3xTF32: the tensor cores' truncating
    sums over all of k) and whose promoted builds are in the class the study compares with (SGEMM's): always one of
    those. `wide` (tile_m x tile_n tiles) where its tiles fill at least half a wave, else `narrow` (tile_m x
    narrow_n: more tiles, each with less work), as persistent_split_k weighs the two widths. On an H100 (x SGEMM)
    at 2048x2048x8192, 128 tiles of 128x256 on 132 SMs: promote 1.80, bn128_promote 1.58. 3xTF32's wide build is
    `promote2`, each sum promoted every two k steps: on an H200 (x SGEMM, results/reference/NVIDIA_H200/precision/)
    2.28-2.30 at 4096^3 and 2.54 at 8192^3 against promote's 2.26 and 2.43, at an error of 2.4e-7 and 2.8e-7
    against promote's 2.3e-7 and 3.1e-7 (SGEMM's 1.1e-6 and 1.6e-6).

    `min_slice_k`, for a rung whose split-K builds (splitk<S>, wide tiles) are promoted too (3xFP16's): where even
    the narrow tiles fill less than half a wave and are more tiles than the wide ones, the largest registered S whose
    wide tiles x S are more work items than the narrow tiles and fit one wave, and whose slices keep at least
    `min_slice_k` of K each. On an H100 (x SGEMM, results/reference/NVIDIA_H100/3xfp16/suite.txt), splitk4 against
    bn128: 1024x1024x8192 1.62 against 1.59, 256x4096x14336 (m x n x k) 1.29 against 1.20, 512x512x16384 0.62
    against 0.44, 16x3584x3584 0.57 against 0.54; at 1024^3 (256 of K a slice) 1.34 against 1.85, and splitk2 (as
    many work items as bn128's tiles) 1.40. Where N is at most narrow_n the narrow tiles are the wide tiles' count
    with no columns to spare: 4096x64x4096, bn128 0.41 against splitk4 0.35 (but 128x128x32768, 0.05 against
    0.08)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        sms = problem.sm_count
        where = f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on {sms} SMs"
        why = "sums promoted into fp32 every few k steps, SGEMM's accuracy class"
        if 2 * tiles > sms or narrow not in variants:
            return Choice(wide, f"{why}; {where}: at least half a wave, so the wide tiles")
        narrow_tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, narrow_n)
        splits = [s for s in registered_splits(variants)
                  if narrow_tiles < tiles * s <= sms and problem.k >= s * min_slice_k
                  ] if min_slice_k and 2 * narrow_tiles <= sms and narrow_tiles > tiles else []
        if splits:
            return Choice(f"splitk{splits[-1]}",
                          f"{why}; {where}, and {narrow_tiles} of {tile_m}x{narrow_n}, leave most SMs idle: K split "
                          f"{splits[-1]} ways, at least {min_slice_k} of it a slice")
        return Choice(narrow, f"{why}; {where} leave most SMs idle: {narrow_tiles} tiles of {tile_m}x{narrow_n} "
                              "instead")

    return choose


# The promoted class's 128x192 tiles in 2-CTA clusters (bn192_promote_cluster2: one scratch set, so that a consumer
# holds 2 x 96 accumulators) take the place of its 128x128 tiles in clusters (bn128_promote) over at least
# WIDER_PROMOTED_STEPS k steps of a tile (twice the 4 stages that fit at 128x192), where their columns past N are at
# most WIDER_PROMOTED_WASTE more than the 128-column tiles', and where the busiest SM's work in them (waves of
# clusters as the kernel deals them out, persistent_waves, times the tile's width) is at most WIDER_PROMOTED_WORK
# times its work in 128x128 tiles: per multiply-add they ran 0.97-1.25 times as fast (median 1.09). Fitted on an H100
# (x cuBLASLt's promoted line, one process, results/reference/NVIDIA_H100/fp8-promoted-192/): where bn128_promote
# was the pick, from 3072^3 to 8192x3584x18944, the wider tiles ran 0.95-1.07 against 0.86-0.96 (4096^3 0.95-0.96
# against 0.94, 8192^3 0.98 against 0.89-0.92). They lost at 8192x8192x512 (4 k steps: 1.040 against 1.055), at
# 8192x1024x4096 (six tiles of 192 hold 1152 columns, 12.5 % past N; 0.889 against 0.922) and at 3584^3 (five waves
# of their clusters against six of 128x128 ones, 1.25 times the work: 0.909 against 0.961); 4096^3 and 4000^3 (six
# waves against eight, 1.125 times) gained 2 % and 7 %.
WIDER_PROMOTED_STEPS = 8
WIDER_PROMOTED_WASTE = 0.05
WIDER_PROMOTED_WORK = 1.15


def wider_promoted_tiles(rest: Callable[[object, tuple[str, ...]], Choice], narrow: str, wide: str, bk: int,
                         cluster: int, min_saved: int | None, tile_m: int = 128, narrow_n: int = 128,
                         wide_n: int = 192) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, the heuristic of a rung's promoted class, with its `wide` tiles (tile_m x wide_n in clusters of
    `cluster`) in place of its pick where that is its `narrow` tiles (tile_m x narrow_n, the same clusters), K holds
    at least WIDER_PROMOTED_STEPS k steps of `bk`, the wide tiles' columns past N are at most WIDER_PROMOTED_WASTE
    more than the narrow ones', and the busiest SM's work in wide tiles is at most WIDER_PROMOTED_WORK times its work
    in narrow ones (persistent_waves, with the kernel's stream-K bar `min_saved`). A 128x192 tile moves 13 % fewer
    bytes through shared memory per multiply-add than a 128x128 one (kernels/warp_specialized/mainloop.cuh), where
    the promoted sums leave the 128x128 tiles short of the tensor cores' rate."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        if picked.variant != narrow or wide not in variants:
            return picked
        steps = cdiv(problem.k, bk)
        narrow_cols, wide_cols = cdiv(problem.n, narrow_n) * narrow_n, cdiv(problem.n, wide_n) * wide_n
        clusters = max(1, problem.sm_count // cluster)
        rows = cdiv(problem.m, tile_m * cluster)
        narrow_waves, _ = persistent_waves(rows * cdiv(problem.n, narrow_n), clusters, steps, min_saved)
        wide_waves, _ = persistent_waves(rows * cdiv(problem.n, wide_n), clusters, steps, min_saved)
        work = wide_waves * wide_n / (narrow_waves * narrow_n)
        if (steps < WIDER_PROMOTED_STEPS or wide_cols > (1 + WIDER_PROMOTED_WASTE) * narrow_cols
                or work > WIDER_PROMOTED_WORK):
            return picked
        return Choice(wide, f"{picked.reason}; tiles {wide_n} wide instead ({wide_cols} columns against "
                            f"{narrow_cols}, {steps} k steps, {wide_waves:.2f} waves of clusters against "
                            f"{narrow_waves:.2f}: {work:.2f} times the busiest SM's work in tiles that move fewer "
                            "bytes through shared memory per multiply-add)")

    return choose


# On a card of less memory bandwidth an SM (PROMOTED_SLOW_MEMORY's bar: an H100), FP8's promoted twins that compute
# Cᵀ = Bᵀ·Aᵀ in 128x128 tiles without a cluster (no transpose of B before the kernel) take the place of the class's
# own 128-row tiles below PROMOTED_SWAP_TRANSPOSE_SHARE too, where their busiest SM's work, weighed by the rate of
# each build's tiles per multiply-add, is at most the own tiles' plus the transpose's share (transpose_share): the
# twins' tiles PROMOTED_TWIN_RATE times the own 128x128 tiles' rate, the 128x192 ones WIDER_PROMOTED_RATE times it
# (the median of wider_promoted_tiles' fit). Fitted on an H100 (x cuBLASLt's promoted line, one process each;
# results/reference/NVIDIA_H100/fp8-promoted-twins/twins-4096*.txt, M x N x K): the twins ran ahead wherever their
# weighed work came to 0.95-1.00 times the own tiles' (4096^3 0.98 against the 128x192 tiles' 0.95, 4096x2048x4096
# 1.02 / 0.96, 3584x4096x4096 1.00 / 0.98, 3072x2048x2048 1.17 / 1.07 against the 128x128 tiles without a cluster,
# 5120x2048x4096 0.96 / 0.93 against those in clusters) and fell behind wherever it came to 1.02-1.10 (4096x8192x4096
# 0.92 / 0.96, 4096x3072x4096 1.00 / 1.04 where the 128x192 tiles fill their last wave, 8192x4096x4096 0.90 / 0.98).
# Held out (twins-held-out.txt, 14 random shapes where the class picks those tiles): the better build at 12, the
# misses 5888x1024x7680 (1.01 times: 0.91 against the twin's 0.97) and 3072x6656x5120 (0.99 times: the twin's 0.991
# against 0.992). On an H200 the twins lost at 4096^3 (0.93 against the 128x128 tiles' 0.97,
# small-problems/promoted-twins-large-fp8-*.txt): the bar keeps its own tiles there.
PROMOTED_TWIN_RATE = 0.93
WIDER_PROMOTED_RATE = 1.09


def slow_memory_twins(rest: Callable[[object, tuple[str, ...]], Choice], twin: str,
                      own: dict[str, tuple[int, int, int, float]], bk: int, min_saved: int | None,
                      bar: LongTiles, twin_tile: tuple[int, int] = (128, 128), twin_rate: float = PROMOTED_TWIN_RATE
                      ) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, the heuristic of a rung's promoted class, with `twin` (Cᵀ = Bᵀ·Aᵀ in tiles of `twin_tile` over Cᵀ,
    without a cluster or a stream-K tail, B not transposed) in place of its pick where that is one of `own` (build ->
    its tile's rows, columns, cluster and rate per multiply-add against a 128x128 tile's; a stream-K tail by
    `min_saved`), on a card of less memory bandwidth an SM than `bar`'s, and where the twin's busiest SM does at most
    the work of the pick's plus B's transpose (persistent_waves, each tile's area over its rate; `twin_rate`, the
    twin's)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        hbm = problem.hbm_bytes_per_s
        if (picked.variant not in own or twin not in variants or hbm is None
                or hbm / problem.sm_count >= bar.bytes_per_s_per_sm):
            return picked
        tile_m, tile_n, cluster, rate = own[picked.variant]
        steps = cdiv(problem.k, bk)
        own_waves, _ = persistent_waves(cdiv(problem.m, tile_m * cluster) * cdiv(problem.n, tile_n),
                                        max(1, problem.sm_count // cluster), steps, min_saved)
        twin_m, twin_n = twin_tile
        twin_waves, _ = persistent_waves(cdiv(problem.n, twin_m) * cdiv(problem.m, twin_n), problem.sm_count, steps,
                                         None)
        share = transpose_share(problem)
        own_work = own_waves * tile_m * tile_n / rate * (1 + share)
        twin_work = twin_waves * twin_m * twin_n / twin_rate
        if twin_work > own_work:
            return picked
        return Choice(twin, f"{picked.reason}; on a card of {hbm / problem.sm_count / 1e9:.0f} GB/s of memory an SM "
                            f"(less than {bar.bytes_per_s_per_sm / 1e9:.0f}), the twin that computes Cᵀ = Bᵀ·Aᵀ in "
                            f"{twin_m}x{twin_n} tiles without B's transpose: {twin_waves:.2f} waves of its tiles at "
                            f"{twin_rate:.2f} times the rate against {own_waves:.2f} of {tile_m}x{tile_n} at "
                            f"{rate:.2f} and the transpose's {share:.0%}, {twin_work / own_work:.2f} times the busiest "
                            "SM's work")

    return choose


# Where B's bytes exceed this many times A's and C's together (token rows against a weight matrix), the tf32 rung
# writes Bt in shared memory instead of transposing all of B before the kernel (b_heavy). At 512x6144x4096 (4.8 times)
# the transposed 128x192 tiles ran at 0.71x cuBLAS against 0.66 (an H200, tiles-bn192-tf32.txt); at 320x8192x2048
# (5.1 times) Bt in shared memory at 0.85 against 0.76 (tiles-bn192-moved-tf32.txt).
B_HEAVY_RATIO = 5
# The rate per SM of those builds' tiles against a 128x256 tile's, where they write Bt themselves. 128x128: tf32's own
# (TILE_RATES_BY_DTYPE). 64x128: each CTA writes the same Bt for half the rows, fitted to the sweeps of both on an
# H200 (tiles-smem-bt-*.txt): 0.6 picks the best build measured at 19 of 20 B-heavy shapes (1 to 448 rows), the
# other, 64x6144x4096, within 4.4 %.
SMEM_BT_TILE_RATES = {(128, 128): 0.98, (64, 128): 0.6}


def b_heavy(rest: Callable[[object, tuple[str, ...]], Choice], builds: dict[str, tuple[int, int]], suffix: str,
            rates: dict[tuple[int, int], float] = SMEM_BT_TILE_RATES, ratio: int = B_HEAVY_RATIO
            ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose wgmma reads B only K-major (tf32) and which has builds that read B as it is and
    write each k step's Bt tile in shared memory (`builds`: name -> tile rows and columns, the builds named
    <name>_<suffix> and their splits <name>_splitk<S>_<suffix>, a split only where its slices fit one wave): where B
    is more than `ratio` times A's and C's elements, the one of those whose busiest SM does the least work, each
    tile's work weighed by its rate per SM (`rates`), ties to fewer slices, then to larger tiles; elsewhere `rest`,
    whose builds transpose B before the kernel. The transpose moves all of B twice more; writing Bt in shared memory
    spends the tensor cores' shared-memory bandwidth instead, so it pays where B is most of the bytes. On an H200 (x
    cuBLAS, tiles-smem-bt-*.txt): 64x4096x4096 1.12 against 0.47, 128x4096x4096 1.01 against 0.44, 256x7168x2048
    0.68 against 0.50; at 512x4096x4096 (B four times A and C) 0.64 against 0.65, at 4096^3 0.53 against 0.93."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        b_elements, others = problem.k * problem.n, problem.m * problem.k + problem.m * problem.n
        if b_elements <= ratio * others:
            return rest(problem, variants)
        stripped = [v.removesuffix(f"_{suffix}") for v in variants if v.endswith(f"_{suffix}")]
        options = []  # (busiest SM's weighted work, slices, -tile area, name, tiles, tile)
        for build, (tm, tn) in builds.items():
            if build not in stripped:
                continue
            tiles = cdiv(problem.m, tm) * cdiv(problem.n, tn)
            for split in (1, *(s for s in registered_splits(stripped, build) if tiles * s <= problem.sm_count)):
                items = tiles * split
                work = cdiv(items, problem.sm_count) * tm * tn * cdiv(problem.k, split) / rates[(tm, tn)]
                name = f"{build}_{suffix}" if split == 1 else f"{build}_splitk{split}_{suffix}"
                options.append((work, split, -tm * tn, name, tiles, (tm, tn)))
        if not options:
            return rest(problem, variants)
        _, split, _, name, tiles, (tm, tn) = min(options)
        why = (f"B is {b_elements / others:.1f}x A's and C's elements (more than {ratio}x): Bt written in shared "
               f"memory by the kernel, not B transposed before it; {tiles} tile{'s' if tiles != 1 else ''} of "
               f"{tm}x{tn} on {problem.sm_count} SMs")
        return Choice(name, why + (f", K split {split} ways: the least work for the busiest SM" if split > 1 else
                                   ": the least work for the busiest SM"))

    return choose


# Where tf32's pick is a split of K whose work items fill the SMs (at least this share of them) over at most this many
# rows of tiles, the same split writing Bt in shared memory runs it (bt_twin). On an H200 (x cuBLAS, one process;
# small-problems/tiles-bn128-splits-tf32.txt, tf32-smem-bt-deep-k.txt, tiles-small-splits-smem-bt-more-tf32.txt,
# tiles-bt-twins-*.txt), the split against its twin: 256x512x16384 (2 rows of 128x128 tiles, 128 items) 0.76 / 1.11,
# 192x1024x8192 0.71 / 1.00, 256x1024x8192 0.81 / 1.12, 128x1024x8192 (1 row) 0.79 / 1.10, 512x512x16384 (4 rows)
# 0.96 / 1.02, 512x512x8192 1.05 / 1.12, 256x256x8192 (4 rows of 64x128) 0.91 / 0.99, 256x256x4096 (4 k steps a
# slice) 0.96 / 1.13, 256x512x8192 0.74 / 0.84, 256x1024x1024 (128 items of 8 k steps) 0.93 / 1.02, 512x1024x8192
# 0.86 / 0.87; with fewer items the twin lost or tied (384x384x16384, 72 items, 0.86 / 0.80; 384x768x8192, 72, 0.73 /
# 0.67; 160x128x16384, 48, 0.87 / 0.61; 192x192x16384, 96, 0.69 / 0.70), and over 8 rows of tiles too
# (1024x512x8192, 128 items, 1.23 / 1.03): each row of tiles writes all of Bt again.
BT_TWIN_FILL = 7 / 8
BT_TWIN_ROW_TILES = 4


def bt_twin(rest: Callable[[object, tuple[str, ...]], Choice], tiles: dict[str, tuple[int, int]], suffix: str,
            fill: float = BT_TWIN_FILL, row_tiles: int = BT_TWIN_ROW_TILES
            ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose splits have twins that write Bt in shared memory (<split>_<suffix>; `tiles`:
    the split builds' tile name, "" for the rung's own, -> tile rows and columns): `rest`'s pick, and where that is a
    split whose work items fill at least `fill` of the SMs over at most `row_tiles` rows of tiles, its twin (see
    BT_TWIN_FILL). B transposed before the kernel moves all of it
    twice more; written in shared memory, each CTA writes its slice's Bt, which a full wave of CTAs shares out, and
    each row of tiles writes it again."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        split = re.fullmatch(r"(?:(.+)_)?splitk(\d+)", picked.variant)
        twin = f"{picked.variant}_{suffix}"
        if split is None or twin not in variants or (split.group(1) or "") not in tiles:
            return picked
        tm, tn = tiles[split.group(1) or ""]
        rows, items = cdiv(problem.m, tm), cdiv(problem.m, tm) * cdiv(problem.n, tn) * int(split.group(2))
        if rows > row_tiles or items < fill * problem.sm_count:
            return picked
        return Choice(twin, f"{picked.reason}; its {items} work items fill the SMs over {rows} row"
                            f"{'s' if rows != 1 else ''} of tiles, so each writes its slice's Bt in shared memory "
                            "instead of all of B transposed before the kernel")

    return choose


# The swap twins' model (swap_twin), from the tf32 rung on an H200: its pre-pass moves B at about 3.5 TB/s (3.4-4.3
# measured, docs/tensor-cores.md), and a 128x256 tile runs at about 1.3e12 multiply-adds a second on its SM (350 TF/s
# over 132 SMs).
SWAP_TRANSPOSE_BYTES_PER_S = 3.5e12
SWAP_TILE_MACS_PER_S = 1.3e12
# ... and the most of C's area, in tiles, that a twin may cover against its pick's: where C has fewer columns than a
# tile has rows, the twin's tiles lie mostly past them (x cuBLAS on an H200, tiles-swap-area-tf32.txt: 8192x16x8192
# 0.60 against 0.88, twice the area; 160x128x16384 1.00 against 0.87, a third more).
SWAP_MAX_AREA = 1.5
# ... and the fewest k steps a slice of a twin split further than its pick (the twin of a two-k-group build): short
# of them, the twin split as its pick is (x cuBLAS on an H200, tiles-kg2-twins*-tf32.txt: 256^3 1.09 unsplit against
# 0.87 split 2 ways, 2048x256x512 1.09 against 0.97; 384x1024x1024, 16 steps a slice, 1.19 split against 1.00). Where
# the transpose's launch outweighs the tiles' work, the wave model does not weigh it: these small problems take the
# twin unsplit.
SWAP_SPLIT_MIN_STEPS = 12


class SwapTwin(NamedTuple):
    """A build's twin that computes Cᵀ = Bᵀ·Aᵀ (swap_twin): its name, the build's tile rows and columns (the twin's
    too, laid along n and m), the build's cluster and the twin's, their K slices, and whether the build transposes B
    before the kernel (the twin of a build that writes Bᵀ in shared memory saves no transpose, only the writers).
    A twin of other rows or slices than the build's (a build whose two consumer warpgroups take alternate k steps of
    a 64-row tile: the twin of a 128-row tile split twice as far, the same work an item) names its own."""
    twin: str
    rows: int
    cols: int
    cluster: int
    twin_cluster: int
    slices: int
    transposes: bool
    twin_rows: int | None = None  # None: `rows`
    twin_slices: int | None = None  # None: `slices`
    short_twin: str | None = None  # the twin of twin_rows split as the build is, for a K too short to split further


def swap_twin(rest: Callable[[object, tuple[str, ...]], Choice], twins: dict[str, SwapTwin], k_step: int,
              min_saved: int, element_bytes: int = 4, bytes_per_s: float = SWAP_TRANSPOSE_BYTES_PER_S,
              macs_per_s: float = SWAP_TILE_MACS_PER_S, max_area: float = SWAP_MAX_AREA
              ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose builds have twins that compute Cᵀ = Bᵀ·Aᵀ (tf32: B's rows read into registers
    as wgmma's A, so that B needs neither a pre-pass that transposes it nor warps that write Bᵀ in shared memory;
    `twins`: build -> SwapTwin): `rest`'s pick, and where that has a twin, the twin if its waves of work items take
    no longer than the pick's, plus the transpose of B where the pick transposes it. The pick's whole tiles split a
    last partial wave by k steps where the kernel does (the stream-K tail, of k steps of `k_step` that save each
    cluster `min_saved`: persistent_waves), so their waves may be a fraction; the twin has no tail, and split builds'
    items come in whole waves either way. The transpose reads and writes B's elements once at `bytes_per_s`; a wave is
    a tile's 1/slices of k at `macs_per_s` on each SM. Nor where the twin's tiles cover more than `max_area` times the
    pick's of C (a few rows or columns in the twin's tiles, laid the other way). On an H200 (x cuBLAS,
    tiles-swap-*-tf32.txt): 2048^3 1.06 against 0.88, 4096^3 1.01 against 0.94, 512^3 1.11 against 0.81; deep K,
    against builds that write Bᵀ, 512x512x16384 1.43 against 1.03, 256x256x8192 1.35 against 1.01; kept, 2304^3 1.02
    against the twin's 0.91 (two whole waves of 81 clusters against 1.2 waves), 16x4096x4096 0.99 against 0.56."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        t = twins.get(picked.variant)
        if t is None or t.twin not in variants:
            return picked
        items = cdiv(cdiv(problem.m, t.rows), t.cluster) * cdiv(problem.n, t.cols) * t.slices
        if t.twin_slices is not None and items > problem.sm_count // t.cluster:
            return picked  # a twin split further than its pick: only while one wave holds the items (no partials
            # stored past it: 1792^3, 392 items, 0.82 against the pick's 0.75-0.89)
        if (t.twin_slices is not None and t.short_twin in variants
                and cdiv(problem.k, k_step) < SWAP_SPLIT_MIN_STEPS * t.twin_slices):
            return Choice(t.short_twin, f"{picked.reason}; over {cdiv(problem.k, k_step)} k steps its twin of "
                                        f"{t.twin_rows}-row tiles computes Cᵀ = Bᵀ·Aᵀ unsplit, without the transpose "
                                        "of B and its launch")
        waves = persistent_waves(items, max(1, problem.sm_count // t.cluster), cdiv(problem.k, k_step),
                                 min_saved if t.slices == 1 else None)[0]
        # the transpose in waves of the pick's items (k cancels)
        transpose = (2 * element_bytes * problem.n * t.slices * macs_per_s / (bytes_per_s * t.rows * t.cols)
                     if t.transposes else 0.0)
        rows, slices = t.twin_rows or t.rows, t.twin_slices or t.slices
        # the twin's waves, in the pick's items (of rows x cols x K / slices)
        swapped = cdiv(cdiv(cdiv(problem.n, rows), t.twin_cluster) * cdiv(problem.m, t.cols) * slices,
                       max(1, problem.sm_count // t.twin_cluster)) * rows * t.slices / (t.rows * slices)
        area = (cdiv(problem.n, rows) * rows * cdiv(problem.m, t.cols)
                / (cdiv(problem.m, t.rows) * t.rows * cdiv(problem.n, t.cols)))
        if swapped > waves + transpose or area > max_area:
            return picked
        plural = "s" if swapped != 1 else ""
        shown = f"{swapped:.2f}".rstrip("0").rstrip(".")  # (2 waves, 1.5 waves, 1.33 waves)
        against = f"the transpose of B ({transpose:.2f} waves) before the kernel" if t.transposes else (
            "the warps that write Bᵀ in shared memory")
        return Choice(t.twin, f"{picked.reason}; its twin computes Cᵀ = Bᵀ·Aᵀ in {shown} wave{plural} of work "
                              f"items, against {waves:.2f} and {against}")

    return choose


# The 8-bit rungs' twins that compute Cᵀ = Bᵀ·Aᵀ (any tile of 128 rows: swapped_problem) against the rung's own
# picks, x the vendor (both of whose lines transpose B as ours do) on an H200 in one process
# (small-problems/swap-bytes-store-*.txt, swap-large-*.txt, M x N x K, int8 / FP8): 16x4096x4096 2.09 / 1.77 (K split
# 4 ways over 128x64 tiles of Cᵀ) against 0.97 / 0.81, 128x4096x4096 1.79 / 1.39 against 1.16 / 1.05, 512x512x16384
# 1.38 / 1.09 against 1.03 / 0.84, 1000x800x1200 1.63 / 1.43 against 1.02 / 0.93, 1024^3 1.87 / 1.51 against 1.33 /
# 1.08, 2048^3 1.76 / 1.28 against 1.40 / 1.03, 4096^3 1.07 / 1.09 against 0.98 / 1.01, 8192^3 1.01-1.12 / 1.04-1.05
# against 0.95-1.09 / 0.99-1.02, 8192x6144x4096 0.99 / 1.02-1.03 against 0.97 / 0.99. But at N = 64, where the twins'
# 128-row tiles lie half past B's columns, 0.61-0.63 / 0.57-0.59 against 1.00 / 0.93-0.94. The transpose of B,
# estimated as its share of the GEMM's own time: 8192^3 and 8192x6144x4096 5 %, 4096^3 10 %, 1024^3 39 %, 16 rows
# against 4096x4096 200 %, 4096x64x4096 3 %. So the twins run where that share is at least this.
SWAP_TRANSPOSE_SHARE = 0.04
# ... but not where the rung's own pick splits K this many ways or more (a few tiles against a deep K): its 64-row
# tiles and their two k groups cut each SM's work further than the twins' 128-row ones can (x the vendor, int8 /
# FP8, small-problems/swap-rule-*.txt: 128x128x32768 1.18 / 1.05 against the twins' 0.99 / 0.61, 64x64x65536 1.35 /
# 1.04 against 0.76 / 0.41, 256x256x8192 1.24 / 1.06 against 1.38 / 0.89).
SWAP_KEEP_SLICES = 16
# ... the GEMM's own time in that estimate: its products at the 8-bit tensor cores' rate (cuBLAS int8 1.49 and
# cuBLASLt FP8 1.42 P ops/s at 8192^3 on an H200), or its operands' bytes at SWAP_TRANSPOSE_BYTES_PER_S where longer.
SWAP_GEMM_OPS_PER_S = 1.4e15
# FP8's promoted class has twins too (warp_specialized.promoted_ladder: each k step's sum promoted, as in the rest of
# the class), weighed by the same rule at a higher bar: where the GEMM's math decides they lose to the class's own
# tiles, whose A goes to the tensor cores from shared memory and not through registers. x cuBLASLt's promoted line on
# an H200 (small-problems/promoted-twins-*-fp8.txt), by the transpose's estimated share: 2048^3 (0.20) 1.10 against
# 1.04, 1536^3 (0.26) 0.84 against 0.79, 1000x1200x800 (0.40) 1.28 against 0.97; but 3072^3 (0.13) 0.93 against
# 0.94-0.95, 4096^3 (0.10) 0.93 against 0.97, 4096x14336x4096 (0.10) 0.89 against 0.93-0.94, 8192^3 (0.05) 0.79-0.81
# against 0.94-0.97.
PROMOTED_SWAP_TRANSPOSE_SHARE = 0.15


def transpose_share(problem, ops_per_s: float = SWAP_GEMM_OPS_PER_S,
                    bytes_per_s: float = SWAP_TRANSPOSE_BYTES_PER_S) -> float:
    """The transpose of B (its bytes read and written once at `bytes_per_s`) as a share of the GEMM's own time (its
    products at `ops_per_s`, or A's and B's bytes at `bytes_per_s` where longer); infinite for an empty GEMM."""
    size = problem.dtype.itemsize
    gemm = max(2 * problem.m * problem.n * problem.k / ops_per_s,
               size * problem.k * (problem.m + problem.n) / bytes_per_s)
    return 2 * size * problem.k * problem.n / bytes_per_s / gemm if gemm > 0 else math.inf


def swapped_problem(rest: Callable[[object, tuple[str, ...]], Choice], twins: dict[str, str],
                    deep_splits: frozenset[str] = frozenset(), share: float = SWAP_TRANSPOSE_SHARE,
                    ops_per_s: float = SWAP_GEMM_OPS_PER_S, bytes_per_s: float = SWAP_TRANSPOSE_BYTES_PER_S,
                    transposed_rest: Callable[[object, tuple[str, ...]], Choice] | None = None
                    ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose builds of every tile have twins that compute Cᵀ = Bᵀ·Aᵀ (the 8-bit rungs: B's
    rows read into registers through ldmatrix.trans, so that B needs no transpose before the kernel; `twins`: build
    -> its twin, DEFAULT for the rung's record): where the transpose of B (its bytes read and written once at
    `bytes_per_s`) would take at least `share` of the GEMM's own time (its products at `ops_per_s`, or A's and B's
    bytes at `bytes_per_s` where longer), the twin of `rest`'s pick for Cᵀ's problem (n x m x k) among the builds
    that have twins: the rung's own rules, for tiles laid along B's columns; elsewhere, and where `rest`'s pick is
    one of `deep_splits` (the rung's builds that split K SWAP_KEEP_SLICES ways or more), `rest`'s pick.
    `transposed_rest`: the rules for Cᵀ's problem where they are not `rest`'s."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        estimated = transpose_share(problem, ops_per_s, bytes_per_s)
        if estimated < share or twins.get(DEFAULT) not in variants or picked.variant in deep_splits:
            return picked
        known = tuple(name for name, twin in twins.items() if name != DEFAULT and twin in variants)
        transposed = (transposed_rest or rest)(replace(problem, m=problem.n, n=problem.m), known)
        return Choice(twins[transposed.variant],
                      f"the transpose of B would take {estimated:.0%} of the GEMM's time (at least "
                      f"{share:.0%}): Cᵀ = Bᵀ·Aᵀ without it, by the twin of the pick for Cᵀ's problem ({problem.n} x "
                      f"{problem.m}): {transposed.reason}")

    return choose


# Where FP8's promoted class runs its twins (Cᵀ = Bᵀ·Aᵀ, each k step promoted): not where its pick runs tiles of 64
# rows, which have no twin, over a long K: the twins' 128-row tiles then make half the work items, as long, and pay
# only where B's transpose weighs more than this share of the GEMM's time (transpose_share). x cuBLASLt's promoted
# line on an H200 (small-problems/promoted-twins-more-fp8.txt): 2048x256x4096 (share 0.20) 1.01 against the twin's
# 0.84, 320x1536x5120 (1.25) 1.05 / 0.92, 1024x1024x8192 (0.39) 0.91 / 0.79; but 128x4096x4096 (1.94) 1.05 / 1.46,
# 192x2816x4096 (1.88) 1.09 / 1.21, and every decode shape (about 2). The fast 8-bit classes (FP8's fast
# accumulation, int8) bound their twins by work items instead (by_items): where the twin's fill at most half the SMs
# and the own pick makes more, its tiles keep their place (x the vendor line of the class on an H200,
# small-problems/twin-bound-fast-moved.txt): FP8 768x768x12288 the 64x128 tiles of two k groups 0.91 against the
# twin's 0.51 (36 items), 4096x128x16384 1.05 / 0.53, int8 4096x128x32768 1.03 / 0.45, 768x768x12288 1.07 / 0.62;
# the twin kept its lead where it filled more (FP8 640x768x16384, 72 items: 0.95 against 0.85; 3072x1024x4096, 128:
# 1.28 / 0.86) or made as many (1024x1024x8192: FP8 0.90 / 0.86, int8 1.29 / 1.20). Held out (24 random shapes
# the bound moved, twin-bound-fast-held-out.txt): 22 ran faster on the own pick (int8 2880x128x26624 1.02 against
# 0.39), two slower (FP8 1120x320x25088 0.64 / 0.76, 3904x192x8704 0.62 / 0.65).
TWIN_ROWS_SHARE = 1.5
TWIN_LONG_STEPS = 32  # k steps a work item of the pick's: "a long K"
# ... nor, in FP8's promoted class, at a few columns, where its 64x64 tiles with two k groups keep their lead over the
# twins' half-empty 128-row tiles (promoted-twins-moved-fp8.txt: 300x56x6000 1.15 against the twin of 128x64 tiles
# split 8 ways 0.80, 512x64x65536 0.96 against 0.76; the twins' lead where they had one, 768x64x4096 1.12 against
# 1.04, 384x48x8192 1.23 against 1.15, is given up).


def twin_bounds(twins: Callable[[object, tuple[str, ...]], Choice], own: Callable[[object, tuple[str, ...]], Choice],
                records: dict[str, tuple[int, int, int, bool]], tile_k: int, few_columns: int = 0,
                long_steps: int = TWIN_LONG_STEPS, share: float = TWIN_ROWS_SHARE, by_items: bool = False
                ) -> Callable[[object, tuple[str, ...]], Choice]:
    """`twins`' pick (a rung's rules with the twins that compute Cᵀ = Bᵀ·Aᵀ), but `own`'s (its rules without them)
    where `twins` takes a twin and `own`'s pick runs tiles of fewer rows than the twin's over at least `long_steps` k
    steps of `tile_k` a work item and the transpose of B would take less than `share` of the GEMM's time, or where C
    has at most `few_columns` columns (`records`: build -> rows and columns of its tiles, slices of K and whether it
    computes Cᵀ). `by_items`: instead of the rows, where the twin's work items would fill at most half the SMs and
    `own`'s pick makes more (a twin of 128x64 tiles against 64x128 ones makes as many, and keeps its place)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = twins(problem, variants)
        twin = records.get(picked.variant)
        if twin is None or not twin[3]:
            return picked
        kept = own(problem, variants)
        if problem.n <= few_columns:
            return Choice(kept.variant, f"{kept.reason}; not a twin over Cᵀ: C's {problem.n} columns would fill at "
                                        f"most half of its {twin[0]}-row tiles")
        rows, cols, slices, _ = records.get(kept.variant, twin)  # (the record's own tiles: the twin's 128 rows)
        steps, estimated = cdiv(cdiv(problem.k, tile_k), slices), transpose_share(problem)
        ours = cdiv(problem.m, rows) * cdiv(problem.n, cols) * slices
        theirs = cdiv(problem.n, twin[0]) * cdiv(problem.m, twin[1]) * twin[2]
        few = (theirs < ours and 2 * theirs <= problem.sm_count) if by_items else rows < twin[0]
        if few and steps >= long_steps and estimated < share:
            return Choice(kept.variant, f"{kept.reason}; not a twin over Cᵀ: its {twin[0]}x{twin[1]} tiles would make "
                                        f"{theirs} work items against {ours}, of {steps} k steps, and the transpose "
                                        f"of B would take {estimated:.0%} of the GEMM's time (less than {share:.0%})")
        return picked

    return choose


# FP8's promoted twins of 128x64 tiles past one wave (Cᵀ's problem: its rows are C's columns), where C has more rows
# than one tile's 64 columns, ran slower than the twins of the class's 128x128 tiles (x cuBLASLt's promoted line on an
# H200, promoted-twins-*-fp8.txt): 1536^3 (288 tiles of 128x64) 0.76 against 0.84, 1792^3 (392) 0.93 against 1.01,
# 2304^3 (648) 0.87 against 1.01; within one wave they led, 1024^3 (128) 1.54, 896^3 (98) 1.53, 1000x800x1200 (112)
# 1.43, 256x4096x512 (128) 1.83, and so did they at a few token rows past a wave (16x28672x4096, 224 tiles: 2.75 against
# 2.06).


def narrow_within_one_wave(rest: Callable[[object, tuple[str, ...]], Choice],
                           records: dict[str, tuple[int, int, int, bool]], narrow: int
                           ) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`'s pick, but where that is a build of tiles `narrow` columns wide whose work items exceed one wave and C
    has more columns than one such tile, its pick among the other builds (`records`: build -> rows and columns of its
    tiles, slices of K, whether it computes Cᵀ)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if (record is None or record[1] != narrow or problem.n <= narrow
                or work_items(record, problem) <= problem.sm_count):
            return picked
        wider = tuple(name for name in variants if name in records and records[name][1] != narrow)
        other = rest(problem, wider)
        return Choice(other.variant, f"{other.reason}; not {picked.variant}: its {work_items(record, problem)} work "
                                     f"items of {record[0]}x{narrow} tiles exceed one wave")

    return choose


# The twins' rule weighs Cᵀ's problem with the rung's own tile model, which leaves its 128x64 tiles to the few-columns
# rule (N <= 64): for Cᵀ's problem of a few hundred rows (A's) that is most of them. Over a sweep of the 8-bit twins
# at 13 shapes of 1-1024 rows against 64-1024 columns and K of 4096-16384 (small-problems/twins-small-*.txt, x the
# vendor on an H200), the 128x64 twin split 8 ways was the fastest twin at every one in both dtypes, int8 1.26-1.73 and
# FP8 1.15-1.56, where the twin of the 128x128 or 128x256 tiles that the rule took ran 0.96-1.49 and 0.72-0.84
# (1024x64x4096 int8 1.26 against 0.96, 256x512x4096 FP8 1.32 against 0.84). Its slices there held 4-16 k steps; at a
# deep K, 64 k steps a slice, it lost to the 64x64 splits (moved-small-first-more-*.txt: 256x64x65536 int8 0.60
# against 1.11, 512x64x65536 FP8 0.63 against 0.85), so it takes slices of at most this many.
NARROW_TWIN_MAX_STEPS = 16
# At N <= 64 the narrow twin's 128 rows over Cᵀ are half empty, and the 64x64 tiles with two k groups make as many
# work items of as many slices (a 64x64 tile over C for each 128x64 one over Cᵀ). Over slices of more than this many
# k steps those ran faster, on an H200 (x the vendor, K = 16384 split 8 ways, 16 steps a slice; int8 / FP8;
# small-problems/twin-rule-deep-*.txt): 1024x64x16384 1.23 / 1.01 against the twin's 1.04 / 0.85, 768x48x16384
# 1.15 / 1.01 against 0.90 / 0.78, 512x64x16384 1.13 / 1.08 against 1.05 / 0.97, 384x32x16384 1.13 / 1.04 against
# 1.08 / 1.00. Over 4-8 steps a slice the twin kept its lead where it split K 8 ways (moved-small-first-*.txt,
# twins-small-*.txt, twin-rule-halves-short-*.txt: 512x64x4096 1.44 / 1.29 against 1.19 / 1.11, 256x64x8192 1.32 /
# 1.26 against 1.27 / 1.20, 1024x32x8192 1.25 / 1.08 against 1.09 / 0.95; 1024x64x8192 1.18 / 1.04 against 1.20 /
# 1.10), but not split 4 ways over 8 steps, from 1536 rows (2048x48x4096 1.15 / 0.95 against 0.93 / 0.79,
# 2048x64x4096 1.25 / 1.01 against 1.15 / 0.92, 1536x64x4096 1.28 / 1.04 against 1.19 / 0.94). Over 12 steps split
# 8 ways it led too, on an H200 (few-columns-rows-*.txt: 200x32x12000 1.26 / 1.26 against 1.13 / 1.18) and on an
# H100 (results/reference/NVIDIA_H100/few-columns-8bit/: 900x32x12000 1.11 / 0.93 against 1.05 / 0.90), so the 64x64
# split takes its place over more than 12 (half_empty_twins, past a wave too).
NARROW_TWIN_HALF_STEPS = 12
NARROW_TWIN_HALF_SLICES = 8


def narrow_twin(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                narrow: dict[int, str], tile_k: int, min_k_steps_per_slice: int = 4,
                max_k_steps_per_slice: int = NARROW_TWIN_MAX_STEPS, halves: dict[int, str] | None = None,
                half_steps: int = NARROW_TWIN_HALF_STEPS, half_slices: int = NARROW_TWIN_HALF_SLICES
                ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung whose twins compute Cᵀ = Bᵀ·Aᵀ (`records`: build -> rows and columns of its tiles,
    slices of K and whether it computes Cᵀ): `rest`'s pick, but where that is a twin of tiles wider than the twins in
    `narrow` (slices -> the twin of those tiles split so many ways, 1 for whole), or one of those that leaves most
    SMs idle (items for at most 1/SMALL_SPLIT_FROM of them), the narrow twin of the most slices whose work items fit
    one wave, each of min_k_steps_per_slice to max_k_steps_per_slice k steps, where it makes more than the pick. Where
    C's columns fill at most half of that twin's tile rows and its slices hold more than `half_steps` k steps, or more
    than min_k_steps_per_slice split fewer than `half_slices` ways, the build of `halves` (slices -> the split of
    tiles as wide as the twin's, over C, as many slices) split as many ways."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if record is None or not record[3]:
            return picked
        cols, items = record[1], work_items(record, problem)
        if picked.variant in narrow.values() and items * SMALL_SPLIT_FROM > problem.sm_count:
            return picked  # a narrow twin that leaves few SMs idle stays as split (64x8192x8192 int8: 3.05, whole)
        k_steps = cdiv(problem.k, tile_k)
        best = most_slices_in_one_wave(
            narrow, records, problem, variants,
            lambda s, name: (records[name][1] <= cols
                             and min_k_steps_per_slice * s <= k_steps <= max_k_steps_per_slice * s))
        if best is None:
            return picked
        s, fits, name = best
        r, c, _, _ = records[name]
        if fits < items or (fits == items and 2 * problem.n > r):
            return picked  # as many items: the narrow twin only where the pick's rows over Cᵀ are half empty too
        half = (halves or {}).get(s)
        steps = cdiv(k_steps, s)
        if (2 * problem.n <= r and half in variants
                and (steps > half_steps or (steps > min_k_steps_per_slice and s < half_slices))):
            hr, hc, _, _ = records[half]
            return Choice(half, f"{picked.reason}; but its twin of {r}x{c} tiles over Cᵀ would leave half of each tile "
                                f"empty over slices of {steps} k steps: {hr}x{hc} tiles over C, K split {s} "
                                f"ways, {work_items(records[half], problem)} work items")
        return Choice(name, f"{picked.reason}; but its twin of {r}x{c} tiles over Cᵀ"
                            f"{f', K split {s} ways' if s > 1 else ''}, makes {fits} work items in one wave against "
                            f"{items}")

    return choose


# At a few columns, half a twin's tile rows or fewer, its rows over Cᵀ are half empty or more, and the 64x64 tiles
# with two k groups over C, split as many ways, make as many work items with less of each tile empty. Over long
# slices those ran ahead, where the 128x64 twins' own rule leaves a twin in place: past one wave, where it takes none
# of them, and where the 8-bit twins read B's rows of N bytes that are no multiple of TMA_ALIGNMENT. Those a launch
# first copies into padded rows (launch.operands.PitchedOperand), a second kernel beside the twin's GEMM, where the
# 64x64 tiles read the transpose of B that every other build reads; there they ran ahead over 8 k steps a slice or
# more, and on an H200 behind the twin over 6 or fewer. x the vendor, the twin of 128x64 tiles against the 64x64
# tiles, each split 8 ways, int8 / FP8: on an H200 (small-problems/row-copy-after-*.txt) 700x40x8000 (8 k steps a
# slice) 1.19-1.26 / 0.92 against 1.44-1.47 / 1.08; 300x56x6000 (6) 4.24-4.29 / 1.18-1.20 against 4.10-4.15 / 1.16,
# 1000x60x3000 (3) 1.02-1.03 / 1.09 against 1.00 / 1.04. On an H100 (x the vendor, results/reference/NVIDIA_H100/
# few-columns-8bit/), at 27 shapes of 300-1200 rows, 24, 40 and 56 columns and K of 4096, 8000 and 16384, the twin
# ran 0.69-0.94 of the 64x64 tiles' rate over 8 k steps a slice and 0.60-0.84 over 16 (0.78-1.03 over 4), and the
# wide twins past a wave 0.54-0.62 (1200x40x16384 FP8 0.54 against 0.93 for the 64x64 tiles split 4 ways).
ROW_COPY_TWIN_STEPS = 6
# ... and where B's rows need no copy, over more k steps a slice than the 128x64 twins' rule allows them
# (NARROW_TWIN_HALF_STEPS): on an H100 (aligned-*.txt there, 27 shapes of N 16, 32 and 48) the wide twins over 16-32
# steps a slice at 1200x32x16384 and 1200x48x16384 ran 0.62-0.72 of the 64x64 tiles split 4 ways, which led every
# build; over 12 steps the twin led at 900x32x12000 (int8 1.11 against 1.05, FP8 0.93 against 0.90) and on an H200
# at 200x32x12000, and lost at 1000x48x12000 (0.75 of the 64x64 split 8 ways, heldout-*.txt). A twin of tiles
# wider than those (128x128 over Cᵀ) gives way at any depth: at 300x16x16384, 300x32x16384 and 300x48x16384 int8
# its split 16 ways (8 k steps a slice) ran 0.87-0.89 of the fastest build, the 64x64 tiles split 8 or 16 ways or the
# 128x64 twin.
# ... and over more than this many where B's rows hold an odd number of 16-byte chunks (N of 16 or 48 bytes, or rows
# padded to those): on an H100 (columns-n-*.txt there: 500, 700 and 1000 rows, N of 16, 32, 48 and 64,
# K of 8000 and 12000) the twin split 8 ways ran over 12 k steps a slice at 0.74-0.79 of the 64x64 splits' rate at
# 700 and 1000 rows and 0.92-0.95 at 500 where N was 16 or 48, and 0.99-1.15 where N was 32 or 64 (700x48x12000 int8:
# the twin 59.8 TF/s against 103.4 at 700x64x12000, a third more work); over 8 steps it ran 0.86-0.93 at 700 and 1000
# rows and led at 300-500, and led on an H200 at 640x48x8192 and 384x48x8192, so it keeps 8.
ODD_ROWS_TWIN_STEPS = 8


def half_empty_twins(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                     halves: dict[int, str], tile_k: int, min_k_steps_per_slice: int,
                     copy_steps: int = ROW_COPY_TWIN_STEPS, odd_steps: int = ODD_ROWS_TWIN_STEPS,
                     steps: int = NARROW_TWIN_HALF_STEPS) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`'s pick, but where that is a twin computing Cᵀ = Bᵀ·Aᵀ (`records`: build -> rows and columns of its
    tiles, slices of K and whether it computes Cᵀ) whose tile rows C's columns fill at most half, over slices of more
    than `steps` k steps of `tile_k` (more than `copy_steps` where B's rows need a copy into padded rows before it:
    pitch_elements; more than `odd_steps` where they hold an odd number of TMA_ALIGNMENT chunks), or of tiles wider
    than theirs at any depth, the build of `halves` (slices -> the 64x64 tiles with two k groups over C, split so
    many ways) of the most slices whose work items fit one wave, each of at least `min_k_steps_per_slice` k steps."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        twin = records.get(picked.variant)
        if twin is None or not twin[3] or 2 * problem.n > twin[0]:
            return picked
        itemsize = problem.dtype.itemsize
        pitch = pitch_elements(problem.n, itemsize)
        copied, odd = pitch != problem.n, pitch * itemsize % (2 * TMA_ALIGNMENT) != 0
        k_steps = cdiv(problem.k, tile_k)
        best = most_slices_in_one_wave(halves, records, problem, variants,
                                       lambda s, name: cdiv(k_steps, s) >= min_k_steps_per_slice)
        twin_steps = cdiv(k_steps, twin[2])
        short = copy_steps if copied else odd_steps if odd else steps
        if best is None or (twin_steps <= short and twin[1] <= records[best[2]][1]):
            return picked
        s, items, name = best
        rows, cols, _, _ = records[name]
        split = f", K split {s} ways (about {cdiv(k_steps, s)} k steps a slice)" if s > 1 else ""
        why = "that twin's "
        if copied:
            why = (f"B's rows of {problem.n * itemsize} bytes are no multiple of {TMA_ALIGNMENT}, so the launch would "
                   "copy them into padded rows for that twin, whose ")
        elif odd and odd_steps < twin_steps <= steps:
            why = (f"B's rows of {problem.n * itemsize} bytes (an odd number of {TMA_ALIGNMENT}-byte chunks) slow that "
                   "twin, whose ")
        return Choice(name, f"{picked.reason}; but {why}{twin[0]}x{twin[1]} tiles C's columns fill at most half "
                            f"over slices of {twin_steps} k steps: {rows}x{cols} tiles over C with two k "
                            f"groups{split}, {items} work items")

    return choose


# tf32 at a few columns (N <= 64): its picks there are 64x64 tiles with two k groups split that write Bt in shared
# memory, or 128x64 tiles split, none with a twin. The twin of 64x128 tiles, laid 64 of B's columns by 128 of A's
# rows (Cᵀ = Bᵀ·Aᵀ, B's rows read into registers: no Bt to write), holds all of N in one row of tiles. Over a sweep
# of it split 1-16 ways at 27 shapes of 64-4096 rows, 32-64 columns and K of 512-65536 (small-problems/
# tiles-columns-twins-tf32.txt, twins-small-tf32.txt; x cuBLAS on an H200), its split of the most slices within one
# wave beat the pick wherever its 128-row tiles were full and it kept more than a quarter of the SMs busy: 768x64x4096
# 1.35 against 1.05, 2048x64x4096 (8 slices) 1.34 / 1.02, 4096x64x1024 (4) 1.44 / 1.12, 1024x64x16384 1.16 / 0.87,
# 512x64x65536 1.08 / 0.89, 640x32x8192 1.11 / 0.85, 1000x56x2000 1.32 / 1.02. With fewer items it won only while its
# slices stayed short (this many k steps or fewer: 256x64x4096, 32 items of 8 steps, 1.16 / 1.06; 200x64x3000 1.24 /
# 1.11; 128x64x1024 1.28 / 1.12) and lost where they were long, to the 64x64 splits' four times as many items
# (256x64x16384, 32 steps a slice, 0.85 / 0.93; 192x64x8192 1.03 / 1.08; 128x64x65536 0.54 / 0.94); at 64 rows, half a
# tile, 1.09 against 1.14.
FEW_COLUMNS_TWIN_SHORT_STEPS = 8
# ... and only split at least this many ways: from 6144 rows, where its tiles fill a wave split 2 ways or whole, the
# 128x64 tiles, whose two consumer warpgroups share a tile where the twin's one runs alone, kept their lead
# (tiles-columns-twins-large-tf32.txt: 12288x64x4096 1.22 against 0.93 whole, 16384x64x2048 1.15 / 1.08, 6144x64x8192
# 1.03 / 0.96 split 2 ways; 8192x64x4096 0.96 / 0.97), where split 4 ways from 4096 rows it led (4096x32x4096 1.09 /
# 1.02, 4096x48x8192 1.10 / 1.02, 3000x64x2000 1.27 / 1.06).
FEW_COLUMNS_TWIN_MIN_SLICES = 4


def few_columns_twin(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                     twins: dict[int, str], tile_k: int, short_steps: int = FEW_COLUMNS_TWIN_SHORT_STEPS,
                     min_slices: int = FEW_COLUMNS_TWIN_MIN_SLICES) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung with twins that compute Cᵀ = Bᵀ·Aᵀ over one row of tiles at a few columns (`twins`:
    slices -> the twin of those tiles split so many ways, 1 for whole; `records`: build -> rows and columns of its
    tiles, slices of K and whether it computes Cᵀ): `rest`'s pick, but where C's columns fit one of the twins' tile
    rows, A's rows fill at least one of their tiles and the pick does not compute Cᵀ, the twin of the most slices whose
    work items fit one wave, where those are at least `min_slices` and keep more than 1/SMALL_SPLIT_FROM of the SMs
    busy, or its slices hold at most `short_steps` k steps of `tile_k`."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if record is None or record[3]:
            return picked
        best = most_slices_in_one_wave(
            twins, records, problem, variants,
            lambda s, name: problem.n <= records[name][0] and problem.m >= records[name][1])
        if best is None:
            return picked
        s, items, name = best
        rows, cols, _, _ = records[name]
        steps = cdiv(cdiv(problem.k, tile_k), s)
        if s < min_slices or (items * SMALL_SPLIT_FROM <= problem.sm_count and steps > short_steps):
            return picked
        split = f", K split {s} ways ({steps} k steps of {tile_k} a slice)" if s > 1 else ""
        return Choice(name, f"{picked.reason}; but its {problem.n} columns fit one row of {rows}x{cols} tiles over "
                            f"Cᵀ = Bᵀ·Aᵀ (B read as it is){split}: {items} work items in one wave")

    return choose


# 16-bit at 49-64 token rows (decode): where the rung's 64x128 tiles are too few for the SMs, it splits K of them in
# 2-4 slices, each CTA reading the tokens again and storing a partial tile. The whole twin of its 64x64 tiles with two
# k groups (Cᵀ = Bᵀ·Aᵀ: the weights' columns through the tiles' rows, the tokens as wgmma's N) reads every weight
# once over all of K in one wave of tiles, without partials. On an H100 (x cuBLAS in one process, fp16; bf16 within
# 0.01; swap-k-group-twins/), the twin against the split pick: 64x4096x4096 0.834 against 0.732, 64x4096x14336 1.071
# against 0.994, 56x2560x8192 0.904 against 0.860; below 49 rows the pick held (48x4096x4096 0.761 against 0.747,
# 32x4096x4096 0.700 against 0.559), and past 4 slices (64x1024x4096: 16 slices, 1.06 against 0.74). Only on a card
# of less bandwidth an SM (SLOW_MEMORY_PER_SM): on an H200 (small-problems/twins-k-group-decode.txt, ten shapes of
# 49-64 rows, fp16 and bf16) the split pick ran ahead of the twin at five shapes by 5-18 % (64x4096x4096 0.88
# against 0.82, 64x3584x4096 1.03 against 0.86, 64x3072x14336 0.93 against 0.83) and behind it at three by 2-7 %
# (52x4096x8192 1.05 against 1.13, 64x4096x14336 1.00 against 1.03).
K_GROUP_TWIN_ROWS = (49, 64)  # token rows where the twin is weighed
K_GROUP_TWIN_MAX_SLICES = 4  # the most slices of a split pick it replaces


def k_group_twin(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                 twin: str, rows: tuple[int, int] = K_GROUP_TWIN_ROWS, max_slices: int = K_GROUP_TWIN_MAX_SLICES,
                 bytes_per_s_per_sm: float = SLOW_MEMORY_PER_SM) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung with a twin of its 64-row tiles with two k groups that computes Cᵀ = Bᵀ·Aᵀ whole
    (`twin`; `records`: build -> rows and columns of its tiles, slices of K and whether it computes Cᵀ): `rest`'s
    pick, but on a card that streams less memory an SM than `bytes_per_s_per_sm` (Problem.hbm_bytes_per_s over its
    SMs; one whose bandwidth is not known plans as an H200, above it), at `rows` token rows (A's rows, inclusive),
    where the pick splits K of tiles over C in 2 to `max_slices` slices and the twin's tiles (of its rows over C's
    columns) make one wave, the twin."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if twin not in variants or record is None or record[3] or not 2 <= record[2] <= max_slices:
            return picked
        if not rows[0] <= problem.m <= rows[1]:
            return picked
        hbm = problem.hbm_bytes_per_s
        tiles = cdiv(problem.n, records[twin][0])
        if hbm is None or hbm / problem.sm_count >= bytes_per_s_per_sm or tiles > problem.sm_count:
            return picked
        return Choice(twin, f"{picked.reason}; but at {problem.m} token rows on a card of "
                            f"{hbm / problem.sm_count / 1e9:.0f} GB/s of memory an SM, rather than split K in "
                            f"{record[2]} slices, {tiles} tiles of {records[twin][0]} of B's columns over Cᵀ = Bᵀ·Aᵀ, "
                            "two k groups each, in one wave over all of K (no partials)")

    return choose


# 16-bit at up to 32 token rows (decode), on a card of less bandwidth an SM (SLOW_MEMORY_PER_SM): the twins of 64
# weight columns by 32 tokens with two k groups (Cᵀ = Bᵀ·Aᵀ), one tile of tokens over all of K, whole, split twice,
# or with the stream-K tail on a CTA an SM, in place of the rung's 64x128 tiles over C. Of the three, the one whose
# busiest SM has the fewest k steps, each of its work items counting TOKEN_TWIN_ITEM_STEPS more (its pipeline's fill
# and its tile's store; a stream-K CTA two items) and a split's slice-order sum TOKEN_TWIN_SUM_STEPS. Fitted on an
# H100 (x cuBLAS in one process, fp16; NVIDIA_H100/streamk-twins/, 56 shapes of 16 and 32 rows against 2048-11008
# columns and K of 2048-14336): the geometric mean from 0.854 to 0.941 (the best twin or pick at each shape 0.960),
# 16x5120x2048 0.52 -> 0.76 and 32x6144x2048 0.72 -> 1.04 (whole), 32x4096x8192 1.00 -> 1.03 (split), 16x11008x4096
# 0.90 -> 0.97 (stream-K); behind the pick by more than 3 % at two shapes (32x6144x14336 0.905 against 0.953,
# 16x2048x8192 0.777 against 0.804). Held out: 12x5632x2560 0.50 -> 0.73, 20x9216x4096 0.78 -> 0.95 (stream-K),
# 24x6656x4096 0.98 -> 0.99.
TOKEN_TWIN_ROWS = 32  # the most token rows the rule weighs the twins at: one 32-token tile
TOKEN_TWIN_ITEM_STEPS = 32
TOKEN_TWIN_SUM_STEPS = 16


def token_twins(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                whole: str, split: str, streamk: str, k_step: int, rows: int = TOKEN_TWIN_ROWS,
                item_steps: int = TOKEN_TWIN_ITEM_STEPS, sum_steps: int = TOKEN_TWIN_SUM_STEPS,
                bytes_per_s_per_sm: float = SLOW_MEMORY_PER_SM) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a 16-bit rung with twins of `rows`-token tiles that compute Cᵀ = Bᵀ·Aᵀ (`records`: build ->
    rows and columns of its tiles, slices of K and whether it computes Cᵀ): whole (`whole`), split (`split`) and with
    the stream-K tail on a CTA an SM (`streamk`). On a card that streams less memory an SM than `bytes_per_s_per_sm`,
    at M of at most `rows` (A's rows, one tile of tokens), the twin whose busiest SM has the least work (k steps of
    `k_step`, `item_steps` more for each of its work items, `sum_steps` more for a split's sum); elsewhere `rest`'s
    pick."""

    def work(name: str, tiles: int, k_steps: int, sms: int) -> float:
        if name == streamk:  # whole waves of tiles, then the rest's k steps shared by every SM, two items each
            waves, tail = divmod(tiles, sms)
            return waves * (k_steps + item_steps) + tail * k_steps / sms + 2 * item_steps
        slices = records[name][2]
        return (cdiv(tiles * slices, sms) * (cdiv(k_steps, slices) + item_steps)
                + (sum_steps if slices > 1 else 0))

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        hbm = problem.hbm_bytes_per_s
        if (problem.m > rows or whole not in variants or hbm is None
                or hbm / problem.sm_count >= bytes_per_s_per_sm):
            return rest(problem, variants)
        tiles, k_steps, sms = cdiv(problem.n, records[whole][0]), cdiv(problem.k, k_step), problem.sm_count
        candidates = [name for name in (whole, streamk, split)
                      if name in variants and (name != split or tiles * records[split][2] <= sms)]
        weighed = {name: work(name, tiles, k_steps, sms) for name in candidates}
        best = min(candidates, key=lambda name: round(weighed[name], 6))  # on a tie, the first: whole, stream-K
        how = {whole: f"{tiles} tiles over all of K",
               split: f"{tiles} tiles split {records[split][2]} ways",
               streamk: f"{tiles} tiles' k steps shared by all {sms} SMs (stream-K)"}[best]
        others = ", ".join(f"{name} {weighed[name]:.0f}" for name in candidates if name != best)
        return Choice(best, f"{problem.m} token rows on a card of {hbm / sms / 1e9:.0f} GB/s of memory an SM: "
                            f"Cᵀ = Bᵀ·Aᵀ in tiles of {records[whole][0]} of B's columns by {records[whole][1]} "
                            f"tokens, {how}: the busiest SM's work {weighed[best]:.0f} k steps (each work item "
                            f"{item_steps} more, a split's sum {sum_steps}; {others})")

    return choose


# tf32 at a few rows (M <= 64, decode): its picks there are 64x128 tiles that write Bt in shared memory, whole or
# split. The twin of 128x64 tiles (Cᵀ = Bᵀ·Aᵀ, B's rows read into registers) holds all the rows in one column of
# tiles. Each candidate is weighed by its busiest SM's k steps: its items' waves times each item's k steps plus this
# many more for the item's fixed cost (its pipeline's fill, its partial's write). Over a sweep of the twin whole and
# split 2-8 ways at 48 shapes of 1-64 rows against 4096-28672 columns and K of 4096-28672 (small-problems/
# tiles-rows-twins*-tf32.txt; x cuBLAS on an H200), 24 steps fit every case where splits of like weight differ:
# 10240x8192 of weights split 4 ways (320 items in 2.4 waves) 0.82-0.94 against 0.63-0.87 whole (80 items, one
# wave) and 0.80-0.89 split 8 ways; 4096x14336 split 4 ways 0.83-1.03 against 0.81-0.94 split 8 ways; 14336x4096
# whole 0.77-1.24 against split 2 ways (two waves) 0.71-1.15.
FEW_ROWS_ITEM_STEPS = 24
# ... taken where its items fit one wave and its busiest SM runs no more k steps than the pick's, or past one wave
# where it runs at most this share of them: at 28672x4096 of weights the pick's 224 items of 64x128 tiles and the
# twin's whole ones weigh the same, two waves each, and the pick ran 0.86-0.91 against 0.83-0.88 at 8-32 rows; at
# 10240x8192 the twin split 4 ways, 264 steps in three waves against the pick's 280 in one, ran 0.82-0.94 against
# 0.57-0.67.
FEW_ROWS_GAIN = 0.95


def few_rows_twin(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                  twins: dict[int, str], tile_k: int, item_steps: int = FEW_ROWS_ITEM_STEPS,
                  gain: float = FEW_ROWS_GAIN) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung with twins that compute Cᵀ = Bᵀ·Aᵀ over one column of tiles at a few rows (`twins`:
    slices -> the twin of those tiles split so many ways, 1 for whole; `records`: build -> rows and columns of its
    tiles, slices of K and whether it computes Cᵀ): `rest`'s pick, but where A's rows fit one of the twins' tile
    columns and the pick does not compute Cᵀ, the twin whose busiest SM runs the fewest k steps of `tile_k` (its
    items' waves times each item's k steps plus `item_steps`; of equal ones, the fewest slices), where its items fit
    one wave and that is no more than the pick's, or past one wave at most `gain` times the pick's."""

    def busiest(record, problem) -> tuple[int, int]:
        items = work_items(record, problem)
        return cdiv(items, problem.sm_count) * (cdiv(cdiv(problem.k, tile_k), record[2]) + item_steps), items

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if record is None or record[3]:
            return picked
        options = [(*busiest(records[name], problem), s, name) for s, name in twins.items()
                   if name in variants and problem.m <= records[name][1]]
        if not options:
            return picked
        steps, items, s, name = min(options)
        own_steps, _ = busiest(record, problem)
        if steps > (own_steps if items <= problem.sm_count else gain * own_steps):
            return picked
        rows, cols, _, _ = records[name]
        split = f", K split {s} ways" if s > 1 else ""
        return Choice(name, f"{picked.reason}; but its {problem.m} row{'s' if problem.m != 1 else ''} fit one column "
                            f"of {rows}x{cols} tiles over Cᵀ = Bᵀ·Aᵀ (B read as it is){split}: {items} work items, "
                            f"{steps} k steps on the busiest SM against {own_steps} ({item_steps} an item beside its "
                            "own)")

    return choose


# FP8's promoted class at a few columns (N <= 64): its picks there are 128x64 tiles, whole or split, or 64x64 splits
# with two k groups. The 64x64 tiles hold all of N in one row of tiles at half the rows, so as many slices make twice
# the items. Over a sweep of both split 4-32 ways at 14 shapes of 16-2048 rows, 16-256 columns and K of 4096-65536
# (small-problems/promoted-small-*-fp8.txt; x cuBLASLt's promoted line on an H200), the 64x64 tiles with the most
# slices whose items fit one wave ran at or above the 128x64 picks: 1024x64x16384 1.04 against 0.95, 768x64x4096
# 1.07 / 1.00, 512x64x65536 0.95 / 0.84, 4096x64x1024 (whole) 1.04 / 0.93, 2048x48x4096 0.95 / 0.92 (the 128x64 tiles
# split 4 ways 0.97), 768x16x16384 0.83 / 0.84; each slice of this many k steps or more: at 256x64x8192 8 slices of 8
# steps 1.20, 16 of 4 1.17, and held out, 300x56x6000 8 of 6 steps 1.17 where 4 of 12 ran 1.04.
HALVES_MIN_STEPS = 6


def few_columns_halves(rest: Callable[[object, tuple[str, ...]], Choice],
                       records: dict[str, tuple[int, int, int, bool]], halves: dict[int, str], tile_k: int,
                       min_steps: int = HALVES_MIN_STEPS) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung with 64x64 tiles (`halves`: slices -> those tiles split so many ways, 1 for whole;
    `records`: build -> rows and columns of its tiles, slices of K and whether it computes Cᵀ): `rest`'s pick, but
    where C's columns fit one of those tiles' width and the pick's tiles are as wide, the 64x64 build of the most
    slices whose work items fit one wave, each slice of at least `min_steps` k steps of `tile_k`."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if record is None or record[3]:
            return picked
        steps = cdiv(problem.k, tile_k)
        best = most_slices_in_one_wave(
            halves, records, problem, variants,
            lambda s, name: (problem.n <= records[name][1] and records[name][1] == record[1]
                             and (s == 1 or cdiv(steps, s) >= min_steps)))
        if best is None:
            return picked
        s, items, name = best
        if name == picked.variant:
            return picked
        rows, cols, _, _ = records[name]
        split = f", K split {s} ways ({cdiv(steps, s)} k steps of {tile_k} a slice)" if s > 1 else ""
        return Choice(name, f"{picked.reason}; but its {problem.n} columns fit {rows}x{cols} tiles of half the rows"
                            f"{split}: {items} work items in one wave")

    return choose


@dataclass(frozen=True)
class WholeSmall:
    """Where whole_small_tiles takes the whole 64x64 tiles with two k groups: K of steps[0] to steps[1] k steps, the
    tiles more than waves[0] and at most waves[1] of the SMs' worth, C of at most max_columns columns (0: any), in
    place of a split pick only (splits_only) or of any pick."""
    steps: tuple[int, int]
    waves: tuple[float, float]
    max_columns: int = 0
    splits_only: bool = True


# FP8's promoted class where its pick splits a K of 16-32 k steps: the 64x64 tiles with two k groups, whole, in
# place of it where they make more than a quarter and at most half of a wave of tiles (no partials to write and sum,
# two warpgroups a tile). x cuBLASLt's promoted line on an H200, the split pick against the whole 64x64 tiles
# (small-problems/mid-shapes-promoted-fp8.txt): 600x300x2000 (50 tiles, 16 k steps) 0.89 against 1.01, 700x200x3000
# (44, 24) 0.92 / 1.00, 1500x120x3000 (48, 24) 0.94 / 1.00; not past 32 k steps (500x250x5000, 40: 64x128 tiles split
# 4 ways 1.13 against 0.98). Held out (whole-small-held-out-fp8.txt), 10 of 10 faster: 640x320x2048 0.79 -> 1.03,
# 512x512x2560 0.90 -> 1.09, 1536x96x2560 0.84 -> 1.00. The fast classes' picks there are mostly the twin of 128x64
# tiles split 4 ways, which held its lead at 10 of those shapes (int8 1.20-1.52 against 1.09-1.45, FP8 1.08-1.24
# against 1.01-1.10), so they keep their rules but at a few columns (below). Measured from 256 rows; the rule starts at
# two rows of tiles.
PROMOTED_WHOLE_SMALL = WholeSmall(steps=(16, 32), waves=(0.25, 0.5))
# The 8-bit fast classes at most 64 columns (C's columns within one of those tiles' width) over a K of 8-32 k steps:
# the whole 64x64 tiles in place of the pick, split or not (128x64 tiles split 2-4 ways or whole, the twin of 128x64
# tiles split 2 ways), where they make a quarter to half a wave. x the vendor on an H200, FP8 / int8, the former pick
# against the whole tiles: fitted (small-problems/few-columns-rows-*.txt) 2500x48x2000 0.89 / 1.03 against 0.97 / 1.10,
# 3000x64x3000 0.96 / 1.21 against 1.03 / 1.29; held out (few-columns-whole-*.txt, few-columns-whole-held-out{,-2}-*.txt)
# 14 shapes, 27 of 28 moved picks faster (4000x64x2048 0.86 / 0.95 -> 1.07 / 1.18, 2500x64x1024 0.81 / 0.92 -> 1.05 /
# 1.15, 4096x32x4096 0.77 / 1.14 -> 0.87 / 1.30), one 1 % slower (3000x64x2000 FP8 0.97 -> 0.96). Past half a wave the
# 128x64 tiles whole led at 5 of 8 held-out shapes (7000x24x1024 1.03 / 1.87 against 0.95 / 1.72, 8192x64x4096 1.00 /
# 1.16 against 1.09 / 1.22), and past 32 k steps their splits (2100x64x4096 1.02 / 1.22 split 4 ways, 0.96 / 1.14
# whole); at a quarter of a wave or less, the 64x64 tiles split (1000x60x3000, 16 tiles: 1.09 / 1.01 split 4 ways).
FEW_COLUMNS_WHOLE_SMALL = WholeSmall(steps=(8, 32), waves=(0.25, 0.5), max_columns=64, splits_only=False)


def whole_small_tiles(rest: Callable[[object, tuple[str, ...]], Choice], records: dict[str, tuple[int, int, int, bool]],
                      small: str, tile_k: int, where: WholeSmall = PROMOTED_WHOLE_SMALL
                      ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a rung with whole 64x64 tiles of two k groups (`small`; `records`: build -> rows and columns
    of its tiles, slices of K and whether it computes Cᵀ): `rest`'s pick, but `small` where `where` holds (FP8's
    promoted class: PROMOTED_WHOLE_SMALL; the 8-bit fast classes: FEW_COLUMNS_WHOLE_SMALL) and A's rows fill two
    rows of `small`'s tiles (decode rows, unmeasured, keep their picks)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        record = records.get(picked.variant)
        if (record is None or picked.variant == small or small not in variants or where.splits_only and record[2] == 1
                or where.max_columns and problem.n > where.max_columns):
            return picked
        k_steps = cdiv(problem.k, tile_k)
        tiles = work_items(records[small], problem)
        low, high = where.waves
        if (problem.m < 2 * records[small][0] or not where.steps[0] <= k_steps <= where.steps[1]
                or not low * problem.sm_count < tiles <= high * problem.sm_count):
            return picked
        rows, cols, _, _ = records[small]
        return Choice(small, f"{picked.reason}; but over {k_steps} k steps of {tile_k} its {tiles} {rows}x{cols} "
                             f"tiles with two k groups, whole, fill {tiles / problem.sm_count:.0%} of a wave without "
                             f"{'a split' if record[2] > 1 else 'idle SMs'}")

    return choose


# smaller_tiles: the most k steps a slice of the default tiles' pick at which the smaller tiles take its place. Deeper
# slices keep the 128 x 256 tiles, whose larger products per byte read pay there (x cuBLAS on an H200, the default
# tiles' pick against the 64 x 128 tiles', small-tiles-rule-float32-*.txt: 2048x1024x4096 split 2 ways, 64 steps of 32
# a slice, 0.94 against 0.86; 1024x1024x8192 split 4 ways, 64 steps, 0.93 against 0.90; 1024x1024x4096, 32 steps, 0.85
# against 0.86; 1408^3, 22 steps, 0.86 against 0.93).
SMALL_TILE_MAX_STEPS = 47


def wave_fill(problem, tile_m: int, tile_n: int, slices: int = 1, inside: bool = False) -> float:
    """How full the waves of one block an SM are with `problem`'s tiles of tile_m x tile_n, each split `slices` ways:
    the blocks over the SMs their waves hold; `inside`: a partial tile counted at the part of it inside C."""
    tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
    work = problem.m * problem.n / (tile_m * tile_n) if inside else tiles
    return work * slices / (cdiv(tiles * slices, problem.sm_count) * problem.sm_count)


@functools.lru_cache(maxsize=None)
def _default_tile_slices(variants: tuple[str, ...]) -> dict[str, int]:
    """The default tiles' builds among `variants`, whole or split, and the slices each cuts K into: DEFAULT 1 and
    splitk<S> S. Cached per variant tuple, as smaller_tiles asks for it at every pick: the map is shared, not to be
    changed."""
    return {DEFAULT: 1, **{f"splitk{s}": s for s in registered_splits(variants)}}


def smaller_tiles(rest: Callable[[object, tuple[str, ...]], Choice], model: Callable[[object, tuple[str, ...]], Choice],
                  builds: frozenset[str], tile_k: int, beside: frozenset[str] = frozenset(), rows: int = 0,
                  beside_model: Callable[[object, tuple[str, ...]], Choice] | None = None,
                  max_steps: int = SMALL_TILE_MAX_STEPS, default_tile: tuple[int, int] | None = None,
                  ragged_fill: float = 0.0) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a kernel with builds of tiles smaller than its default ones (`builds`: kernel 7's 64 x 64 and
    64 x 128 tiles of 4 warps, several to an SM) beside its own rule `rest`: where `rest` picks the default tiles,
    whole or split (a problem whose 128 x 256 tiles leave most SMs idle or a last wave ragged), each slice of at most
    `max_steps` k steps of `tile_k`, `model`'s pick among the smaller tiles' builds and the default (a tile model with
    facts of their own: several blocks share an SM, which the default tiles' facts do not weigh); past `rows` token
    rows where `rest` picks one of the builds `beside` (kernel 7's decode and narrow tiles, which its tile model weighs
    there), `beside_model`'s among the smaller tiles' builds and that pick (facts of their own again, for those tiles);
    elsewhere `rest`'s pick. Where the default tiles' pick (`default_tile`: its rows and columns) fills its waves to
    less than `ragged_fill`, a partial tile counted at the part of it inside C, `model` weighs it at any depth of its
    slices: at 1920^3 (x cuBLAS on an H200) the whole 128 x 256 tiles, 60 k steps deep and 85 % of a wave, ran 0.88
    where the 64 x 128 tiles split 4 ways ran 1.02 (small-problems/simt-useful-fill-float32.txt)."""

    def ragged(problem, slices: int) -> bool:
        return default_tile is not None and wave_fill(problem, *default_tile, slices, inside=True) < ragged_fill

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        offered = tuple(v for v in variants if v in builds)
        # the default tiles' pick, whole or split: its slices
        slices = _default_tile_slices(variants).get(picked.variant)
        if slices is not None and (cdiv(cdiv(problem.k, tile_k), slices) <= max_steps or ragged(problem, slices)):
            weigh = model
        elif beside_model is not None and picked.variant in beside and problem.m > rows:
            weigh, offered = beside_model, offered + (picked.variant,)
        else:
            return picked
        if not offered:
            return picked
        small = weigh(problem, offered)
        if small.variant not in builds:
            return picked
        return Choice(small.variant, f"{picked.reason}; but smaller tiles, several to an SM, take less: "
                                     f"{small.reason.split(': ', 1)[-1]}")

    return choose


def token_rows(rows: int, decode: Callable[[object, tuple[str, ...]], Choice],
               rest: Callable[[object, tuple[str, ...]], Choice]) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a kernel with decode builds beside its own tiles: `decode` for M of at most `rows` token
    rows, `rest` for more."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        return (decode if problem.m <= rows else rest)(problem, variants)

    return choose


def wave_split_k(tile: Callable[[int, str], tuple[int, int, int]], min_slice_k: int = 64
                 ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a kernel with one block per output tile, one block per SM, and split-K variants splitk<S>
    that launch S blocks per tile along grid z, each over 1/S of K (kernels/split_k.cuh). `tile(block, dtype)` is
    the method's (tile_m, tile_n, tile_k).

    With fewer tiles than SMs the other SMs idle for the whole launch. S slices make tiles x S blocks of 1/S the
    depth; beyond one wave (tiles x S > SMs) the extra blocks run in a second wave and the split saves nothing, while
    every slice costs a partial tile stored and read back (the tile's last slice sums all S alone). So the largest
    registered S with tiles x S <= SMs, the grid closest to one full wave (with power-of-two splits, more than half
    of one where the SMs allow), as long as every slice keeps at least `min_slice_k` of K (min_slice_k / tile_k k
    steps): shallower slices spend more on filling the pipeline and on their partial than on the product.
    Otherwise the default build."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tile_m, tile_n, tile_k = tile(problem.block, problem.dtype.name)
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        k_steps = cdiv(problem.k, tile_k)
        sms = problem.sm_count
        where = f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on {sms} SMs"
        idle = f"{where} leave{'s' if tiles == 1 else ''} SMs idle"
        splits = registered_splits(variants)
        in_a_wave = [s for s in splits if tiles * s <= sms]
        if not in_a_wave:
            why = f"{splits[0]} slices each would need a second wave" if splits else "no split-K build"
            return Choice(DEFAULT, f"{where}: whole tiles, {why}")
        deep = [s for s in in_a_wave if problem.k >= min_slice_k * s]
        if not deep:
            return Choice(DEFAULT, f"{idle}, but K = {problem.k} is too shallow to split: {in_a_wave[0]} slices "
                                   f"of at least {min_slice_k} need K >= {min_slice_k * in_a_wave[0]}")
        s = deep[-1]
        return Choice(f"splitk{s}", f"{idle}: K split {s} ways ({k_steps} k steps of {tile_k}, about "
                                    f"{cdiv(k_steps, s)} a slice) gives {tiles * s} blocks, one wave; the last slice "
                                    f"of each tile sums the {s} partials in slice order")

    return choose


def one_wave(rest: Callable[[object, tuple[str, ...]], Choice], tile: Callable[[int, str], tuple[int, int, int]],
             build: str, shared_bytes: int) -> Callable[[object, tuple[str, ...]], Choice]:
    """`rest`, but where it keeps the default tiles whole and they make one wave at most (one block an SM, no more
    tiles than SMs), `build` where the dtype has it and a block may have its `shared_bytes`: a build of the same
    tiles whose pipeline fills and drains in shorter k slices, which no other block's math covers in a single wave
    (kernel 7's bk16)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        picked = rest(problem, variants)
        tile_m, tile_n, _ = tile(problem.block, problem.dtype.name)
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        if (picked.variant != DEFAULT or build not in variants or tiles > problem.sm_count
                or shared_bytes > problem.max_shared_bytes):
            return picked
        return Choice(build, f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on "
                             f"{problem.sm_count} SMs make one wave, one block an SM: the same tiles with shorter k "
                             f"slices, whose pipeline fills and drains sooner ({picked.reason})")

    return choose


# Kernel 18 (a few token rows on the CUDA cores, B streamed into registers): the fewest slices of K whose blocks make
# FEW_ROWS_WAVES waves (as many blocks an SM as its registers let it hold), each slice FEW_ROWS_MIN_SLICE rows of k or
# more (16 rows a k lane: 4 of its unrolled steps). Fitted to a sweep of every build at 1-8 rows on an H200
# (small-problems/few-rows-sweep-*.txt, x the vendor): at one row the best split ran 1.01-1.06 in fp32 and tf32,
# 0.98-1.07 in fp64, and the pick is within 1 % of it on average, 2.2 % at most in those three (M x N x K, fp32:
# 1x14336x4096 16 slices, 896 blocks, 1.008; 1x4096x4096 32 slices, 512 blocks, 1.034, where one wave's 16 slices
# ran 0.86). fp16 within 8 %, where kernel 10's decode tiles run faster. At 4 and 8 rows the fit is loose (up to
# 20 % below the best split), where kernels 7, 8 and 10 run faster anyway.
FEW_ROWS_WAVES = 2
FEW_ROWS_MIN_SLICE = 64


def few_rows_tiles(tile_ms: tuple[int, ...], splits: tuple[int, ...], family: Callable[[int], object],
                   build: Callable[[int, int], str]) -> Callable[[object, tuple[str, ...]], Choice]:
    """Kernel 18's heuristic: the fewest rows of tile_ms that hold M (the most, in row tiles, past them), then the
    fewest of `splits` whose blocks make FEW_ROWS_WAVES waves of the rows' record's blocks an SM (its launch bounds),
    with slices of FEW_ROWS_MIN_SLICE rows of k or more (else the most that keep such slices). `family(rows)` is the
    record of the builds of that many rows (geometry.few_rows_family: its tile(block, dtype) and launch_bounds),
    `build(rows, s)` a build's name."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        rows = next((r for r in tile_ms if r >= problem.m), tile_ms[-1])
        record = family(rows)
        cols, resident = record.tile(0, problem.dtype.name)[1], record.launch_bounds[1]
        tiles = cdiv(problem.m, rows) * cdiv(problem.n, cols)
        deep = [s for s in splits if s == 1 or problem.k // s >= FEW_ROWS_MIN_SLICE]
        wave = resident * problem.sm_count
        s = next((s for s in deep if tiles * s >= FEW_ROWS_WAVES * wave), deep[-1])
        split = f", K in {s} slices of about {cdiv(problem.k, s)} rows" if s > 1 else ", K whole"
        plural = lambda count, word: f"{count} {word}{'s' if count != 1 else ''}"  # noqa: E731
        return Choice(build(rows, s), f"{plural(problem.m, 'token row')}: tiles of {plural(rows, 'row')} x {cols} "
                                      f"columns, {tiles} of them{split}: {tiles * s} blocks, against "
                                      f"{FEW_ROWS_WAVES} waves of {resident} an SM on {problem.sm_count} SMs")

    return choose


def decode_tiles(tile_ms: tuple[int, ...], tile_n: int, slice_bytes: int, min_k_steps_per_slice: int = 4,
                 widest: dict[str, int] | None = None, default_tile: tuple[int, int] | None = None,
                 two_per_sm_from: dict[str, int] | None = None) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a kernel with decode builds m<BM>[_splitk<S>] (kernel 10): a few token rows (M at most the
    largest BM) against a weight matrix stream B from memory with little math per byte, so the pick is the build
    that keeps every SM streaming its own part of B. The smallest BM that holds the M rows (no rows of zeros
    multiplied, B read once), then K split S ways for the largest registered S whose blocks (column tiles x S) fit
    one per SM, with at least `min_k_steps_per_slice` k steps a slice; whole tiles where the column tiles alone
    are that many. Fitted to a sweep of every build on an H100 (132 SMs; bench/compare.py, M x N x K): one block
    per SM beat both fewer and more. At 16x4096x4096 (32 column tiles) a split of 4 (128 blocks) ran at 0.93 of
    cuBLAS, 2 at 0.78 and 8 at 0.82; at 16x6144x4096 (48) a split of 2 (96 blocks) at 0.97 and 4 (192) at 0.91; at
    16x4608x3584 (36) 2 at 0.81-0.83 and 4 at 0.76 (on an H200 3, 108 blocks, at 0.97: fp16, and 0.94 at M = 8,
    where 2 ran at 0.77-0.82); at 16x28672x4096 (224) whole tiles at 1.07 and 2 at 0.95. Four
    or six stages made no difference (within 2 %): the stream is not short of bytes in flight. Above the largest
    BM, the default build. A k step is a slice of `slice_bytes` of each row (64 fp16, 32 tf32, 128 int8 or e4m3
    elements), so the fit carries over from 16 bits by the bytes each block streams.

    Where the tile that holds the rows, split as far as it goes, fits one wave, smaller row tiles that make more
    blocks win, chosen as past the token rows (`_most_blocks`): a few columns and a deep K.
    On an H200 (x cuBLAS): 64x64x65536 m16_splitk32 (128 blocks) 0.34 in fp16, 0.81 in int8, against
    m64_splitk32's (32) 0.24 and 0.54; 64x128x32768 0.72 and 1.28 against 0.41 and 0.72.

    `widest`: per dtype, the most rows a decode tile of it takes; M past it (and within the decode tiles) runs in
    row tiles of that many, the split still counted on the column tiles. FP8's is 32: its m64 build holds 254
    registers a thread (the promoted sums' second set) and is bound by its own issue. In a sweep on an H100 (FP8 x
    cuBLASLt, M x N x K), two row tiles of 32 beat one of 64 with the same split at every shape: 64x8192x8192 split
    2 1.95 against 1.64, 40x4096x28672 split 4 2.05 against 1.60, 64x4096x4096 split 4 1.21 against 0.99 (its best,
    split 2, 1.27), 48x14336x4096 whole tiles 1.85 against 1.85.

    `default_tile`: the (rows, columns) of the default build's tiles. M past the decode tiles, where those fill less
    than half a wave: the decode tiles fill the GPU instead (`_fill_the_gpu`). Each tile whose whole tiles fit one
    block per SM, K split as above; the most blocks win, and of tiles that make as many, the widest whose slices
    keep DEEP_SLICE_K_STEPS k steps; where no decode tile fits one wave, the widest BM the dtype takes. On an H200
    (x cuBLAS, fp16; results/reference/NVIDIA_H200/small-problems): 384x384x4096 m64_splitk4 0.63 (whole m16 0.48),
    192x1024x8192 m64_splitk4 0.64 (m16 0.39), 128x128x16384 m16_splitk16 0.73 (whole 0.12), 128x4096x4096
    m64_splitk2 0.74 (m32 0.70). On an H100: fp16 512^3 m16 (128 blocks) 0.99, m32 0.88, m64 0.70, the default
    0.33; fp16 1024^3 m64 (128 blocks) 0.71-0.73, m32 (256) 0.64-0.66, m16 (512) 0.41, the default 0.32; FP8 1024^3
    m32 (256) 0.72 against the default's 0.21; int8 768^3 m64 (72) 1.27, m32 1.21, m16 1.26.

    `two_per_sm_from`: per dtype, the rows of the narrowest decode tile whose blocks are counted two to an SM (two
    of every decode build fit on an SM by shared memory, 72-96 KiB each), for the split and for the most blocks
    alike; the half wave that hands M past the token rows to the default build is still counted in SMs. tf32's is
    64: its mma runs at half fp16's rate, so a block of 64 rows is short of warps to issue them. In a sweep of all
    21 decode builds on an H200 (x cuBLAS, tf32,
    results/reference/NVIDIA_H200/small-problems/decode-sweep-tf32.txt), 256 blocks against the 128 of one per SM:
    64x4096x4096 m32_splitk4 1.06 against m64_splitk4 0.96, 48x4096x14336
    m64_splitk8 0.88 against m64_splitk4 0.71, 128x4096x4096 m64_splitk4 0.74 against m64_splitk2 0.64,
    256x256x8192 m32_splitk16 0.82 against m64_splitk16 0.76; with 32 rows or fewer one per SM stays the best
    (16x4096x4096 m16_splitk4 1.18, m16_splitk8 1.09). In fp16 and int8 one per SM stays the best with 64 rows too
    (128x4096x4096 m64_splitk2 0.73 and 1.33, m64_splitk4 0.69 and 1.27)."""
    caps = widest or {}
    doubled = two_per_sm_from or {}

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tile_k = slice_bytes // problem.dtype.itemsize
        cap = caps.get(problem.dtype.name, max(tile_ms))
        allowed = [t for t in tile_ms if t <= cap and f"m{t}" in variants]
        two_from = doubled.get(problem.dtype.name)
        slots = {t: problem.sm_count * (2 if two_from is not None and t >= two_from else 1) for t in tile_ms}
        if problem.m > max(tile_ms) and default_tile is not None:
            return _fill_the_gpu(problem, allowed, tile_n, default_tile, variants, cdiv(problem.k, tile_k), tile_k,
                                 min_k_steps_per_slice, slots)
        fits = [t for t in allowed if t >= problem.m]
        if not fits and allowed and problem.m <= max(tile_ms):
            fits = [max(allowed)]  # rows past this dtype's widest tile: several row tiles of it
        if not fits:
            return Choice(DEFAULT, f"M = {problem.m} rows is past the decode tiles (at most {max(tile_ms)} rows): "
                                   "whole default tiles")
        tile_m = fits[0]
        tiles = cdiv(problem.n, tile_n)
        k_steps = cdiv(problem.k, tile_k)
        s = _decode_split(tile_m, tiles, k_steps, variants, slots[tile_m], min_k_steps_per_slice)
        rows = cdiv(problem.m, tile_m)
        name = f"m{tile_m}" if s == 1 else f"m{tile_m}_splitk{s}"
        if rows * tiles * s <= slots[tile_m]:
            # Within one wave, smaller row tiles may make more blocks (a few columns and a deep K): the most
            # blocks, as past the token rows; the tile that holds the rows where it makes as many.
            few = f"M = {problem.m} token rows: {rows * tiles * s} blocks of {tile_m}x{tile_n} tiles"
            more = _most_blocks(problem, [t for t in allowed if t <= tile_m], tile_n, variants, k_steps, tile_k,
                                min_k_steps_per_slice, few, slots, prefer=tile_m)
            if more.variant != name:
                return more
        idle = _idle_sms_split(rows * tiles, s, k_steps, tile_m, variants, slots[tile_m], problem.sm_count,
                               min_k_steps_per_slice, smallest=tile_m == min(allowed))
        if idle is not None:
            s, name = idle, f"m{tile_m}_splitk{idle}"
        along_m = (f" ({rows} along M: in {problem.dtype.name} a decode tile takes at most {tile_m} rows)"
                   if rows > 1 else "")
        where = (f"M = {problem.m} token rows: {tile_m}x{tile_n} tiles{along_m}, {tiles} along N, each block streaming "
                 "its part of B with little math per byte")
        on = (f"{problem.sm_count} SMs, at most two to an SM: one block an SM would leave more than "
              f"{IDLE_SM_SHARE:.0%} of them idle (configs.IDLE_SM_SHARE)" if idle is not None else
              f"{problem.sm_count} SMs{_two_to_an_sm(problem, slots[tile_m], tile_m)}")
        if s == 1:
            return Choice(name, f"{where}; whole tiles ({rows * tiles} blocks on {on}, {k_steps} k steps of {tile_k})")
        return Choice(name, f"{where}; K split {s} ways ({k_steps} k steps of {tile_k}, about {cdiv(k_steps, s)} a "
                            f"slice) gives {rows * tiles * s} blocks on {on}")

    return choose


# Past the token rows, of decode tiles that fill the GPU alike, the widest one whose slices keep this many k steps:
# measured on an H200, 256x256x8192 fp16 ran at 0.74 of cuBLAS in 32-row tiles split 8 ways (16 k steps a slice)
# and 0.68 in 16-row tiles split 4; at 128x256x8192 16-row tiles split 8 (16 a slice) ran at 0.70 and 32-row ones
# split 16 (8 a slice) at 0.60.
DEEP_SLICE_K_STEPS = 16


# The shortest slice that resident_wave_split gives the blocks of a wave: fp32 16x6144x2048 ran at 2.20 of cuBLAS in
# 8 slices of 8 k steps against 1.76 in 4 of 16, 16x3072x4096 at 1.79 in 16 slices of 8 against 1.48 in 8 of 16.
RESIDENT_MIN_SLICE_STEPS = 8
# ... and the most k steps a slice at which the decode tiles give way to half their rows, twice as wide, where their
# blocks come more than two an SM (simt_decode_tiles' half_rows; the same sweep, x cuBLAS, M x N x K): 16x5120x4096
# 2.45 in 8-row tiles split 8 ways (16 k steps a slice) against 2.31, 16x6144x4096 2.46 against 2.35, 16x2560x8192
# 1.78 split 16 ways against 1.69, 16x3072x4096 1.87 against 1.79; at 16x6144x2048 (8 steps) 2.15 against 2.20. In
# longer slices they ran no faster (16x4608x8192, 32 steps, 1.41 against 1.43; 16x9216x4096 split 4 ways 2.87
# against 2.92), and held out slower (16x5120x13824, 54 steps, 1.42 against 1.54; simt-decode-held-out-float32.txt).
HALF_ROWS_MAX_SLICE_STEPS = 24
# The wider decode tiles' bounds (simt_decode_tiles' `wide`, kernel 7's fp32 16 x 256 against its 16 x 128; x cuBLAS on
# an H200, M x N x K, small-problems/simt-decode-n256-float32.txt): blocks from this share of the SMs to one an SM
# (16x4096x14336 1.89 in 128 blocks of 16 x 256 against 1.70, 16x14336x4096 1.67 in 112 against 1.48, 16x7168x4096
# 2.27 in 112 against 2.03; but 16x11008x4096 2.56 in 86 against 3.07, 16x4608x3584 2.06 in 144 against 2.33), in
# slices of this many k steps or more (16x3584x3584 3.12 in slices of 14 against 2.89; 16x2048x4096 1.63 in slices of 8
# against 1.71).
WIDE_FILL = 0.8
WIDE_MIN_SLICE_STEPS = 12


def resident_wave_split(items: int, s: int, per_sm: int, sms: int, splits: list[int], k_steps: int
                        ) -> tuple[int, str]:
    """The split of `items` decode tiles (split `s` ways by the slice rule) by the wave of blocks that the SMs hold at
    once (`per_sm` each), and the reason's tail. Past that wave a last partial one runs alone: the most slices, 2 or
    more, whose blocks fit the wave instead. Between one and two blocks an SM, the SMs that hold two stream twice the
    bytes of the others: the most slices whose blocks fit the wave, each of RESIDENT_MIN_SLICE_STEPS k steps or more,
    instead. Else `s`. Fitted on an H200 to kernel 7's 16-row fp32 tiles at 20 shapes of 12 and 16 rows
    (small-problems/simt-decode-fit-float32.txt; x cuBLAS, M x N x K): past the wave 16x8192x4096 2.07 in 4 slices
    (256 blocks) against 1.56 in 8, 16x7168x4096 2.03 against 1.70, 16x11008x4096 3.10 against 2.92, 16x14336x4096
    1.47 in 2 against 1.42 in 8; between one and two an SM 16x4608x3584 2.18 in 8 slices (288 blocks) against 1.76 in
    4, 16x2560x8192 1.69 in 16 against 1.34 in 8. Where even 2 slices pass the wave (224 or 296 column tiles) more
    slices still ran faster (the slice rule's own measurements), so `s` stays."""
    wave = per_sm * sms
    blocks = items * s
    if blocks > wave:
        fewer = [x for x in splits if 2 <= x < s and items * x <= wave]
        if fewer:
            x = max(fewer)
            return x, (f" ({items * s} blocks split {s} ways would pass the {wave} that the SMs hold at once, "
                       f"{per_sm} each: a last partial wave)")
    elif sms < blocks < 2 * sms:
        more = [x for x in splits if x > s and items * x <= wave and k_steps >= RESIDENT_MIN_SLICE_STEPS * x]
        if more:
            return max(more), (f" (split {s} ways, {blocks} blocks on {sms} SMs would leave some SMs two blocks' "
                               "bytes and the others one)")
    return s, ""


def simt_decode_tiles(tile_ms: tuple[int, ...], tile_n: int, slice_bytes: int, max_split: int = 8,
                      min_slice_steps: int = DEEP_SLICE_K_STEPS, units: str = "the CUDA cores",
                      narrow: Callable[[object, tuple[str, ...]], Choice] | None = None,
                      resident: dict[tuple[str, int], int] | None = None,
                      half_rows: tuple[int, int] | None = None,
                      wide: dict[tuple[str, int], tuple[int, str]] | None = None,
                      tall: tuple[TallTiles, ...] = ()
                      ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of the decode builds m<BM>[_splitk<S>] of kernels 7 and 8 (BM x `tile_n` tiles of 4 warps on
    `units`: kernel 7's on the CUDA cores, kernel 8's on the tensor cores' DMMA): the row tiles that leave the
    fewest of their rows past M, then the fewest of them (fp32 48x4096x4096: three of 16 rows 0.94 of cuBLAS, two of
    32 0.73; 64x4096x4096: two of 32 0.84, four of 16 0.69; fp64 48 rows 0.34 against 0.38, where the waste is the
    other way); then K split as far as every slice keeps `min_slice_steps` k steps of `slice_bytes` a row, at most
    `max_split` ways, however many blocks that makes. Unlike the tensor cores' decode tiles (decode_tiles: one block
    per SM), a block of 4 warps keeps the FMA units of an SM busy only beside others: on an H200 (x cuBLAS,
    small-problems/simt-decode-*.txt) fp32 16x4096x4096 ran at 3.07 split 8 ways (256 blocks), 3.02 split 4 (128,
    one per SM) and 1.75 split 2; with 224 and 296 column tiles, already more blocks than SMs, splits of 8 and 4
    still ran 10-33 % faster than whole tiles (fp32 16x28672x4096 1.68 against 1.52, fp64 16x37888x3584 0.69 against
    0.52); at K = 3584 (112 fp32 k steps) 4 slices of 28 beat 8 of 14 (1.67 against 1.61). Kernel 8 splits at most 4
    ways (geometry.DMMA_DECODE_MAX_SPLIT).

    A narrow N (its tiles split `max_split` ways still fewer than half a wave of blocks) goes to `narrow`, the
    kernel's tile model, which splits further: on an H200 (small-problems/narrow-*.txt) fp32 8x1024x8192 ran at
    1.13 of cuBLAS in 16 slices against 0.70 in 8, fp64 (DMMA) 64x64x65536 at 0.29 against 0.05 in 4.

    `resident`: the blocks of a (dtype, tile rows) decode build that an SM holds at once, where measured; there, at
    one row of tiles, the split is set by the wave of resident blocks (resident_wave_split), and where that split
    makes more than two blocks an SM in short slices (HALF_ROWS_MAX_SLICE_STEPS), the builds of `half_rows` (tile rows
    and columns: kernel 7's 8 x 256 tiles, two rows of them over 16 rows, as many blocks) split as far take their
    place.

    `wide`: (dtype, tile rows) -> (columns, name) of wider decode tiles of the same rows (kernel 7's fp32 16 x 256);
    at one row of tiles, where N is a multiple of their columns, they are taken split the most ways whose blocks fill
    WIDE_FILL of the SMs or more but no more than one an SM, in slices of WIDE_MIN_SLICE_STEPS k steps or more. (A
    last tile past N copies B element by element, and every block of its column waits on it: held out, 16x3968x6144,
    15.5 tiles of 256 columns, 1.24 of cuBLAS against 2.00 in 31 of 128; the 8 x 256 tiles alike, 1.27, so
    `half_rows` too needs N a multiple of its columns.)

    `tall`: builds of taller tiles (geometry.TallTiles), each weighed with the decode tiles by the same two counts,
    and the first that wins them and makes its blocks taken (kernel 7's fp32 64 x 128, then 64 x 64 tiles: from 49
    to 64 rows, one row of them against two of 32 or four of 16, as few rows of zeros), its K split as the decode
    tiles' by its own k steps where that makes the build's blocks an SM, further up to TALL_MAX_SPLIT ways where
    that makes its further blocks an SM, and not at all where neither does (_tall_tiles); a build that knows its
    resident blocks (the 64 x 128 tiles) then takes the split that leaves its busiest SM the least work
    (busiest_sm_split). On an H200 (x cuBLAS,
    M x N x K; small-problems/simt-decode-tall-*.txt): 64x4096x4096 split 8 ways 0.91 against two rows of 32-row
    tiles split 8 ways 0.81, 64x14336x4096 1.01 against 0.83, 64x4096x28672 0.89 against 0.75, 52x4096x4096 0.85
    against 0.82; 64x3072x3072 split 16 ways 1.01 (split 8, 192 blocks, 0.86) against 32-row tiles split 4 ways 0.81,
    60x2560x4096 1.00 (0.81) against 0.80; at 12 tiles along N (64x1536x4096, 192 blocks split 16 ways) 0.89 against
    the decode tiles' 0.94-1.10, where the 64 x 64 tiles split 16 ways ran 1.11. At 40-48 rows (three rows of 16)
    and at 80-96 rows the decode tiles stay ahead (48x4096x4096 0.95 against 0.85, 96x4096x4096 0.92 against 0.68)."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tile_k = slice_bytes // problem.dtype.itemsize
        allowed = [t for t in tile_ms if f"m{t}" in variants]
        if not allowed:
            return Choice(DEFAULT, "no decode build")
        # The row tiles that multiply the fewest rows of zeros, then the fewest of them (B streamed once each).
        def cost(t: int) -> tuple[int, int]:
            return cdiv(problem.m, t) * t - problem.m, cdiv(problem.m, t)

        tile_m = min(allowed, key=cost)
        for t in tall:
            if t.name in variants and cost(t.rows) < cost(tile_m):
                taller = _tall_tiles(problem, variants, t, max_split, min_slice_steps, units, narrow, tile_m)
                if taller is not None:
                    return taller
        k_steps = cdiv(problem.k, tile_k)
        splits = _tile_splits(tile_m, variants)
        s = _slice_split(splits, k_steps, max_split, min_slice_steps)
        rows, tiles = cdiv(problem.m, tile_m), cdiv(problem.n, tile_n)
        if narrow is not None and 2 * rows * tiles * max_split < problem.sm_count:
            return narrow(problem, variants)
        cols, wide_name = (wide or {}).get((problem.dtype.name, tile_m), (0, ""))
        if rows == 1 and wide_name in variants and problem.n % cols == 0:  # (a ragged last tile: B's guarded path)
            wide_tiles = cdiv(problem.n, cols)
            fits = [x for x in _build_splits(wide_name, variants)
                    if WIDE_FILL * problem.sm_count <= wide_tiles * x <= problem.sm_count
                    and (x == 1 or k_steps >= WIDE_MIN_SLICE_STEPS * x)]
            if fits:
                x = max(fits)
                return Choice(wide_name + (f"_splitk{x}" if x > 1 else ""),
                              f"M = {problem.m} token rows: {tile_m}x{cols} tiles, {wide_tiles} along N, on {units}; "
                              + (f"K split {x} ways ({k_steps} k steps of {tile_k}, about {cdiv(k_steps, x)} a slice)"
                                 if x > 1 else "whole tiles") + f": {wide_tiles * x} blocks, close to one an SM, "
                              f"where the {tile_m}x{tile_n} tiles stream B slower")
        per_sm = (resident or {}).get((problem.dtype.name, tile_m))
        wave = ""
        if per_sm and rows == 1:  # (fitted at one row of tiles: 12 and 16 rows)
            s, wave = resident_wave_split(tiles, s, per_sm, problem.sm_count, splits, k_steps)
            blocks = tiles * s
            if (half_rows is not None and f"m{half_rows[0]}_splitk{s}" in variants and problem.n % half_rows[1] == 0
                    and cdiv(k_steps, s) <= HALF_ROWS_MAX_SLICE_STEPS
                    and 2 * problem.sm_count < blocks <= per_sm * problem.sm_count):
                h, w = half_rows
                twin = cdiv(problem.m, h) * cdiv(problem.n, w) * s
                return Choice(f"m{h}_splitk{s}",
                              f"M = {problem.m} token rows: {h}x{w} tiles ({cdiv(problem.m, h)} along M), "
                              f"{cdiv(problem.n, w)} along N, on {units}; K split {s} ways: {twin} blocks, where the "
                              f"{tile_m}x{tile_n} tiles split as far make {blocks}, more than two an SM{wave}")
        along_m = f" ({rows} along M)" if rows > 1 else ""
        where = (f"M = {problem.m} token rows: {tile_m}x{tile_n} tiles{along_m}, {tiles} along N, on {units}, "
                 "each block streaming its part of B")
        if s == 1:
            return Choice(f"m{tile_m}", f"{where}; whole tiles ({k_steps} k steps of {tile_k}: too few to split "
                                        f"into slices of {min_slice_steps})")
        return Choice(f"m{tile_m}_splitk{s}",
                      f"{where}; K split {s} ways ({k_steps} k steps of {tile_k}, about {cdiv(k_steps, s)} a slice): "
                      f"{rows * tiles * s} blocks of 4 warps, several to an SM, so that {units} always have "
                      f"a warp to issue{wave}")

    return choose


# simt_decode_tiles' `tall` tiles (4 warps a block: about two an SM keep B streaming) split at most this many ways
# (64x2048x4096 in 64 x 128 tiles split 16 ways, 256 blocks, ran at 0.87 of cuBLAS against the 32-row tiles' 0.93;
# 64x2560x4096, 320 blocks, 1.00 against 0.80).
TALL_MAX_SPLIT = 16


def _tall_tiles(problem, variants: tuple[str, ...], tall: TallTiles, max_split: int, min_slice_steps: int,
                units: str, narrow: Callable[[object, tuple[str, ...]], Choice] | None, beside: int) -> Choice | None:
    """simt_decode_tiles' pick of a `tall` build, which holds the M rows with as few rows of zeros as the
    `beside`-row decode tiles in fewer rows of tiles: K split as the decode tiles split it, by the build's own k
    steps, where that makes its blocks_per_sm, else the fewest ways up to TALL_MAX_SPLIT, in slices of its
    further_slice_steps or more, that make its further_blocks_per_sm; None where none does (the decode tiles make
    more blocks). A narrow N to `narrow`, as there."""
    tile_k = tall.slice_bytes // problem.dtype.itemsize
    k_steps, tiles = cdiv(problem.k, tile_k), cdiv(problem.n, tall.cols)
    if narrow is not None and 2 * cdiv(problem.m, tall.rows) * tiles * max_split < problem.sm_count:
        return narrow(problem, variants)
    splits = _build_splits(tall.name, variants)
    s = _slice_split(splits, k_steps, max_split, min_slice_steps)
    deep = [x for x in splits if x <= TALL_MAX_SPLIT and k_steps >= tall.further_slice_steps * x]
    if tiles * s < tall.blocks_per_sm * problem.sm_count:
        further = [x for x in deep if x > s and tiles * x >= tall.further_blocks_per_sm * problem.sm_count]
        if not further:
            return None
        s = min(further)
    busiest = ""
    if tall.resident:
        s = busiest_sm_split(tiles, s, problem.sm_count, k_steps, tall.resident, deep)
        busiest = f", the busiest SM {cdiv(tiles * s, problem.sm_count)} of them"
    where = (f"M = {problem.m} token rows: {tall.rows}x{tall.cols} tiles, {tiles} along N, on {units}, as few rows of "
             f"zeros as the {beside}-row tiles in fewer rows of tiles")
    if s == 1:
        return Choice(tall.name, f"{where}; whole tiles ({k_steps} k steps of {tile_k}: too few to split into "
                                 f"slices of {min_slice_steps})")
    return Choice(f"{tall.name}_splitk{s}", f"{where}; K split {s} ways ({k_steps} k steps of {tile_k}, about "
                                            f"{cdiv(k_steps, s)} a slice): {tiles * s} blocks, "
                                            f"{tiles * s / problem.sm_count:.1f} an SM{busiest}")


def busiest_sm_split(tiles: int, s: int, sms: int, k_steps: int, resident: int, splits: list[int]) -> int:
    """Of `splits` (with `s`, the slice rule's), those whose blocks give the busiest SM two or more (4 warps a block:
    two an SM keep B streaming), the one that leaves the busiest SM the least work: its blocks, ceil(tiles x slices
    / SMs), times a slice's k steps and BUSIEST_SM_BLOCK_STEPS more for each block's start and partial tile. Where
    several leave it within BUSIEST_SM_TIE of as little, the one whose blocks all run at once (no more an SM than the
    `resident` it holds: no last round alone) with the most an SM, else the fewest slices (fewer partial sums). Where
    none gives two, `s`. On an H100 (x cuBLAS, NVIDIA_H100/tall-splits/), kernel 7's 64 x 128 tiles whole and split
    2, 3, 4, 8 and 16 ways at 42 shapes of 49-63 rows, 2816-30720 columns and K of 2048-14336: 56x8192x4096 4 ways
    (2 an SM of 64 steps) 0.93 against 8 ways (4 of 32) 0.89; 52x14336x4096 8 ways (7 of 32) 0.89 against 4 ways
    (4 of 64) 0.79; 56x11008x4096 3 ways (2 of 86) 0.90 against 4 ways (3 of 64) 0.85; 60x16384x4096 3 ways (3 of
    86) 0.91 against 2 ways (2 of 128) 0.86 and 4 ways (4 of 64, one past the 3 resident) 0.85; 52x15360x2048 3 ways
    (3 of 43) 0.93 against 16 ways (15 of 8: short slices) 0.75. The pick is the best split measured, or within
    1.5 % of it, at all 42; the first 26 formed the rule, the block's steps and the tie were set at the other 16."""
    work = {x: cdiv(tiles * x, sms) * (cdiv(k_steps, x) + BUSIEST_SM_BLOCK_STEPS) for x in {s, *splits}
            if tiles * x > sms}
    if not work:
        return s
    least = min(work.values())
    near = [x for x, w in work.items() if w <= least * (1 + BUSIEST_SM_TIE)]

    def preference(x: int) -> tuple[int, int]:
        busiest = cdiv(tiles * x, sms)
        return (0, -busiest) if busiest <= resident else (1, x)

    return min(near, key=preference)


# busiest_sm_split's cost of a block beside its slice's k steps (its start, and its partial tile written and summed),
# in k steps, and the share within which two splits leave the busiest SM as much work.
BUSIEST_SM_BLOCK_STEPS = 2
BUSIEST_SM_TIE = 0.03


# The shared memory the driver keeps back for each resident block (sm_80 and later): an SM's whole shared memory
# is the opt-in limit of one block plus this.
SHARED_RESERVED_PER_BLOCK = 1024
THREADS_PER_SM = 2048  # the most threads an SM holds at once (sm_80 and sm_90)
REGISTERS_PER_SM = 65536  # 32-bit registers an SM holds (sm_80 and sm_90)


def blocks_by_registers(registers: int, threads: int) -> int:
    """The blocks of `threads` threads that an SM's registers hold at `registers` a thread: a warp is given them in
    units of 256 (a thread's count rounded up to a multiple of 8, times 32)."""
    per_warp = cdiv(cdiv(registers, 8) * 8 * 32, 256) * 256
    return REGISTERS_PER_SM // (per_warp * cdiv(threads, 32))


def simt_token_tiles(tile, rest: Callable[[object, tuple[str, ...]], Choice],
                     min_slice_steps: int = DEEP_SLICE_K_STEPS, units: str = "the CUDA cores"
                     ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of kernel 7's builds of a few token rows, m<BM>[_splitk<S>] (`tile`: their configuration, a
    geometry.BlockTile of BM = tile.tile_m rows, k slices of tile.tile_k), for M of at most BM: K split as kernel
    10's decode tiles split it, the most ways whose blocks fit one to an SM, and where that leaves more than
    IDLE_SM_SHARE of the SMs idle, up to two to an SM where the busiest SM then has no more of a tile
    (_idle_sms_split); every slice keeps `min_slice_steps` k steps. More rows, or N too narrow for the most slices
    to fill half the SMs, go to `rest`. At M = 1 a 16-row tile multiplies 15 rows of zeros, and its FMAs, not B's
    bytes, set its pace. On an H200 (x cuBLAS, small-problems/simt-decode-token-rows-float32.txt), 8 x 256 tiles:
    1x4096x4096 at 0.89 split 8 ways (128 blocks) against 0.79 in 16 and the 16-row tiles' 0.76; 1x6144x4096 at 0.94
    in 8 (192 blocks, two to an SM where 4 ways leave 36 SMs idle) against 0.91; 1x14336x4096 at 0.97 in 2 (112
    blocks); 1x28672x4096 at 1.03 whole (112); 8x4096x4096 at 2.09 in 8, against 1.85 in 16 and the 16-row tiles'
    1.72."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tile_m, tile_k = tile.tile_m, tile.tile_k
        build = f"m{tile_m}"
        if problem.m > tile_m or build not in variants:
            return rest(problem, variants)
        shape = tile.launch(problem)
        tiles, sms = shape.grid[0] * shape.grid[1], problem.sm_count
        k_steps = cdiv(problem.k, tile_k)
        if 2 * tiles * max(_tile_splits(tile_m, variants)) < sms:
            return rest(problem, variants)
        s = _fitting_split(build, tiles, k_steps, variants, sms, min_slice_steps)
        idle = _idle_sms_split(tiles, s, k_steps, tile_m, variants, sms, sms, min_slice_steps, smallest=True)
        s = s if idle is None else idle
        where = (f"M = {problem.m} token row{'s' if problem.m > 1 else ''}: {tile_m}x{tile.tile_n} tiles on {units} "
                 f"(a 16-row tile would multiply {16 - problem.m} rows of zeros), {tiles} along N")
        on = (f"at most two to an SM: one block an SM would leave more than {IDLE_SM_SHARE:.0%} of the {sms} SMs "
              "idle (configs.IDLE_SM_SHARE)" if idle is not None else f"on {sms} SMs")
        if s == 1:
            return Choice(build, f"{where}; whole tiles ({tiles} blocks, {on}, {k_steps} k steps of {tile_k})")
        return Choice(f"{build}_splitk{s}",
                      f"{where}; K split {s} ways ({k_steps} k steps of {tile_k}, about {cdiv(k_steps, s)} a slice) "
                      f"gives {tiles * s} blocks, {on}")

    return choose


@dataclass(frozen=True)
class TileRates:
    """simt_tile_model's facts for one dtype, fitted to a sweep of every build (see there)."""
    # per tile rows, or per (rows, columns) where a tile of those rows has a rate of its own: multiply-adds an SM
    # does a nanosecond with 12 or more warps resident. A tile with a rate of its own is weighed on every problem,
    # one narrower than another of its rows without one only on problems of few columns (simt_tile_model).
    gmacs: dict[int | tuple[int, int], float]
    # with at most this many warps of the tile resident: the share of that rate (with fewer than the fewest named,
    # that share in proportion: a lone block of 2 warps half that of 4)
    warp_share: dict[int, float]
    block_us: float  # each block's own time: its start, the fill of its pipeline, its epilogue
    partial_gbps: float  # the rate at which a tile's last slice reads the S partial tiles and sums them
    # Where the model also weighs the builds: the default tiles (one block an SM) fill their waves to less than this
    # (a last wave mostly empty; 0: never).
    ragged_fill: float = 0.0
    # A split's own time beside its partials' bytes: the count's fences and the last slice's round trips to L2 before
    # its sum can start, once per tile the busiest SM sums (0: none).
    split_us: float = 0.0
    # The busiest SM's blocks past its last full round of resident ones run with fewer warps beside them, at the
    # share of theirs (False: every block at the share of the most resident at once).
    last_round: bool = False
    # The waves' fill for `ragged_fill` counts a partial tile at the part of it inside C (False: as a whole tile).
    inside_fill: bool = False


def simt_tile_model(tile: Callable[[int, str], tuple[int, int, int]], launch: Callable[[Problem], object],
                    builds: dict[str, object], rates: dict[str, TileRates],
                    rest: Callable[[object, tuple[str, ...]], Choice], min_k_steps_per_slice: int = 4,
                    registers: dict[str, int] | None = None) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a SIMT kernel whose default tiles leave most SMs idle on a problem (fewer than half a wave)
    or hold as many columns past N as in it, or more, or fill their waves of one block an SM to less than the dtype's
    `ragged_fill` (otherwise `rest`), with builds of smaller tiles and of split
    K: every build is weighed by the time its busiest SM takes, and the least wins (of equal times, fewer slices,
    then the larger tile). A build whose tile is narrower than another of the same rows is weighed only where that
    one holds as many columns past N as in it, or more (kernel 7's 32 x 64 tiles against its 32 x 128 ones: at N of
    64 or less), unless the narrower tile has a rate of its own (kernel 8's 64 x 64 tiles: everywhere).

    A build's blocks (its launch: tiles x slices) are dealt out evenly, so the busiest SM runs cdiv(blocks, SMs) of
    them, each in time `tile area x its slice of K / the SM's rate + block_us`, where the SM's rate is the tile's
    `gmacs`, times `warp_share` where few of its warps are resident (the blocks it holds at once, by shared memory,
    threads and, where `registers` gives a build's count a thread, registers: a lone block of 4 warps leaves the
    FMA units waiting); with `last_round`, the blocks past the busiest SM's last full round of resident ones run at
    the share of their own warps (4 blocks of 4 warps where 3 are resident: three at the share of 12 warps, the
    fourth at that of 4). Each split adds the sums its tiles' last
    slices do: S partial tiles read at `partial_gbps`, cdiv(tiles, SMs) of them on the busiest SM. Rows and columns
    past the problem count as work: a tile multiplies them.

    `tile(block, dtype)` and `launch(problem)`: the default build's; `builds`: the method's variants by name
    (their launch, and their tile where it is not the default's); `rates`: per dtype. A split needs
    `min_k_steps_per_slice` k steps a slice."""

    def tile_of(problem, build) -> tuple[int, int, int]:
        return (build.tile if build is not None and build.tile else tile)(problem.block, problem.dtype.name)

    def weigh(problem, name: str, tile_mnk: tuple[int, int, int]) -> tuple[float, int, int, int, int, int] | None:
        build = builds.get(name)
        rows, cols, tile_k = tile_mnk
        shape = (build.launch if build is not None else launch)(problem)
        s = shape.grid[2]
        if s > 1 and cdiv(problem.k, tile_k) < min_k_steps_per_slice * s:
            return None
        blocks = shape.grid[0] * shape.grid[1] * s
        busiest = cdiv(blocks, problem.sm_count)
        threads = shape.threads[0] * shape.threads[1] * shape.threads[2]
        resident = min((problem.max_shared_bytes + SHARED_RESERVED_PER_BLOCK)
                       // (shape.shared_bytes + SHARED_RESERVED_PER_BLOCK), THREADS_PER_SM // threads)
        if registers and name in registers:
            resident = min(resident, blocks_by_registers(registers[name], threads))
        fact = rates[problem.dtype.name]

        def share_of(blocks_at_once: int) -> float:
            warps = blocks_at_once * threads // 32
            share = next((v for w, v in sorted(fact.warp_share.items()) if warps <= w), 1.0)
            return share * min(1.0, warps / min(fact.warp_share))  # fewer warps than the fewest named: in proportion

        rate = fact.gmacs.get((rows, cols), fact.gmacs.get(rows))
        if rate is None:  # a tile the model has no rate for (kernel 7's 8-row tiles: M of a few rows only)
            return None
        block = rows * cols * cdiv(problem.k, s) / rate / 1e3  # a block's microseconds at the full rate
        last = busiest % resident if fact.last_round and busiest > resident else 0  # blocks past the full rounds
        us = busiest * fact.block_us + (busiest - last) * block / share_of(min(busiest, resident))
        if last:
            us += last * block / share_of(last)
        if s > 1:  # each tile's sum, spread over the SMs: the busiest sums cdiv(tiles, SMs) of them
            sums = cdiv(shape.grid[0] * shape.grid[1], problem.sm_count)
            us += sums * (s * rows * cols * problem.dtype.output.itemsize / fact.partial_gbps / 1e3 + fact.split_us)
        return us, s, rows, cols, blocks, busiest

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tile_m, tile_n, _ = tile(problem.block, problem.dtype.name)
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        idle = 2 * tiles <= problem.sm_count
        # A few columns: the default tiles multiply as many columns past N as in it, or more.
        narrow = cdiv(problem.n, tile_n) * tile_n >= 2 * problem.n
        fact = rates.get(problem.dtype.name)
        if fact is None:
            return rest(problem, variants)
        # With inside_fill, a partial tile counts at the part of it inside C (1920^3: 120 tiles of 128x256 on 132
        # SMs, the last column of them half inside: 85 % of a wave, not 91 %).
        fill = wave_fill(problem, tile_m, tile_n, inside=fact.inside_fill)
        if not (idle or narrow or fill < fact.ragged_fill):
            return rest(problem, variants)
        tiles_of = {name: tile_of(problem, builds.get(name)) for name in (DEFAULT, *variants)
                    if name == DEFAULT or name in builds}
        shapes = {name: t[:2] for name, t in tiles_of.items()}
        # A tile narrower than another of its rows only where that one holds as many columns past N as in it, or
        # where the model has a rate for the narrower tile's own shape.
        widest = {r: max(c for rr, c in shapes.values() if rr == r) for r, _ in shapes.values()}
        own = rates[problem.dtype.name].gmacs
        shapes = {name: (r, c) for name, (r, c) in shapes.items()
                  if c == widest[r] or (r, c) in own or cdiv(problem.n, widest[r]) * widest[r] >= 2 * problem.n}
        weighed = {name: weigh(problem, name, tiles_of[name]) for name in shapes}
        weighed = {name: w for name, w in weighed.items() if w is not None}
        name = min(weighed, key=lambda v: (round(weighed[v][0], 3), weighed[v][1], -weighed[v][2] * weighed[v][3]))
        us, s, rows, cols, blocks, busiest = weighed[name]
        where = (f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on {problem.sm_count} SMs "
                 + (f"leave{'s' if tiles == 1 else ''} most SMs idle" if idle else
                    f"hold as many columns past N = {problem.n} as in it, or more" if narrow else
                    f"fill their waves to {fill:.0%}"))
        split = f", K in {s} slices" if s > 1 else ""
        against = (f"{weighed[DEFAULT][0] / us:.1f}x less than whole default tiles" if name != DEFAULT
                   else "the default tiles themselves")
        return Choice(name, f"{where}: {blocks} blocks of {rows}x{cols}{split}, {busiest} on the busiest SM, the "
                            f"least time of the tile model's builds ({against})")

    return choose


def _decode_split(tile_m: int, blocks: int, k_steps: int, variants: tuple[str, ...], sms: int, min_k_steps: int) -> int:
    """The largest registered split S of the m<tile_m> builds whose blocks x S fit one per SM, with at least
    `min_k_steps` k steps a slice; 1 where none does."""
    return _fitting_split(f"m{tile_m}", blocks, k_steps, variants, sms, min_k_steps)


# decode_tiles: where one block an SM leaves more than this share of the SMs idle, a split that puts at most two
# blocks on every SM (two of every decode build fit by shared memory) where it gives the busiest SM less of a tile;
# in 16-row tiles, whose partial sums are the smallest, also where it gives as much but streams on more SMs. Measured
# on an H200 (bench/compare.py, one process per dtype, x cuBLAS; small-problems/idle-sms-*.txt): 32x10240x8192
# (80 column tiles, whole: each SM's share a tile) split 3 ways (240 blocks, two thirds of a tile) ran at 1.06
# against 1.01 in fp16, 1.03 against 0.84 in tf32, 2.78 against 2.70 in int8 and 2.52 against 1.84 in FP8;
# 16x6144x4096 (48 column tiles) split 4 ways (192 blocks) against 2 (96), half a tile either way, at 0.93 against
# 0.91-0.93 in 16 bits, 1.12 against 1.08 in tf32, 2.89 against 2.74 in int8 and 2.21 against 2.04 in FP8. In 32-
# and 64-row tiles the same doubling ran 4-8 % slower in fp16 (32 and 64x6144x4096: 0.85 against 0.88, 0.72 against
# 0.79), and at 32 and 64 column tiles, where one block an SM leaves 4 SMs idle, a doubled split ran slower in
# every dtype (decode-sweep-*.txt: 4096 columns split 8 ways 0.95-0.96 against 1.08-1.14 in fp16).
IDLE_SM_SHARE = 0.25


def _idle_sms_split(blocks: int, s: int, k_steps: int, tile_m: int, variants: tuple[str, ...], slots: int, sms: int,
                    min_k_steps: int, smallest: bool) -> int | None:
    """The split for `blocks` decode blocks (row x column tiles) where one block an SM, split `s` ways, leaves more
    than IDLE_SM_SHARE of the `sms` idle: the registered split of at most two blocks an SM whose busiest SM has the
    least of a tile (ceil(blocks x S / sms) / S), where that is less than `s` gives, or as much in the `smallest`
    tiles (then the most slices). None where one block an SM fills the GPU, the blocks are already counted two to
    an SM (`slots` past `sms`), or no split gains."""
    if slots > sms or blocks * s >= (1 - IDLE_SM_SHARE) * sms:
        return None
    share = {t: cdiv(blocks * t, sms) / t for t in registered_splits(variants, f"m{tile_m}")
             if t > s and blocks * t <= 2 * sms and k_steps >= min_k_steps * t}
    least = min(share.values(), default=None)
    now = cdiv(blocks * s, sms) / s
    if least is None or least > now or (least == now and not smallest):
        return None
    return max(t for t, v in share.items() if v == least)


def _fitting_split(build: str, blocks: int, k_steps: int, variants: tuple[str, ...], sms: int, min_k_steps: int,
                   least: int = 2) -> int:
    """The largest registered split S (at least `least`) of `build` (<build>_splitk<S>) whose blocks x S fit one
    per SM, with at least `min_k_steps` k steps a slice; 1 where none does."""
    return max((s for s in registered_splits(variants, build)
                if s >= least and blocks * s <= sms and k_steps >= min_k_steps * s), default=1)


def _build_splits(build: str, variants: tuple[str, ...]) -> list[int]:
    """1 and the registered splits S of `build` (<build>_splitk<S>)."""
    return [1, *registered_splits(variants, build)]


def _tile_splits(tile_m: int, variants: tuple[str, ...]) -> list[int]:
    """1 and the registered splits S of the m<tile_m> builds (m<tile_m>_splitk<S>)."""
    return _build_splits(f"m{tile_m}", variants)


def _slice_split(splits: list[int], k_steps: int, max_split: int, min_slice_steps: int) -> int:
    """Of `splits` (1 among them), the most ways up to `max_split` that keep `min_slice_steps` k steps a slice."""
    return max(x for x in splits if x == 1 or (x <= max_split and k_steps >= min_slice_steps * x))


def _two_to_an_sm(problem, slots: int, tile_m: int) -> str:
    """The words for blocks counted two to an SM (decode_tiles' two_per_sm_from), else none."""
    return (f", two to an SM (one {problem.dtype.name} block of {tile_m} rows is short of warps to keep its mma "
            "busy)" if slots > problem.sm_count else "")


def paired_decode_tiles(tile_ms: tuple[int, ...], tile_n: int, slice_bytes: int, default_tile: tuple[int, int],
                        token_rows: int, pair: int = 2, block_k_steps: int = 1,
                        min_k_steps_per_slice: int = 4) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of kernel 20 (mma_3xtf32: three dependent tf32 mmas a fragment, kernel 10's decode builds
    m<BM>[_splitk<S>]): the least work on the busiest SM, counting an SM that holds fewer than `pair` blocks as
    holding `pair`. One block's 4 warps leave the tensor pipe waiting on its chains of three mmas, so an SM runs two
    in about the time it runs one; past two, more blocks an SM queue.

    Rows: the smallest tile in `tile_ms` that holds M; past the widest, row tiles of the widest (B read by the fewest
    row tiles), unless those, split as far as the registered splits go, leave half the SMs or more idle: then the
    smallest tile, whose blocks are more (64x64x65536, M x N x K, on an H100: 16-row tiles split 32 ways 0.50x SGEMM,
    128 blocks, against 32-row ones' 0.37, 64 blocks; 128x128x32768 on an H200, where 32-row tiles so split make 128
    blocks: 1.05 against 0.91). Past `token_rows` rows (kernel 10's), the default build where its `default_tile`s fill
    half the SMs or more, as decode_tiles has it. K: of the registered splits whose slices keep
    `min_k_steps_per_slice` k steps of `slice_bytes` a row (whole tiles always), the split S with the fewest k steps
    on the busiest SM, max(ceil(blocks / SMs), pair) x (ceil(k steps / S) + `block_k_steps`), where `block_k_steps`
    is what a block costs besides its slice (its pipeline's start, its partial tile written and read back: about one
    k step's bytes); of splits that tie, the fewest slices (the least to sum).

    Fitted to every build at 8 shapes on an H200 (x cuBLAS's SGEMM, bench/compare.py; results/reference/NVIDIA_H200/
    small-problems/mma-3xtf32-fit.txt), where it picks the best build at all 8, and one block an SM (kernel 10's rule)
    lost 7-12 % at 6: 16x8192x8192 m16_splitk4 (256 blocks) 1.95 against m16_splitk2's (128) 1.73; 128x4096x4096
    m32_splitk2 0.90 against whole tiles' 0.83; 32x28672x8192 m32_splitk4 (896 blocks, 7 an SM of 64 k steps) 1.08
    against whole tiles' (224, 2 an SM of 256) 0.95, m32_splitk2's (448, 4 of 128) 0.94 and m32_splitk32's (7168,
    55 of 8) 0.98: without the block's own cost, the 32-way split would count 440 k steps against the 4-way's 448."""
    def choose(problem, variants: tuple[str, ...]) -> Choice:
        sms = problem.sm_count
        allowed = [t for t in tile_ms if f"m{t}" in variants]
        whole = _whole_default_tiles(problem, default_tile, allowed) if problem.m > token_rows else None
        if whole is not None:
            return whole
        if not allowed:
            return Choice(DEFAULT, "no decode build registered: whole default tiles")
        k_steps = cdiv(problem.k, slice_bytes // problem.dtype.itemsize)

        def tiles_of(t: int) -> int:
            return cdiv(problem.m, t) * cdiv(problem.n, tile_n)

        def splits_of(t: int) -> list[int]:  # whole tiles, and the registered splits that keep their k steps
            return [1] + [s for s in registered_splits(variants, f"m{t}")
                          if cdiv(k_steps, s) >= min_k_steps_per_slice]

        tile_m = next((t for t in allowed if t >= problem.m), max(allowed))
        widest, rows = max(splits_of(tile_m)), ""
        if 2 * tiles_of(tile_m) * widest <= sms and min(allowed) < tile_m:
            rows = f" (tiles of {tile_m} rows split {widest} ways would leave half the SMs or more idle)"
            tile_m = min(allowed)
        tiles = tiles_of(tile_m)
        base = f"m{tile_m}"
        splits = splits_of(tile_m)

        def per_sm(s: int) -> int:  # the busiest SM's blocks, `pair` at least
            return max(cdiv(tiles * s, sms), pair)

        s = min(splits, key=lambda s: (per_sm(s) * (cdiv(k_steps, s) + block_k_steps), s))
        name = base if s == 1 else f"{base}_splitk{s}"
        split = f"split {s} ways" if s > 1 else "whole"
        return Choice(name, f"{tiles} tiles of {tile_m}x{tile_n}{rows} ({k_steps} k steps each) {split}: "
                            f"{tiles * s} blocks on {sms} SMs, the busiest SM's "
                            f"{per_sm(s)} blocks (an SM counted as holding {pair} at least) of {cdiv(k_steps, s)} k "
                            f"steps and {block_k_steps} more a block, the fewest of the registered splits")

    return choose


def _default_tiles(problem, default_tile: tuple[int, int]) -> tuple[int, str]:
    """How many tiles of `default_tile` (rows, columns) cover C, and those words."""
    dm, dn = default_tile
    tiles = cdiv(problem.m, dm) * cdiv(problem.n, dn)
    return tiles, f"{tiles} output tile{'s' if tiles != 1 else ''} of {dm}x{dn} on {problem.sm_count} SMs"


def _whole_default_tiles(problem, default_tile: tuple[int, int], allowed: list[int]) -> Choice | None:
    """Past the token rows: the default build where its tiles fill half a wave or more (counted in SMs), or where
    no decode tile is `allowed`; else None."""
    tiles, where = _default_tiles(problem, default_tile)
    if 2 * tiles > problem.sm_count or not allowed:
        return Choice(DEFAULT, f"{where}: at least half a wave, so whole default tiles")
    return None


def _fill_the_gpu(problem, allowed: list[int], tile_n: int, default_tile: tuple[int, int], variants: tuple[str, ...],
                  k_steps: int, tile_k: int, min_k_steps: int, slots: dict[int, int]) -> Choice:
    """decode_tiles past its token rows: the default build's tiles where they fill half a wave or more. Else each
    decode tile whose whole tiles fit one block per SM, K split as in decode (`_decode_split`); the most blocks win,
    and of tiles that make as many, the widest whose slices keep DEEP_SLICE_K_STEPS k steps (B read by fewer row
    tiles), else the smallest. Where no decode tile fits one wave, the widest tile this dtype takes. `slots`: per
    tile, the blocks that fit at once (decode_tiles' two_per_sm_from); half a wave is counted in SMs."""
    whole = _whole_default_tiles(problem, default_tile, allowed)
    if whole is not None:
        return whole
    default_tiles, where = _default_tiles(problem, default_tile)
    leave = "leaves" if default_tiles == 1 else "leave"
    blocks = {t: cdiv(problem.m, t) * cdiv(problem.n, tile_n) for t in allowed}
    fits = [t for t in allowed if blocks[t] <= slots[t]]
    if not fits:
        t = max(allowed)
        return Choice(f"m{t}", f"{where} {leave} most SMs idle: {blocks[t]} tiles of {t}x{tile_n} "
                               f"({problem.dtype.name}'s widest decode tile), more than one wave but each SM busy")
    return _most_blocks(problem, fits, tile_n, variants, k_steps, tile_k, min_k_steps, f"{where} {leave} most SMs idle",
                        slots)


def _most_blocks(problem, tile_ms: list[int], tile_n: int, variants: tuple[str, ...], k_steps: int, tile_k: int,
                 min_k_steps: int, why: str, slots: dict[int, int], prefer: int | None = None) -> Choice:
    """Of decode tiles `tile_ms`, those whose whole tiles fit one block per SM (one at least), each with K split
    as in decode: the most blocks for the blocks that fit at once, and of tiles that make as many, `prefer` where it
    is one of them, else the widest whose slices keep DEEP_SLICE_K_STEPS k steps, else the smallest. `slots`: per
    tile, the blocks that fit at once."""
    blocks = {t: cdiv(problem.m, t) * cdiv(problem.n, tile_n) for t in tile_ms}
    tile_ms = [t for t in tile_ms if blocks[t] <= slots[t]]
    split = {t: _decode_split(t, blocks[t], k_steps, variants, slots[t], min_k_steps) for t in tile_ms}
    fill = {t: blocks[t] * split[t] / slots[t] for t in tile_ms}
    most = max(fill.values())
    full = [t for t in tile_ms if fill[t] == most]
    deep = [t for t in full if split[t] == 1 or k_steps >= DEEP_SLICE_K_STEPS * split[t]]
    t = prefer if prefer in full else max(deep) if deep else min(full)
    s = split[t]
    tiles = f"{why}: {blocks[t]} tiles of {t}x{tile_n}"
    if s == 1:
        return Choice(f"m{t}", f"{tiles}, the most that fit one block per SM")
    return Choice(f"m{t}_splitk{s}", f"{tiles}, K split {s} ways ({k_steps} k steps of {tile_k}, about "
                                     f"{cdiv(k_steps, s)} a slice): {blocks[t] * s} blocks"
                                     f"{_two_to_an_sm(problem, slots[t], t)}")


def job_problem(dtype: DType, block: int, m: int, k: int, n: int, *, sm_count: int | None = None,
                max_shared_bytes: int | None = None, hbm_bytes_per_s: float | None = None,
                l2_bytes: int | None = None) -> Problem:
    """A job's Problem, the one way it is built (the grid's plan, the job's pick and launch, the regret of results
    that did not record their pick, the bench): the dtype's record, the block, the shape (m x k times k x n), and
    the device's facts, its SM count, the shared memory a block may opt in to, its memory bandwidth and its L2's
    bytes. A fact that is None, 0 or NaN (no GPU at planning, a CPU job, a result that did not record it) takes the
    registry Problem's default."""
    facts = {"sm_count": int(sm_count)} if sm_count else {}
    if max_shared_bytes:
        facts["max_shared_bytes"] = int(max_shared_bytes)
    if hbm_bytes_per_s and hbm_bytes_per_s == hbm_bytes_per_s:  # NaN != NaN: a result table's missing value
        facts["hbm_bytes_per_s"] = float(hbm_bytes_per_s)
    if l2_bytes and l2_bytes == l2_bytes:
        facts["l2_bytes"] = int(l2_bytes)
    return Problem(m, n, k, int(block), dtype, **facts)


def choose(method, problem) -> Choice:
    """The method's configuration for `problem`: its heuristic's pick among its variants (diagnostic builds left
    out), or the default build where it has none. The one place a pick is made: the grid plans with it (plan), a
    job records it for the device that ran it, the regret table asks it for results that did not record it."""
    names = runnable(method, problem.dtype.name)  # a build of other dtypes (kernel 7's fp32 8-row tiles) is no pick
    if not names:
        return Choice(DEFAULT, ONE_CONFIGURATION)
    if method.choose is None:
        return Choice(DEFAULT, "the method has no heuristic over its variants: its default build")
    picked = method.choose(problem, names)
    if picked.variant != DEFAULT and picked.variant not in names:
        raise ValueError(f"{method.name}'s heuristic chose {picked.variant!r}, which is not one of its variants "
                         f"({', '.join(names)})")
    return picked


# The config's `variants:` (pipeline/config.py checks it): one of these for every method, or a mapping from method
# names to one of these or to a list of variant names; methods the mapping leaves out take AUTO.
AUTO, ALL = "auto", "all"
MODES = (AUTO, DEFAULT, ALL)
FORCED = "forced by config"
SWEPT = "swept"


def setting_for(setting, method_name: str):
    """The config's `variants` value for one method: "auto", "default", "all" or a list of variant names."""
    if isinstance(setting, dict):
        return setting.get(method_name, AUTO)
    return AUTO if setting is None else setting


def runnable(method, dtype: str | None = None) -> tuple[str, ...]:
    """The method's variant names a study may run (for `dtype`, where given: a variant limited to other dtypes is
    left out): all but the diagnostic builds (which compute a wrong result on purpose; bench/compare.py times
    them)."""
    return tuple(v.name for v in method.variants
                 if not v.diagnostic and (dtype is None or not v.dtypes or dtype in v.dtypes))


def plan(method, problem, setting, pick: Choice | None = None) -> list[Choice]:
    """The configurations of `method` to run on `problem` under the config's `variants` value for it (see
    setting_for), each with the reason the report prints: the heuristic's sentence ("auto"), FORCED ("default" or
    a list of names) or SWEPT ("all": the default build, then every variant). A method without variants runs its
    default build whatever the setting. `pick`: choose(method, problem), where the caller has made it already."""
    setting = setting_for(setting, method.name)
    if not method.variants:
        return [Choice(DEFAULT, ONE_CONFIGURATION)]
    if setting == AUTO and method.reference_line:
        return vendor_lines(method, problem.dtype.name)
    if setting == AUTO:
        return [pick or choose(method, problem), *class_picks(method, problem)]
    if setting == DEFAULT:
        return [Choice(DEFAULT, FORCED)]
    if setting == ALL:
        return [Choice(name, SWEPT) for name in (DEFAULT, *runnable(method, problem.dtype.name))]
    known = (DEFAULT, *runnable(method))
    unknown = [name for name in setting if name not in known]
    if unknown:
        raise ValueError(f"{method.name} has no variant {unknown[0]!r}; its variants: {', '.join(known)}")
    here = (DEFAULT, *runnable(method, problem.dtype.name))  # a build limited to other dtypes skips this one
    return [Choice(name, FORCED) for name in dict.fromkeys(setting) if name in here]


def class_picks(method, problem) -> list[Choice]:
    """The pick of `method`'s class_choose (its builds of another accuracy class than its heuristic's pick), which a
    study runs beside that pick under "auto"; none where the method has no such heuristic or its pick is not a
    build the problem's dtype may run."""
    if method.class_choose is None:
        return []
    names = runnable(method, problem.dtype.name)
    picked = method.class_choose(problem, names)
    return [picked] if picked.variant in names else []


def within_class(rest: Callable[[object, tuple[str, ...]], Choice], names: dict[str, str], reason: str
                 ) -> Callable[[object, tuple[str, ...]], Choice]:
    """A heuristic over the builds of one accuracy class whose record is not the method's (FP8's promoted 128x128
    tiles): `rest` is written for a rung whose record is the class's and knows the class's builds by the names they
    would have there; `names` maps each of those (DEFAULT for the record) to the build's own name. `rest` weighs those
    of the study's variants, and its pick comes back by its own name, its reason after `reason`."""
    def choose(problem, variants: tuple[str, ...]) -> Choice:
        known = tuple(name for name, own in names.items() if name != DEFAULT and own in variants)
        picked = rest(problem, known)
        return Choice(names[picked.variant], f"{reason}: {picked.reason}")

    return choose


def vendor_lines(method, dtype: str) -> list[Choice]:
    """A vendor library's builds that a study runs for `dtype` under "auto": one per accuracy class (its default
    build, and each variant of another class, e.g. cuBLASLt's FP8 with fast accumulation), so that every kernel of
    ours has the vendor line of its own class to be compared with."""
    classes = {method.accuracy_of(None, dtype): DEFAULT}
    for name in runnable(method, dtype):
        classes.setdefault(method.accuracy_of(name, dtype), name)
    return [Choice(name, f"the vendor line of its accuracy class ({accuracy})" if accuracy else
                   "the vendor line") for accuracy, name in classes.items()]


def reason_for(method, problem, setting, variant: str, pick: Choice | None = None) -> str:
    """Why `variant` of `method` runs `problem` (the result's variant_reason): the reason plan() gives it, computed
    with the device that runs the job. A variant the plan does not give on this device (planned with another SM
    count, or asked for by its result path) says so and what the plan would run. `pick`: as in plan()."""
    planned = plan(method, problem, setting, pick)
    for choice in planned:
        if choice.variant == variant:
            return choice.reason
    pick = pick or choose(method, problem)
    mode = setting_for(setting, method.name)
    if mode == AUTO:
        return (f"planned with another SM count than this device's {problem.sm_count}; here the heuristic picks "
                f"{pick.variant}: {pick.reason}")
    return f"not in the config's variants for {method.name} ({mode}); asked for by its result path"
