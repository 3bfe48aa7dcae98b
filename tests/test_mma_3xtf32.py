"""Kernel 20 (kernels/20_mma_3xtf32.cu, method mma_3xtf32): fp32 on the tf32 tensor cores through kernel 10's
pipeline, each fragment split in registers. On the CPU: its registry facts, its pick per problem, its traffic in the
work model (fp32 operands read once, no pre-pass), and its decode builds' registers (nvcc); on a GPU, its error
against SGEMM's on the shapes it is for.

Its results on odd shapes are checked with every other kernel's in tests/test_gpu_kernels.py (the default build
on the common shapes, every decode build on the decode shapes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from matmul_study.analysis.model import model
from matmul_study.analysis.tile_fit import table_ratios
from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem
from matmul_study.launch import kernels
from prepass_checks import needs_nvcc, rung_gpu

METHOD = "mma_3xtf32"
REPO = Path(__file__).resolve().parent.parent
FP32 = dtypes.get("float32")


def pick(m: int, n: int, k: int, sms: int = 132) -> str:
    method = registry.get(METHOD)
    return method.choose(Problem(m, n, k, 0, FP32, sms), tuple(v.name for v in method.variants)).variant


def test_it_runs_fp32_in_sgemms_class_three_tf32_products_a_multiply_add():
    method = registry.get(METHOD)
    assert method.dtypes == ("float32",) and method.products == 3 and method.compiled
    # No pre-pass: the operands are fp32 in memory and split in registers.
    assert method.prepass is None and all(method.prepass_of(v.name) is None for v in method.variants)
    # Each k step's three products are added into fp32 accumulators, so every build is in fp32's one class,
    # compared with SGEMM, and its share of peak is taken against the tf32 tensor cores it runs on.
    assert all(method.accuracy_of(v, "float32") == "" for v in (None, *(v.name for v in method.variants)))
    assert method.arithmetic_of("float32") == "tf32"
    # A rung for the shape suite, not the default study's squares.
    assert METHOD not in registry.default_methods()


def test_its_decode_builds_are_kernel_10s_of_16_and_32_rows():
    names = {v.name for v in registry.get(METHOD).variants}
    tens = {v.name for v in registry.get("mma_async_copy").variants}
    assert names <= tens and {"m16", "m32", "m16_splitk4", "m32_splitk32"} <= names
    assert not any(n.startswith("m64") for n in names)


def test_its_pick_counts_the_busiest_sms_k_steps_with_one_block_an_sm_as_two():
    # 64x8192x8192: 128 tiles of 32x128, 256 k steps. Whole tiles put one block on most SMs, which runs as long as
    # two: 2 x 257 k steps (a block's own cost counted as one more); split 2 ways, 2 x 129; 4 ways, 4 x 65. One
    # block an SM (kernel 10's rule) took the whole tiles: 0.85 of SGEMM against the split's 0.93 (an H200).
    method = registry.get(METHOD)
    choice = method.choose(Problem(64, 8192, 8192, 0, FP32, 132), tuple(v.name for v in method.variants))
    assert choice.variant == "m32_splitk2"
    assert "128 tiles of 32x128 (256 k steps each) split 2 ways: 256 blocks on 132 SMs" in choice.reason
    # More blocks than SMs: the busiest SM's count. 224 tiles split 4 ways, 7 blocks of 64 k steps (455 with each
    # block's own), against whole tiles' 2 of 256 (514) and 32 ways' 55 of 8 (495).
    assert pick(32, 28672, 8192) == "m32_splitk4"
    # The smallest tile that holds the rows; past 32 rows, row tiles of 32 (the widest built).
    assert pick(1, 4096, 4096) == pick(16, 4096, 4096) == "m16_splitk8"  # 32 tiles, 256 blocks
    assert pick(17, 4096, 4096) == "m32_splitk8"  # 32 tiles of 32 rows
    assert pick(64, 4096, 4096) == "m32_splitk4"  # 64 tiles: 256 blocks
    assert pick(48, 4096, 14336) == "m32_splitk4"
    assert pick(128, 128, 32768) == "m32_splitk32"  # deep K: 4 tiles of 32 rows, 128 blocks
    # ... but where row tiles of 32, split as far as the splits go, leave half the SMs idle, the 16-row tiles: 2
    # tiles of 32 rows split 32 ways are 64 blocks, 4 of 16 rows 128.
    choice = registry.get(METHOD).choose(Problem(64, 64, 65536, 0, FP32, 132),
                                         tuple(v.name for v in registry.get(METHOD).variants))
    assert choice.variant == "m16_splitk32" and "would leave half the SMs or more idle" in choice.reason
    assert pick(96, 96, 49152) == "m32_splitk32"  # 3 tiles of 32 rows split 32 ways: 96 blocks
    assert pick(16, 512, 96) == "m16"  # slices keep 4 k steps of 32 elements: K of 96 stays whole
    # Past kernel 10's token rows the default build, where its 128x256 tiles fill half the SMs; else decode tiles.
    assert pick(4096, 4096, 4096) == "default"
    assert pick(1000, 800, 1200) == "m32_splitk4"  # 32 default tiles
    # On a GPU of fewer SMs the same blocks are more an SM: fewer slices.
    assert pick(64, 8192, 8192, sms=16) == "m32"


def test_its_pick_holds_out_on_shapes_and_a_card_the_fit_had_not_seen():
    # Every build at 9 shapes measured after the rule was fitted, on an H100 (the fit: an H200): the pick within 6 % of
    # the fastest build at each, within 3 % at 7 (at 2 and 8 rows a split of half the slices ran 5-6 % faster).
    builds = len(registry.get(METHOD).variants) + 1  # and the default
    ratios = table_ratios([REPO / "results/reference/NVIDIA_H100/mma-3xtf32-held-out/k20-held-out.txt"])
    assert len(ratios) == 9
    close = 0
    for (name, dtype, shape), rate in ratios.items():
        assert (name, dtype, len(rate)) == (METHOD, "float32", builds), (shape, sorted(rate))
        chosen = pick(*map(int, shape.split("x")))
        assert rate[chosen] >= 0.94 * max(rate.values()), (shape, chosen, rate)
        close += rate[chosen] >= 0.97 * max(rate.values())
    assert close == 7


def test_its_pick_is_its_best_build_at_the_committed_sweep():
    # Every build at 8 shapes, x SGEMM in one process (an H200): the pick within 3 % of the fastest at each. Kernel
    # 10's rule, one block an SM, lost 7-12 % at six of them.
    builds = len(registry.get(METHOD).variants) + 1  # and the default
    ratios = table_ratios([REPO / "results/reference/NVIDIA_H200/small-problems/mma-3xtf32-fit.txt"])
    assert len(ratios) >= 8
    for (name, dtype, shape), rate in ratios.items():
        assert (name, dtype, len(rate)) == (METHOD, "float32", builds), (shape, sorted(rate))
        chosen = pick(*map(int, shape.split("x")))
        assert rate[chosen] >= 0.97 * max(rate.values()), (shape, chosen, rate)


def test_the_model_reads_fp32_operands_over_k_not_k_prime():
    # Three products a multiply-add are issued, but the parts live in registers: the bytes are kernel 10's tf32
    # build's at the same tiles, A and B read over k (the wgmma 3x rungs' pre-passes lay the parts along K' = 3k).
    ours = model(METHOD, 16, 4096, 4096, 0, "float32", "m16_splitk4")
    tf32 = model("mma_async_copy", 16, 4096, 4096, 0, "tf32", "m16_splitk4")
    assert ours["bytes_read"] == tf32["bytes_read"] and ours["bytes_written"] == tf32["bytes_written"]
    assert ours["flops_issued"] == 3 * tf32["flops_issued"]


@needs_nvcc
@pytest.mark.parametrize("variant", ["m16", "m16_splitk4", "m32", "m32_splitk32"])
def test_a_decode_build_keeps_its_fragments_parts_in_registers(tmp_path, variant):
    # ptxas's report for the build: no local memory (the 64-row tiles spilled 40-104 bytes, so they are not built).
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(METHOD, [("float32", 0)], variant))
    options = kernels.compile_options(METHOD, variant)
    command = kernels.nvcc_command(source, tmp_path / "module.cubin", "sm_90a", options)
    built = kernels.run_nvcc([*command, "-Xptxas", "-v"])
    assert built.returncode == 0, built.stderr
    report = built.stderr
    spills = [int(b) for b in re.findall(r"(\d+) bytes spill stores", report)]
    assert spills and not any(spills), report


# ------------------------------------------------------------------------------------------- on a GPU
@pytest.fixture(scope="module")
def gpu():
    return rung_gpu(METHOD)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", ["16x4096x4096", "1x4096x4096", "128x4096x4096", "1000x1200x800"])
def test_3xtf32_in_registers_errs_like_sgemm(gpu, shape):
    # Its sums promoted every k step (8 k), the error is within 2x SGEMM's (SGEMM's class: the wgmma 3xTF32 rung's
    # promoted builds run at a fifth of it at 4096^3, but cuBLAS's few-row paths sum short dot products); one tf32
    # product a multiply-add errs two orders of magnitude more (3.1e-4 against SGEMM's 1.6e-6 at 8192^3).
    from matmul_study.measure import compare

    _, check = compare.Bench().prepare(compare.make_case(METHOD, "auto", "float32", shape))
    ours, sgemm = check("ours"), check("cublas")
    errors = f"3xTF32 in registers {ours.rel_fro_error:.2e}, SGEMM {sgemm.rel_fro_error:.2e}"
    print(errors)
    assert ours.passed and sgemm.passed, errors
    assert ours.rel_fro_error <= 2 * sgemm.rel_fro_error, errors
