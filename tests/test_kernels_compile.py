"""Every CUDA method's module compiles with plain nvcc (no GPU or driver needed), for each dtype and block, for
sm_80, sm_90 and sm_90a; the Hopper rungs' arch-specific build holds the instructions they are about."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from matmul_study.core import dtypes, registry

from matmul_study.launch import kernels
from matmul_study.core.specs import Problem

BLOCKS = [1, 8, 16, 24, 32]
ARCHS = ["sm_80", "sm_90", "sm_90a"]
COMPILED = registry.compiled_methods()

# CI sets MATMUL_STUDY_REQUIRE_NVCC=1: there a missing nvcc is a failure, not a skip.
NVCC_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") == "1"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not NVCC_REQUIRED, reason="nvcc not on PATH")


def blocks_for(method: str) -> list[int]:
    m = registry.get(method)
    if not m.block_axis:
        return [0]
    return BLOCKS if m.blocks is None else sorted(m.blocks)


def instances(method: str) -> list[tuple[str, int]]:
    return [(dtype, block) for dtype in registry.get(method).dtypes for block in blocks_for(method)]


def expected_symbols(method: str) -> set[str]:
    return {kernels.symbol(method, d, kernels.template_block(method, b)) for d, b in instances(method)}


def compile_ptx(method: str, module_instances: list[tuple[str, int]], arch: str, tmp_path) -> str:
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, module_instances))
    command = kernels.nvcc_command(source, tmp_path / "module.ptx", arch, kernels.compile_options(method), "ptx")
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return (tmp_path / "module.ptx").read_text()


def test_there_are_cuda_methods():
    assert COMPILED
    assert any(registry.get(m).requires.arch_specific for m in COMPILED), "no Hopper (sm_90a) rung registered"


@pytest.mark.parametrize("method", COMPILED)
def test_source_file_exists(method):
    assert (kernels.KERNEL_DIR / registry.get(method).source).is_file()


@pytest.mark.parametrize("method", COMPILED)
def test_module_defines_expected_symbols(method):
    source = kernels.module_source(method, instances(method))
    defined = set(re.findall(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(', source))
    assert defined == expected_symbols(method)


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("method", COMPILED)
def test_module_compiles(method, arch, tmp_path):
    source = kernels.module_source(method, instances(method))
    result = kernels.compile_with_nvcc(source, arch, tmp_path, kernels.compile_options(method))  # as the pipeline
    assert result.returncode == 0, f"nvcc failed for {method} on {arch}:\n{result.stderr}"
    # extern "C" names go into the cubin's symbol table unmangled; PyCUDA looks them up by these names.
    cubin = (tmp_path / "module.cubin").read_bytes()
    for name in expected_symbols(method):
        assert name.encode() in cubin, f"{name} missing from the {method} cubin"


@needs_nvcc
def test_broken_source_fails_to_compile(tmp_path):
    # Guards the test above against a compile helper that always reports success.
    method = COMPILED[0]
    source = kernels.module_source(method, instances(method)) + "\nthis is not valid CUDA;\n"
    result = kernels.compile_with_nvcc(source, ARCHS[0], tmp_path)
    assert result.returncode != 0
    assert result.stderr


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_the_stream_hold_helper_compiles(arch, tmp_path):
    result = kernels.compile_with_nvcc(kernels.HOLD_STREAM_SOURCE, arch, tmp_path)
    assert result.returncode == 0, f"nvcc failed for hold_stream.cu on {arch}:\n{result.stderr}"
    assert b"hold_stream" in (tmp_path / "module.cubin").read_bytes()


@needs_nvcc
@pytest.mark.parametrize("method", [m for m in COMPILED if registry.get(m).requires.arch_specific])
def test_hopper_rungs_issue_wgmma_in_their_arch_specific_build(method, tmp_path):
    # A guard that compiled the body away on sm_90a too would leave a kernel that writes nothing.
    ptx = compile_ptx(method, instances(method), kernels.target(method, "sm_90"), tmp_path)
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_pre_hopper_rung_is_mma_sync_with_ldmatrix_and_cp_async(arch, tmp_path):
    # Plain (not arch-specific) builds: the fp16 and bf16 mma.sync, A by ldmatrix, B by ldmatrix.trans (k x n
    # row-major in shared memory, "col" for the mma), 16-byte cp.async with a source size (the zero fill).
    ptx = compile_ptx("mma_async_copy", instances("mma_async_copy"), arch, tmp_path)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", ptx)
    assert "wgmma" not in ptx and "cp.async.bulk" not in ptx


# Kernels whose tile geometry is a C++ config: the registry's launch and tile must be that config's.
CONFIGS = {"dmma": ("float64", "dmma::DefaultConfig"), "mma_async_copy": ("float16", "mma_async_copy::DefaultConfig")}


@needs_nvcc
@pytest.mark.parametrize("method", CONFIGS)
def test_registry_launch_matches_the_kernels_config(method, tmp_path):
    dtype, cfg = CONFIGS[method]
    m = registry.get(method)
    launch = m.launch(Problem(1000, 1000, 1000, 0, dtypes.get(dtype)))
    tile_m, tile_n, tile_k = m.tile(0, dtype)
    assert launch.grid[:2] == (-(-1000 // tile_n), -(-1000 // tile_m))
    checks = {"THREADS": launch.threads[0], "SMEM_BYTES": launch.shared_bytes, "BM": tile_m, "BN": tile_n,
              "BK": tile_k}
    source = f'#include "{m.source}"\n' + "".join(
        f'static_assert({cfg}::{name} == {value}, "{name} is not the registry\'s {value}");\n'
        for name, value in checks.items())
    assert m.launch_bounds == (launch.threads[0], 1)
    result = kernels.compile_with_nvcc(source, "sm_80", tmp_path)
    assert result.returncode == 0, result.stderr


# The most shared memory a block may opt in to, by target (CUDA C++ Programming Guide, technical specifications
# per compute capability): 163 KB, 99 KB or 227 KB.
OPT_IN_SHARED_BYTES = {"sm_80": 166_912, "sm_86": 101_376, "sm_87": 166_912, "sm_89": 101_376, "sm_90": 232_448,
                       "sm_100": 232_448, "sm_103": 232_448, "sm_120": 101_376, "sm_121": 101_376}


# Kernel 07's fp32 methods: the BK of each launch size.
WARPTILED_BK = {"warptiled": {148_992: 32, 74_496: 16}, "warptiled_mbarrier": {198_656: 32, 99_328: 16}}


@needs_nvcc
@pytest.mark.parametrize("method", WARPTILED_BK)
@pytest.mark.parametrize("arch", OPT_IN_SHARED_BYTES)
def test_warptiled_fp32_compiles_one_configuration_the_one_its_launch_gives_shared_memory_for(method, arch, tmp_path):
    # The main loop is BK fully unrolled k steps of a thread's 16 x 8 FMAs, so the FMA count tells which BK was
    # compiled (both, behind a run-time branch, would give 6144). A launch with less shared memory than it needs traps.
    ptx = compile_ptx(method, [("float32", 0)], arch, tmp_path)
    launch = registry.get(method).launch(Problem(4096, 4096, 4096, 0, dtypes.get("float32"), 1,
                                                 OPT_IN_SHARED_BYTES[arch]))
    assert ptx.count("fma.rn.f32") == 16 * 8 * WARPTILED_BK[method][launch.shared_bytes]


def test_arch_specific_methods_target_sm_90a_and_others_the_plain_arch():
    hopper = [m for m in COMPILED if registry.get(m).requires.arch_specific]
    plain = [m for m in COMPILED if not registry.get(m).requires.arch_specific]
    assert {kernels.target(m, "sm_90") for m in hopper} == {"sm_90a"}
    assert {kernels.target(m, "sm_90") for m in plain} == {"sm_90"}
    assert {kernels.target(m, "sm_90a") for m in plain} == {"sm_90"}


# Every named build of every method: (method, variant name).
VARIANTS = [(m, v.name) for m in COMPILED for v in registry.get(m).variants]


def test_the_hopper_rungs_have_variants():
    assert {m for m, _ in VARIANTS} >= {"wgmma_warp_specialized", "wgmma_tf32"}
    for method in COMPILED:
        names = [v.name for v in registry.get(method).variants]
        assert len(names) == len(set(names)) and "default" not in names, f"{method}: variant names must be unique"


def ptx_code(method: str, variant: str | None, tmp_path) -> str:
    """The PTX of a method's module (all its dtypes) built as `variant`, without its debug sections and line info."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, instances(method), variant))
    ptx = tmp_path / "module.ptx"
    command = kernels.nvcc_command(source, ptx, kernels.target(method, "sm_90"),
                                   kernels.compile_options(method, variant), "ptx")
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed for {method} variant {variant}:\n{result.stderr}"
    code = ptx.read_text().split(".section\t.debug_str")[0]
    for dtype, block in instances(method):  # the entry names carry the variant's name: use the default's
        block = kernels.template_block(method, block)
        code = code.replace(kernels.symbol(method, dtype, block, variant), kernels.symbol(method, dtype, block))
    return "\n".join(line for line in code.splitlines() if not line.strip().startswith((".loc", ".file", "//")))


