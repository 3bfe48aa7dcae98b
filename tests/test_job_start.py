"""What a GPU job spends before it measures: the reference's place, and CuPy's version without importing it."""

import sys
import types
from importlib import metadata

from matmul_study.core import dtypes, registry
from matmul_study.measure.gpu_device import cupy_version
from matmul_study.measure.gpu_job import checked_on_device
from matmul_study.measure.stats import Measurement, Policy


def test_small_products_are_checked_on_the_host_large_ones_on_the_device():
    meas = Measurement(Policy())
    wgmma, cublas = registry.get("wgmma_warp_specialized"), registry.get("cublas")
    fp16, fp64 = dtypes.get("float16"), dtypes.get("float64")
    assert not checked_on_device(wgmma, fp16, True, 1024**3, meas)  # whole on the host: no CuPy in the job
    assert checked_on_device(wgmma, fp16, True, 2048**3, meas)
    assert not checked_on_device(wgmma, fp16, False, 2048**3, meas)  # no CuPy: sampled on the host
    assert not checked_on_device(cublas, fp64, True, 8192**3, meas)  # never cuBLAS DGEMM against itself


def test_cupys_version_comes_from_the_module_or_its_metadata(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(__version__="14.2.0"))
    assert cupy_version() == "14.2.0"
    monkeypatch.delitem(sys.modules, "cupy")
    found = {"cupy-cuda12x": "13.6.0"}

    def version(name):
        if name not in found:
            raise metadata.PackageNotFoundError(name)
        return found[name]

    monkeypatch.setattr(metadata, "version", version)
    assert cupy_version() == "13.6.0" and "cupy" not in sys.modules  # read, not imported
    found.clear()
    assert cupy_version() == "installed (version unknown)"
