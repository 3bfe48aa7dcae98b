"""Kernel 20 (kernels/20_mma_3xtf32.cu, method mma_3xtf32): fp32 on the tf32 tensor cores through kernel 10's
pipeline, each fragment split in registers. On the CPU: its registry facts, its pick per problem, its traffic in the
work model (fp32 operands read once, no pre-pass), and its decode builds' registers (nvcc); on a GPU, its error
against SGEMM's on the shapes it is for.

Its results on odd shapes are checked with every other kernel's in tests/test_gpu_kernels.py (the default build
on the common shapes, every decode build on the decode shapes)."""

from __future__ import annotations

import re
import subprocess

import pytest

from matmul_study.analysis.model import model
from matmul_study.core import dtypes, registry
from matmul_study.core.specs import Problem
from matmul_study.launch import kernels
from prepass_checks import needs_nvcc, rung_gpu

METHOD = "mma_3xtf32"
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


@pytest.mark.parametrize("m,n,k,build", [
    (16, 4096, 4096, "m16_splitk4"),   # decode: 32 column tiles split 4 ways, 128 blocks
    (1, 4096, 4096, "m16_splitk4"),
    (48, 4096, 14336, "m32_splitk4"),  # past 32 rows: two row tiles of 32
    (64, 4096, 4096, "m32_splitk4"),
    (128, 128, 32768, "m32_splitk32"),  # deep K, one tile of the default: 4 tiles of 32 rows split 32 ways
    (4096, 4096, 4096, "default"),     # tiles fill the GPU
])
def test_the_pick_streams_b_through_every_sm_at_a_few_rows(m, n, k, build):
    assert pick(m, n, k) == build


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
