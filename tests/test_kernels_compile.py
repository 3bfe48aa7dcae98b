"""Every CUDA method's module compiles with plain nvcc (no GPU or driver needed), for each dtype and block, for
sm_80, sm_90 and sm_90a, through the whole toolchain as the pipeline builds it; every named build of a method gets
through the front end (its definitions, its contract's static_asserts) to PTX that differs from the default's; the
Hopper rungs' arch-specific build holds the instructions they are about."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import errno
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from matmul_study.core import dtypes, registry

from matmul_study.launch import kernels, operands
from matmul_study.core import geometry, specs
from matmul_study.core.specs import Problem, shared_opt_in_bytes
from matmul_study.core.warp_specialized import SM90_SHARED_BYTES, WsConfig, WsMethod

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


def instances(method: str, variant: str | None = None) -> list[tuple[str, int]]:
    """The (dtype, block) instances of a method's module: its dtypes, or those its build `variant` exists for."""
    m = registry.get(method)
    return [(dtype, block) for dtype in m.variant(variant).dtypes or m.dtypes for block in blocks_for(method)]


def expected_symbols(method: str) -> set[str]:
    return {kernels.symbol(method, d, kernels.template_block(method, b)) for d, b in instances(method)}


def compile_ptx(method: str, module_instances: list[tuple[str, int]], arch: str, tmp_path) -> str:
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, module_instances))
    command = kernels.nvcc_command(source, tmp_path / "module.ptx", arch, kernels.compile_options(method, None, arch),
                                   "ptx")
    result = kernels.run_nvcc(command)
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


@dataclasses.dataclass(frozen=True)
class Build:
    """One nvcc run of a method's module (every dtype and block of a build) for one arch: a cubin through the whole
    toolchain with the pipeline's options, or, unoptimised, the front end's PTX."""
    source: str
    returncode: int
    stderr: str
    output: bytes  # the cubin, or the PTX


def ws_checks(method: str, variant: str | None) -> dict[str, int]:
    """The warp-specialised kernel's constants (wgmma_ws::NAME) that a build must have: the registry's launch, tile
    and split of k for it, and a split build's partial-tile layout (the workspace the registry sizes)."""
    m = registry.get(method)
    build = m.variant(variant)
    launch = m.launch_for(Problem(4096, 4096, 4096, 0, dtypes.get(m.dtypes[0])), variant)
    tile_m, tile_n, tile_k = (build.tile or m.tile)(0, m.dtypes[0])
    checks = {"LAYOUT_BYTES + wgmma_ws::ALIGN_SLACK": launch.shared_bytes, "THREADS": launch.threads[0],
              "CLUSTER": launch.cluster[0], "BM": tile_m, "BN": tile_n, "BK": tile_k, "SPLIT_K": build.config.split_k}
    if build.config.split_k > 1:  # S partial tiles of 4-byte accumulators a CTA tile, in 16-byte units
        checks |= {"STREAMK": 0, "PART_QUADS * 16": build.config.BM * build.config.bn * 4}
    return checks


def static_asserts(checks: dict[str, int]) -> str:
    return "".join(f'static_assert(wgmma_ws::{name} == {value}, "{name} is not the registry\'s {value}");\n'
                   for name, value in checks.items())


def build_source(method: str, variant: str | None, arch: str) -> str:
    """The module the pipeline compiles; a warp-specialised build for its own target also asserts ws_checks."""
    source = kernels.module_source(method, instances(method, variant), variant)
    if method in WS_METHODS and arch == kernels.target(method, "sm_90"):
        source += static_asserts(ws_checks(method, variant))
    return source


def starts_failing(monkeypatch, failures: int) -> list:
    """subprocess.run in kernels made to fail its first `failures` starts with EFAULT; the list of starts."""
    starts = []

    def start(command, **kwargs):
        starts.append(command)
        if len(starts) <= failures:
            raise OSError(errno.EFAULT, "Bad address", command[0])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(kernels.subprocess, "run", start)
    monkeypatch.setattr(kernels.time, "sleep", lambda seconds: None)
    return starts


def test_a_compile_whose_process_fails_to_start_for_the_moment_is_started_again(monkeypatch):
    starts = starts_failing(monkeypatch, kernels.SPAWN_ATTEMPTS - 1)
    assert kernels.run_nvcc(["nvcc", "--version"]).returncode == 0 and len(starts) == kernels.SPAWN_ATTEMPTS


