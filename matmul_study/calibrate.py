"""Device ceilings, measured once per run: device-to-device copy bandwidth and cuBLAS's rate per precision.

These are the roofline's roof and the "% of peak" denominators. The cuBLAS rates come from ordinary verified
cuBLAS jobs (same runner, same verification), so a ceiling is never an unverified number.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import inputs, registry
from .backends import CUBLAS, module_available
from .measure import Measurement, Policy, gflops

COLUMNS = ["device_name", "ceiling", "value", "unit", "detail"]
COPY_BYTES = 4 << 30


def copy_bandwidth(cuda, policy: Policy, nbytes: int = COPY_BYTES) -> tuple[float, str]:
    """Median GB/s of a device-to-device copy, counting bytes read plus bytes written."""
    from .measure import sample, summarize

    free, _ = cuda.mem_get_info()
    nbytes = min(nbytes, int(free * 0.4)) // 4 * 4
    src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    cuda.memset_d32(src, 0x3F800000, nbytes // 4)  # ones, not zeros: nothing may shortcut the copy
    start, end = cuda.Event(), cuda.Event()

    def once() -> float:
        start.record()
        cuda.memcpy_dtod(dst, src, nbytes)
        end.record()
        end.synchronize()
        return start.time_till(end) / 1e3

    stats = summarize(sample(once, policy))
    return 2 * nbytes / stats["median_s"] / 1e9, (
        f"cuMemcpyDtoD of {nbytes / 2**30:.1f} GiB, read + write bytes over the median of {stats['reps']} "
        f"copies (rsd {stats['rsd']:.2%})")


def calibrate(config: dict, size: int = 8192) -> pd.DataFrame:
    from . import gpu
    from .device import require_pycuda

    cuda = require_pycuda()
    import pycuda.autoprimaryctx

    device = pycuda.autoprimaryctx.device.name()
    meas = Measurement.from_config(config["measurement"])
    rows = []
    bandwidth, detail = copy_bandwidth(cuda, meas.stopping)
    rows.append((device, "memory", bandwidth, "GB/s", detail))
    cublas = registry.get("cublas")
    if module_available(CUBLAS.module):
        for dtype in cublas.dtypes:
            a, b = inputs.generate(size, size, size, dtype, meas.seed, meas.low, meas.high)
            run = gpu.run(cublas, dtype, 0, a, b, meas, None)
            if run.times and all(v.passed for v in run.verifications):
                median = float(np.median(run.times))
                rows.append((device, dtype, gflops(size, size, size, median), "GFLOP/s",
                             f"cuBLAS {size}^3 through CuPy, median of {len(run.times)} verified runs"))
            else:
                rows.append((device, dtype, np.nan, "GFLOP/s", "cuBLAS failed verification: no ceiling"))
    return pd.DataFrame(rows, columns=COLUMNS)
