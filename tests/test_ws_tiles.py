"""The warp-specialised kernel's 128x128-tile builds (WGMMA_WS_BN=128, variants bn128*), 128x64-tile ones
(WGMMA_WS_BN=64, variants bn64*) and 64-row ones (WGMMA_WS_BM=64, variants bm64*): their launch geometry, workspace
and shared memory as the kernel lays them out, their instruction, and the builds the kernel refuses (each the
registry's record of a build with one axis moved, core/warp_specialized.WsConfig)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from matmul_study.analysis.tile_fit import table_ratios
from matmul_study.launch import kernels
from matmul_study.core import configs, dtypes, registry
from matmul_study.core.specs import Problem
from matmul_study.core.warp_specialized import (NARROW_BN, NARROWEST_BN, SHORT_BM, SM90_SHARED_BYTES,
                                                K_GROUP_TWIN_BUILDS, SWAP_TOKEN_BN, WS_SMALL_BT_SPLITS,
                                                WS_SMALL_SPLITS, WS_TF32, swap_twin_config, ws_tile_builds)

from cards import H100_HBM, H200_HBM

NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")

WS = registry.get("wgmma_warp_specialized")
BN128 = [v for v in WS.variants if v.config.bn == NARROW_BN and v.config.bm == WS.config.bm and not v.config.swap_ab]


def problem(m, n, k, dtype="float16"):
    return Problem(m, n, k, 0, dtypes.get(dtype), 132, SM90_SHARED_BYTES)



def test_the_128x128_builds_are_registered_for_every_rung():
    assert {v.name for v in BN128} == {"bn128", "bn128_stages4", "bn128_splitk2", "bn128_splitk4", "bn128_splitk8",
                                       "bn128_splitk16"}
    bm, bn, bk = WS.tile(0, "float16")
    assert all(v.tile(0, d) == (bm, NARROW_BN, bk) for v in BN128 for d in WS.dtypes) and bn == 2 * NARROW_BN
    narrow = {name: {v.name for v in registry.get(name).variants
                     if v.config.bn == NARROW_BN and v.config.bm == 128 and not v.config.bt_smem
                         and not v.config.swap_ab}
              for name in ("wgmma_tf32", "wgmma_3xtf32", "wgmma_fp8", "wgmma_int8")}
    assert narrow["wgmma_tf32"] == narrow["wgmma_int8"] == {v.name for v in BN128}
    # (and both promoted rungs the same tiles with one scratch set: test_promote_sets.py)
    assert narrow["wgmma_3xtf32"] == {"bn128", "bn128_promote", "bn128_promote_one_set"}
    # FP8's promoted class splits its 128x128 tiles too (its ladder: warp_specialized.promoted_ladder)
    assert narrow["wgmma_fp8"] == {"bn128", "bn128_promote", "bn128_promote_cluster1", "bn128_promote_one_set",
                                   *(f"bn128_promote_splitk{s}" for s in (4, 8, 16))}


def test_128x128_tiles_give_twice_the_ctas_of_128x256_ones_until_the_gpu_is_full():
    # 512^3: 4 x 2 tiles of 128x256 (8 CTAs), 4 x 4 of 128x128 (16 CTAs, 8 clusters of 2).
    wide, narrow = WS.launch_for(problem(512, 512, 512)), WS.launch_for(problem(512, 512, 512), "bn128")
    assert wide.grid == (8, 1, 1) and narrow.grid == (16, 1, 1)
    # As many stages of the narrow tiles as fit (more than of the wide ones: each is smaller); 4 in bn128_stages4.
    config = WS.variant("bn128").config
    assert config == replace(WS.config, bn=NARROW_BN) and config.stage_count > WS.config.stage_count
    assert narrow.shared_bytes == config.shared_bytes <= SM90_SHARED_BYTES
    assert replace(config, stages=config.stage_count + 1).shared_bytes > SM90_SHARED_BYTES
    assert (narrow.threads, narrow.cluster) == (wide.threads, wide.cluster) and narrow.persistent and narrow.dependent
    stages4 = WS.variant("bn128_stages4").config
    assert stages4 == replace(config, stages=4)
    assert WS.launch_for(problem(512, 512, 512), "bn128_stages4").shared_bytes == narrow.shared_bytes - (
        config.stage_count - 4) * (config.stage_bytes + config.BARRIER_BYTES)
    # 1000 x 1200: 8 x 10 tiles of 128x128 = 80 CTAs; 4096^3: 1024 tiles, one CTA per SM.
    assert WS.launch_for(problem(1000, 1200, 800), "bn128").grid == (80, 1, 1)
    assert WS.launch_for(problem(4096, 4096, 4096), "bn128").grid == (132, 1, 1)
    # A last cluster row past m still takes a whole cluster: 129 rows are 2 CTA rows.
    assert WS.launch_for(problem(129, 17, 1), "bn128").grid == (2, 1, 1)


def ptx(method: str, variant: str | None, tmp_path, moved: dict | None = None) -> subprocess.CompletedProcess:
    """The method's module built as `variant`, or as that build's record with the axes `moved` moved."""
    m = registry.get(method)
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, [(d, 0) for d in m.dtypes], variant))
    options = kernels.compile_options(method, variant)
    if moved:
        config = replace(m.variant(variant).config, **moved)
        options = [*kernels.COMPILE_OPTIONS, *m.compile_options, *(f"-D{d}" for d in config.defines)]
    return kernels.run_nvcc(kernels.nvcc_command(source, tmp_path / "module.ptx", "sm_90a", options, "ptx"))


@needs_nvcc
def test_128x128_builds_issue_m64n128k16_in_both_dtypes(tmp_path):
    result = ptx("wgmma_warp_specialized", "bn128", tmp_path)
    assert result.returncode == 0, result.stderr
    code = (tmp_path / "module.ptx").read_text()
    assert "m64n128k16.f32.f16.f16" in code and "m64n128k16.f32.bf16.bf16" in code
    assert "m64n256k16" not in code


def kernel_asserts(variant: str, asserts: str, tmp_path) -> subprocess.CompletedProcess:
    """Kernel 12 built as `variant`, with `asserts` (static_asserts on its constants) after it."""
    source = tmp_path / "check.cu"
    source.write_text('#include "12_wgmma_warp_specialized.cu"\n' + asserts)
    return kernels.run_nvcc(kernels.nvcc_command(source, tmp_path / "check.cubin", "sm_90a",
                                                 kernels.compile_options("wgmma_warp_specialized", variant)))


@needs_nvcc
@pytest.mark.parametrize("variant", ["bn128", "bn64", "swap_bm64_bn32_kg2"])
def test_the_kernels_constants_at_narrow_widths(variant, tmp_path):
    # Accumulators, stages, partial tiles and Bt's boxes as the kernel derives them from the record's definitions.
    config = WS.variant(variant).config
    result = kernel_asserts(variant,
                            f"static_assert(wgmma_ws::BN == {config.bn} && wgmma_ws::ACCUMULATORS == {config.bn // 2}, "
                            '"tile");\n'
                            f"static_assert(wgmma_ws::STAGES == {config.stage_count} && "
                            f"wgmma_ws::STAGE_BYTES == {config.stage_bytes}, \"stages\");\n"
                            f"static_assert(wgmma_ws::PART_QUADS == {config.BM} * {config.bn} / 4 && "
                            f"wgmma_ws::BT_BOX_ROWS == {128 if config.bn % 128 == 0 else config.bn}, "
                            '"partial tile, boxes");\n',
                            tmp_path)
    assert result.returncode == 0, result.stderr


@needs_nvcc
@pytest.mark.parametrize("variant,tiles", [("swap_bm64_bn32_kg2_cluster2_along_n", 64), ("swap_bm64_bn32_kg2", 128),
                                           ("swap_bm64_bn64_kg2_cluster2", 32), ("bn128", 16)])
def test_the_kernel_counts_cluster_tiles_as_the_registry_does(variant, tiles, tmp_path):
    # Clusters down M share B, along N (the 16-bit twins of 32 tokens a tile) A: the kernel's cluster tiles
    # (cluster_rows x cluster_cols of its own problem) are the registry's, which sizes the grid and the workspace.
    config = WS.variant(variant).config
    asserts = "".join(f"static_assert(wgmma_ws::cluster_rows({m}) * wgmma_ws::cluster_cols({n}) == "
                      f"{config.cluster_tiles(problem(m, n, 64))}, \"{m} x {n}\");\n"
                      for m, n in ((4096, 64), (4100, 65), (129, 17), (64, 4096), (1, 1)))
    result = kernel_asserts(variant, asserts, tmp_path)
    assert result.returncode == 0, result.stderr
    # 4096 x 64 (4096 weight columns by 64 tokens, as a twin's kernel sees them): 64 strips of weights, each in one
    # cluster of two CTAs of 32 tokens along N; 64 strips by 2 of 32 tokens without a cluster; 32 clusters of two
    # 64 x 64 tiles down M; 16 of two 128 x 128 tiles
    assert config.cluster_tiles(problem(4096, 64, 64)) == tiles


@needs_nvcc
@pytest.mark.parametrize("method,variant,moved,message", [
    # Promotion: FP8 and tf32 operands only (the others' sums lose nothing to it), 0 or 1.
    ("wgmma_warp_specialized", "bn128", {"promote": True}, "WGMMA_WS_PROMOTE: for the FP8 and tf32 operands only"),
    ("wgmma_int8", None, {"promote": True}, "WGMMA_WS_PROMOTE: for the FP8 and tf32 operands only"),
    ("wgmma_fp8", "bn128", {"promote": 2}, "WGMMA_WS_PROMOTE: 0 (off) or 1 (on)"),
    ("wgmma_warp_specialized", "bn128", {"cluster": 4}, "at most BN / 64 CTAs"),
    ("wgmma_warp_specialized", "bn128", {"split_k": 128}, "1 (whole tiles) to 64 slices per tile"),
    ("wgmma_warp_specialized", None, {"bn": 96}, "WGMMA_WS_BN: 256, 192, 128 or 64"),
    # 128x192 tiles: three 64-column strips of B, which a cluster of 2 cannot share out.
    ("wgmma_warp_specialized", "bn192", {"cluster": 2}, "1 with 192, 64 or 32"),
    # 128x64 tiles: one 64-column strip of B, so no cluster to multicast it.
    ("wgmma_warp_specialized", "bn64", {"cluster": 2}, "1 with 192, 64 or 32"),
    # One box in turns: the 16-bit twins' 64 rows of A, in any cluster, not tf32's Bt of 64 rows nor a twin of 128
    # rows of A in more CTAs than its two boxes.
    ("wgmma_tf32", "bn64", {"cluster": 2}, "1 with 192, 64 or 32"),
    ("wgmma_warp_specialized", "swap_bn128", {"cluster": 4}, "at most BN / 64 CTAs"),
    # 32 columns: the swapped 16-bit operands' 32 tokens a tile alone (their rows of A are K-major 128-byte rows;
    # B's N-major strips are 64 columns, and tf32's twins read B's rows through registers in 64-column fragments).
    ("wgmma_warp_specialized", "bn64", {"bn": 32}, "or 32 for the swapped 16-bit operands"),
    ("wgmma_tf32", "swap_bm64", {"bn": 32}, "or 32 for the swapped 16-bit operands"),
    # A cluster along N shares the swapped 16-bit operands' A slot at 64-row tiles: one box of weights.
    ("wgmma_warp_specialized", "swap_bm64_bn32_kg2", {"cluster_along_n": True},
     "WGMMA_WS_CLUSTER_ALONG_N=1: a cluster"),
    ("wgmma_warp_specialized", "bm64_bn128", {"cluster": 2, "cluster_along_n": True},
     "WGMMA_WS_CLUSTER_ALONG_N=1: a cluster"),
    ("wgmma_warp_specialized", "swap_bn128", {"cluster_along_n": True}, "WGMMA_WS_CLUSTER_ALONG_N=1: a cluster"),
    ("wgmma_warp_specialized", None, {"bm": 32}, "WGMMA_WS_BM: 128 rows (two consumer warpgroups) or 64 (one)"),
    ("wgmma_tf32", None, {"bk": 64}, "WGMMA_WS_BK: 32 for tf32 operands"),
    ("wgmma_warp_specialized", None, {"bk": 32}, "WGMMA_WS_BK: 64 for 16-bit operands"),
])
def test_builds_the_kernel_refuses_say_why(method, variant, moved, message, tmp_path):
    result = ptx(method, variant, tmp_path, moved)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_the_64_row_builds_are_one_consumer_warpgroup_reading_a_in_boxes_of_64_rows():
    short = {name: {v.name for v in registry.get(name).variants
                    if v.config.bm == SHORT_BM and not v.config.bt_smem and v.config.k_groups == 1
                    and not v.config.swap_ab and not v.config.promote}  # (FP8's promoted ladder: test_configs)
             for name in ("wgmma_warp_specialized", "wgmma_tf32", "wgmma_fp8", "wgmma_int8")}
    splits = {f"bm64_bn128_splitk{s}" for s in (2, 4, 8, 16)}
    assert (short["wgmma_warp_specialized"] == short["wgmma_tf32"] == short["wgmma_fp8"] == short["wgmma_int8"]
            == {"bm64", "bm64_bn128", *splits})
    v = WS.variant("bm64_bn128")
    assert v.config == replace(WS.config, bm=SHORT_BM, bn=NARROW_BN)
    assert v.tile(0, "float16") == (SHORT_BM, NARROW_BN, WS.config.bk)
    # Its own boxes of A (64 rows); B's as the method's. The default build and the 128-row variants keep the method's.
    a, b = v.tensor_maps
    assert (a.operand, a.box_rows) == ("A", SHORT_BM) and b == WS.tensor_maps[1]
    assert WS.tensor_maps[0].box_rows == WS.config.BM == 128 and WS.variant("bn128").tensor_maps == ()
    tf32 = registry.get("wgmma_tf32").variant("bm64").tensor_maps
    assert tf32[0].box_rows == SHORT_BM and tf32[1] == registry.get("wgmma_tf32").tensor_maps[1]
    # 1024^3: 32 tiles of 128x256, 128 of 64x128 (one CTA each, in clusters of 2); 256 threads, as many stages of
    # 24 KiB as fit.
    launch = WS.launch_for(problem(1024, 1024, 1024), "bm64_bn128")
    assert launch.grid == (128, 1, 1) and launch.threads == (256, 1, 1) and launch.cluster == (2, 1, 1)
    assert launch.shared_bytes == v.config.shared_bytes <= SM90_SHARED_BYTES
    assert replace(v.config, stages=v.config.stage_count + 1).shared_bytes > SM90_SHARED_BYTES
    assert v.config.stage_count > WS.variant("bn128").config.stage_count


def test_the_64x128_split_builds_take_no_cluster_so_that_64_token_rows_fill_every_cta():
    # M = 64 against 4096 columns: 32 tiles of 64x128. In clusters of two along M, each tile's second CTA would hold
    # rows 64-127, all past M; without one, K split 4 ways is 128 CTAs, 8 ways a persistent grid of 132.
    for s, grid in ((2, 64), (4, 128), (8, 132)):
        v = WS.variant(f"bm64_bn128_splitk{s}")
        assert v.config == replace(WS.config, bm=SHORT_BM, bn=NARROW_BN, cluster=1, split_k=s)
        launch = WS.launch_for(problem(64, 4096, 4096), v.name)
        assert launch.grid == (grid, 1, 1) and launch.cluster == (1, 1, 1) and launch.threads == (256, 1, 1)
        assert v.workspace is not None
    # Not weighed by the whole-tile heuristic: they differ from the rung's record in more than the tile.
    assert not any(name.startswith("bm64_bn128_splitk") for name in ws_tile_builds(WS.config, WS.variants).tiles)


@needs_nvcc
def test_the_kernels_constants_at_bm_64(tmp_path):
    config = WS.variant("bm64").config
    result = kernel_asserts("bm64",
                            f"static_assert(wgmma_ws::CONSUMERS == 1 && wgmma_ws::THREADS == {config.THREADS}, "
                            '"warpgroups");\n'
                            f"static_assert(wgmma_ws::A_BYTES == {SHORT_BM} * 128 && "
                            f"wgmma_ws::STAGES == {config.stage_count}, \"stages\");\n"
                            f"static_assert(wgmma_ws::EPI_BYTES == {config.STAGING_BYTES}, \"staging\");\n",
                            tmp_path)
    assert result.returncode == 0, result.stderr


def test_the_persistent_grid_holds_a_cluster_for_every_cluster_tile():
    # The kernel deals out cluster tiles of 2 row tiles: 640 rows are 5 row tiles, so 3 cluster rows; with 20 column
    # tiles that is 60 clusters of work, where 5 x 20 CTA tiles / 2 would launch 50 and leave 10 a second tile (on an
    # H200, 640x5120x1280 in fp16 took 32.2 us so, against 19.5 at 704 rows).
    launch = WS.launch_for(problem(640, 5120, 1280), None)
    assert launch.grid == (120, 1, 1) and launch.cluster == (2, 1, 1)
    assert WS.launch_for(problem(704, 5120, 1280), None).grid == (120, 1, 1)
    # Past a wave, one cluster per 2 SMs whatever the rows.
    assert WS.launch_for(problem(4224, 4096, 1024), None).grid == (132, 1, 1)
    # 64-row tiles: 15 row tiles of 960 rows are 8 cluster rows, x 4 column tiles of 256.
    assert WS.launch_for(problem(960, 960, 960), "bm64").grid == (64, 1, 1)


def test_the_128x64_builds_take_no_cluster_and_read_bt_in_boxes_of_their_width():
    narrowest = {name: {v.name for v in registry.get(name).variants
                        if v.config.bn == NARROWEST_BN and not v.config.bt_smem and v.config.bm != SHORT_BM
                        and not v.config.swap_ab and not v.config.promote}
                 for name in ("wgmma_warp_specialized", "wgmma_tf32", "wgmma_fp8", "wgmma_int8", "wgmma_3xtf32")}
    builds = {"bn64", "bn64_splitk2", "bn64_splitk4", "bn64_splitk8"}
    assert (narrowest["wgmma_warp_specialized"] == narrowest["wgmma_tf32"] == narrowest["wgmma_fp8"]
            == narrowest["wgmma_int8"] == builds)
    assert narrowest["wgmma_3xtf32"] == set()
    v = WS.variant("bn64")
    assert v.config == replace(WS.config, bn=NARROWEST_BN, cluster=1) and v.config.stage_count == 8
    assert v.config.shared_bytes <= SM90_SHARED_BYTES < replace(v.config, stages=9).shared_bytes
    assert v.tile(0, "float16") == (128, NARROWEST_BN, WS.config.bk)
    # 16-bit B is read in 64-column strips at every width: the method's tensor maps. Bt (tf32, FP8) in boxes of 64
    # rows, a map of its own; A as the method's.
    assert v.tensor_maps == ()
    for name in ("wgmma_tf32", "wgmma_fp8", "wgmma_int8"):
        m = registry.get(name)
        a, bt = m.variant("bn64_splitk4").tensor_maps
        assert a == m.tensor_maps[0] and (bt.operand, bt.box_rows) == ("BT", NARROWEST_BN)
        assert bt.box_cols == m.tensor_maps[1].box_cols and m.tensor_maps[1].box_rows == 128
    # 4096 x 64 x 4096 (m, n, k): 32 tiles; split 4 ways, 128 CTAs; 8 ways, a persistent grid of 132.
    for name, grid in (("bn64", 32), ("bn64_splitk4", 128), ("bn64_splitk8", 132)):
        launch = WS.launch_for(problem(4096, 64, 4096), name)
        assert launch.grid == (grid, 1, 1) and launch.cluster == (1, 1, 1) and launch.threads == (384, 1, 1)
    split = WS.variant("bn64_splitk4")
    assert split.workspace(problem(4096, 64, 4096)) == 32 * (4 * 128 * 64 * 4 + 4)
    # Not among the rung's tile builds (they differ from its record in more than the tile): a rule of their own where
    # one spans N, and the whole-tile model weighs them over short K (configs.SHORT_TILE_STEPS; test_configs).
    builds_weighed = ws_tile_builds(WS.config, WS.variants)
    assert not any(name.startswith("bn64") for name in (*builds_weighed.tiles, *builds_weighed.splits))
    names = tuple(v.name for v in WS.variants)
    assert WS.choose(problem(4096, 64, 4096), names).variant == "bn64_splitk4"
    for shape in ((4096, 96, 4096), (64, 64, 65536)):
        assert not WS.choose(problem(*shape), names).variant.startswith("bn64")


@needs_nvcc
def test_the_128x64_builds_issue_m64n64k16_in_both_dtypes(tmp_path):
    built = ptx("wgmma_warp_specialized", "bn64", tmp_path)
    assert built.returncode == 0, built.stderr
    code = (tmp_path / "module.ptx").read_text()
    assert "m64n64k16.f32.f16.f16" in code and "m64n64k16.f32.bf16.bf16" in code and "m64n128k16" not in code


def test_the_tf32_builds_that_write_bt_in_shared_memory_read_b_as_it_is():
    # wgmma reads tf32 only K-major: these builds take B row-major in 32-column strips (128 bytes of fp32, 128B
    # swizzle) and write each k step's Bt into a ring of two buffers themselves, so the launcher transposes nothing
    # (no "BT" operand); no cluster; the ring is in the shared memory the launch gives, and the stages fill the rest.
    tf32 = registry.get("wgmma_tf32")
    smem = [v for v in tf32.variants if v.config.bt_smem]
    assert {v.name for v in smem} >= {"smem_bt", "bn128_smem_bt", "bm64_bn128_splitk8_smem_bt", "bn64_smem_bt"}
    assert all(v.name.endswith("_smem_bt") or v.name == "smem_bt" for v in smem)
    assert not any(v.config.bt_smem for name in ("wgmma_warp_specialized", "wgmma_fp8", "wgmma_int8", "wgmma_3xtf32")
                   for v in registry.get(name).variants)
    for v in smem:
        c = v.config
        assert c.cluster == 1 and f"WGMMA_WS_BT_BUFFERS={c.bt_buffers}" in c.defines
        assert c.bt_buffers == (2 if c.bn == 256 or (c.BM, c.bn) == (64, 256) else 4)
        a, b = v.tensor_maps
        assert (a.operand, a.box_rows, a.box_cols) == ("A", c.BM, 32)
        assert (b.operand, b.box_rows, b.box_cols, b.swizzle) == ("B", 32, 32, 128)
        rows = c.bt_buffers * (c.bn * 128 + 16)
        assert c.shared_bytes == c.ALIGN_SLACK + c.stage_count * (c.stage_bytes + 16) + c.STAGING_BYTES + rows
        assert c.shared_bytes <= SM90_SHARED_BYTES < replace(c, stages=c.stage_count + 1).shared_bytes
        assert c.stage_count >= 2 and replace(c, bt_buffers=0).stage_count > c.stage_count
    assert "WGMMA_WS_BT_BUFFERS=0" in tf32.config.defines
    # Not among the builds the tile model weighs: they differ from the record in more than the tile.
    names = set(ws_tile_builds(WS_TF32, tf32.variants).tiles) | set(ws_tile_builds(WS_TF32, tf32.variants).splits)
    assert not any(name.endswith("smem_bt") for name in names)


def test_the_two_k_group_builds_are_64_row_tiles_of_three_warpgroups_without_a_cluster():
    # Two consumer warpgroups per 64 rows, taking alternate k steps (WGMMA_WS_K_GROUPS=2): the record's k_groups, its
    # threads and its staging (the second's sums pass through it) follow; every tensor-core rung but 3xTF32 has them,
    # at 64x128 and 64x64, without a cluster and without the paced drain; the 64x64 ones also split along K (a deep K
    # against a few tiles), up to 32 slices (tf32's also writing Bt in shared memory); FP8's promoted class has both
    # tiles' builds too, each group promoting its own k steps.
    for name in ("wgmma_warp_specialized", "wgmma_tf32", "wgmma_fp8", "wgmma_int8"):
        method = registry.get(name)
        twos = {v.name: v.config for v in method.variants
                if v.config.k_groups == 2 and not v.config.bt_smem and not v.config.promote and not v.config.swap_ab}
        splits = {f"bm64_bn64_kg2_splitk{s}": s for s in WS_SMALL_SPLITS}
        assert set(twos) == {"bm64_bn128_kg2", "bm64_bn64_kg2", *splits}, name
        assert max(WS_SMALL_SPLITS) == 32  # tf32's that write Bt: 64 (WS_SMALL_BT_SPLITS)
        for v, config in twos.items():
            assert config == replace(method.config, bm=SHORT_BM, bn=config.bn, cluster=1, k_groups=2, drain_every=0,
                                     split_k=splits.get(v, 1))
            assert config.bn == 64 or v not in splits
            assert config.THREADS == 384 and config.STAGING_BYTES == 64 * 128 * 4
            assert "WGMMA_WS_K_GROUPS=2" in config.defines and "WGMMA_WS_THREADS=384" in config.defines
            assert config.shared_bytes <= SM90_SHARED_BYTES
    assert {v.name for v in registry.get("wgmma_3xtf32").variants if v.config.k_groups == 2} == set()
    fp8 = registry.get("wgmma_fp8")
    promoted = {v.name: v.config for v in fp8.variants if v.config.k_groups == 2 and v.config.promote}
    assert set(promoted) == {"bm64_bn128_kg2_promote", "bm64_bn64_kg2_promote",
                             *(f"bm64_bn64_kg2_promote_splitk{s}" for s in WS_SMALL_SPLITS)}
    for name, config in promoted.items():
        assert config == replace(fp8.variant("bn128_promote").config, bm=SHORT_BM, bn=128 if "bn128" in name else 64,
                                 cluster=1, k_groups=2, drain_every=0, split_k=config.split_k)
        assert "WGMMA_WS_PROMOTE=1" in config.defines and "WGMMA_WS_K_GROUPS=2" in config.defines
    tf32 = registry.get("wgmma_tf32")
    bt = {v.name: v.config for v in tf32.variants if v.config.k_groups == 2 and v.config.bt_smem}
    assert set(bt) == {f"bm64_bn64_kg2_splitk{s}_smem_bt" for s in WS_SMALL_BT_SPLITS}
    assert WS_SMALL_BT_SPLITS == (*WS_SMALL_SPLITS, 64)
    for config in bt.values():
        assert config == replace(tf32.config, bm=SHORT_BM, bn=64, cluster=1, k_groups=2, drain_every=0,
                                 split_k=config.split_k, bt_buffers=4)
        assert config.shared_bytes <= SM90_SHARED_BYTES
    launch = WS.launch_for(problem(1024, 1024, 8192), "bm64_bn128_kg2")
    assert launch.threads == (384, 1, 1) and launch.cluster == (1, 1, 1) and launch.grid == (128, 1, 1)


def test_the_16bit_rung_has_twins_of_its_64_row_two_k_group_tiles():
    # Cᵀ = Bᵀ·Aᵀ over 64 of B's columns by 64 or 32 of A's rows, two consumer warpgroups on alternate k steps (the
    # shape of cuBLAS's work at 64 token rows: 64 x 32), whole and split, without a cluster and (64 tokens) in
    # clusters that share A's rows: the records of the 64-row two-k-group tiles, swapped.
    # At 32 tokens a tile also in a cluster of two along the tokens, that shares each strip of weights (cuBLAS's).
    # And whole, with the stream-K tail on a CTA an SM (below).
    every = {v.name: v.config for v in WS.variants if v.config.swap_ab and v.config.k_groups == 2}
    twins = {name: c for name, c in every.items() if not c.streamk}
    plain = {(b.tokens, b.cluster, b.split) for b in K_GROUP_TWIN_BUILDS if not (b.along_n or b.streamk)}
    assert set(twins) == {f"swap_bm64_bn{t}_kg2" + (f"_cluster{c}" if c > 1 else "") + (f"_splitk{s}" if s > 1 else "")
                          for t, c, s in plain} | {"swap_bm64_bn32_kg2_cluster2_along_n"}
    assert set(every) - set(twins) == {f"{name}_streamk" for name in ("swap_bm64_bn64_kg2", "swap_bm64_bn32_kg2",
                                                                       "swap_bm64_bn32_kg2_cluster2_along_n")}
    assert {(c.bn, c.cluster, c.split_k) for c in twins.values() if not c.cluster_along_n} == plain
    assert {(c.bn, c.cluster, c.split_k) for c in twins.values() if c.cluster_along_n} == {(SWAP_TOKEN_BN, 2, 1)}
    assert {c.bn for c in twins.values()} == {NARROWEST_BN, SWAP_TOKEN_BN}
    for name, config in twins.items():
        own = replace(WS.config, bm=SHORT_BM, bn=config.bn, cluster=config.cluster, k_groups=2, drain_every=0,
                      split_k=config.split_k, cluster_along_n=config.cluster_along_n)
        assert f"WGMMA_WS_CLUSTER_ALONG_N={int(config.cluster_along_n)}" in config.defines, name
        assert config == swap_twin_config(own), name
        assert not config.full_grid and "WGMMA_WS_STREAMK=0" in config.defines, name
        assert f"WGMMA_WS_CLUSTER={config.cluster}" in config.defines, name
        assert f"WGMMA_WS_BN={config.bn}" in config.defines and f"WGMMA_WS_BT_BOX_ROWS={config.bn}" in config.defines
        assert config.THREADS == 384 and "WGMMA_WS_SWAP_AB=1" in config.defines, name
        assert (WS.variant(name).workspace is not None) == (config.split_k > 1), name
        # the tokens' tensor map has a box of the tile's rows of A, the weights' one of 64 x 64
        assert [(t.operand, t.box_rows, t.box_cols) for t in WS.variant(name).tensor_maps] == \
            [("B", 64, 64), ("A", config.bn, 64)], name
        launch = config.launch(problem(64, 4096, 4096))
        assert launch.transposed, name  # the kernel tiles Cᵀ: 64 tiles of 64 weight columns by 64 / bn of tokens
        assert launch.cluster == (config.cluster, 1, 1), name
        assert launch.grid[0] == min(64 * (64 // config.bn) * config.split_k, 132), name
    # 32 tokens a tile: 16 stages of 12 KiB (8 KiB of weights, 4 KiB of tokens), against 12 of 16 KiB at 64
    assert (twins["swap_bm64_bn32_kg2"].stage_bytes, twins["swap_bm64_bn32_kg2"].stage_count) == (12288, 16)
    assert (twins["swap_bm64_bn64_kg2"].stage_bytes, twins["swap_bm64_bn64_kg2"].stage_count) == (16384, 12)


def test_the_stream_k_twins_are_whole_twins_with_the_tail_spread_over_a_cta_an_sm():
    # At 64 x 5120 x 4096 (80 strips of weights on 132 SMs), the whole twin launches 80 CTAs and leaves 52 SMs idle;
    # its stream-K build launches one on every SM, and the kernel's tail, all 80 tiles (tile_schedule.cuh), shares
    # their 5120 k steps out over the 132, every split taken (STREAMK_MIN_SAVED 0). In clusters along the tokens, 66
    # clusters of 2. Of them a rule picks the 32-token one alone, at up to 32 token rows on an H100 (token_twins).
    p = problem(64, 5120, 4096)
    for whole in ("swap_bm64_bn64_kg2", "swap_bm64_bn32_kg2", "swap_bm64_bn32_kg2_cluster2_along_n"):
        record, tail = WS.variant(whole).config, WS.variant(f"{whole}_streamk").config
        assert tail == replace(record, streamk=True, streamk_min_saved=0, full_grid=True), whole
        assert {"WGMMA_WS_STREAMK=1", "WGMMA_WS_STREAMK_MIN_SAVED=0"} <= set(tail.defines), whole
        assert WS.variant(f"{whole}_streamk").workspace is None, whole  # the pieces meet in C, not in a workspace
        assert tail.launch(p).grid[0] == 132 and tail.launch(p).cluster == (record.cluster, 1, 1), whole
        assert record.launch(p).grid[0] == min(132, 80 * (64 // record.bn)), whole
    assert WS.variant("swap_bm64_bn32_kg2_cluster2_along_n_streamk").launch(replace(p, sm_count=133)).grid[0] == 132
    for m, n, k in ((1, 4096, 4096), (64, 5120, 4096), (56, 2560, 8192), (64, 28672, 4096), (512, 512, 16384)):
        for hbm in (H100_HBM, H200_HBM):
            pick = configs.choose(WS, configs.job_problem(dtypes.get("float16"), 0, m, k, n, hbm_bytes_per_s=hbm))
            taken = m <= 32 and hbm == H100_HBM and pick.variant == "swap_bm64_bn32_kg2_streamk"
            assert taken or not pick.variant.endswith("_streamk"), (m, n, k, pick)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_16bit_rung_takes_its_whole_k_group_twin_for_split_picks_at_49_to_64_token_rows(dtype):
    # On a card of an H100's memory bandwidth an SM, where the 64x128 tiles split K 2-4 ways at 49-64 rows, the whole
    # twin of the 64x64 two-k-group tiles: one wave of tiles over Cᵀ, each over all of K. Not below 49 rows, not for a
    # pick of more slices or of whole tiles, not where the twin's tiles pass one wave; never a clustered or split
    # twin; and not on an H200 or a card of unknown bandwidth (planned as an H200).
    twin = "swap_bm64_bn64_kg2"

    def on_card(m, n, k, dtype, hbm=H100_HBM):
        return replace(problem(m, n, k, dtype), hbm_bytes_per_s=hbm)

    taken = {(64, 4096, 4096), (64, 4096, 14336), (56, 2560, 8192), (49, 4096, 4096), (64, 3584, 4096)}
    kept = {(48, 4096, 4096): "bm64_bn128_splitk4", (32, 4096, 4096): "swap_bm64_bn32_kg2_splitk2",
            (64, 1024, 4096): "bm64_bn128_splitk16", (64, 6144, 4096): "bm64_bn128", (64, 14336, 4096): "bm64",
            (65, 4096, 4096): None, (1, 4096, 4096): "swap_bm64_bn32_kg2_splitk2", (512, 512, 512): None}
    for shape in taken:
        pick = WS.choose(on_card(*shape, dtype), configs.runnable(WS))
        assert pick.variant == twin and f"at {shape[0]} token rows on a card of 25 GB/s" in pick.reason, (shape, pick)
        without = WS.choose(on_card(*shape, dtype), tuple(v for v in configs.runnable(WS) if v != twin))
        assert without.variant.startswith("bm64_bn128_splitk"), (shape, without)  # the split it replaces
        for hbm in (H200_HBM, None):
            assert WS.choose(on_card(*shape, dtype, hbm), configs.runnable(WS)) == without, (shape, hbm)
    for shape, build in kept.items():
        pick = WS.choose(on_card(*shape, dtype), configs.runnable(WS))
        assert not pick.variant.startswith("swap_bm64_bn64_kg2"), (shape, pick)
        assert build is None or pick.variant == build, (shape, pick)
    # 64 rows against 160 tiles of 64 columns (10240): more than one wave of the twin's tiles
    wide = configs.k_group_twin(lambda p, v: configs.Choice("bm64_bn128_splitk2", "split"),
                                {"bm64_bn128_splitk2": (64, 128, 2, False), twin: (64, 64, 1, True)}, twin)
    assert wide(on_card(64, 10240, 4096, dtype), (twin,)).variant == "bm64_bn128_splitk2"
    assert wide(on_card(64, 8448, 4096, dtype), (twin,)).variant == twin  # 132 tiles: one wave
    assert wide(on_card(64, 8448, 4096, dtype), ()).variant == "bm64_bn128_splitk2"  # the twin not runnable


# The 16-bit rung's picks on an H100 against its committed runs of the 64x64 two-k-group twins (x cuBLAS, each build
# at 32-64 token rows; two runs where they overlap, averaged), at most 5 % behind the best build measured. Where the
# pick loses more, measured and kept in view: 56x2560x8192 runs the whole twin at 0.90, the twin in clusters of 4 split
# twice at 0.96; 40x8192x2048 (fp16) runs 64x128 tiles at 0.83, the whole twin (below the rule's 49 rows) at 0.88.
K_GROUP_TWIN_MISSES = {("float16", "56x2560x8192"): "swap_bm64_bn64_kg2",
                       ("bfloat16", "56x2560x8192"): "swap_bm64_bn64_kg2", ("float16", "40x8192x2048"): "bm64_bn128"}


def picks_on_card(runs: list[Path], hbm: float):
    """The committed bench runs' ratios (x cuBLAS) of each case, with the build the rung picks for it on a card of
    132 SMs and `hbm` bytes per second."""
    for (method, dtype, shape), rate in table_ratios(runs).items():
        m, n, k = map(int, shape.split("x"))
        problem = configs.job_problem(dtypes.get(dtype), 0, m, k, n, sm_count=132, hbm_bytes_per_s=hbm)
        yield dtype, shape, rate, registry.get(method).choose(problem, configs.runnable(WS, dtype)).variant


def test_the_16bit_decode_picks_on_an_h100_fit_its_committed_twin_runs():
    # past 32 token rows: at up to 32 the twins of 32 tokens decide (test_the_token_twins_on_an_h100_...)
    runs = Path(__file__).resolve().parents[1] / "results/reference/NVIDIA_H100/swap-k-group-twins"
    cases = [c for c in picks_on_card([runs / "twins.txt", runs / "cluster-twins.txt"], H100_HBM)
             if int(c[1].split("x")[0]) > 32]
    assert len(cases) == 18
    for dtype, shape, rate, pick in cases:
        assert pick in rate, (dtype, shape, pick)
        if (dtype, shape) in K_GROUP_TWIN_MISSES:
            assert K_GROUP_TWIN_MISSES[dtype, shape] == pick, (dtype, shape, pick)
            continue
        assert rate[pick] >= 0.95 * max(rate.values()), (dtype, shape, pick, rate)


# The same builds on an H200 (x cuBLAS, one run at ten shapes of 49-64 token rows, fp16 and bf16): its faster memory
# per SM keeps the 64x128 tiles split 2-4 ways, and the data bear that out. Taking the whole twin there would gain 2-7 %
# at three shapes (52x4096x8192, 64x2560x2560, 64x4096x14336) and lose 5-18 % at five. Misses kept in view: those
# three, where the twin runs 2.5-7 % ahead, and 56x2560x8192, where the 64x128 tiles split twice run 9 % ahead of four
# ways (0.71 against 0.65; cuBLAS is far ahead of both).
K_GROUP_TWIN_H200_MISSES = {"52x4096x8192": "swap_bm64_bn64_kg2", "64x2560x2560": "swap_bm64_bn64_kg2",
                            "56x2560x8192": "bm64_bn128_splitk2"}


def test_the_16bit_decode_picks_on_an_h200_keep_the_split_tiles_its_twin_runs_favour():
    runs = Path(__file__).resolve().parents[1] / "results/reference/NVIDIA_H200/small-problems"
    cases = list(picks_on_card([runs / "twins-k-group-decode.txt"], H200_HBM))
    assert len(cases) == 20
    twin = "swap_bm64_bn64_kg2"
    pick_share, twin_share = [], []
    for dtype, shape, rate, pick in cases:
        assert pick in rate and twin in rate, (dtype, shape, pick)
        best = max(rate.values())
        pick_share.append(rate[pick] / best)
        twin_share.append(rate[twin] / best)
        if shape in K_GROUP_TWIN_H200_MISSES:
            assert max(rate, key=rate.get) == K_GROUP_TWIN_H200_MISSES[shape], (dtype, shape, rate)
            assert rate[pick] >= 0.90 * best, (dtype, shape, pick, rate)
            continue
        assert rate[pick] >= 0.95 * best, (dtype, shape, pick, rate)
    # over all twenty, the split picks run at 0.98 of the best build on average, the twin would at 0.93
    assert sum(pick_share) / 20 > sum(twin_share) / 20 + 0.03, (sum(pick_share), sum(twin_share))


TOKEN_TWINS = ("swap_bm64_bn32_kg2", "swap_bm64_bn32_kg2_splitk2", "swap_bm64_bn32_kg2_streamk")
STREAMK_TWINS_RUNS = Path(__file__).resolve().parents[1] / "results/reference/NVIDIA_H100/streamk-twins"
# The two shapes of the sweep where the 32-token twin picked runs more than 3 % behind the pick it replaces
# (x cuBLAS, fp16): 32x6144x14336 0.905 against 0.953, 16x2048x8192 0.777 against 0.804.
TOKEN_TWIN_LOSSES = {"32x6144x14336", "16x2048x8192"}


def test_the_token_twins_on_an_h100_fit_the_committed_sweep_of_16_and_32_rows():
    # The sweep (sweep-m16.txt, sweep-m32.txt: 56 shapes, x cuBLAS in one process) and its held-out shapes: the pick
    # at up to 32 token rows on an H100 is one of the 32-token twins, and it runs at 0.94 of cuBLAS in the geometric
    # mean where the pick without them (the 64x128 tiles, whole or split) ran at 0.85. Behind that pick by more than
    # 3 % at two shapes only; held out, ahead of it at all three.
    def geo(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    for files, count, bar in ((["sweep-m16.txt", "sweep-m32.txt"], 56, 0.94), (["sweep-held.txt"], 3, 0.88)):
        picked, before = [], []
        for dtype, shape, rate, pick in picks_on_card([STREAMK_TWINS_RUNS / f for f in files], H100_HBM):
            m, n, k = map(int, shape.split("x"))
            if m > 32:
                continue
            assert pick in TOKEN_TWINS, (shape, pick)
            old = WS.choose(configs.job_problem(dtypes.get(dtype), 0, m, k, n, sm_count=132, hbm_bytes_per_s=H100_HBM),
                            tuple(v for v in configs.runnable(WS, dtype) if v not in TOKEN_TWINS)).variant
            picked.append(rate[pick])
            before.append(rate[old])
            assert rate[pick] >= 0.97 * rate[old] or shape in TOKEN_TWIN_LOSSES, (shape, pick, old, rate)
        assert len(picked) == count
        assert geo(picked) >= bar and geo(before) <= 0.86, (geo(picked), geo(before))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_token_twins_are_weighed_by_their_busiest_sm_only_on_slower_memory_at_up_to_32_rows(dtype):
    # 16 x 5120 x 2048: 80 tiles of 64 weight columns over all of K (32 + 32 k steps) against the stream-K share
    # (80 x 32 / 132 + 2 x 32) and no split (160 items pass a wave). 32 x 4096 x 8192: 64 tiles split twice, 64 + 32 +
    # 16 k steps against 128 + 32 whole. 20 x 9216 x 4096: 144 tiles, one wave whole and the rest's k steps shared.
    # 1 x 2048 x 2048: 32 + 32 whole, 16 + 32 + 16 split: on a tie, the whole twin.
    def on_card(m, n, k, hbm=H100_HBM):
        return configs.job_problem(dtypes.get(dtype), 0, m, k, n, sm_count=132, hbm_bytes_per_s=hbm)

    picks = {(16, 5120, 2048): "swap_bm64_bn32_kg2", (32, 4096, 8192): "swap_bm64_bn32_kg2_splitk2",
             (20, 9216, 4096): "swap_bm64_bn32_kg2_streamk", (1, 2048, 2048): "swap_bm64_bn32_kg2"}
    for (m, n, k), build in picks.items():
        pick = WS.choose(on_card(m, n, k), configs.runnable(WS, dtype))
        assert pick.variant == build and "busiest SM's work" in pick.reason, (m, n, k, pick)
        for hbm in (H200_HBM, None):  # an H200's memory an SM, or a card of unknown bandwidth: the 64x128 tiles
            assert WS.choose(on_card(m, n, k, hbm), configs.runnable(WS, dtype)).variant not in TOKEN_TWINS
    assert "64 k steps" in WS.choose(on_card(16, 5120, 2048), configs.runnable(WS, dtype)).reason
    assert "112 k steps" in WS.choose(on_card(32, 4096, 8192), configs.runnable(WS, dtype)).reason
    assert WS.choose(on_card(33, 4096, 8192), configs.runnable(WS, dtype)).variant not in TOKEN_TWINS
    without = tuple(v for v in configs.runnable(WS, dtype) if v != "swap_bm64_bn32_kg2")
    assert WS.choose(on_card(16, 5120, 2048), without).variant not in TOKEN_TWINS  # the whole twin not runnable
