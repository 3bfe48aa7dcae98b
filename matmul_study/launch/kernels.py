"""CUDA source generation and compilation.

Each method's `kernels/*.cu` file defines a `__device__` template; here we append `extern "C"` wrappers, one
per (dtype, block) instance, so the compiled module exposes plain names. `kernels/hold_stream.cu` is not a
method but a measurement helper (see timing.StreamHold). The same source and flags compile with PyCUDA (on a
GPU machine) and with plain nvcc (in CI, no driver needed).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from matmul_study.core import dtypes, registry

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"
COMPILE_OPTIONS = ("-std=c++17", "-O3", "-lineinfo")
# The measurement helper that holds a stream while a batch is queued (not a method; see timing.StreamHold).
HOLD_STREAM_SOURCE = '#include "hold_stream.cu"\n'
# The measurement helper that only reads N bytes (bench/read_ceiling.py: the ceiling of a kernel that must read them).
READ_CEILING_SOURCE = '#include "read_ceiling.cu"\n'
# The byte transpose that the int8 rung and cuBLAS's int8 call run before their GEMM (launchers.ByteTransposedOperand).
TRANSPOSE_BYTES_SOURCE = '#include "transpose_bytes.cu"\n'
# The copy of rows between pitches that padded operands and a library's padded C take (operands.RowCopy).
COPY_ROWS_SOURCE = '#include "copy_rows.cu"\n'
# A quoted include at the start of a line (one in a // comment is not); <...> names the toolkit's headers.
QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def included_files(source: Path, kernel_dir: Path = KERNEL_DIR) -> list[Path]:
    """Every file that `source` includes with #include "...", directly or through another, sorted. A name is looked
    up as nvcc does, in the including file's folder first, then in `kernel_dir` (the compile's -I); one found in
    neither is a toolkit header and left out. #if is not evaluated: a file that only some -D includes is listed for
    every build (a needless rebuild, never a missed one)."""
    source = Path(source).resolve()
    return [p for p in _included(source.read_text(), source.parent, Path(kernel_dir)) if p != source]


def _included(text: str, folder: Path, kernel_dir: Path) -> list[Path]:
    found: set[Path] = set()
    pending = [(text, folder)]
    while pending:
        text, folder = pending.pop()
        for name in QUOTED_INCLUDE.findall(text):
            path = next((p.resolve() for p in (folder / name, kernel_dir / name) if p.is_file()), None)
            # A file seen before is not read again: include guards and #pragma once make cycles legal.
            if path is not None and path not in found:
                found.add(path)
                pending.append((path.read_text(), path.parent))
    return sorted(found)


def variant_name(method: str, variant: str | None) -> str | None:
    """The registered variant's name, or None for the default build (None, "" or "default"); an unknown name
    raises KeyError naming the method and its variants."""
    name = registry.get(method).variant(variant).name
    return None if name == "default" else name


def symbol(method: str, dtype: str, block: int, variant: str | None = None) -> str:
    """The extern "C" name of one instance; block 0 for methods without a template block. A variant's instances
    carry its name (non-identifier characters as "_"), so that its kernel is told apart in a profile."""
    name = None if variant in (None, "", "default") else variant_name(method, variant)
    tag = "" if name is None else "_" + re.sub(r"\W", "_", name)
    return f"{method}{tag}_{dtype}_b{block}"


def template_block(method: str, block: int) -> int:
    """Blocks that are only launch parameters share one compiled instance (block 0)."""
    return block if registry.get(method).block_in_template else 0


def target(method: str, arch: str) -> str:
    """The nvcc target of a method on `arch`: wgmma and setmaxnreg need the arch-specific sm_90a."""
    base = arch.removesuffix("a")
    return base + "a" if registry.get(method).requires.arch_specific else base


def compile_options(method: str, variant: str | None = None, arch: str | None = None) -> list[str]:
    """nvcc options of a method's module: the common ones, the method's own, its launch contract's -D definitions
    for the target `arch` (Method.contract_defines; kernel 07's configuration depends on the target, and without
    an arch its entries that need one fail to compile), then the variant's -D definitions; a variant's definition
    replaces the contract's of the same name (a build with a tile of its own, kernel 10's decode builds)."""
    m = registry.get(method)
    contract = m.contract_defines(arch) if m.contract_defines else ()
    defines = {d.partition("=")[0]: d for d in (*contract, *m.variant(variant).defines)}
    return [*COMPILE_OPTIONS, *m.compile_options, *(f"-D{d}" for d in defines.values())]


def wrapper(method: str, dtype: str, block: int, variant: str | None = None) -> str:
    m = registry.get(method)
    d = dtypes.get(dtype)
    call = m.template.format(T=d.c_input, Acc=d.c_accumulator, BLOCK=block)
    limits = m.variant(variant).launch_bounds or m.launch_bounds
    bounds = f"__launch_bounds__({limits[0]}, {limits[1]}) " if limits else ""
    if m.tensor_maps:
        # TMA reads A and B through tensor maps passed by value; the kernel gets their parameter-space address.
        params = "const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b"
        operands = "&tmap_a, &tmap_b"
    else:
        params = f"const {d.c_input}* __restrict__ A, const {d.c_input}* __restrict__ B"
        operands = "A, B"
    params += f", {d.c_output}* __restrict__ C, int m, int n, int k"
    types = {"workspace": f"{d.c_accumulator}* __restrict__",  # its partial tiles' accumulators (double in fp64)
             "scales": "const float* __restrict__", "stream_b": "int"}
    extra = trailing_arguments(method, dtype, variant)
    params += "".join(f", {types[name]} {name}" for name in extra)
    # The kernel function takes them in TRAILING_ORDER: one the build lacks before one it takes is a null pointer
    # (a workspace before the scales, both before the L2 flag).
    last = max((TRAILING_ORDER.index(name) for name in extra), default=-1)
    args = "".join(f", {name if name in extra else 'nullptr'}" for name in TRAILING_ORDER[:last + 1])
    return (
        f'extern "C" __global__ void {bounds}{symbol(method, dtype, block, variant)}({params})\n{{\n'
        f"    {call}({operands}, C, m, n, k{args});\n}}\n"
    )


# The arguments a kernel function may take after k, in the order it takes them.
TRAILING_ORDER = ("workspace", "scales", "stream_b")


def trailing_arguments(method: str, dtype: str, variant: str | None = None) -> tuple[str, ...]:
    """The arguments a generated kernel takes after k, in order (TRAILING_ORDER), which its launcher passes: a
    build's workspace (specs.Variant.workspace, allocated by the launcher), then the scales: a scaled dtype's
    (DeviceBuffers.scales) or those the method's pre-pass writes (Prepass.scales), then B's L2 flag, an int, where
    the method chooses B's L2 policy at launch (specs.Method.stream_b)."""
    m = registry.get(method)
    taken = {"workspace": m.variant(variant).workspace is not None,
             "scales": dtypes.get(dtype).scaled or (m.prepass is not None and m.prepass.scales is not None),
             "stream_b": m.stream_b is not None}
    return tuple(name for name in TRAILING_ORDER if taken[name])


