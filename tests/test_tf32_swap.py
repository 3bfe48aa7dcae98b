"""The tf32 rung's builds that compute Cᵀ = Bᵀ·Aᵀ (WGMMA_WS_SWAP_AB, kernels/warp_specialized/operands_tf32.cuh,
OpTf32Swapped): their contract with the launcher, their place in the heuristic, and (nvcc, no GPU) what the kernel
issues and refuses.

Their results on odd shapes are checked with every other kernel's in tests/test_gpu_kernels.py."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace

import pytest

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem, TensorMap
from matmul_study.core.warp_specialized import SWAP_PREFIX, SWAP_TWINS, WS_TF32, swap_twin_name, swap_twins
from matmul_study.launch import kernels
from kernel_builds import rung_build

METHOD = "wgmma_tf32"
TF32 = dtypes.get("tf32")
SWAPS = [v for v in registry.get(METHOD).variants if v.config.swap_ab]

NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")


def test_each_swapped_build_is_the_twin_of_a_tile_build_without_the_stream_k_tail():
    method = registry.get(METHOD)
    assert [v.name for v in SWAPS] == [swap_twin_name(b) for b in SWAP_TWINS]
    assert {"swap", "swap_cluster1", "swap_bn64", "swap_bm64_bn128_splitk4", "swap_bn192"} <= {v.name for v in SWAPS}
    for build in SWAP_TWINS:
        own, twin = method.variant(build or None).config, method.variant(swap_twin_name(build)).config
        # the same tile, cluster, split and stages; no stream-K tail (its reductions store C, not Cᵀ), no paced drain
        assert twin == replace(own, swap_ab=True, streamk=False, drain_every=0)
        assert not twin.promote and not twin.bt_smem and twin.k_groups == 1
        assert "WGMMA_WS_SWAP_AB=1" in method.variant(swap_twin_name(build)).defines
    assert all("WGMMA_WS_SWAP_AB=0" in v.defines for v in method.variants if not v.config.swap_ab)


@pytest.mark.parametrize("m,n,k", [(4096, 4096, 4096), (1000, 3000, 77), (1, 777, 300), (777, 1, 300)])
def test_the_launch_is_the_transposed_problems(m, n, k):
    # The kernel's rows are C's columns: its grid is that of the default build on the n x m problem, and the
    # launcher passes (n, m, k).
    method = registry.get(METHOD)
    p = Problem(m, n, k, 0, TF32)
    for v in SWAPS:
        launch = method.launch_for(p, v.name)
        plain = replace(v.config, swap_ab=False).launch(replace(p, m=n, n=m))
        assert launch.transposed and replace(launch, transposed=False) == plain
    assert not method.launch_for(p, None).transposed


@pytest.mark.parametrize("m,n,k", [(300, 4300, 4300), (4300, 300, 4300), (512, 512, 512)])
def test_a_split_twins_workspace_holds_the_kernels_tiles(m, n, k):
    # The kernel's problem is Cᵀ's: its CTA tiles are BM of C's columns by bn of its rows, one partial tile of each
    # per slice, then a counter each.
    method = registry.get(METHOD)
    for v in (v for v in SWAPS if v.config.split_k > 1):
        c = v.config
        tiles = -(-n // (c.BM * c.cluster)) * c.cluster * -(-m // c.bn)
        assert v.workspace(Problem(m, n, k, 0, TF32)) == tiles * (c.split_k * c.BM * c.bn * 4 + 4)
        assert method.variant(v.name).workspace is v.workspace


def test_b_is_read_as_it_is_in_boxes_of_32_rows_and_a_as_the_k_major_operand():
    # tmap_a (wgmma's A slot): B's k x n rows, 32 k by 32 columns (128 bytes); tmap_bt: A's rows, 128 a box (half
    # the kernel's 256 columns, one per CTA of a cluster) or the kernel's columns where fewer or not a multiple, 32 k.
    for v in SWAPS:
        rows = 128 if v.config.bn % 128 == 0 else v.config.bn
        assert v.tensor_maps == (TensorMap("B", WS_TF32.bk, 32), TensorMap("A", rows, WS_TF32.bk))


def names() -> tuple[str, ...]:
    return ("default", *(v.name for v in registry.get(METHOD).variants))


@pytest.mark.parametrize("shape,picked", [((4096, 4096, 4096), "swap"), ((8192, 8192, 8192), "swap"),
                                          ((2048, 2048, 2048), "swap_cluster1"),
                                          ((4096, 11008, 4096), "swap"), ((512, 512, 512), "swap_bm64_bn128_splitk4"),
                                          ((1024, 1024, 1024), "swap_bn64"), ((1536, 1536, 1536), "swap_bn192"),
                                          ((320, 640, 16384), "swap_bm64_bn128_splitk4")])
def test_the_heuristic_takes_the_twin_of_a_128x256_pick(shape, picked):
    m, n, k = shape
    choice = registry.get(METHOD).choose(Problem(m, n, k, 0, TF32), names())
    assert choice.variant == picked and "Cᵀ = Bᵀ·Aᵀ" in choice.reason


@pytest.mark.parametrize("shape,picked", [((1408, 6144, 4096), "cluster1"), ((2304, 2304, 2304), "default"),
                                          ((8192, 64, 4096), "bn64"), ((1024, 64, 16384), "bn64_splitk8")])
def test_the_heuristic_keeps_a_pick_whose_twin_takes_longer(shape, picked):
    # 1408 x 6144: 11 x 24 tiles of 128 x 256 in two waves of 132 SMs; laid the other way, 48 x 6 in three.
    # 2304^3: 81 clusters of two tiles, 1.2 waves of 66 with the stream-K tail; the twin's whole tiles two waves.
    # 64 columns: the twin's 128-row tiles cover twice the pick's area of C (0.72 against 0.97 at 8192x64x4096);
    # the twins of 64x128 tiles, whose one row holds those columns, are another rule's (configs.few_columns_twin).
    m, n, k = shape
    variants = tuple(name for name in names() if not name.startswith("swap_bm64_bn128"))
    assert registry.get(METHOD).choose(Problem(m, n, k, 0, TF32), variants).variant == picked


def test_a_two_k_group_build_has_the_twin_of_a_128_row_tile_split_twice_as_far():
    # Its two warpgroups take alternate k steps of a 64-row tile: as many items, each as large, as a 128-row tile of
    # its columns over half of its K slice; the builds that write Bᵀ in shared memory transpose nothing to save.
    twins = swap_twins(WS_TF32, registry.WS_TF32_VARIANTS)
    assert twins["bm64_bn128_kg2"].twin == "swap_bn128_splitk2"
    assert twins["bm64_bn64_kg2"].twin == "swap_bn64_splitk2"
    assert twins["bm64_bn64_kg2_splitk4"].twin == "swap_bn64_splitk8"
    for name, t in twins.items():
        if "kg2" in name:
            own = registry.get(METHOD).variant(name).config
            assert (t.rows, t.twin_rows, t.twin_slices) == (64, 128, 2 * own.split_k) and t.transposes
    assert not any(name.endswith("_smem_bt") for name in twins if "kg2" in name)


@pytest.mark.parametrize("shape,picked", [((1024, 1024, 8192), "swap_bn128_splitk2"),
                                          ((512, 2048, 8192), "swap_bn128_splitk2"),
                                          ((384, 1024, 1024), "swap_bn64_splitk2"),
                                          ((1536, 768, 8192), "bm64_bn128_kg2"),
                                          ((3072, 384, 8192), "bm64_bn128_kg2")])
def test_the_heuristic_weighs_a_two_k_group_pick_against_its_twin(shape, picked):
    # x cuBLAS on an H200 (small-problems/tf32-kg2-twins*.txt): 1024x1024x8192 1.13 against the pick's 0.79,
    # 512x2048x8192 1.12 against 0.62, 384x1024x1024 1.19 against 1.14; kept where the twin's items, one wave
    # either way, outweigh the pick's and the transpose of B (1536x768x8192 0.86 against the twin's 0.70).
    m, n, k = shape
    choice = registry.get(METHOD).choose(Problem(m, n, k, 0, TF32), names())
    assert choice.variant == picked
    assert ("Cᵀ = Bᵀ·Aᵀ" in choice.reason) == picked.startswith(SWAP_PREFIX)


def test_the_heuristic_keeps_the_pick_where_the_twin_is_not_offered():
    p = Problem(4096, 4096, 4096, 0, TF32)
    offered = tuple(v for v in names() if SWAP_PREFIX not in v)
    assert registry.get(METHOD).choose(p, offered).variant == "default"


def build(variant: str, tmp_path, target: str, options: list[str] | None = None) -> tuple[int, str, str]:
    """The rung's `variant` compiled to `target` ("ptx" or "cubin"): (nvcc's status, the PTX or "", its messages,
    ptxas's report among them unless `options` replace the build's own)."""
    return rung_build(METHOD, "tf32", variant, tmp_path, target, () if options else ("-Xptxas", "-v"), options)


@needs_nvcc
def test_each_k_step_is_four_wgmmas_with_a_from_registers_loaded_by_sixteen_shared_loads(tmp_path):
    status, ptx, messages = build(SWAP_PREFIX, tmp_path, "ptx")
    assert status == 0, messages
    wgmmas = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k8\.f32\.tf32\.tf32\s*\{[^}]*\},\s*(\{[^}]*\})", ptx)
    assert len(wgmmas) == 4 and all(a.count("%r") == 4 for a in wgmmas)  # A: four 32-bit registers, not a descriptor
    assert ptx.count("ld.shared.b32") == 16
    # each slice its own group, its registers reused only once the previous step's same slice has retired
    assert ptx.count("wgmma.wait_group.sync.aligned 3;") == 4


@needs_nvcc
@pytest.mark.parametrize("variant", ["swap", "swap_bm64_bn128_splitk16", "swap_bn64_splitk8", "swap_bn192"])
def test_the_swapped_builds_keep_their_wgmmas_pipelined_without_spills(variant, tmp_path):
    status, _, report = build(variant, tmp_path, "cubin")
    assert status == 0, report
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "Potential Performance Loss" not in report, report


@needs_nvcc
@pytest.mark.parametrize("field,value", [("drain_every", 2), ("promote", True)])
def test_the_kernel_refuses_a_swap_with_a_paced_drain_or_promoted_sums_in_column_parts(field, value, tmp_path):
    config = replace(SWAPS[0].config, **{field: value})
    options = [*(o for o in kernels.compile_options(METHOD, SWAP_PREFIX) if not o.startswith("-DWGMMA_WS_")),
               *(f"-D{d}" for d in config.defines)]
    status, _, messages = build(SWAP_PREFIX, tmp_path, "ptx", options)
    assert status != 0 and "WGMMA_WS_SWAP_AB=1: no paced drain" in messages, messages


@needs_nvcc
def test_a_swap_with_the_stream_k_tail_adds_its_pieces_transposed(tmp_path):
    # The stream-K tail of a twin that computes Cᵀ: piece 0 stores its tile transposed, the others add theirs into
    # C by L2 reductions, one an element (epilogue_transposed): a build of the tf32 twin with the tail compiles, to
    # reductions that the same build without it lacks.
    def ptx(streamk: bool, where) -> str:
        config = replace(SWAPS[0].config, streamk=streamk)
        options = [*(o for o in kernels.compile_options(METHOD, SWAP_PREFIX) if not o.startswith("-DWGMMA_WS_")),
                   *(f"-D{d}" for d in config.defines)]
        status, code, messages = build(SWAP_PREFIX, where, "ptx", options)
        assert status == 0, messages
        return code

    assert "red.global.add.f32" in ptx(True, tmp_path / "tail")
    assert "red.global.add" not in ptx(False, tmp_path / "whole")


@needs_nvcc
def test_only_the_swapped_policy_takes_swap_ab(tmp_path):
    # The 3xTF32 rung shares the tf32 operands but not the swap: its kernel refuses the definition.
    config = replace(registry.get("wgmma_3xtf32").config, swap_ab=True, streamk=False, drain_every=0)
    options = [*(o for o in kernels.compile_options("wgmma_3xtf32", None) if not o.startswith("-DWGMMA_WS_")),
               *(f"-D{d}" for d in config.defines)]
    status, _, messages = rung_build("wgmma_3xtf32", "float32", None, tmp_path, "ptx", options=options)
    assert status != 0 and "WGMMA_WS_SWAP_AB: 1 exactly" in messages, messages