def test_a_start_that_keeps_failing_is_the_callers_error_after_the_last_attempt(monkeypatch):
    starts = starts_failing(monkeypatch, kernels.SPAWN_ATTEMPTS)
    with pytest.raises(OSError, match="Bad address"):
        kernels.run_nvcc(["nvcc", "--version"])
    assert len(starts) == kernels.SPAWN_ATTEMPTS


def test_a_compiler_that_cannot_be_run_is_not_started_again(monkeypatch):
    starts = []

    def start(command, **kwargs):
        starts.append(command)
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", command[0])

    monkeypatch.setattr(kernels.subprocess, "run", start)
    with pytest.raises(FileNotFoundError):
        kernels.run_nvcc(["nvcc", "--version"])
    assert len(starts) == 1


# The front end alone: -O0 to cicc, no ptxas. What a build's definitions can break (a static_assert of its contract,
# a template that does not instantiate, a switch the source no longer reads) shows there, in about a fifth of the
# time of an optimised build; the GPU suite compiles and verifies every build whole.
FRONT_END = ("-Xcicc", "-O0")


def run_build(method: str, variant: str | None, arch: str, whole: bool, folder: Path) -> Build:
    folder.mkdir(parents=True)
    source = build_source(method, variant, arch)
    (folder / "module.cu").write_text(source)
    output = folder / ("module.cubin" if whole else "module.ptx")
    options = [*kernels.compile_options(method, variant, arch), *(() if whole else FRONT_END)]
    result = kernels.run_nvcc(kernels.nvcc_command(folder / "module.cu", output, arch, options,
                                                   "cubin" if whole else "ptx"))
    return Build(source, result.returncode, result.stderr, output.read_bytes() if result.returncode == 0 else b"")


# nvcc runs one process a build: the compile tests run one on each core at a time.
CORES = os.cpu_count() or 1


def on_every_core(compile_one, names) -> dict:
    """{name: compile_one(name)}, one nvcc process on each core at a time."""
    names = list(names)
    with concurrent.futures.ThreadPoolExecutor(CORES) as pool:
        return dict(zip(names, pool.map(compile_one, names)))


BUILD_TESTS = ("test_module_compiles", "test_every_registry_variant_builds_for_its_target_and_changes_the_code",
               "test_registry_launch_matches_the_warp_specialized_kernels_config",
               "test_split_k_workspace_and_launch_match_the_kernel")


def builds_of(name: str, params: dict) -> list[tuple[str, str | None, str, bool]]:
    """The (method, variant, arch, whole) builds that the test `name` with `params` reads."""
    method = params["method"]
    if name == "test_module_compiles":
        return [(method, None, params["arch"], True)]
    variant = None if params.get("variant", "default") == "default" else params["variant"]
    arch = kernels.target(method, "sm_90")
    # the variant test compares its build with the default's
    compared = name == "test_every_registry_variant_builds_for_its_target_and_changes_the_code"
    return [(method, variant, arch, False), *([(method, None, arch, False)] if compared else [])]


@pytest.fixture(scope="session")
def build(request, tmp_path_factory):
    """build(method, variant, arch, whole) -> Build. The builds of every selected test start at once, on every core,
    and each is compiled once however many tests read it."""
    root = tmp_path_factory.mktemp("builds")
    pool = concurrent.futures.ThreadPoolExecutor(CORES)
    futures: dict[tuple[str, str | None, str, bool], concurrent.futures.Future] = {}

    def start(key):
        if key not in futures:
            futures[key] = pool.submit(run_build, *key, root / f"{len(futures)}-{key[0]}-{key[1] or 'default'}")
        return futures[key]

    for item in request.session.items:
        if getattr(item, "originalname", None) in BUILD_TESTS:
            for key in builds_of(item.originalname, item.callspec.params):
                start(key)
    yield lambda method, variant, arch, whole: start((method, variant, arch, whole)).result()
    pool.shutdown(cancel_futures=True)


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("method", COMPILED)
def test_module_compiles(method, arch, build):
    built = build(method, None, arch, True)  # as the pipeline builds it
    assert built.returncode == 0, f"nvcc failed for {method} on {arch}:\n{built.stderr}"
    # extern "C" names go into the cubin's symbol table unmangled; PyCUDA looks them up by these names.
    for name in expected_symbols(method):
        assert name.encode() in built.output, f"{name} missing from the {method} cubin"


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
@pytest.mark.parametrize("arch", ARCHS)
def test_the_row_copy_compiles(arch, tmp_path):
    result = kernels.compile_with_nvcc(kernels.COPY_ROWS_SOURCE, arch, tmp_path)
    assert result.returncode == 0, f"nvcc failed for copy_rows.cu on {arch}:\n{result.stderr}"
    cubin = (tmp_path / "module.cubin").read_bytes()
    assert all(f"copy_rows_{u}".encode() in cubin for u in operands.COPY_ROWS_UNITS)