@needs_nvcc
@pytest.mark.parametrize("method,variant", VARIANTS)
def test_every_registry_variant_builds_for_its_target_and_changes_the_code(method, variant, tmp_path):
    # A variant whose definitions no longer build fails here; one whose definitions the source no longer reads
    # (a renamed or removed switch) builds the default again, and fails the comparison.
    arch = kernels.target(method, "sm_90")
    source = kernels.module_source(method, instances(method), variant)
    result = kernels.compile_with_nvcc(source, arch, tmp_path / "cubin", kernels.compile_options(method, variant))
    assert result.returncode == 0, f"nvcc failed for {method} variant {variant} on {arch}:\n{result.stderr}"
    cubin = (tmp_path / "cubin" / "module.cubin").read_bytes()
    for dtype, block in instances(method):
        name = kernels.symbol(method, dtype, kernels.template_block(method, block), variant)
        assert name.encode() in cubin, f"{name} missing from the {method} {variant} cubin"
    assert ptx_code(method, variant, tmp_path / "variant") != ptx_code(method, None, tmp_path / "default")


# The warp-specialised pipeline's launch geometry, per build: the registry's launch must be the kernel's.
WS_BUILDS = [(m, v) for m in ("wgmma_warp_specialized", "wgmma_tf32", "wgmma_3xtf32", "wgmma_int8", "wgmma_fp8")
             for v in ["default", *(v.name for v in registry.get(m).variants)]]


