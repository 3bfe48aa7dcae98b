#!/usr/bin/env python3
"""How does the card's power limiter treat a burst? A GPU probe (CuPy's cuBLAS and NVML), no pipeline.

1. From idle: back-to-back single launches for 1 s, each timed by events, with NVML's SM clock, averaged power
   and instantaneous power read after each: how long the full clock holds.
2. After the load stops: NVML's readings every 10 ms for 1.5 s: how fast power and clock come back.
3. Throttle the card (0.6 s of load), pause P, then 12 single launches: how many run at full speed after P.
Writes JSON lines to stdout.  python bench/limiter_probe.py [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import time

import cupy as cp
import pynvml

POWER_INSTANT = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)


def readings(handle) -> dict:
    out = {"clock": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
           "power_avg": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000}
    try:
        value = pynvml.nvmlDeviceGetFieldValues(handle, [POWER_INSTANT])[0]
        out["power_inst"] = value.value.uiVal / 1000 if value.nvmlReturn == 0 else None
    except Exception as exc:  # older NVML
        out["power_inst"] = f"n/a: {exc}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    lines = []

    def log(**row):
        lines.append(row)
        print(json.dumps(row), flush=True)

    log(limit_w=pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
        max_clock=pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
    for dtype, n in (("float64", 4096), ("float64", 8192), ("float16", 8192)):
        a = cp.random.rand(n, n).astype(dtype)
        b = cp.random.rand(n, n).astype(dtype)
        c = cp.empty_like(a)
        start, end = cp.cuda.Event(), cp.cuda.Event()

        def one() -> float:
            start.record()
            cp.matmul(a, b, out=c)
            end.record()
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1e3

        for _ in range(3):
            one()
        time.sleep(2.0)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            s = one()
            log(phase="load", dtype=dtype, n=n, t=round(time.perf_counter() - t0, 4),
                tflops=round(2 * n ** 3 / s / 1e12, 2), **readings(handle))
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.5:
            log(phase="idle", dtype=dtype, n=n, t=round(time.perf_counter() - t0, 4), **readings(handle))
            time.sleep(0.01)
        for pause in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.6:
                one()
            time.sleep(pause)
            rates = [round(2 * n ** 3 / one() / 1e12, 1) for _ in range(12)]
            log(phase="pause", dtype=dtype, n=n, pause_s=pause, tflops=rates, **readings(handle))
    if args.out:
        with open(f"{args.out}/limiter_probe.jsonl", "w") as f:
            f.write("\n".join(json.dumps(r) for r in lines) + "\n")


if __name__ == "__main__":
    main()
