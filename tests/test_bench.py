"""Variants through the one build and launch path, and bench/'s front ends over it: compile options and source of a
variant against the default build (which stays as it was), the front ends' arguments and errors, the comparison's
ratios and table on made-up timings, and, on a GPU, one variant compared with cuBLAS on an odd shape."""

from __future__ import annotations

import gzip
import importlib.util
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from matmul_study.launch import kernels, launchers
from matmul_study.core import configs, dtypes, registry
from matmul_study.core.specs import Problem, Variant
from matmul_study.analysis import tile_fit
from matmul_study.measure import compare
from matmul_study.measure.verify import Verification

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"


def load(name: str):
    """A bench/ script as a module (ncu_profile imports compare as its neighbour, as when run from bench/)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


front = load("compare")
ncu = load("ncu_profile")

WS = "wgmma_warp_specialized"
# The default build's module as it was before variants existed: the pipeline's source must not move.
WS_FLOAT16_SOURCE = (
    '#include "12_wgmma_warp_specialized.cu"\n\n'
    'extern "C" __global__ void __launch_bounds__(384, 1) wgmma_warp_specialized_float16_b0('
    "const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b, "
    "float* __restrict__ C, int m, int n, int k)\n{\n"
    "    wgmma_ws_matmul<__half>(&tmap_a, &tmap_b, C, m, n, k);\n}\n")
TILED_VARIANTS = (Variant("tagged", defines=("MATMUL_BENCH_TEST", "MATMUL_BENCH_LEVEL=2")),
                  Variant("probe", defines=("MATMUL_BENCH_PROBE=1",), diagnostic=True))


@pytest.fixture
def tiled_with_variants(monkeypatch):
    """The tiled method under another name, with two variants (registered for the test only)."""
    method = replace(registry.get("tiled"), name="bench_tiled", variants=TILED_VARIANTS)
    monkeypatch.setitem(registry.METHODS, method.name, method)
    return method


def test_the_default_build_is_unchanged():
    assert kernels.module_source(WS, [("float16", 0)]) == WS_FLOAT16_SOURCE
    # The default build's options are the common ones plus its contract, stated once by its record.
    assert kernels.compile_options(WS) == [*kernels.COMPILE_OPTIONS,
                                           *(f"-D{d}" for d in registry.get(WS).config.defines)]
    assert kernels.symbol(WS, "float16", 0) == "wgmma_warp_specialized_float16_b0"
    for method in registry.compiled_methods():
        instances = [(d, 16) for d in registry.get(method).dtypes]
        default = kernels.module_source(method, instances)
        assert kernels.module_source(method, instances, None) == default
        assert kernels.module_source(method, instances, "default") == default
        assert kernels.compile_options(method, "default") == kernels.compile_options(method)


def test_a_variant_adds_its_defines_and_names_its_kernels(tiled_with_variants):
    default_options = kernels.compile_options("bench_tiled")
    assert kernels.compile_options("bench_tiled", "tagged") == [
        *default_options, "-DMATMUL_BENCH_TEST", "-DMATMUL_BENCH_LEVEL=2"]
    source = kernels.module_source("bench_tiled", [("float32", 16), ("float64", 16)], "tagged")
    assert "bench_tiled_tagged_float32_b16(" in source and "bench_tiled_tagged_float64_b16(" in source
    assert "bench_tiled_float32_b16(" not in source
    # Same kernel file and template call: a variant differs by its definitions only.
    default = kernels.module_source("bench_tiled", [("float32", 16), ("float64", 16)])
    assert source.replace("bench_tiled_tagged_", "bench_tiled_") == default


def test_an_unknown_variant_names_the_method_the_value_and_the_known_ones(tiled_with_variants):
    with pytest.raises(KeyError, match=r"bench_tiled has no variant 'nope'; its variants: default, tagged, probe"):
        kernels.compile_options("bench_tiled", "nope")
    with pytest.raises(KeyError, match="nope"):
        kernels.symbol("bench_tiled", "float32", 16, "nope")


def test_launchers_pass_the_variant_to_the_backend_and_name_its_symbol(tiled_with_variants, monkeypatch):
    seen = []
    monkeypatch.setattr(launchers, "kernel", lambda *args: seen.append(args) or "launch")
    problem = Problem(100, 100, 100, 16, dtypes.get("float32"))
    assert launchers.make(tiled_with_variants, problem, None, "x.cubin", "tagged") == "launch"
    assert seen[0][-1] is TILED_VARIANTS[0]  # the name resolved once, to the record the launchers take
    tagged, default = tiled_with_variants.variant("tagged"), tiled_with_variants.variant(None)
    assert launchers._symbol(tiled_with_variants, problem, tagged) == "bench_tiled_tagged_float32_b16"
    assert launchers._symbol(tiled_with_variants, problem, default) == "bench_tiled_float32_b16"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_a_variant_compiles_with_its_defines(tiled_with_variants, tmp_path):
    source = tmp_path / "module.cu"
    # The definition is seen by the compiler: a check on it in the source fails without it.
    source.write_text(kernels.module_source("bench_tiled", [("float32", 16)], "tagged")
                      + '\nstatic_assert(MATMUL_BENCH_LEVEL == 2, "the variant\'s definition is missing");\n')
    ptx = tmp_path / "module.ptx"
    for variant, compiles in ((None, False), ("tagged", True)):
        options = kernels.compile_options("bench_tiled", variant)
        result = kernels.run_nvcc(kernels.nvcc_command(source, ptx, "sm_80", options, "ptx"))
        assert (result.returncode == 0) == compiles, result.stderr
    assert ".entry bench_tiled_tagged_float32_b16(" in ptx.read_text()


# ------------------------------------------------------------------------------------------------ front ends


def parse(argv: list[str]) -> list[compare.Case]:
    p = front.parser()
    return front.cases(p.parse_args(argv), p)


def test_the_front_end_makes_the_cross_product_of_variants_dtypes_and_shapes(tiled_with_variants):
    cases = parse(["bench_tiled", "--variant", "all", "--dtype", "float32", "float64", "--block", "16",
                   "--shape", "4096", "257x511x129"])
    assert len(cases) == 3 * 2 * 2
    assert {c.variant for c in cases} == {None, "tagged", "probe"}
    assert {(c.m, c.n, c.k) for c in cases} == {(4096, 4096, 4096), (257, 511, 129)}
    one = parse([WS])
    assert one == [compare.Case(WS, None, "float16", 4096, 4096, 4096, 0)]


def test_pdl_times_each_case_also_as_a_programmatic_dependent():
    cases = parse(["mma_async_copy", "--variant", "m16_splitk4", "--dtype", "float16", "--shape", "16x4096x4096",
                   "--pdl"])
    assert [(c.variant, c.dependent) for c in cases] == [("m16_splitk4", False), ("m16_splitk4", True)]
    assert [c.build for c in cases] == ["m16_splitk4", "m16_splitk4 +pdl"]
    from matmul_study.core.specs import Problem

    method = registry.get("mma_async_copy")
    build = launchers.as_dependent(method, method.variant("m16_splitk4"))
    problem = Problem(16, 4096, 4096, 0, dtypes.get("float16"))
    plain = method.launch_for(problem, "m16_splitk4")
    assert build.launch(problem).dependent and not plain.dependent
    assert build.launch(problem).grid == plain.grid and build.workspace is not None


def test_pdl_is_refused_for_a_kernel_that_does_not_wait_for_the_previous_grid(capsys):
    with pytest.raises(SystemExit):
        parse(["wmma_tiled", "--pdl"])
    err = capsys.readouterr().err
    assert "does not wait for the previous grid" in err and "methods that can: warptiled, dmma, mma_async_copy" in err


def test_l2_bytes_times_each_case_once_for_each_l2_size():
    cases = parse(["mma_async_copy", "--variant", "m16_splitk4", "--dtype", "float16", "--shape", "16x6144x4096",
                   "--l2-bytes", "1", "1000000000"])
    assert [c.build for c in cases] == ["m16_splitk4 l2=1", "m16_splitk4 l2=1000000000"]
    method = registry.get("mma_async_copy")
    problems = [configs.job_problem(dtypes.get("float16"), 0, c.m, c.k, c.n, l2_bytes=c.l2_bytes) for c in cases]
    assert [method.stream_b(p, method.launch_for(p, "m16_splitk4")) for p in problems] == [True, False]


@pytest.mark.parametrize("argv,why", [
    (["wmma_tiled", "--l2-bytes", "1"], "(wmma_tiled does not); methods that do: mma_async_copy, mma_3xtf32"),
    (["mma_async_copy", "--l2-bytes", "0"], "--l2-bytes 0: a size of 1 byte or more")])
def test_l2_bytes_is_refused_for_a_kernel_that_chooses_no_l2_policy_or_a_size_under_a_byte(capsys, argv, why):
    with pytest.raises(SystemExit):
        parse(argv)
    assert why in capsys.readouterr().err


def test_auto_takes_the_pipelines_pick_for_each_case():
    cases = parse(["mma_async_copy", "--variant", "auto", "--dtype", "int8", "tf32",
                   "--shape", "16x4096x4096", "4096"])
    picks = {(c.dtype, c.m): c.variant for c in cases}
    assert picks == {("int8", 16): "m16_splitk4", ("tf32", 16): "m16_splitk4", ("int8", 4096): None,
                     ("tf32", 4096): None}
    # on the GPU it runs on (Bench.facts), as the pipeline plans: 78 SMs take half the slices
    p = front.parser()
    args = p.parse_args(["mma_async_copy", "--variant", "auto", "--dtype", "int8", "--shape", "16x4096x4096"])
    assert [c.variant for c in front.cases(args, p, {"sm_count": 78, "hbm_bytes_per_s": None})] == ["m16_splitk2"]


@pytest.mark.parametrize("argv, message", [
    (["nosuch"], "unknown method 'nosuch'; known methods: numpy, naive"),
    ([WS, "--variant", "nope"], f"{WS} has no variant 'nope'; its variants: default"),
    (["bench_tiled", "--block", "16", "--variant", "tagged", "nope"],
     "bench_tiled has no variant 'nope'; its variants: default, tagged, probe"),
    ([WS, "--dtype", "int32"], f"{WS} does not run 'int32'; its dtypes: float16, bfloat16"),
    (["naive", "--block", "16", "--dtype", "int32"], "no vendor library line runs int32"),
    (["numpy"], "numpy is not a kernel of ours"),
    (["tiled", "--dtype", "float32"], "tiled takes a block size: pass --block"),
    ([WS, "--shape", "12x3"], "shape '12x3' is neither N nor MxNxK"),
    ([WS, "--shape", "0"], "shape '0' is neither N nor MxNxK"),
])
def test_the_front_end_refuses_a_bad_value_and_says_what_is_allowed(argv, message, tiled_with_variants, capsys):
    with pytest.raises(SystemExit) as exit_:
        front.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_without_pycuda_the_front_end_names_the_package_and_its_install_command(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pycuda", None)  # import pycuda.driver now fails, as where it is missing
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    assert front.main([WS, "--shape", "64"]) == 1
    err = capsys.readouterr().err
    assert "PyCUDA is not installed" in err and "pip install -e '.[gpu]'" in err


def test_without_cupy_the_bench_names_it_and_its_install_command(monkeypatch):
    monkeypatch.setattr(compare, "require_pycuda", lambda: object())
    monkeypatch.setattr(compare, "module_available", lambda module: module != "cupy")
    with pytest.raises(compare.GpuUnavailable, match=r"CuPy is not installed.*pip install -e '\.\[cublas\]'"):
        compare.Bench()


class FakeBench:
    """Bench's interface with made-up results: the case with "probe" in it fails its check, one raises."""

    calls: list = []  # what the front end asked for, in order

    def __init__(self, seed):
        self.seed = seed

    def build(self, cases, jobs):
        self.calls.append(("build", len(cases), jobs))
        return {}

    def compare(self, case, samples, batch):
        self.calls.append(("compare", case.variant))
        if case.m == 13:
            raise RuntimeError("CUDA driver error CUDA_ERROR_ILLEGAL_ADDRESS")
        ok = case.variant != "probe"
        return compare.Result(case, {"ours": passed(ok=ok)}, [1e-3] * samples, [2e-3] * samples, batch or 5,
                              diagnostic=case.variant == "probe")