@needs_nvcc
@pytest.mark.parametrize("method,variant", WS_BUILDS)
def test_registry_launch_matches_the_warp_specialized_kernels_config(method, variant, tmp_path):
    m = registry.get(method)
    launch = m.launch_for(Problem(4096, 4096, 4096, 0, dtypes.get(m.dtypes[0]), 132, 232_448), variant)
    tile_m, tile_n, _ = (m.variant(variant).tile or m.tile)(0, m.dtypes[0])  # 128x128 in the bn128 builds
    checks = {"SMEM_BYTES": launch.shared_bytes, "THREADS": launch.threads[0], "CLUSTER": launch.cluster[0],
              "BM": tile_m, "BN": tile_n}
    source = f'#include "{m.source}"\n' + "".join(
        f'static_assert(wgmma_ws::{name} == {value}, "{name} is not the registry\'s {value}");\n'
        for name, value in checks.items())
    assert m.launch_bounds == (launch.threads[0], 1) and launch.persistent and launch.dependent
    result = kernels.compile_with_nvcc(source, "sm_90a", tmp_path, kernels.compile_options(method, variant))
    assert result.returncode == 0, result.stderr


@needs_nvcc
@pytest.mark.parametrize("method", ["wgmma_warp_specialized", "wgmma_tf32", "wgmma_3xtf32", "wgmma_int8"])
def test_dependent_launch_rungs_wait_for_the_previous_grid_before_any_global_access(method, tmp_path):
    # Launched with programmatic stream serialisation (registry: Launch.dependent) these kernels may start while the
    # previous kernel still runs, so no copy, load or store of global memory may come before griddepcontrol.wait.
    assert registry.get(method).launch(Problem(4096, 4096, 4096, 0, dtypes.get(registry.get(method).dtypes[0]),
                                               132, 232_448)).dependent
    dtype = registry.get(method).dtypes[0]
    ptx = compile_ptx(method, [(dtype, 0)], kernels.target(method, "sm_90"), tmp_path)
    body = ptx[ptx.index(".entry"):]
    first_wait = body.index("griddepcontrol.wait")
    global_access = [body.find(op) for op in ("cp.async.bulk.tensor", "st.global", "ld.global", "red.global",
                                              "atom.global")]
    assert min(i for i in global_access if i >= 0) > first_wait
    assert body.count("griddepcontrol.wait") >= 2  # the k = 0 path (C = 0) and the main one
    assert "griddepcontrol.launch_dependents" in body


