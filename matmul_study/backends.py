"""Backends: what runs a method. Each says whether it can run here (and why not), and which versions to record.

numpy runs on the CPU; PyCUDA compiles and launches our kernels; CuPy calls cuBLAS. A torch or Triton line
would be one more record here. Everything is imported lazily: a CPU-only install imports none of them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

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
    # Distribution names whose versions go into every result of this backend.
    packages: tuple[str, ...] = ()
    # The function of matmul_study.launchers that builds a launcher over a GPU job's buffers (None: CPU);
    # launchers.make looks it up, so this module imports nothing of the package.
    launcher: str | None = None

    def available(self) -> tuple[bool, str]:
        """(True, "") or (False, why not, with the command that installs it)."""
        if module_available(self.module):
            return True, ""
        return False, f"{self.module} is not installed ({self.install})"

    def versions(self) -> dict[str, str]:
        from .environment import version

        return {package: version(package) for package in self.packages}


NUMPY = Backend("numpy", on_gpu=False, module="numpy", install="pip install numpy", packages=("numpy",))
PYCUDA = Backend("pycuda", on_gpu=True, module="pycuda", install="pip install -e '.[gpu]'", packages=("pycuda",),
                 launcher="kernel")
CUBLAS = Backend("cupy", on_gpu=True, module="cupy", install="pip install -e '.[cublas]'",
                 packages=("cupy-cuda13x",), launcher="cublas")
BACKENDS = {b.name: b for b in (NUMPY, PYCUDA, CUBLAS)}