def module_source(method: str, instances: list[tuple[str, int]], variant: str | None = None) -> str:
    """Source for one method's module: its .cu file plus a wrapper per (dtype, block) instance. A variant's module
    is the same source under its own names; its -D definitions come with compile_options(method, variant)."""
    m = registry.get(method)
    if m.source is None:
        raise ValueError(f"method {method!r} has no CUDA source")
    unique = sorted({(d, template_block(method, b)) for d, b in instances})
    body = "\n".join(wrapper(method, d, b, variant) for d, b in unique)
    return f'#include "{m.source}"\n\n{body}'


def compile_with_pycuda(source: str, arch: str, options: list[str] | tuple[str, ...] = COMPILE_OPTIONS,
                        target: str = "cubin") -> bytes:
    """Compile to a cubin through PyCUDA (needs PyCUDA, not a GPU). `arch` may be arch-specific (sm_90a); target
    "ptx" with a virtual arch (compute_86) gives PTX, which the driver compiles for the GPU it is loaded on.

    The result is kept in build_cache_dir() under a key of everything it depends on (build_key). PyCUDA has a
    cache of its own, but finds its entries by running the preprocessor (nvcc -E) on the source first: 0.1 s of
    every GPU job, which builds the stream-hold helper (timing.StreamHold) on each start, and of every compile step:
    its own cache is off (cache_dir=False)."""
    key = build_key(source, arch, options, target)
    cached = build_cache_dir() / f"{key}.{target}"
    try:
        return cached.read_bytes()
    except OSError:
        pass
    from pycuda.compiler import compile as pycuda_compile

    binary = pycuda_compile(source, no_extern_c=True, arch=arch, options=list(options),
                            include_dirs=[str(KERNEL_DIR)], target=target, cache_dir=False)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f".{cached.name}.{os.getpid()}.part")
        partial.write_bytes(binary)
        os.replace(partial, cached)
    except OSError:
        pass  # an unwritable cache costs the next build a compile, nothing else
    return binary


