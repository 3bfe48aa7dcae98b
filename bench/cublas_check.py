#!/usr/bin/env python3
"""Cross-check a study's cuBLAS rows: the same gemmEx call (build.launchers.cublas) timed now on this GPU the plain
way, one launch between two events per rep, median of the reps; no stream hold, no burst rule.

  python bench/cublas_check.py results/tables/results.csv

Prints, per dtype and square size of at least 1024, the direct median TF/s, the study's burst TF/s and their ratio.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from matmul_study.launch import launchers
from matmul_study.core import dtypes, registry, specs
from matmul_study.core.records import flops
from matmul_study.measure import inputs
from matmul_study.measure.compare import DEFAULTS
from matmul_study.measure.gpu_device import require_pycuda


def direct_tflops(dtype: str, size: int, reps: int = 20) -> float:
    cuda = require_pycuda()
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, shared with CuPy)
    import pycuda.gpuarray as gpuarray

    record = dtypes.get(dtype)
    a, b = inputs.generate(size, size, size, dtype, DEFAULTS.seed)
    buffers = launchers.DeviceBuffers(*(gpuarray.to_gpu(x.view(record.device_view)) for x in (a, b)),
                                      gpuarray.empty((size, size), record.output))
    gemm = launchers.make(registry.get("cublas"), specs.Problem(size, size, size, 0, record), buffers, None)
    start, end = cuda.Event(), cuda.Event()
    times = []
    for rep in range(reps + 3):  # the first three warm up
        start.record()
        gemm()
        end.record()
        end.synchronize()
        times.append(start.time_till(end) / 1e3)
    return flops(size, size, size) / float(np.median(times[3:])) / 1e12


def main(results_csv: str) -> int:
    rows = pd.read_csv(results_csv)
    square = (rows["m"] == rows["k"]) & (rows["k"] == rows["n"]) & (rows["m"] >= 1024)
    rows = rows[(rows["method"] == "cublas") & square]
    print(f"{'dtype':>9} {'size':>5} {'direct TF/s':>12} {'study TF/s':>11} {'study / direct':>15}")
    for r in rows.sort_values(["dtype", "m"]).itertuples():
        direct, study = direct_tflops(r.dtype, r.m), r.gflops / 1e3
        print(f"{r.dtype:>9} {r.m:>5} {direct:>12.1f} {study:>11.1f} {study / direct:>15.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
