#!/usr/bin/env python3
"""Would a narrower clock band make burst rates reproduce between two runs? An offline check on two results.csv.

For each clock band (keep the samples whose SM clock, read before and after, was at least F x the maximum), the
median of each GPU job's kept samples in both runs, and how many jobs agree within 3 %. Uses only the per-sample
times and clocks the results already hold; needs no GPU.

  python bench/burst_band.py FIRST/results.csv SECOND/results.csv
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

KEYS = ["method", "dtype", "block", "m", "k", "n"]
BANDS = (0.0, 0.90, 0.95, 0.97, 0.99, 1.0)


def _floats(text) -> np.ndarray:
    return np.array([float(x) if x not in ("", "nan") else np.nan for x in str(text).split(";")])


def band_rates(path: str, fraction: float, min_samples: int = 5) -> dict:
    d = pd.read_csv(path)
    d = d[(d["status"] == "passed") & (d["env_device_kind"] == "gpu")]
    out = {}
    for r in d.itertuples():
        times, clocks = _floats(r.timing_times_s), _floats(r.gpu_sm_clock_per_sample_mhz)
        kept = times[clocks >= fraction * r.gpu_sm_clock_max_mhz] if len(clocks) == len(times) else times
        out[tuple(getattr(r, k) for k in KEYS)] = (2 * r.m * r.k * r.n / np.median(kept) / 1e9
                                                   if len(kept) >= min_samples else np.nan)
    return out


def main(first: str, second: str) -> int:
    for fraction in BANDS:
        a, b = band_rates(first, fraction), band_rates(second, fraction)
        changes = sorted(((abs(b[k] / a[k] - 1), k) for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k])),
                         reverse=True)
        within = sum(c <= 0.03 for c, _ in changes)
        worst = "; ".join(f"{k[0]} {k[1]} {k[3]}³ {c:.1%}" for c, k in changes[:3])
        print(f"clock >= {fraction:.2f} x max: {within} of {len(changes)} within 3 % ({within / len(changes):.1%}), "
              f"{len(a) - len(changes)} without {5} samples; worst: {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