# Split-K builds take a workspace as their last argument; every other build keeps the wrapper it had.
SPLIT_K_VARIANTS = [(m, v.name) for m in ("wgmma_warp_specialized", "wgmma_tf32") for v in registry.get(m).variants
                    if v.workspace is not None]


def test_split_k_variants_exist_and_only_they_take_a_workspace():
    assert {v for _, v in SPLIT_K_VARIANTS} >= {"splitk2", "splitk4", "splitk8"}
    assert {m for m in COMPILED if any(v.workspace for v in registry.get(m).variants)} >= {
        "wgmma_warp_specialized", "wgmma_tf32", "warptiled", "dmma"}
    for method in COMPILED:
        m = registry.get(method)
        for dtype in m.dtypes:
            problem = Problem(512, 512, 512, 0, dtypes.get(dtype))
            assert m.workspace_bytes(problem) == 0
            assert "workspace" not in kernels.wrapper(method, dtype, blocks_for(method)[0])
            for v in m.variants:
                # Typed as the accumulators of its partial tiles.
                wrapper = kernels.wrapper(method, dtype, 0, v.name)
                takes = f"{dtypes.get(dtype).c_accumulator}* __restrict__ workspace" in wrapper
                assert takes == (v.workspace is not None) == (m.workspace_bytes(problem, v.name) > 0)


@needs_nvcc
@pytest.mark.parametrize("method,variant", SPLIT_K_VARIANTS)
def test_split_k_workspace_and_launch_match_the_kernel(method, variant, tmp_path):
    # The registry sizes the workspace as the kernel lays it out: per 128x256 CTA tile (128x128 in the bn128 builds;
    # whole clusters of them along M) S partial tiles of 4-byte accumulators, then a counter per CTA tile; and the
    # grid has room for S slices of every tile.
    m = registry.get(method)
    split = int(variant.rpartition("splitk")[2])
    cluster = m.launch_for(Problem(4096, 4096, 4096, 0, dtypes.get(m.dtypes[0])), variant).cluster[0]
    bn = 128 if variant.startswith("bn128") else 256
    # (m, n, k) -> CTA tiles with clusters of 1 and of 2 (300 rows: 3 tiles, or 2 clusters of 2), 256 or 128 wide
    for shape, cta_tiles in (((512, 512, 512), {(1, 256): 8, (2, 256): 8, (2, 128): 16}),
                             ((129, 17, 3001), {(1, 256): 2, (2, 256): 2, (2, 128): 2}),
                             ((300, 520, 8193), {(1, 256): 3 * 3, (2, 256): 4 * 3, (2, 128): 4 * 5})):
        cta_tiles = cta_tiles[cluster, bn]
        problem = Problem(*shape, 0, dtypes.get(m.dtypes[0]))
        assert m.workspace_bytes(problem, variant) == cta_tiles * (split * 128 * bn * 4 + 4)
        assert m.launch_for(problem, variant).grid[0] == min(132, cta_tiles * split)
    source = f'#include "{m.source}"\n' + (
        f'static_assert(wgmma_ws::SPLIT_K == {split} && !wgmma_ws::STREAMK, "split and stream-K tail");\n'
        f'static_assert(wgmma_ws::PART_QUADS * 16 == 128 * {bn} * 4 && wgmma_ws::BN == {bn}, "partial tile bytes");\n')
    result = kernels.compile_with_nvcc(source, "sm_90a", tmp_path, kernels.compile_options(method, variant))
    assert result.returncode == 0, result.stderr