def test_the_front_end_runs_every_case_and_prints_one_table(tiled_with_variants, monkeypatch, tmp_path, capsys):
    import json

    monkeypatch.setattr(compare, "Bench", FakeBench)
    out = tmp_path / "sweep.json"
    argv = ["bench_tiled", "--variant", "default", "probe", "--block", "16", "--dtype", "float32", "--shape", "64",
            "--samples", "4", "--json", str(out)]
    assert front.main(argv) == 0  # a diagnostic variant's failed check is no failure
    table = capsys.readouterr().out.split("\n\n")[-1].splitlines()
    assert len(table) == 3 and "2.000" in table[1] and "diagnostic" in table[2]
    saved = json.loads(out.read_text())
    assert [r["variant"] for r in saved] == ["default", "probe"] and saved[0]["ours_s"] == [1e-3] * 4
    assert front.main(["bench_tiled", "--block", "16", "--dtype", "float32", "--shape", "64", "13"]) == 1
    assert "error: RuntimeError: CUDA driver error CUDA_ERROR_ILLEGAL_ADDRESS" in capsys.readouterr().out


def test_the_front_end_builds_every_case_before_it_times_one(tiled_with_variants, monkeypatch):
    monkeypatch.setattr(compare, "Bench", FakeBench)
    monkeypatch.setattr(FakeBench, "calls", [])
    argv = ["bench_tiled", "--variant", "default", "probe", "--block", "16", "--dtype", "float32", "--shape", "64",
            "96", "--samples", "2", "--jobs", "3"]
    assert front.main(argv) == 0
    assert FakeBench.calls[0] == ("build", 4, 3)
    assert [c[0] for c in FakeBench.calls[1:]] == ["compare"] * 4


