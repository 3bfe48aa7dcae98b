"""Cross-check the pipeline's cuBLAS rows against CuPy's own gemmEx, timed directly with CuPy events.

Usage (GPU machine, after a study): python bench/cublas_check.py results/tables/results.csv
Prints, per dtype and size, CuPy's median TF/s, the pipeline's burst TF/s and their ratio.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

CASES = {  # dtype: (cupy input dtype or None for bf16 bits, cudaDataType, compute type)
    "bfloat16": (None, 14, 68),   # CUDA_R_16BF, CUBLAS_COMPUTE_32F
    "tf32": ("float32", 0, 77),   # CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32
    "float16": ("float16", 2, 68),
}


def cupy_gemm_tflops(dtype: str, size: int, reps: int = 20) -> float:
    import cupy
    from cupy_backends.cuda.libs import cublas

    store, data_type, compute = CASES[dtype]
    x = cupy.random.uniform(-5, 5, (2, size, size), dtype=cupy.float32)
    if store is None:  # bf16 as raw bits: the top half of each fp32
        inputs = (x.view(cupy.uint32) >> 16).astype(cupy.uint16)
    else:
        inputs = x.astype(store)
    a, b = inputs[0], inputs[1]
    c = cupy.empty((size, size), dtype=cupy.float32)
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    handle = cupy.cuda.device.get_cublas_handle()

    def gemm():
        cublas.gemmEx(handle, 0, 0, size, size, size, one.ctypes.data, b.data.ptr, data_type, size, a.data.ptr,
                      data_type, size, zero.ctypes.data, c.data.ptr, 0, size, compute, -1)

    for _ in range(3):
        gemm()
    times = []
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(reps):
        start.record()
        gemm()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return 2 * size**3 / float(np.median(times)) / 1e12


def main(results_csv: str) -> int:
    df = pd.read_csv(results_csv)
    rows = df[(df["method"] == "cublas") & df["dtype"].isin(CASES)]
    print(f"{'dtype':>9} {'size':>5} {'CuPy TF/s':>10} {'pipeline TF/s':>14} {'pipeline / CuPy':>16}")
    for r in rows.sort_values(["dtype", "m"]).itertuples():
        if r.m != r.k or r.k != r.n or r.m < 1024:
            continue
        direct = cupy_gemm_tflops(r.dtype, r.m)
        ours = r.gflops / 1e3
        print(f"{r.dtype:>9} {r.m:>5} {direct:>10.1f} {ours:>14.1f} {ours / direct:>16.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