@pytest.mark.parametrize("sizes,unit", [((56, 56, 64, 0, 256), 8), ((1998, 1998, 2000, 0, 512), 2),
                                        ((16388, 16388, 16400, 0, 256), 4), ((64, 80, 64, 0, 256), 16),
                                        ((60, 60, 64, 0, 256), 4), ((1, 1, 16, 0, 256), 1),
                                        ((64, 64, 64, 0, 8), 8)])
def test_the_row_copy_moves_the_widest_unit_that_every_size_and_address_allows(sizes, unit):
    # a row of 56 bytes moves in 8-byte units, 999 fp16 values in 2-byte ones; an address only 8-byte aligned caps it
    assert operands.copy_unit(*sizes) == unit


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
    # Every dtype's mma (FP8's from sm_89 on), and from sm_90 on the wait for the previous grid (PDL).
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ptx
    assert ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" in ptx) == (arch == "sm_90")
    assert ("griddepcontrol.wait" in ptx) == (arch == "sm_90")
    # B's copies under an L2 evict_first policy, where the launch asks for it (specs.StreamB), beside the plain ones.
    assert "createpolicy.fractional.L2::evict_first.b64 policy, 1.0;" in ptx
    assert re.search(r"cp\.async\.cg\.shared\.global\.L2::cache_hint\.L2::256B \[%r\d+\], \[%rd\d+\], 16, policy;", ptx)


# The launch contract of kernels 05-11 is stated once, in a geometry record (core/geometry.py): the registry's
# launch, tile and -D definitions are that record's, and the kernel static_asserts that it can work with them.
CONTRACTS = {m: registry.get(m).contract_defines.__self__ for m in COMPILED if registry.get(m).contract_defines}


def records(record) -> list[tuple[str, geometry.BlockTile]]:
    """(dtype, configuration) of a record: a BlockTile's one, or every configuration of a TileFamily."""
    if isinstance(record, geometry.BlockTile):
        return [("", record)]
    return [(dtype, config) for dtype, options in record.configs.items() for config in options]