def test_the_front_end_refuses_fewer_than_one_compiler_process(tiled_with_variants, capsys):
    with pytest.raises(SystemExit):
        front.main(["bench_tiled", "--block", "16", "--dtype", "float32", "--jobs", "0"])
    assert "--jobs 0: the compiler processes must be at least 1" in capsys.readouterr().err


def test_the_profile_front_end_runs_the_launch_under_ncu_with_the_clocks_left_alone(tiled_with_variants):
    run, source = ncu.command(["bench_tiled", "--variant", "tagged", "--block", "16", "--dtype", "float32",
                               "--shape", "257x511x129", "--cublas", "--", "--section", "WarpStateStats"])
    assert source is None
    assert run[:3] == ["ncu", "--clock-control", "none"]
    assert run[run.index("--kernel-name") + 1] == "regex:bench_tiled_tagged_float32_b16|nvjet|gemm"
    assert run[run.index("--launch-skip") + 1] == run[run.index("--launch-count") + 1] == "2"
    python = run.index(sys.executable)
    assert run[python - 2:python] == ["--section", "WarpStateStats"]
    assert run[python + 1].endswith("bench/compare.py")
    assert run[python + 2:] == ["bench_tiled", "--variant", "tagged", "--block", "16", "--dtype", "float32",
                                "--shape", "257x511x129", "--profile", "3"]
    alone, _ = ncu.command([WS, "--shape", "4096"])
    assert alone[alone.index("--kernel-name") + 1] == "regex:wgmma_warp_specialized_float16_b0"
    assert alone[alone.index("--launch-skip") + 1] == "1"


