#!/usr/bin/env python3
"""The ceiling of a memory-bound GEMM on this GPU: the shortest time a kernel that only reads the GEMM's bytes takes,
launched as the study launches its kernels (a batch queued behind a held stream, back to back, L2 left warm), and
that time's share of the datasheet HBM bandwidth, beside the floor of an empty launch.

  python bench/read_ceiling.py --shape 16x4096x4096 1x4096x28672 --dtype int8 float16
  python bench/read_ceiling.py --bytes 16777216 117440512

A shape (MxNxK, as bench/compare.py takes it) stands for the bytes the report's roofline counts for it in each dtype
(matmul_study.analysis.bound.ideal_bytes: A and B read once, C written once). Each byte count is read by
kernels/read_ceiling.cu in every configuration that `configs` gives (4 or 8 loads in flight per thread, 1 to 8
blocks an SM, 256 to 1024 threads), and the fastest is printed: no kernel that must move those bytes runs faster this
way, so a GEMM's share of HBM bandwidth is to be read against this one's. Byte counts that fit the L2 cache can pass
100 %.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

from matmul_study.analysis.bound import ideal_bytes
from matmul_study.analysis.ladder import datasheet_tbps
from matmul_study.core import dtypes
from matmul_study.measure.compare import DEFAULTS, parse_shape
from matmul_study.measure.gpu_device import GpuUnavailable, device_arch, require_pycuda
from matmul_study.measure.gpu_job import held_seconds
from matmul_study.measure.timing import StreamHold, launches_per_sample

LOADS_IN_FLIGHT = (4, 8)  # read_ceiling_<U>: 16-byte loads in flight per thread
BLOCKS_PER_SM = (1, 2, 4, 8)
THREADS = (256, 512, 1024)
THREADS_PER_SM = 2048
CHUNK = 16  # bytes a load reads


@dataclass(frozen=True)
class Case:
    label: str  # the shape and dtype it stands for, or "bytes"
    nbytes: int


@dataclass(frozen=True)
class Config:
    kernel: str
    grid: int
    block: int


def cases(shapes: list[str], dtype_names: list[str], raw: list[int]) -> list[Case]:
    """The byte counts to read: each shape's ideal bytes in each dtype, then the raw counts, rounded up to whole
    16-byte chunks."""
    out = []
    for shape in shapes:
        m, n, k = parse_shape(shape)
        for name in dtype_names:
            out.append(Case(f"{m}x{n}x{k} {name}", chunks(ideal_bytes(m, k, n, name)) * CHUNK))
    out += [Case("bytes", chunks(b) * CHUNK) for b in raw]
    return out


def chunks(nbytes: float) -> int:
    return max(1, math.ceil(nbytes / CHUNK))


def configs(sms: int) -> list[Config]:
    """Every reader configuration that fits an SM's threads: both load depths, BLOCKS_PER_SM x THREADS."""
    return [Config(f"read_ceiling_{u}", sms * b, t) for u in LOADS_IN_FLIGHT for b in BLOCKS_PER_SM for t in THREADS
            if b * t <= THREADS_PER_SM]


def share_of_hbm(nbytes: int, us: float, tbps: float | None) -> float:
    """Percent of the datasheet bandwidth that nbytes in us make (nan where the device has no datasheet entry)."""
    return 100 * nbytes / (us * 1e-6) / (tbps * 1e12) if tbps else float("nan")


def table(rows: list[dict], tbps: float | None) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["MB"] = frame["bytes"] / 1e6
    frame["TB/s"] = frame["bytes"] / (frame["us"] * 1e-6) / 1e12
    frame["% of HBM"] = [share_of_hbm(b, us, tbps) for b, us in zip(frame["bytes"], frame["us"])]
    return frame[["case", "MB", "us", "TB/s", "% of HBM", "kernel", "grid", "block"]]


class Reader:
    """kernels/read_ceiling.cu's entry points on the current context, timed as bench/compare.py times (a stream
    hold, then a batch back to back)."""

    def __init__(self, largest: int):
        cuda = require_pycuda()  # says which package or driver is missing, and the command that installs it
        import pycuda.autoprimaryctx

        from matmul_study.launch.kernels import READ_CEILING_SOURCE, compile_with_pycuda

        device = pycuda.autoprimaryctx.device
        arch = device_arch(device)
        self.cuda, self.name = cuda, device.name()
        self.sms = device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        self.module = cuda.module_from_buffer(compile_with_pycuda(READ_CEILING_SOURCE, arch))
        self.hold = StreamHold(cuda, arch)
        self.data = cuda.mem_alloc(largest)
        cuda.memset_d8(self.data, 1, largest)
        self.sink = cuda.mem_alloc(4)
        self.start, self.end = cuda.Event(), cuda.Event()

    def time_us(self, config: Config, nbytes: int, samples: int) -> float:
        """Median µs a launch over `samples` batches, each as many launches as a sample of the study holds."""
        f = self.module.get_function(config.kernel)
        args = (self.data, np.uint64(nbytes // CHUNK), self.sink)

        def launch():
            f(*args, grid=(config.grid, 1, 1), block=(config.block, 1, 1))

        def per_launch_s(batch: int) -> float:
            return held_seconds(self.hold, self.start, self.end, launch, batch) / batch

        per_launch_s(3)  # warm-up
        batch = launches_per_sample(per_launch_s(1), DEFAULTS.stopping.min_launches_per_sample)
        return 1e6 * statistics.median(per_launch_s(batch) for _ in range(samples))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", nargs="+", default=[], help="MxNxK: the GEMM's ideal bytes in each --dtype")
    parser.add_argument("--dtype", nargs="+", default=["float16"], choices=dtypes.NAMES)
    parser.add_argument("--bytes", nargs="+", type=int, default=[], help="byte counts to read as they are")
    parser.add_argument("--samples", type=int, default=10, help="timed batches of each (default: 10)")
    args = parser.parse_args(argv)
    todo = cases(args.shape, args.dtype, args.bytes)
    if not todo:
        parser.error("nothing to read: give --shape or --bytes")
    try:
        reader = Reader(max(c.nbytes for c in todo))
    except GpuUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    tbps = datasheet_tbps(reader.name)
    rows = [{"case": f"empty launch ({c.grid} x {c.block})", "bytes": 0, "us": reader.time_us(c, CHUNK, args.samples),
             "kernel": c.kernel, "grid": c.grid, "block": c.block}
            for c in (Config("read_ceiling_empty", 1, 32), Config("read_ceiling_empty", reader.sms, 256))]
    for case in todo:
        timed = [(reader.time_us(c, case.nbytes, args.samples), c) for c in configs(reader.sms)]
        us, best = min(timed, key=lambda t: t[0])
        rows.append({"case": case.label, "bytes": case.nbytes, "us": us, "kernel": best.kernel, "grid": best.grid,
                     "block": best.block})
    print(f"{reader.name}, {reader.sms} SMs, datasheet HBM {tbps} TB/s")
    print(table(rows, tbps).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
