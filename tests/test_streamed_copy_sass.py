"""The machine code of B's streamed copies (specs.StreamB: kernels 10 and 20 copy B under an L2 evict_first policy
where the launch streams it). ptxas (CUDA 13.0) mis-encodes a cache-hinted cp.async whose shared address it splits
into a per-thread register plus a uniform one: `LDGSTS.E.BYPASS.LTC256B.128 [R84+UR0+0x800], desc[UR1][...]`, with
UR0 and UR1 never written, faults as an illegal instruction on the GPU. kernels/mma_async_copy.cuh keeps that address
in a per-thread register (an opaque zero XOR-ed into it); without it, 22 of the 37 builds of the two kernels take the
faulting form. Here every build is compiled as the pipeline compiles it and disassembled (cuobjdump, with nvdisasm:
the `test` extra's nvidia-cuda-* wheels, or a CUDA toolkit's), so that a change which lets ptxas fold the zero away
fails on a machine without a GPU, not only as a fault on one."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from matmul_study.core import registry
from matmul_study.launch import kernels
from prepass_checks import NVCC_REQUIRED, needs_nvcc  # where nvcc is required (CI), so is the disassembler

STREAMING = [name for name, m in registry.METHODS.items() if m.stream_b is not None]
BUILDS = [(method, variant) for method in STREAMING
          for variant in [None, *(v.name for v in registry.get(method).variants)]]

# A streamed copy: cp.async.cg.shared.global.L2::cache_hint.L2::256B, the only copy with a 256-byte L2 fetch.
STREAMED_COPY = re.compile(r"LDGSTS\.\S*LTC256B\S*\s+\[([^\]]*)\]")


def disassembler_bin() -> Path | None:
    """The folder that holds cuobjdump and nvdisasm: a CUDA toolkit's on the PATH, else the nvidia-cuda-cuobjdump
    and nvidia-cuda-nvdisasm wheels' (nvidia/cu13/bin)."""
    found = shutil.which("cuobjdump")
    if found and shutil.which("nvdisasm"):
        return Path(found).parent
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for folder in sorted(Path(root).glob("cu*/bin")):
            if (folder / "cuobjdump").exists() and (folder / "nvdisasm").exists():
                return folder
    return None


def streamed_copy_addresses(sass: str) -> list[str]:
    """The shared-memory address operand of every streamed copy in `sass` (cuobjdump -sass)."""
    return STREAMED_COPY.findall(sass)


def test_the_pattern_tells_the_faulting_form_from_the_per_thread_one():
    faulting = ("/*0d80*/ LDGSTS.E.BYPASS.LTC256B.128 [R84+UR0+0x800], desc[UR1][R92.64] ;\n"
                "/*0d90*/ LDGSTS.E.BYPASS.LTC128B.128 [R36+UR8+0x800], desc[UR12][R34.64], P1 ;\n")
    fine = "/*89d0*/ LDGSTS.E.BYPASS.LTC256B.128 [R33+0x4000], desc[UR16][R88.64] ;\n"
    assert streamed_copy_addresses(faulting) == ["R84+UR0+0x800"]  # the plain 128-byte copy is not one
    assert streamed_copy_addresses(fine) == ["R33+0x4000"]


def build_sass(method: str, variant: str | None, folder: Path, tools: Path) -> str:
    """`method`'s module of one build (every dtype), compiled for its sm_90 target as the pipeline compiles it, as
    cuobjdump prints its SASS."""
    m = registry.get(method)
    arch = kernels.target(method, "sm_90")
    dtypes = m.variant(variant).dtypes or m.dtypes  # those the build exists for
    source = kernels.module_source(method, [(dtype, 0) for dtype in dtypes], variant)
    built = kernels.compile_with_nvcc(source, arch, folder, kernels.compile_options(method, variant, arch))
    assert built.returncode == 0, built.stderr
    cubin = folder / "module.cubin"
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}", "NVDISASM_PATH": str(tools)}
    dump = subprocess.run([str(tools / "cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, env=env)
    assert dump.returncode == 0, dump.stderr
    return dump.stdout


@pytest.fixture(scope="module")
def sass(tmp_path_factory):
    """{(method, variant): SASS} of every build of the methods that stream B, compiled one on each core at a time."""
    tools = disassembler_bin()
    if tools is None:
        message = "cuobjdump and nvdisasm not found: pip install -e '.[test]' (or a CUDA toolkit's on the PATH)"
        if NVCC_REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    root = tmp_path_factory.mktemp("streamed-sass")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futures = {build: pool.submit(build_sass, *build, root / f"{build[0]}-{build[1] or 'default'}", tools)
                   for build in BUILDS}
        return {build: future.result() for build, future in futures.items()}


@needs_nvcc
@pytest.mark.parametrize("method,variant", BUILDS, ids=lambda x: x or "default")
def test_every_streamed_copy_addresses_shared_memory_through_a_per_thread_register(sass, method, variant):
    addresses = streamed_copy_addresses(sass[method, variant])
    assert addresses, f"{method} {variant or 'default'}: no streamed copy of B in its SASS (the flag's branch is gone)"
    uniform = sorted({a for a in addresses if "UR" in a})
    assert not uniform, (f"{method} {variant or 'default'}: {len(uniform)} streamed copies address shared memory "
                         f"through a uniform register ({', '.join(uniform[:3])}), the form ptxas mis-encodes")