def test_the_profile_front_end_takes_one_case_only(capsys):
    with pytest.raises(SystemExit):
        ncu.command([WS, "--shape", "1024", "2048"])
    assert "profile one case at a time; these arguments make 2" in capsys.readouterr().err


def test_the_profile_front_end_samples_the_warps_per_instruction_into_a_source_page(tmp_path):
    source = tmp_path / "block.csv.gz"
    run, parsed = ncu.command([WS, "--shape", "4096", "--source", str(source), "--", "--section", "SpeedOfLight"])
    assert parsed == source
    python = run.index(sys.executable)
    assert run[python + 2:] == [WS, "--shape", "4096", "--profile", "3"]  # --source is not compare.py's
    sections = run[run.index("--launch-count") + 2:python]
    assert sections == [*ncu.SOURCE_SECTIONS, "-o", str(tmp_path / "block"), "-f", "--section", "SpeedOfLight"]
    assert ncu.report_path(source) == tmp_path / "block.ncu-rep"
    with pytest.raises(SystemExit, match="--source needs a path"):
        ncu.command([WS, "--shape", "4096", "--source"])


def test_the_source_pages_report_is_named_after_the_csv_without_its_suffixes(tmp_path):
    for name, stem in (("block.csv.gz", "block"), ("block.csv", "block"), ("fp8.block-8192.csv.gz", "fp8.block-8192")):
        assert ncu.report_stem(tmp_path / name) == tmp_path / stem  # ncu -o's argument
        assert ncu.report_path(tmp_path / name) == tmp_path / f"{stem}.ncu-rep"  # the report ncu writes there


def test_a_source_page_gives_each_kernel_its_instructions_with_the_most_samples():
    text = ('"Kernel Name","ours",\n'
            '"Address","Source","Warp Stall Sampling (All Samples)","stall_long_sb","stall_wait",'
            '"stall_long_sb (Not Issued)"\n'
            '"0x10","  FMUL R1, R2, R3","30","28","2","99"\n"0x20","  LDG.E R2, [R4.64]","10","0","10","0"\n'
            '"0x30","  EXIT","0","0","0","0"\n'
            '"Kernel Name","nvjet_sm90",\n"Address","Source","Warp Stall Sampling (All Samples)","stall_wait"\n'
            '"0x40","  HGMMA","5","5"\n')
    pages = ncu.source_pages(text)
    assert list(pages) == ["ours", "nvjet_sm90"] and len(pages["ours"]) == 3
    top = ncu.waits(pages["ours"], top=2)
    assert top.instruction.tolist() == ["FMUL R1, R2, R3", "LDG.E R2, [R4.64]"]
    assert top.share.tolist() == pytest.approx([0.75, 0.25])
    assert top.reason.tolist() == ["long_sb", "wait"]  # the not-issued column is not a reason of its own
    assert ncu.waits(pages["nvjet_sm90"]).reason.tolist() == ["wait"]


