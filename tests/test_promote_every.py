"""Promotion in chunks of k steps (WGMMA_WS_PROMOTE_EVERY, kernels/warp_specialized/mainloop.cuh): the `promote2`
builds of the FP8 and 3xTF32 rungs are `promote` with each column quarter's wgmmas run over two k steps' stages
before the quarter's sum is added in fp32. The GPU tests (test_gpu_kernels.py) verify them on odd shapes with the
other builds; these check the contract and the code nvcc makes of it."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

import pytest

from matmul_study.core import dtypes, registry, specs
from matmul_study.launch import kernels
from test_kernels_compile import needs_nvcc

RUNGS = {"wgmma_fp8": "float8_e4m3", "wgmma_3xtf32": "float32"}


@pytest.mark.parametrize("method", RUNGS)
def test_the_chunked_build_is_promote_with_two_k_steps_per_promoted_sum(method):
    m = registry.get(method)
    promote, chunked = m.variant("promote"), m.variant("promote2")
    assert chunked.config == replace(promote.config, promote_every=2)
    assert chunked.accuracy == promote.accuracy == specs.PROMOTED
    assert "WGMMA_WS_PROMOTE_EVERY=2" in chunked.defines and "WGMMA_WS_PROMOTE_EVERY=1" in promote.defines
    problem = specs.Problem(4096, 4096, 4096, 0, dtypes.get(RUNGS[method]))
    assert chunked.launch(problem) == promote.launch(problem)
    # Asked for by name: the heuristic picks among builds measured on a GPU.
    names = tuple(v.name for v in m.variants)
    for shape in ((512, 512, 512), (4096, 4096, 4096), (8192, 8192, 8192)):
        assert m.choose(specs.Problem(*shape, 0, dtypes.get(RUNGS[method])), names).variant != "promote2"


def build(method: str, variant: str, tmp_path, target: str, extra: tuple[str, ...] = (),
          options: list[str] | None = None) -> subprocess.CompletedProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, [(RUNGS[method], 0)], variant))
    options = [*(options or kernels.compile_options(method, variant)), *extra]
    return subprocess.run(kernels.nvcc_command(source, tmp_path / f"module.{target}", "sm_90a", options, target),
                          capture_output=True, text=True)


QUARTER = {"wgmma_fp8": r"wgmma\.mma_async\.sync\.aligned\.m64n64k32\.f32\.e4m3\.e4m3",
           "wgmma_3xtf32": r"wgmma\.mma_async\.sync\.aligned\.m64n64k8\.f32\.tf32\.tf32"}


@needs_nvcc
@pytest.mark.parametrize("method", RUNGS)
def test_a_chunk_runs_each_quarter_over_both_steps_and_an_odd_last_step_alone(method, tmp_path):
    wgmmas = {}
    for variant in ("promote", "promote2"):
        result = build(method, variant, tmp_path / variant, "ptx")
        assert result.returncode == 0, result.stderr
        wgmmas[variant] = len(re.findall(QUARTER[method], (tmp_path / variant / "module.ptx").read_text()))
    # A step is 4 wgmmas of each of 4 quarters (k 128 of e4m3 in k32, k 32 of tf32 in k8): 16. The chunked build
    # issues a chunk of two steps (32) and, for an item's odd last step, one step (16).
    assert wgmmas == {"promote": 16, "promote2": 48}


@needs_nvcc
@pytest.mark.parametrize("method", RUNGS)
def test_the_chunked_build_keeps_its_wgmmas_pipelined(method, tmp_path):
    # ptxas says where it serialises the wgmmas (C7514, C7515: "Potential Performance Loss"). Its few spills
    # (nvcc 13.0: 36 bytes in FP8, 20 in 3xTF32) lie in the set-up and the epilogue, outside the k loop (SASS).
    result = build(method, "promote2", tmp_path, "cubin", ("-Xptxas", "-v"))
    assert result.returncode == 0, result.stderr
    assert "Potential Performance Loss" not in result.stdout + result.stderr


@needs_nvcc
@pytest.mark.parametrize("variant,every,message", [
    ("bn128_promote", 2, "WGMMA_WS_PROMOTE_EVERY: 1, or more for promoted builds in column parts"),
    ("promote_rs", 2, "WGMMA_WS_PROMOTE_EVERY: 1, or more for promoted builds in column parts"),
    ("promote", 4, "below WGMMA_WS_STAGES"),
    ("promote", 0, "WGMMA_WS_PROMOTE_EVERY: k steps per promoted sum, at least 1"),
])
def test_a_chunk_where_the_build_cannot_hold_one_fails_to_compile(variant, every, message, tmp_path):
    # Chunks are for the promoted quarters with A from shared memory, and must leave the producer a stage.
    options = [o.replace("WGMMA_WS_PROMOTE_EVERY=1", f"WGMMA_WS_PROMOTE_EVERY={every}")
               for o in kernels.compile_options("wgmma_fp8", variant)]
    result = build("wgmma_fp8", variant, tmp_path, "cubin", options=options)
    assert result.returncode != 0 and message in result.stderr, result.stderr