def test_the_pre_hopper_kernels_take_their_launch_contract_from_one_record():
    assert set(CONTRACTS) >= {"wmma", "register_tiled", "warptiled", "warptiled_mbarrier", "dmma", "wmma_tiled",
                              "mma_async_copy", "wgmma_tma"}
    for method, record in CONTRACTS.items():
        m = registry.get(method)
        assert m.launch.__self__ is record, f"{method}: its launch is not its record's"
        if method != "wmma":  # wmma's traffic unit is a warp's 16x16 fragment, not the block's tile
            assert m.tile.__self__ is record, f"{method}: its tile is not its record's"
        for dtype in m.dtypes:
            problem = Problem(1000, 1000, 1000, 0, dtypes.get(dtype))
            config = record if isinstance(record, geometry.BlockTile) else record.config(dtype,
                                                                                         problem.max_shared_bytes)
            launch = m.launch(problem)
            assert launch.grid == (-(-1000 // config.tile_n), -(-1000 // config.tile_m), 1)
            assert (launch.threads, launch.shared_bytes) == ((config.threads, 1, 1), config.shared_bytes)
            assert m.launch_bounds in (None, config.launch_bounds)


@pytest.mark.parametrize("method", CONTRACTS)
def test_a_stage_count_changes_the_definitions_and_the_launch_together(method):
    # One record states the stages; the shared memory the kernel is compiled for and launched with follows from it.
    for dtype, config in records(CONTRACTS[method]):
        if config.stages is None:
            continue
        deeper = dataclasses.replace(config, stages=config.stages + 1)
        problem = Problem(1000, 1000, 1000, 0, dtypes.get(dtype or registry.get(method).dtypes[0]))
        launched = deeper.launch(problem).shared_bytes
        assert launched > config.launch(problem).shared_bytes
        assert set(deeper.defines()) - set(config.defines()) == {
            f"{config.name}_STAGES={config.stages + 1}", f"{config.name}_SMEM_BYTES={launched}"}


def compile_contract(method: str, defines, arch: str, tmp_path):
    """The method's source alone (its namespace-scope checks of the contract; no kernel instantiated), compiled with
    the given contract definitions instead of the registry's."""
    source = f'#include "{registry.get(method).source}"\n'
    options = [*kernels.COMPILE_OPTIONS, *registry.get(method).compile_options, *(f"-D{d}" for d in defines)]
    return kernels.compile_with_nvcc(source, kernels.target(method, arch), tmp_path, options)


def with_value(defines, key: str, value: int) -> tuple[str, ...]:
    return tuple(f"{d.partition('=')[0]}={value}" if d.partition("=")[0].endswith("_" + key) else d for d in defines)


@needs_nvcc
@pytest.mark.parametrize("method,index", [(m, i) for m, r in CONTRACTS.items() for i in range(len(records(r)))])
def test_the_kernel_checks_the_records_threads_and_shared_memory(method, index, tmp_path):
    # The record's definitions build; one byte of shared memory less, or another warp, fails the kernel's
    # static_assert: so the record's shared memory is exactly what the kernel's layout uses.
    _, config = records(CONTRACTS[method])[index]
    arch = "sm_90"
    ok = compile_contract(method, config.defines(), arch, tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    threads = compile_contract(method, with_value(config.defines(), "THREADS", config.threads + 32), arch,
                               tmp_path / "threads")
    assert threads.returncode != 0 and "thread count" in threads.stderr, threads.stderr
    if config.layout is not None:
        short = compile_contract(method, with_value(config.defines(), "SMEM_BYTES", config.shared_bytes - 1), arch,
                                 tmp_path / "short")
        assert short.returncode != 0 and "less shared memory" in short.stderr, short.stderr


@needs_nvcc
@pytest.mark.parametrize("method", [m for m, r in CONTRACTS.items() if records(r)[0][1].stages is not None
                                    and m != "wgmma_tma"])  # wgmma_tma has one stage by design
def test_the_kernel_takes_the_records_stage_count(method, tmp_path):
    # One more stage: the record's new shared memory fits the kernel exactly, so the kernel read the stage count.
    _, config = records(CONTRACTS[method])[0]
    deeper = dataclasses.replace(config, stages=config.stages + 1)
    ok = compile_contract(method, deeper.defines(), "sm_90", tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    short = compile_contract(method, with_value(deeper.defines(), "SMEM_BYTES", deeper.shared_bytes - 1), "sm_90",
                             tmp_path / "short")
    assert short.returncode != 0 and "less shared memory" in short.stderr, short.stderr


@needs_nvcc
def test_a_build_without_the_registrys_definitions_fails_to_compile(tmp_path):
    # Kernel 07's float32 configuration depends on the target: without one, compile_options leaves it out, and the
    # kernel keeps no default of its own.
    source = kernels.module_source("warptiled", [("float32", 0)])
    result = kernels.compile_with_nvcc(source, "sm_90", tmp_path, kernels.compile_options("warptiled"))
    assert result.returncode != 0 and "no WARPTILED_* configuration" in result.stderr, result.stderr


# Kernel 07's fp32 methods: which configuration each target with a known opt-in limit compiles.
OPT_IN_TARGETS = [f"sm_{major}{minor}" for major, minor in specs.SHARED_OPT_IN_BYTES]
WARPTILED_FAMILIES = {"warptiled": geometry.WARPTILED, "warptiled_mbarrier": geometry.WARPTILED_MBARRIER}


@pytest.mark.parametrize("method", WARPTILED_FAMILIES)
def test_every_warptiled_fp32_configuration_is_some_targets_choice(method):
    family = WARPTILED_FAMILIES[method]
    assert registry.get(method).launch.__self__ is family
    chosen = {family.config("float32", specs.shared_opt_in_bytes(arch)) for arch in OPT_IN_TARGETS}
    assert chosen == set(family.configs["float32"])
    # A target the table does not know compiles the smallest, which every GPU with cp.async can hold.
    assert family.config("float32", specs.shared_opt_in_bytes("sm_110")) == family.configs["float32"][-1]


@needs_nvcc
@pytest.mark.parametrize("method", WARPTILED_FAMILIES)
@pytest.mark.parametrize("arch", OPT_IN_TARGETS)
def test_warptiled_fp32_compiles_one_configuration_the_one_its_launch_gives_shared_memory_for(method, arch, tmp_path):
    # The main loop is BK fully unrolled k steps of a thread's 16 x 8 FMAs, so the FMA count tells which BK was
    # compiled (both, behind a run-time branch, would give 6144). A launch with less shared memory than it needs traps.
    ptx = compile_ptx(method, [("float32", 0)], arch, tmp_path)
    launch = registry.get(method).launch(Problem(4096, 4096, 4096, 0, dtypes.get("float32"), 1,
                                                 specs.shared_opt_in_bytes(arch)))
    compiled = WARPTILED_FAMILIES[method].config("float32", specs.shared_opt_in_bytes(arch))
    assert launch.shared_bytes == compiled.shared_bytes
    assert ptx.count("fma.rn.f32") == 16 * 8 * compiled.tile_k


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


def ptx_code(method: str, variant: str | None, built: Build) -> str:
    """The PTX of a method's module (all its dtypes) built as `variant`, without its debug sections and line info,
    and with the default build's entry names."""
    code = built.output.decode().split(".section\t.debug_str")[0]
    for dtype, block in instances(method, variant):  # the entry names carry the variant's name: use the default's
        block = kernels.template_block(method, block)
        code = code.replace(kernels.symbol(method, dtype, block, variant), kernels.symbol(method, dtype, block))
    return "\n".join(line for line in code.splitlines() if not line.strip().startswith((".loc", ".file", "//")))


@needs_nvcc
@pytest.mark.parametrize("method,variant", VARIANTS)
def test_every_registry_variant_builds_for_its_target_and_changes_the_code(method, variant, build):
    # A variant whose definitions no longer build fails here (the front end's, FRONT_END); one whose definitions the
    # source no longer reads (a renamed or removed switch) builds the default again, and fails the comparison.
    arch = kernels.target(method, "sm_90")
    built = build(method, variant, arch, False)
    assert built.returncode == 0, f"nvcc failed for {method} variant {variant} on {arch}:\n{built.stderr}"
    for dtype, block in instances(method, variant):
        name = kernels.symbol(method, dtype, kernels.template_block(method, block), variant)
        assert f".entry {name}(".encode() in built.output, f"{name} missing from the {method} {variant} PTX"
    default = build(method, None, arch, False)
    assert default.returncode == 0, default.stderr
    assert ptx_code(method, variant, built) != ptx_code(method, None, default)


# The warp-specialised family (kernels 12-17, kernels/warp_specialized/): every build is one record
# (core/warp_specialized.WsConfig) whose -D definitions, launch, tile and workspace the registry derives; the kernel
# has no defaults for them and static_asserts what it needs.
WS_METHODS = tuple(m for m in COMPILED if isinstance(registry.get(m), WsMethod))
WS_BUILDS = [(m, v) for m in WS_METHODS for v in ["default", *(v.name for v in registry.get(m).variants)]]


def test_the_warp_specialized_rungs_are_one_family():
    assert set(WS_METHODS) == {"wgmma_warp_specialized", "wgmma_tf32", "wgmma_3xtf32", "wgmma_int8", "wgmma_fp8",
                               "wgmma_fp8_block", "wgmma_3xfp16"}
    for method in WS_METHODS:  # a rung is the collectives and its operand policy, nothing of another rung
        text = (kernels.KERNEL_DIR / registry.get(method).source).read_text()
        includes = re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M)
        assert "warp_specialized/kernel.cuh" in includes, method
        assert len([i for i in includes if i.startswith("warp_specialized/operands_")]) == 1, method


def test_no_kernel_source_includes_another_cu_file():
    # Shared code lives in headers (.cuh); a .cu file is one method's (or helper's) entry points.
    sources = sorted(kernels.KERNEL_DIR.rglob("*.cu")) + sorted(kernels.KERNEL_DIR.rglob("*.cuh"))
    assert any(p.parent.name == "warp_specialized" for p in sources)
    for path in sources:
        includes = re.findall(r'^\s*#\s*include\s*"([^"]+)"', path.read_text(), re.M)
        assert not [name for name in includes if name.endswith(".cu")], f"{path.name} includes a .cu file"


@pytest.mark.parametrize("method,variant", WS_BUILDS)
def test_each_warp_specialized_build_takes_its_definitions_and_launch_from_one_record(method, variant):
    m = registry.get(method)
    build = m.variant(variant)
    config = build.config
    assert isinstance(config, WsConfig) and (variant != "default" or config is m.config)
    # The kernel's definitions are the record's, every one once; the method adds none of its own.
    defines = [o.removeprefix("-D") for o in kernels.compile_options(method, variant) if o.startswith("-D")]
    assert defines == list(config.defines)
    names = [d.partition("=")[0] for d in defines]
    assert len(set(names)) == len(names) and all(name.startswith("WGMMA_WS_") for name in names)
    # The launch, tile and workspace are the same record's.
    # The launch bound is the family's (384 threads) in every build, and the kernel's budget at entry is taken from
    # the same number: the 64-row ones launch 256, with the register budget at entry of 384 (168), so that
    # setmaxnreg's 232 for the consumers is an increase.
    assert m.launch_bounds == (m.config.THREADS, 1) and config.THREADS <= m.launch_bounds[0]
    assert f"WGMMA_WS_LAUNCH_THREADS={m.launch_bounds[0]}" in defines
    assert (build.tile or m.tile)(0, m.dtypes[0]) == config.tile()
    for shape in ((512, 512, 512), (300, 520, 8193), (4096, 4096, 4096)):
        problem = Problem(*shape, 0, dtypes.get(m.dtypes[0]))
        launch = m.launch_for(problem, variant)
        assert launch == config.launch(problem)
        assert (launch.threads, launch.shared_bytes, launch.cluster) == (
            (config.THREADS, 1, 1), config.shared_bytes, (config.cluster, 1, 1))
        assert launch.persistent and launch.dependent
        assert m.workspace_bytes(problem, variant) == (config.workspace_bytes(problem) if config.split_k > 1 else 0)
    if variant != "default":  # a variant moves its rung's record; nothing else tells it apart
        assert config != m.config


@pytest.mark.parametrize("method", WS_METHODS)
def test_a_stage_count_moves_the_definitions_and_the_launch_together(method):
    m = registry.get(method)
    config, problem = m.config, Problem(4096, 4096, 4096, 0, dtypes.get(m.dtypes[0]))
    fewer = dataclasses.replace(config, stages=config.stage_count - 1)
    assert set(config.defines) ^ set(fewer.defines) == {
        f"WGMMA_WS_STAGES={config.stage_count}", f"WGMMA_WS_SMEM_BYTES={config.launch(problem).shared_bytes}",
        f"WGMMA_WS_STAGES={fewer.stage_count}", f"WGMMA_WS_SMEM_BYTES={fewer.launch(problem).shared_bytes}"}
    assert config.launch(problem).shared_bytes - fewer.launch(problem).shared_bytes == (
        config.stage_bytes + config.BARRIER_BYTES)
    # The default stage count is the most that fit an SM's opt-in shared memory.
    deeper = dataclasses.replace(config, stages=config.stage_count + 1)
    assert config.shared_bytes <= SM90_SHARED_BYTES < deeper.shared_bytes
    if "stages3" in {v.name for v in m.variants}:  # the registry's stage variant: the record, its stages moved
        assert m.variant("stages3").config == dataclasses.replace(config, stages=3)


def compile_ws_checks(method: str, defines, checks: dict[str, int], tmp_path) -> subprocess.CompletedProcess:
    """The rung's source alone (the namespace-scope checks of its configuration; no kernel instantiated) with
    `defines` as its definitions, and a static_assert that each of the kernel's constants `checks` has its value."""
    m = registry.get(method)
    source = f'#include "{m.source}"\n' + static_asserts(checks)
    options = [*kernels.COMPILE_OPTIONS, *m.compile_options, *(f"-D{d}" for d in defines)]
    return kernels.compile_with_nvcc(source, kernels.target(method, "sm_90"), tmp_path, options)


def with_define(defines, name: str, value) -> tuple[str, ...]:
    return tuple(f"WGMMA_WS_{name}={value}" if d.startswith(f"WGMMA_WS_{name}=") else d for d in defines)


@needs_nvcc
@pytest.mark.parametrize("method,variant", WS_BUILDS)
def test_registry_launch_matches_the_warp_specialized_kernels_config(method, variant, build):
    # The compiled module's own constants (its layout's bytes among them) against the registry's launch and tile:
    # the build for its target asserts them (build_source), so it compiles only where they hold.
    variant = None if variant == "default" else variant
    built = build(method, variant, kernels.target(method, "sm_90"), False)
    assert static_asserts(ws_checks(method, variant)) in built.source
    assert built.returncode == 0, built.stderr


@needs_nvcc
def test_a_build_whose_constants_are_not_the_registrys_fails_to_compile(tmp_path):
    # Guards the test above: a check that does not hold fails the build, with the constant's name.
    method = "wgmma_warp_specialized"
    checks = ws_checks(method, None) | {"BN": 8}
    result = compile_ws_checks(method, registry.get(method).config.defines, checks, tmp_path)
    assert result.returncode != 0 and "BN is not the registry's 8" in result.stderr, result.stderr


@needs_nvcc
def test_a_warp_specialized_build_whose_launch_bound_starves_setmaxnreg_fails_to_compile(tmp_path):
    # The consumers' setmaxnreg.inc takes registers that the producer gave away within the CTA's budget at entry,
    # which the launch bound sets: at 512 threads (128 a thread) the consumers' 232 are out of reach (a hang on the
    # GPU), below the build's own threads the bound is wrong; both fail the kernel's static_asserts.
    config = registry.get("wgmma_fp8_block").config
    for name, bound, message in (("starved", 512, "setmaxnreg: the consumers' registers past the entry budget"),
                                 ("short", config.THREADS - 128, "WGMMA_WS_LAUNCH_THREADS: the launch bound")):
        result = compile_ws_checks("wgmma_fp8_block", with_define(config.defines, "LAUNCH_THREADS", bound), {},
                                   tmp_path / name)
        assert result.returncode != 0 and message in result.stderr, f"{name}: {result.stderr}"


@needs_nvcc
@pytest.mark.parametrize("method", ["wgmma_warp_specialized", "wgmma_tf32", "wgmma_fp8_block"])
def test_a_warp_specialized_build_given_other_shared_memory_than_its_layout_fails_to_compile(method, tmp_path):
    # The record's bytes build; one byte fewer, the bytes of one stage fewer than its stages take, or more than the
    # layout and its alignment slack, fail the kernel's static_asserts: the registry's formula is the kernel's layout.
    config = registry.get(method).config
    ok = compile_ws_checks(method, config.defines, {}, tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    too_few = "WGMMA_WS_SMEM_BYTES: fewer bytes than the stages"
    for name, defines, message in (
            ("short", with_define(config.defines, "SMEM_BYTES", config.shared_bytes - 1), too_few),
            ("deeper", with_define(config.defines, "STAGES", config.stage_count + 1), too_few),
            ("spare", with_define(config.defines, "SMEM_BYTES", config.shared_bytes + config.ALIGN_SLACK),
             "WGMMA_WS_SMEM_BYTES: more bytes than the layout")):
        result = compile_ws_checks(method, defines, {}, tmp_path / name)
        assert result.returncode != 0 and message in result.stderr, f"{name}: {result.stderr}"


@needs_nvcc
def test_a_warp_specialized_build_without_a_registry_definition_stops_at_its_error(tmp_path):
    config = registry.get("wgmma_warp_specialized").config
    defines = [d for d in config.defines if not d.startswith("WGMMA_WS_STAGES=")]
    result = compile_ws_checks("wgmma_warp_specialized", defines, {}, tmp_path)
    assert result.returncode != 0, result.stderr
    assert "WGMMA_WS_STAGES is set by the registry (matmul_study/core/warp_specialized.py)" in result.stderr


@needs_nvcc
@pytest.mark.parametrize("method", ["wgmma_warp_specialized", "wgmma_tf32", "wgmma_3xtf32", "wgmma_int8", "warptiled",
                                    "dmma"])
def test_dependent_launch_rungs_wait_for_the_previous_grid_before_any_global_access(method, tmp_path):
    # Launched with programmatic stream serialisation (registry: Launch.dependent) these kernels may start while the
    # previous kernel still runs, so no copy, load or store of global memory may come before griddepcontrol.wait.
    assert registry.get(method).launch(Problem(4096, 4096, 4096, 0, dtypes.get(registry.get(method).dtypes[0]),
                                               132, shared_opt_in_bytes("sm_90a"))).dependent
    dtype = registry.get(method).dtypes[0]
    ptx = compile_ptx(method, [(dtype, 0)], kernels.target(method, "sm_90"), tmp_path)
    body = ptx[ptx.index(".entry"):]
    first_wait = body.index("griddepcontrol.wait")
    global_access = [body.find(op) for op in ("cp.async.bulk.tensor", "st.global", "ld.global", "red.global",
                                              "atom.global")]
    assert min(i for i in global_access if i >= 0) > first_wait
    # the warp-specialised kernels wait on two paths: k = 0 (C = 0) and the main one
    assert body.count("griddepcontrol.wait") >= (1 if method in ("warptiled", "dmma") else 2)
    assert "griddepcontrol.launch_dependents" in body


# Split-K builds take a workspace as their last argument; every other build keeps the wrapper it had.
SPLIT_K_VARIANTS = [(m, v.name) for m in WS_METHODS for v in registry.get(m).variants if v.workspace is not None]


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
            for v in (v for v in m.variants if not v.dtypes or dtype in v.dtypes):
                # Typed as the accumulators of its partial tiles.
                wrapper = kernels.wrapper(method, dtype, 0, v.name)
                takes = f"{dtypes.get(dtype).c_accumulator}* __restrict__ workspace" in wrapper
                assert takes == (v.workspace is not None) == (m.workspace_bytes(problem, v.name) > 0)


@needs_nvcc
@pytest.mark.parametrize("method,variant", SPLIT_K_VARIANTS)
def test_split_k_workspace_and_launch_match_the_kernel(method, variant, build):
    # The registry sizes the workspace as the kernel lays it out: per CTA tile (whole clusters of them along M) S
    # partial tiles of 4-byte accumulators (the kernel's PART_QUADS 16-byte units each), then a counter per CTA tile;
    # and the grid has room for S slices of every tile.
    m = registry.get(method)
    config = m.variant(variant).config
    split, part_bytes = config.split_k, config.BM * config.bn * 4
    # (m, n, k) -> CTA tiles with clusters of 1 and of 2 (300 rows: 3 tiles, or 2 clusters of 2), 128 or 64 rows,
    # 256, 128 or 64 wide
    # (2 and 4 x 64 x 64: the 16-bit twins' clusters, whole clusters of 64-row tiles along the kernel's M; 64 x 32:
    # their tiles of 32 tokens)
    for shape, cta_tiles in (((512, 512, 512), {(1, 128, 256): 8, (2, 128, 256): 8, (2, 128, 128): 16,
                                                (1, 128, 128): 16, (1, 64, 128): 32, (1, 128, 64): 32,
                                                (1, 64, 64): 64, (2, 64, 64): 64, (4, 64, 64): 64,
                                                (1, 64, 32): 128}),
                             ((129, 17, 3001), {(1, 128, 256): 2, (2, 128, 256): 2, (2, 128, 128): 2,
                                                (1, 128, 128): 2, (1, 64, 128): 3, (1, 128, 64): 2, (1, 64, 64): 3,
                                                (2, 64, 64): 4, (4, 64, 64): 4, (1, 64, 32): 3}),
                             ((300, 520, 8193), {(1, 128, 256): 3 * 3, (2, 128, 256): 4 * 3, (2, 128, 128): 4 * 5,
                                                 (1, 128, 128): 3 * 5, (1, 64, 128): 5 * 5, (1, 128, 64): 3 * 9,
                                                 (1, 64, 64): 5 * 9, (2, 64, 64): 6 * 9, (4, 64, 64): 8 * 9,
                                                 (1, 64, 32): 5 * 17})):
        cta_tiles = cta_tiles[config.cluster, config.BM, config.bn]
        # (a build that computes Cᵀ = Bᵀ·Aᵀ tiles the n x m problem: given (n, m, k), its kernel's is `shape`)
        m_, n_, k_ = shape
        problem = Problem(*((n_, m_, k_) if config.swap_ab else shape), 0, dtypes.get(m.dtypes[0]))
        assert m.workspace_bytes(problem, variant) == cta_tiles * (split * part_bytes + 4)
        assert m.launch_for(problem, variant).grid[0] == min(132, cta_tiles * split)
    # The build asserts the kernel's own split and partial tiles (build_source, ws_checks).
    assert {"SPLIT_K": split, "STREAMK": 0, "PART_QUADS * 16": part_bytes}.items() <= ws_checks(method, variant).items()
    built = build(method, variant, kernels.target(method, "sm_90"), False)
    assert static_asserts(ws_checks(method, variant)) in built.source and built.returncode == 0, built.stderr


@needs_nvcc
@pytest.mark.parametrize("dtype,fails", [("int8", True), ("float8_e4m3", True), ("float16", False)])
def test_kernel_10_refuses_tiles_whose_rows_of_b_are_narrower_than_its_swizzle(dtype, fails, tmp_path):
    # 16 x 64 decode tiles of 2 warps: a row of B is 64 bytes in 8 bits, half the 8 chunks that the swizzle permutes,
    # so those builds wrote past their stage (an illegal address on an H200); in 16 bits a row is 128 bytes.
    config = dataclasses.replace(geometry.decode_tile(16), tile_n=64, threads=64)
    source = kernels.module_source("mma_async_copy", [(dtype, 0)])
    options = [*kernels.COMPILE_OPTIONS, *(f"-D{d}" for d in config.defines()), "-DMMA_ASYNC_COPY_SPLIT_K=1"]
    result = kernels.compile_with_nvcc(source, "sm_90", tmp_path, options)
    assert (result.returncode != 0) == fails, result.stderr
    assert ("for the B swizzle" in result.stderr) == fails, result.stderr