def test_block_scaled_fp8_waits_on_its_scales_where_the_promoted_build_does_not():
    # The committed source pages at 8192^3 on an H200 (docs/tensor-cores.md): after the final cluster barrier, where
    # the producer warpgroup's idle warps wait, the block-scaled build's warps wait most on the FMULs of a step's
    # scales, for their loads (long scoreboard): 30 % of its samples; bn128_promote's on its wgmmas.
    small = REPO / "results/reference/NVIDIA_H200/small-problems"
    for name, leading in (("block", "FMUL"), ("promoted", "WARPGROUP.DEPBAR")):
        with gzip.open(small / f"ncu-source-fp8-{name}-8192.csv.gz", "rt") as f:
            (page,) = ncu.source_pages(f.read()).values()
        top = ncu.waits(page, top=len(page))
        assert top.instruction[0] == "UCGABAR_WAIT"
        assert top.instruction[1].startswith(leading), top.head()
        fmul = top[top.instruction.str.startswith("FMUL")]
        if name == "block":
            assert fmul.share.sum() > 0.25 and set(fmul.reason[fmul.share > 0.01]) == {"long_sb"}
        else:
            assert fmul.share.sum() < 0.01


# ------------------------------------------------------------------------------------------------ the protocol


def test_samples_alternate_ours_and_cublas():
    order = []
    times = compare.alternate({"ours": "O", "cublas": "C"}, lambda launch: order.append(launch) or len(order), 3)
    assert order == ["O", "C"] * 3
    assert times == {"ours": [1, 3, 5], "cublas": [2, 4, 6]}


def passed(rel: float = 1e-6, ok: bool = True, unwritten: int = 0) -> Verification:
    return Verification(0.0, rel, 1e-3, "full", "test", unwritten, ok)


def test_ratio_and_pair_ratio_from_made_up_timings():
    result = compare.Result(compare.Case(WS, None, "float16", 1000, 1000, 1000), {"ours": passed()},
                            ours_s=[1e-3, 2e-3, 3e-3], cublas_s=[2e-3, 2e-3, 6e-3], batch=7)
    assert result.ratio == pytest.approx(1.0)  # medians 2 ms and 2 ms
    assert result.pair_ratio == pytest.approx(2.0)  # per pair 2, 1, 2
    row = result.row()
    assert row["ms"] == pytest.approx(2.0) and row["TF/s"] == pytest.approx(1.0)  # 2e9 flop in 2 ms
    assert row["cuBLAS TF/s"] == pytest.approx(1.0) and row["batch"] == 7
    assert row["check"] == "passed, rel 1.0e-06"
    # The vendor's error is shown beside ours, and never taken for ours.
    result.checks["cublas"] = passed(3e-4)
    assert result.row()["check"] == "passed, rel 1.0e-06 (vendor 3.0e-04)"


def test_the_table_has_one_line_per_case_and_marks_failed_and_untimed_ones():
    case = compare.Case(WS, "cluster1", "bfloat16", 257, 511, 129)
    rows = [compare.Result(case, {"ours": passed()}, [2e-3], [1e-3], batch=5),
            compare.Result(case, {"ours": passed(0.5, False, 12), "cublas": passed()}),
            compare.Result(case, {"ours": passed(0.5, False)}, [1e-3], [1e-3], diagnostic=True),
            compare.Result(case, error="RuntimeError: CUDA driver error")]
    lines = compare.table(rows).splitlines()
    assert len(lines) == 1 + len(rows)
    assert "ratio" in lines[0] and "pair" in lines[0] and "cuBLAS TF/s" in lines[0]
    assert "cluster1" in lines[1] and "257x511x129" in lines[1] and "0.500" in lines[1]  # ours twice as slow
    assert "FAILED ours 5.0e-01 (12 unwritten)" in lines[2] and lines[2].rstrip().endswith("-")
    assert "diagnostic, rel 5.0e-01" in lines[3]
    assert "error: RuntimeError: CUDA driver error" in lines[4]
    assert not rows[1].verified and rows[0].verified


def test_the_table_reads_back_the_ratio_of_each_verified_case(tmp_path):
    # tile_fit.table_ratios reads what compare.table() writes (the committed sweeps the tile models are fitted to):
    # the verified cases only, the mean where a build ran a shape twice.
    case = compare.Case(WS, "cluster1", "bfloat16", 257, 511, 129)
    other = compare.Case(WS, "default", "bfloat16", 257, 511, 129)
    rows = [compare.Result(case, {"ours": passed(), "cublas": passed(3e-4)}, [2e-3], [1e-3], batch=5),
            compare.Result(case, {"ours": passed()}, [1e-3], [1e-3]),
            compare.Result(other, {"ours": passed(0.5, False, 12)}, [1e-3], [2e-3]),
            compare.Result(other, error="RuntimeError: CUDA driver error")]
    path = tmp_path / "sweep.txt"
    path.write_text("summary lines first\n" + compare.table(rows))
    assert tile_fit.table_ratios([path]) == {(WS, "bfloat16", "257x511x129"): {"cluster1": pytest.approx(0.75)}}