def build_cache_dir() -> Path:
    """Where compile_with_pycuda keeps its builds: $MATMUL_STUDY_BUILD_CACHE, else matmul_study/ in the user's
    cache folder (XDG_CACHE_HOME, else ~/.cache)."""
    if os.environ.get("MATMUL_STUDY_BUILD_CACHE"):
        return Path(os.environ["MATMUL_STUDY_BUILD_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "matmul_study" / "builds"


def build_key(source: str, arch: str, options, target: str) -> str:
    """A build's identity: its source, arch, options and target, the name and text of every file the source
    includes (included_files; PyCUDA compiles it in a folder of its own, so names resolve in KERNEL_DIR), and the
    compiler (nvcc's path, size and time stamp, PyCUDA's version)."""
    import hashlib

    digest = hashlib.sha256(repr((source, arch, tuple(options), target)).encode())
    for path in _included(source, KERNEL_DIR, KERNEL_DIR):
        digest.update(os.path.relpath(path, KERNEL_DIR).encode() + b"\0" + path.read_bytes() + b"\0")
    nvcc = shutil.which("nvcc")
    if nvcc:
        stat = Path(nvcc).resolve().stat()
        digest.update(f"{Path(nvcc).resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    try:
        import pycuda

        digest.update(pycuda.VERSION_TEXT.encode())
    except ImportError:
        pass
    return digest.hexdigest()[:32]


def nvcc_command(source_file: Path, output: Path, arch: str, options=COMPILE_OPTIONS, target="cubin") -> list[str]:
    """nvcc writing `output` as a cubin, or as PTX with target "ptx"."""
    nvcc = shutil.which("nvcc") or "nvcc"
    # -gencode with an explicit code= keeps nvcc from adding a plain sm_90 pass that rejects wgmma.
    compute = "compute_" + arch.removeprefix("sm_")
    return [nvcc, f"--{target}", f"-gencode=arch={compute},code={arch}", *options, f"-I{KERNEL_DIR}", "-o", str(output),
            str(source_file)]


# Errors of the moment in starting a process: no memory or process slot free (ENOMEM, EAGAIN), a signal (EINTR), and
# EFAULT from the exec of a busy, many-threaded parent (seen on a loaded two-core runner). Such a start is tried again;
# a compile that ran and failed is not, nor a missing or unrunnable nvcc (ENOENT, EACCES).
SPAWN_RETRIED = frozenset({errno.ENOMEM, errno.EAGAIN, errno.EINTR, errno.EFAULT})
SPAWN_ATTEMPTS = 3


def run_nvcc(command: list[str]) -> subprocess.CompletedProcess:
    """Run an nvcc `command`, capturing its text; a start that fails with an error in SPAWN_RETRIED is tried again,
    up to SPAWN_ATTEMPTS starts in all."""
    for attempt in range(1, SPAWN_ATTEMPTS):
        try:
            return subprocess.run(command, capture_output=True, text=True)
        except OSError as error:
            if error.errno not in SPAWN_RETRIED:
                raise
            time.sleep(0.5 * attempt)
    return subprocess.run(command, capture_output=True, text=True)


def compile_with_nvcc(source: str, arch: str, workdir: Path, options=COMPILE_OPTIONS) -> subprocess.CompletedProcess:
    """Compile with plain nvcc, as CI does; returns the finished process (check returncode/stderr)."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "module.cu"
    src.write_text(source)
    return run_nvcc(nvcc_command(src, workdir / "module.cubin", arch, options))


def compile_cubin(method: str, dtype: str, block: int, arch: str, output: str, variant: str | None = None) -> None:
    """Compile one (method, dtype, block) instance, of the default build or a named variant, to `output` for
    `arch` (sm_XY; the caller resolves "auto")."""
    arch = target(method, arch)
    options = compile_options(method, variant, arch)
    source = module_source(method, [(dtype, block)], variant)
    built = f" variant {variant}" if variant_name(method, variant) else ""
    print(f"compiling {method}{built} {dtype} block {block} for {arch} with options {options}")
    print(source)
    cubin = compile_with_pycuda(source, arch, options)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_bytes(cubin)
    print(f"wrote {output} ({len(cubin)} bytes)")
