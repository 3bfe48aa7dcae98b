"""A verified job's rate and its spread, as the figures draw them: the jobs with a usable value, and per job the
factors by which the interquartile range of its timed samples (for a CPU job timed in several fresh processes,
also the range of the processes' medians) reaches below and above its rate."""

from __future__ import annotations

import numpy as np
import pandas as pd


def verified(results: pd.DataFrame, column: str = "gflops") -> pd.DataFrame:
    """Verified jobs with a positive, finite `column` (log axes cannot show zero or NaN), `column` as numbers."""
    if results.empty or column not in results or "status" not in results:
        return results.iloc[0:0]
    values = pd.to_numeric(results[column], errors="coerce")
    keep = (results["status"] == "passed") & np.isfinite(values) & (values > 0)
    return results[keep].assign(**{column: values[keep]})


def _floats(values) -> np.ndarray:
    """A list of numbers given as a list or a ';'-joined string (as the results table keeps them); empty if
    neither."""
    if isinstance(values, str):
        try:
            return np.asarray([float(x) for x in values.split(";") if x.strip()], dtype=float)
        except ValueError:
            return np.empty(0)
    if isinstance(values, (list, tuple, np.ndarray)):
        return np.asarray(values, dtype=float)
    return np.empty(0)


def rate_spread(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the factors (low, high) by which the rate's spread reaches below and above the rate: the
    interquartile range of the job's timed samples around their median (timing_times_s, else timing_iqr_s), and
    for a CPU job timed in several fresh processes also the range of the processes' medians (cpu_medians_s).
    1 where the results do not say."""
    lo, hi = np.ones(len(df)), np.ones(len(df))
    nan = pd.Series(np.nan, index=df.index)
    median = pd.to_numeric(df.get("timing_median_s", nan), errors="coerce").to_numpy()
    iqr = pd.to_numeric(df.get("timing_iqr_s", nan), errors="coerce").to_numpy()
    times = df["timing_times_s"].to_numpy() if "timing_times_s" in df else [None] * len(df)
    processes = df["cpu_medians_s"].to_numpy() if "cpu_medians_s" in df else [None] * len(df)
    for i in range(len(df)):
        t = _floats(times[i])
        t = t[np.isfinite(t) & (t > 0)]
        if t.size >= 2:
            q1, med, q3 = np.percentile(t, [25, 50, 75])
        elif np.isfinite(median[i]) and median[i] > 0 and np.isfinite(iqr[i]) and 0 < iqr[i] < median[i]:
            q1, med, q3 = median[i] - iqr[i] / 2, median[i], median[i] + iqr[i] / 2
        else:
            q1 = med = q3 = np.nan
        if np.isfinite(med):  # a longer time is a lower rate
            lo[i], hi[i] = med / q3, med / q1
        p = _floats(processes[i])
        p = p[np.isfinite(p) & (p > 0)]
        if p.size >= 2:
            mid = np.median(p)
            lo[i], hi[i] = min(lo[i], mid / p.max()), max(hi[i], mid / p.min())
    return lo, hi


def rates_with_spread(results: pd.DataFrame) -> pd.DataFrame:
    """Verified jobs with a positive rate, with 'tflops' (the headline rate in TF/s) and its spread 'tflops_lo'
    and 'tflops_hi' (see rate_spread)."""
    df = verified(results, "gflops")
    if df.empty:
        return df.assign(tflops=pd.Series(dtype=float), tflops_lo=pd.Series(dtype=float),
                         tflops_hi=pd.Series(dtype=float))
    tf = df["gflops"].to_numpy() / 1e3
    lo, hi = rate_spread(df)
    return df.assign(tflops=tf, tflops_lo=tf * lo, tflops_hi=tf * hi)