class FakeEvent:
    """A CUDA event on a made-up clock that each launch advances by its kernel's seconds."""

    def __init__(self, clock: list[float]):
        self.clock, self.at = clock, None

    def record(self):
        self.at = self.clock[0]

    def time_till(self, other) -> float:
        return (other.at - self.at) * 1e3  # milliseconds, as CUDA events give them


def fake_bench(monkeypatch, ours_s: float, cublas_s: float, ours_passes: bool = True):
    """A Bench whose device is made up: launches advance a clock, checks pass or fail as told."""
    from types import SimpleNamespace

    clock, checked = [0.0], []
    bench = compare.Bench.__new__(compare.Bench)
    bench.hold = SimpleNamespace(hold=lambda: None, release=lambda: None)
    bench.start, bench.end = FakeEvent(clock), FakeEvent(clock)

    def launcher(seconds):
        def launch():
            clock[0] += seconds
        return launch

    def check(name):
        checked.append(name)
        return passed(ok=ours_passes or name == "cublas")

    launches = {"ours": launcher(ours_s), "cublas": launcher(cublas_s)}
    monkeypatch.setattr(bench, "prepare", lambda case: (launches, check))
    return bench, checked


def test_the_protocol_checks_both_then_times_them_in_batches_then_checks_ours_again(monkeypatch):
    bench, checked = fake_bench(monkeypatch, 1e-3, 2e-3)
    result = bench.compare(compare.Case(WS, None, "float16", 64, 64, 64), samples=4)
    assert checked == ["ours", "cublas", "ours"]
    assert set(result.checks) == {"ours", "cublas", "ours after timing"} and result.verified
    # One launch of 1 ms: the pipeline's rule gives its minimum of launches per sample.
    assert result.batch == compare.DEFAULTS.stopping.min_launches_per_sample
    assert result.ours_s == pytest.approx([1e-3] * 4) and result.cublas_s == pytest.approx([2e-3] * 4)
    assert result.ratio == pytest.approx(2.0) and result.pair_ratio == pytest.approx(2.0)
    assert bench.compare(compare.Case(WS, None, "float16", 64, 64, 64), samples=2, batch=3).batch == 3


def test_a_failed_check_is_not_timed_unless_the_variant_is_a_diagnostic(monkeypatch, tiled_with_variants):
    bench, checked = fake_bench(monkeypatch, 1e-3, 2e-3, ours_passes=False)
    failed = bench.compare(compare.Case("bench_tiled", "tagged", "float32", 64, 64, 64, 16), samples=4)
    assert checked == ["ours", "cublas"] and not failed.ours_s and failed.batch == 0
    assert failed.check_text().startswith("FAILED ours")
    probe = bench.compare(compare.Case("bench_tiled", "probe", "float32", 64, 64, 64, 16), samples=4)
    assert len(probe.ours_s) == 4 and probe.diagnostic and probe.check_text().startswith("diagnostic")


# ------------------------------------------------------------------------------------------------ on a GPU


# The bench's own test variant, and the first variant each registered kernel of ours has that is not a diagnostic
# (the bench compares our kernels with the vendor's; a library line's variants, cuBLASLt's, are not its subject).
GPU_CASES = [("bench_tiled", "tagged"), *((name, next(v.name for v in m.variants if not v.diagnostic))
                                          for name, m in registry.METHODS.items()
                                          if m.compiled and any(not v.diagnostic for v in m.variants))]


@pytest.mark.gpu
@pytest.mark.parametrize("method, variant", GPU_CASES)
def test_a_variant_against_cublas_on_an_odd_shape_verifies_and_times(method, variant, tiled_with_variants, tmp_path,
                                                                     capsys):
    cuda = pytest.importorskip("pycuda.driver")
    pytest.importorskip("cupy")
    try:
        import pycuda.autoprimaryctx  # noqa: F401
    except Exception as exc:  # no driver or no device
        pytest.skip(f"no usable CUDA device: {exc}")
    import json

    from matmul_study.core.backends import module_available

    m = registry.get(method)
    why = m.unmet_requirement(cuda.Context.get_device().compute_capability(), module_available)
    if why:
        pytest.skip(why)
    out = tmp_path / "bench.json"
    rows = min(257, m.max_rows or 257)  # a method of a few rows (kernel 18) at the most it serves, N and K as odd
    argv = [method, "--variant", variant, "--dtype", m.dtypes[0], "--shape", f"{rows}x511x129", "--samples", "3",
            "--json", str(out), *(["--block", "16"] if m.block_axis else [])]
    rc = front.main(argv)
    (result,) = json.loads(out.read_text())
    assert rc == 0, capsys.readouterr().out
    assert result["variant"] == variant and result["check"].startswith("passed")
    assert set(result["checks"]) == {"ours", "cublas", "ours after timing"}
    assert all(check["passed"] and check["scope"] == "full" for check in result["checks"].values())
    assert len(result["ours_s"]) == len(result["cublas_s"]) == 3 and result["ratio"] > 0


