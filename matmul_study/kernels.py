"""CUDA source generation and compilation.

Each method's `kernels/*.cu` file defines a `__device__` template; here we append `extern "C"` wrappers, one
per (dtype, block) instance, so the compiled module exposes plain names. `kernels/hold_stream.cu` is not a
method but a measurement helper (see gpu.StreamHold). The same source and flags compile with
PyCUDA (on a GPU machine) and with plain nvcc (in CI, no driver needed).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import registry

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
COMPILE_OPTIONS = ["-std=c++17", "-O3", "-lineinfo"]
# The measurement helper that holds a stream while a batch is queued (not a method; see gpu.StreamHold).
HOLD_STREAM_SOURCE = '#include "hold_stream.cu"\n'


def symbol(method: str, dtype: str, block: int) -> str:
    """The extern "C" name of one instance; block 0 for methods without a template block."""
    return f"{method}_{dtype}_b{block}"


def template_block(method: str, block: int) -> int:
    """Blocks that are only launch parameters share one compiled instance (block 0)."""
    return block if registry.get(method).block_in_template else 0


def wrapper(method: str, dtype: str, block: int) -> str:
    m = registry.get(method)
    tin, tacc = registry.CTYPES[dtype]
    call = m.template.format(T=tin, Acc=tacc, BLOCK=block)
    return (
        f'extern "C" __global__ void {symbol(method, dtype, block)}('
        f"const {tin}* __restrict__ A, const {tin}* __restrict__ B, {tacc}* __restrict__ C, "
        f"int m, int n, int k)\n{{\n    {call}(A, B, C, m, n, k);\n}}\n"
    )


def module_source(method: str, instances: list[tuple[str, int]]) -> str:
    """Source for one method's module: its .cu file plus a wrapper per (dtype, block) instance."""
    m = registry.get(method)
    if m.source is None:
        raise ValueError(f"method {method!r} has no CUDA source")
    unique = sorted({(d, template_block(method, b)) for d, b in instances})
    body = "\n".join(wrapper(method, d, b) for d, b in unique)
    return f'#include "{m.source}"\n\n{body}'


def compile_with_pycuda(source: str, arch: str) -> bytes:
    """Compile to a cubin through PyCUDA (needs PyCUDA, not a GPU)."""
    from pycuda.compiler import compile as pycuda_compile

    return pycuda_compile(
        source,
        no_extern_c=True,
        arch=arch,
        options=list(COMPILE_OPTIONS),
        include_dirs=[str(KERNEL_DIR)],
    )


def nvcc_command(source_file: Path, cubin: Path, arch: str) -> list[str]:
    nvcc = shutil.which("nvcc") or "nvcc"
    return [nvcc, "--cubin", f"-arch={arch}", *COMPILE_OPTIONS, f"-I{KERNEL_DIR}", "-o", str(cubin), str(source_file)]


def compile_with_nvcc(source: str, arch: str, workdir: Path) -> subprocess.CompletedProcess:
    """Compile with plain nvcc, as CI does; returns the finished process (check returncode/stderr)."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "module.cu"
    src.write_text(source)
    return subprocess.run(nvcc_command(src, workdir / "module.cubin", arch), capture_output=True, text=True)


def compile_cubin(method: str, dtype: str, block: int, arch: str, output: str) -> None:
    """Compile one (method, dtype, block) instance to `output`, detecting the arch from the device if "auto"."""
    if arch == "auto":
        from .gpu import device_arch

        arch = device_arch()
    source = module_source(method, [(dtype, block)])
    print(f"compiling {method} {dtype} block {block} for {arch} with options {COMPILE_OPTIONS}")
    print(source)
    cubin = compile_with_pycuda(source, arch)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_bytes(cubin)
    print(f"wrote {output} ({len(cubin)} bytes)")
