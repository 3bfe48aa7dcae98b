"""3xTF32's sums added into C as they end (WGMMA_WS_FLUSH_EVERY; kernels/warp_specialized/mainloop.cuh, epilogue.cuh:
write_sums): the default build's 128x256 tiles, unpromoted, whose tensor-core sums of big·big's block end every few k
steps and are added into C in fp32 by L2 reductions. The GPU tests (test_gpu_kernels.py) verify them on odd shapes,
through a stream-K tail, bit for bit across launches and within 2x SGEMM's error; these check the contract and the
code nvcc makes of it."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from matmul_study.core import dtypes, registry, specs
from matmul_study.core.warp_specialized import THREE_TF32_FLUSH_EVERY
from test_kernels_compile import compile_ws_checks, needs_nvcc, with_define
from test_promote_every import build

FLUSHED = [f"flush{p}" for p in THREE_TF32_FLUSH_EVERY]


@pytest.mark.parametrize("variant", FLUSHED)
def test_a_flushed_build_is_the_default_with_its_interval_and_promoteds_class(variant):
    m = registry.get("wgmma_3xtf32")
    default, flushed = m.variant("default"), m.variant(variant)
    every = int(variant.removeprefix("flush"))
    assert flushed.config == replace(default.config, flush_every=every)
    assert f"WGMMA_WS_FLUSH_EVERY={every}" in flushed.defines and "WGMMA_WS_FLUSH_EVERY=0" in default.defines
    # its sums end in fp32 as promoted ones do: SGEMM's class, where the default's are a trade (THREE_TF32)
    assert flushed.accuracy == specs.PROMOTED and m.accuracy_of(None, "float32") == specs.THREE_TF32
    problem = specs.Problem(4096, 4096, 4096, 0, dtypes.get("float32"))
    assert flushed.launch(problem) == default.launch(problem)
    # not measured yet: the heuristic keeps its picks (promote2 for the wide tiles)
    names = tuple(v.name for v in m.variants)
    assert m.choose(problem, names).variant == "promote2"


RED_AT = re.compile(r"red\.global\.add\.v2\.f32\s+\[%rd\d+\+(\d+)\]")


@needs_nvcc
@pytest.mark.parametrize("variant", FLUSHED)
def test_a_flushed_build_adds_whole_rows_at_immediate_offsets_and_keeps_its_wgmmas(variant, tmp_path):
    code = {}
    for v in ("default", variant):
        result = build("wgmma_3xtf32", v, tmp_path / v, "ptx")
        assert result.returncode == 0, result.stderr
        code[v] = (tmp_path / v / "module.ptx").read_text()
    wgmma = r"wgmma\.mma_async\.sync\.aligned\.m64n256k8\.f32\.tf32\.tf32"
    assert len(re.findall(wgmma, code[variant])) == len(re.findall(wgmma, code["default"])) > 0
    # A write of rows inside C: a thread's 64 pairs, 32 at offsets 32 j from each of its two rows' first
    offsets = [int(o) for o in RED_AT.findall(code[variant])]
    assert sorted(set(offsets)) == [32 * j for j in range(32)] and len(offsets) % 64 == 0
    assert not RED_AT.findall(code["default"])


@needs_nvcc
@pytest.mark.parametrize("variant", FLUSHED)
def test_a_flushed_build_keeps_its_wgmmas_pipelined(variant, tmp_path):
    # ptxas says where it serialises the wgmmas (C7514, C7515): a sum ends with nothing in flight, and d is read only
    # after the wait. Its spills (nvcc 13.0: about 900 bytes) lie in the set-up of an item and around the writes,
    # outside the k loop (SASS).
    result = build("wgmma_3xtf32", variant, tmp_path, "cubin", ("-Xptxas", "-v"))
    assert result.returncode == 0, result.stderr
    assert "Potential Performance Loss" not in result.stdout + result.stderr


@needs_nvcc
def test_sums_added_into_c_refuse_the_builds_that_keep_their_sums_elsewhere(tmp_path):
    # A build that promotes in registers, splits K into a workspace, or asks for an odd interval (the second
    # warpgroup's sums end half an interval after the first's) fails the kernel's static_assert.
    config = registry.get("wgmma_3xtf32").variant(FLUSHED[-1]).config
    ok = compile_ws_checks("wgmma_3xtf32", config.defines, {}, tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    message = "WGMMA_WS_FLUSH_EVERY: 0 (off), or an even number of k steps in an unpromoted build"
    for name, defines in (("promoted", with_define(config.defines, "PROMOTE", 1)),
                          ("split", with_define(config.defines, "SPLIT_K", 4)),
                          ("odd", with_define(config.defines, "FLUSH_EVERY", 15))):
        result = compile_ws_checks("wgmma_3xtf32", defines, {}, tmp_path / name)
        assert result.returncode != 0 and message in result.stderr, f"{name}: {result.stderr}"