def test_the_tile_model_fit_prints_its_best_facts_and_each_pick(capsys):
    fit_script = load("fit_tile_model")
    sweeps = BENCH.parent / "results/reference/NVIDIA_H200/small-problems"
    # Each sweep with the 32x64 tiles measured at its shapes of 64 columns (warptiled-narrow-n.txt) and every build,
    # the decode and narrow tiles split 32 ways among them, at 12 deep-K shapes (simt-split32-all-float32.txt): 3^4 x 2
    # candidates, a rate for each tile rows and one for the 32x64 tiles, and two shares of a lone block's rate. The
    # best is the registry's facts.
    narrow, deep = str(sweeps / "warptiled-narrow-n.txt"), str(sweeps / "simt-split32-all-float32.txt")
    assert fit_script.main(["warptiled", "float32", "--fit", str(sweeps / "simt-tiles-fit-float32.txt"), narrow, deep,
                            "--check", str(sweeps / "simt-tiles-check-float32.txt"), narrow, deep,
                            "--rates", "80", "100", "120", "--four-warps", "0.5", "0.7", "--eight-warps", "0.8",
                            "--block-us", "1", "--partial-gbps", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("best of 162: TileRates(gmacs={16: 80.0, 32: 100.0, 128: 120.0, (32, 64): 80.0}, "
                          "warp_share={4: 0.7, 8: 0.8}")
    assert "fitted: total regret 0.244, worst 0.098" in out and "checked: total regret 0.413, worst 0.098" in out
    assert "128x128x32768   m32_splitk32 regret 0.000" in out


def test_the_tile_model_descent_starts_from_the_registrys_facts(capsys):
    # --descend: from the registry's dmma facts over its fitted sweep (--again: a later run's measurements of some of
    # its shapes replace the first run's), one fact at a time; they are where it stops, and the held-out sweeps are
    # checked.
    fit_script = load("fit_tile_model")
    sweeps = BENCH.parent / "results/reference/NVIDIA_H200/small-problems"
    assert fit_script.main(["dmma", "float64", "--descend", "--fit", str(sweeps / "dmma-mmak-all-float64.txt"),
                            str(sweeps / "dmma-token-rows-all-float64.txt"),
                            "--again", str(sweeps / "dmma-deep-k-all-float64.txt"),
                            "--check", str(sweeps / "dmma-mmak-held-out-float64.txt"),
                            str(sweeps / "dmma-deep-k-held-out-float64.txt"),
                            "--rates", "40", "100", "120", "140", "160", "--four-warps", "0.6", "--eight-warps", "0.9",
                            "--block-us", "3", "4", "--partial-gbps", "25", "--split-us", "3", "4", "5"]) == 0
    out = capsys.readouterr().out
    committed = registry.DMMA_TILE_RATES["float64"]
    assert out.startswith("the registry's facts: total regret 1.365") and f"descended to: {committed}" in out
    assert "fitted: total regret 1.365, worst 0.183" in out and "checked: total regret 0.701, worst 0.157" in out
    assert "1024x1024x1024           bm64 regret 0.000" in out
    assert "512x512x512      bm32_bn64 regret 0.000" in out
    assert "128x128x32768 bm32_bn64_splitk32 regret 0.000" in out


def test_the_small_tiles_models_are_fitted_by_the_whole_rule(capsys):
    # --model: kernel 7's small tiles' models, weighed by the whole heuristic's pick at every shape of the sweep (the
    # builds measured again after they were bound, --over, under the names they ran as, --as), the former check sweeps'
    # shapes held out. From the registry's facts the model beside the decode tiles does not move; they lose 1.1 % to
    # the best build on average where fitted (0.552 over 50 shapes), 1.9 % held out (0.413 over 22).
    fit_script = load("fit_tile_model")
    sweeps = BENCH.parent / "results/reference/NVIDIA_H200/small-problems"
    common = ["warptiled", "float32", "--descend", "--fit",
              *(str(sweeps / f"simt-small-tiles-four-blocks-{i}-float32.txt") for i in (1, 2)),
              "--over", str(sweeps / "simt-small-tiles-pass-float32.txt"),
              "--as", "m64_n128_free=m64_n128", "m64_n128_splitk2_free=m64_n128_splitk2",
              "--hold-out", str(sweeps / "simt-small-tiles-check-float32.txt"),
              str(sweeps / "simt-small-tiles-fresh-float32.txt"), "--split-us", "0"]
    assert fit_script.main([*common, "--model", "beside", "--rates", "240", "280", "320", "--four-warps", "0.5", "0.6",
                            "--eight-warps", "0.8", "--block-us", "0.25", "--partial-gbps", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the registry's facts: total regret 0.552, worst 0.091")
    assert f"descended to: {registry.WARPTILED_BESIDE_TILE_RATES['float32']}" in out
    assert "held out: total regret 0.413, worst 0.073" in out
    assert "   1920x1920x1920 m64_n128_splitk4 regret 0.000" in out
    # Only the main model has the grid search; a model the method lacks is named with those it has.
    with pytest.raises(SystemExit):
        fit_script.main([*common[:2], "--model", "small", "--fit", common[4]])
    with pytest.raises(SystemExit):
        fit_script.main([*common, "--model", "tiny"])
    err = capsys.readouterr().err
    assert "only --descend fits it" in err and "main (float32, float64); small (float32); beside (float32)" in err


ceiling = load("read_ceiling")


def test_the_read_ceiling_reads_each_shapes_roofline_bytes_in_whole_chunks():
    # 16x4096x4096 (M x N x K) in int8: A 16 x 4096 and B 4096 x 4096 bytes, C 16 x 4096 int32 (the roofline's bytes).
    cases = ceiling.cases(["16x4096x4096"], ["int8", "float16"], [17])
    assert [c.label for c in cases] == ["16x4096x4096 int8", "16x4096x4096 float16", "bytes"]
    assert cases[0].nbytes == 16 * 4096 + 4096 * 4096 + 16 * 4096 * 4
    assert cases[1].nbytes == 2 * (16 * 4096 + 4096 * 4096) + 16 * 4096 * 4
    assert cases[2].nbytes == 32  # 17 bytes: two 16-byte loads
    assert ceiling.cases(["1x1x1"], ["int8"], [])[0].nbytes == 16


def test_the_read_ceiling_tries_only_configurations_that_fit_an_sm():
    configs = ceiling.configs(132)
    assert len(configs) == 2 * 9  # both load depths; 1 or 2 blocks of up to 1024, 4 of 512, 8 of 256
    assert all(c.grid // 132 * c.block <= ceiling.THREADS_PER_SM and c.grid % 132 == 0 for c in configs)
    assert {c.kernel for c in configs} == {"read_ceiling_4", "read_ceiling_8"}


def test_the_read_ceiling_gives_shares_of_bandwidth():
    assert ceiling.share_of_hbm(4_800_000, 1.0, 4.8) == pytest.approx(100.0)
    assert ceiling.share_of_hbm(4_800_000, 2.0, 4.8) == pytest.approx(50.0)
    assert ceiling.share_of_hbm(1, 1.0, None) != ceiling.share_of_hbm(1, 1.0, None)  # nan: no datasheet entry
    frame = ceiling.table([{"case": "bytes", "bytes": 9_600_000, "us": 2.0, "kernel": "read_ceiling_4", "grid": 264,
                            "block": 512}], 4.8)
    assert frame["% of HBM"].iloc[0] == pytest.approx(100.0) and frame["TB/s"].iloc[0] == pytest.approx(4.8)


def test_the_read_ceiling_refuses_to_run_with_nothing_to_read(capsys):
    with pytest.raises(SystemExit):
        ceiling.main([])
    assert "give --shape or --bytes" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None and os.environ.get("MATMUL_STUDY_REQUIRE_NVCC") != "1",
                    reason="nvcc not on PATH")
def test_the_read_ceiling_kernels_compile(tmp_path):
    result = kernels.compile_with_nvcc(kernels.READ_CEILING_SOURCE, "sm_90a", tmp_path)
    assert result.returncode == 0, result.stderr
    cubin = (tmp_path / "module.cubin").read_bytes()
    assert all(name in cubin for name in (b"read_ceiling_4", b"read_ceiling_8", b"read_ceiling_empty"))


def test_the_read_ceiling_says_what_is_missing_without_a_gpu(monkeypatch, capsys):
    def unavailable(*_):
        raise ceiling.GpuUnavailable("PyCUDA is not installed; pip install -e '.[gpu]'")

    monkeypatch.setattr(ceiling.Reader, "__init__", unavailable)
    assert ceiling.main(["--bytes", "1024"]) == 1
    assert "pip install -e '.[gpu]'" in capsys.readouterr().err
