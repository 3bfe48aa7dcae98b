"""Backends: what runs a method. Each says whether it can run here (and why not), and which versions to record.

numpy runs on the CPU; PyCUDA compiles and launches our kernels; CuPy calls cuBLAS; nvmath-python's low-level
bindings call cuBLASLt (the FP8 GEMM, which cuBLAS's gemmEx does not offer). A torch or Triton line would be one more
record here. Everything is imported lazily: a CPU-only install imports none of them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable

CPU_ONLY_COMMAND = "snakemake --cores 1 --config 'methods=[\"numpy\"]'"


def module_available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class Backend:
    name: str
    on_gpu: bool
    # The import it needs, and how a user gets it.
    module: str
    install: str
    # The function that builds a launcher over a GPU job's buffers (None: CPU): one of matmul_study.launch.launchers,
    # or else the function of that name in its own module matmul_study.launch.<name>, imported only when a job needs
    # it. launchers.make looks it up, so this module imports nothing of the package.
    launcher: str | None = None

    def available(self, have_module: Callable[[str], bool] = module_available) -> tuple[bool, str]:
        """(True, "") or (False, why not, with the command that installs it). The versions a job records come
        from the device and host environments (measure.gpu_device.device_environment,
        measure.environment.host_environment)."""
        if have_module(self.module):
            return True, ""
        return False, f"{self.module} is not installed ({self.install})"


NUMPY = Backend("numpy", on_gpu=False, module="numpy", install="pip install numpy")
PYCUDA = Backend("pycuda", on_gpu=True, module="pycuda", install="pip install -e '.[gpu]'", launcher="kernel")
CUBLAS = Backend("cupy", on_gpu=True, module="cupy", install="pip install -e '.[cublas]'", launcher="cublas")
# find_spec("nvmath") looks for the package without importing it: importing nvmath loads CUDA libraries, and
# finding a submodule (nvmath.bindings) would import the package first.
CUBLASLT = Backend("nvmath", on_gpu=True, module="nvmath", install="pip install -e '.[fp8]'", launcher="cublaslt")
