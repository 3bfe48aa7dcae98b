#!/usr/bin/env python3
"""Which burst rule makes burst rates reproduce between two runs? An offline check on two results.csv.

Recomputes each GPU job's burst rate from the per-sample times and clocks the results hold, under two families
of rules, and counts the jobs whose rates in both runs agree within 3 %:
- clock bands: keep the samples whose SM clock, read before and after, was at least F x the maximum;
- the plateau rule (the pipeline's, timing.select_burst): the 0.9 clock band, then the samples within BAND of
  the time the SAMPLES fastest of them beat.
Runs measured before the cool-downs between samples (results before 2026-11-22 evening) hold fewer full-clock
samples than the pipeline now takes, so this check is the harder one for them.
Needs no GPU.

  python bench/burst_band.py FIRST/results.csv SECOND/results.csv
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from matmul_study.timing import select_burst

KEYS = ["method", "dtype", "block", "m", "k", "n"]
CLOCK_BANDS = (0.0, 0.90, 0.95, 0.97, 0.99, 1.0)
PLATEAUS = ((3, 0.02), (5, 0.01), (5, 0.02), (5, 0.03), (8, 0.02))  # (samples, band)
MIN_SAMPLES = 5


def _floats(text) -> np.ndarray:
    return np.array([float(x) if x not in ("", "nan") else np.nan for x in str(text).split(";")])


def _jobs(path: str):
    d = pd.read_csv(path)
    d = d[(d["status"] == "passed") & (d["env_device_kind"] == "gpu")]
    for r in d.itertuples():
        times, clocks = _floats(r.timing_times_s), _floats(r.gpu_sm_clock_per_sample_mhz)
        if len(clocks) != len(times):
            clocks = np.full(len(times), np.nan)
        yield tuple(getattr(r, k) for k in KEYS), 2 * r.m * r.k * r.n, times, clocks, r.gpu_sm_clock_max_mhz


def clock_band_rates(path: str, fraction: float, min_samples: int = MIN_SAMPLES) -> dict:
    out = {}
    for key, flops, times, clocks, top in _jobs(path):
        kept = times[clocks >= fraction * top] if np.isfinite(clocks).all() else times
        out[key] = flops / np.median(kept) / 1e9 if len(kept) >= min_samples else np.nan
    return out


def plateau_rates(path: str, samples: int, band: float) -> dict:
    out = {}
    for key, flops, times, clocks, top in _jobs(path):
        clocks = list(clocks) if np.isfinite(clocks).all() else []
        burst = select_burst(list(times), clocks, clocks, 0.9 * top if clocks else None, MIN_SAMPLES, samples, band)
        out[key] = flops / burst.median_s / 1e9 if burst.median_s else np.nan
    return out


def agreement(label: str, a: dict, b: dict) -> str:
    changes = sorted(((abs(b[k] / a[k] - 1), k) for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k])),
                     reverse=True)
    within = sum(c <= 0.03 for c, _ in changes)
    worst = "; ".join(f"{k[0]} {k[1]} {k[3]}³ {c:.1%}" for c, k in changes[:3])
    return (f"{label}: {within} of {len(changes)} within 3 % ({within / len(changes):.1%}), "
            f"{len(a) - len(changes)} without a rate; worst: {worst}")


def main(first: str, second: str) -> int:
    for fraction in CLOCK_BANDS:
        print(agreement(f"clock >= {fraction:.2f} x max", clock_band_rates(first, fraction),
                        clock_band_rates(second, fraction)))
    for samples, band in PLATEAUS:
        print(agreement(f"plateau: within {band:.0%} of the {samples} fastest",
                        plateau_rates(first, samples, band), plateau_rates(second, samples, band)))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
