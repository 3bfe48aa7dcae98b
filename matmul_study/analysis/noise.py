"""Whether a job's rate can be taken at its word: the one rule (`noise_flags`) that says a job missed its noise
target, with the reason in words. Every table, figure and sentence of the report that shows a job's rate marks the
jobs it flags; derived tables (the headline, the ladder, the summaries) find them through `NoisyJobs`.

The rule, per job with a rate (a verified job with a positive GFLOP/s):
- the rate is the median of the job's samples (a CPU job, over the samples of all its fresh processes; a GPU job
  without a burst rate): flagged when the relative standard deviation of those samples (timing_rsd) is above the
  job's noise target (timing_noise_target, else the noise_target it was measured with);
- the rate is a GPU burst rate: flagged when the samples' RSD is above the target and the burst rule recorded
  that fewer samples than it asks ran within the burst band of the fastest (burst_samples_at_fastest below
  burst_plateau_samples; in results without that field, the burst note says so). Otherwise the burst rate is the
  median of samples within the band of one another, and the spread of all samples is the power limiter's, which
  the burst rule sets aside;
- the rate rests on one timed sample (timing_reps 1): nobody measured its noise.
A job without a target or an RSD (older results) is not flagged. `over_target` is the plain test (RSD above
target), which the report's Measurement section lists whatever the rate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.columns import numeric
from matmul_study.analysis.result_devices import device_labels, device_name

FLAG_COLUMNS = ["over_target", "noisy", "reason"]
MARK = "†"  # what the report writes after a flagged number


def percent(fraction: float) -> str:
    """114%, 5%, 3.6%, 0.45%: whole numbers from 10 % up, two significant digits below."""
    value = 100 * fraction
    return f"{value:.0f}%" if value >= 10 else f"{value:.2g}%"


def _target(results: pd.DataFrame) -> pd.Series:
    return numeric(results, "timing_noise_target").fillna(numeric(results, "measured_config_measurement_noise_target"))


def _plateau_short(results: pd.DataFrame) -> pd.Series:
    """Per job, whether the burst rule recorded that fewer samples than it asks ran within the band of the
    fastest (False where it does not say)."""
    at_fastest, asked = numeric(results, "burst_samples_at_fastest"), numeric(results, "burst_plateau_samples")
    short = (at_fastest < asked).to_numpy()
    note = (results["burst_note"].map(lambda v: v if isinstance(v, str) else "") if "burst_note" in results
            else pd.Series("", index=results.index))
    said = note.str.contains("of the fastest (fewer than", regex=False).to_numpy()
    return pd.Series(np.where(asked.notna().to_numpy(), short, said), index=results.index)


def _processes(row_medians) -> str:
    """A CPU job's per-process medians (a ';'-joined string of seconds) in words: "15.9, 0.14 and 16 ms", or in
    seconds from a second up ("1.02, 1.02 and 1.03 s")."""
    try:
        ms = [1e3 * float(x) for x in str(row_medians).split(";") if x.strip()]
    except ValueError:
        return ""
    if len(ms) < 2 or not all(np.isfinite(ms)):
        return ""
    scale, unit = (1e3, "s") if max(ms) >= 999.5 else (1.0, "ms")
    words = [f"{x / scale:.3g}" for x in ms]
    return ", ".join(words[:-1]) + f" and {words[-1]} {unit}"


def _reason(row: pd.Series, rsd: float, target: float, reps: float, burst_short: bool, at_fastest: float,
            asked: float) -> str:
    if reps == 1:
        text = "a single timed sample, whose noise nobody measured"
    else:
        text = f"RSD {percent(rsd)} against a {percent(target)} target"
        if burst_short:
            many = f"{at_fastest:.0f}" if np.isfinite(at_fastest) else "too few"
            of = f" (the burst rule asks {asked:.0f})" if np.isfinite(asked) else ""
            text += f", and only {many} samples ran at the fastest level{of}"
        medians = _processes(row.get("cpu_medians_s"))
        if medians:
            text += f"; its processes' medians were {medians}"
    return text


def noise_flags(results: pd.DataFrame) -> pd.DataFrame:
    """Per job (the index of `results`): over_target (its samples' RSD above its noise target), noisy (the rule
    in the module docstring: its rate is flagged) and reason (why, in words; empty where not flagged)."""
    rsd, target, reps = numeric(results, "timing_rsd"), _target(results), numeric(results, "timing_reps")
    gflops = numeric(results, "gflops")
    status = results["status"] if "status" in results else pd.Series("passed", index=results.index)
    rated = (status == "passed") & np.isfinite(gflops) & (gflops > 0)
    over = np.isfinite(rsd) & np.isfinite(target) & (rsd > target)
    burst = (results["rate"] == "burst") if "rate" in results else pd.Series(False, index=results.index)
    short = _plateau_short(results)
    noisy = rated & ((over & (~burst | short)) | (reps == 1))
    at_fastest = numeric(results, "burst_samples_at_fastest")
    asked = numeric(results, "burst_plateau_samples").fillna(
        numeric(results, "measured_config_measurement_burst_plateau_samples"))
    reasons = pd.Series("", index=results.index, dtype=object)
    for i in np.flatnonzero(noisy.to_numpy()):
        reasons.iloc[i] = _reason(results.iloc[i], rsd.iloc[i], target.iloc[i], reps.iloc[i],
                                  bool(burst.iloc[i] and short.iloc[i]), at_fastest.iloc[i], asked.iloc[i])
    return pd.DataFrame({"over_target": over.astype(bool), "noisy": noisy.astype(bool), "reason": reasons},
                        index=results.index)


def _text(values: pd.Series) -> pd.Series:
    """Values as the tables write them: 32.0 reads as 32, missing as ''."""
    def one(v):
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return ""
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return str(int(v))
        return str(v).strip()
    return values.map(one)


class NoisyJobs:
    """The flagged jobs of a results table, found again by what a derived table names a job by: its device (the
    GPU's or CPU's name, or the report's device label), label, method, block, variant, element type and shape.
    Keys left out (or None) match any job."""

    def __init__(self, results: pd.DataFrame):
        flags = noise_flags(results) if not results.empty else pd.DataFrame(columns=FLAG_COLUMNS)
        hit = results[flags["noisy"].to_numpy(dtype=bool)] if not results.empty else results
        labels = device_labels(results)[hit.index] if not hit.empty else pd.Series(dtype=object)
        blank = pd.Series("", index=hit.index, dtype=object)

        def column(name: str, fallback: pd.Series = blank) -> pd.Series:
            return _text(hit[name]) if name in hit else fallback

        self.table = pd.DataFrame({
            "device": device_name(hit), "device_label": labels.astype(str),
            "method": column("method"), "label": column("label", column("method")), "block": column("block"),
            "variant": column("variant").replace("", "default"), "dtype": column("dtype"),
            "shape": column("shape", _text(hit["m"].astype(str) + "x" + hit["k"].astype(str) + "x"
                                           + hit["n"].astype(str)) if {"m", "k", "n"} <= set(hit) else blank),
            "reason": flags.loc[hit.index, "reason"] if not hit.empty else blank,
        }, index=hit.index)

    def __bool__(self) -> bool:
        return not self.table.empty

    def reason(self, **keys) -> str:
        """The reason of the first flagged job that matches `keys` (device, label, method, block, variant, dtype,
        shape); '' where none does."""
        if self.table.empty:
            return ""
        match = np.ones(len(self.table), dtype=bool)
        for key, value in keys.items():
            if value is None or (isinstance(value, float) and not np.isfinite(value)):
                continue
            wanted = _text(pd.Series([value])).iloc[0]
            if key == "device":
                match &= ((self.table["device"] == wanted) | (self.table["device_label"] == wanted)).to_numpy()
            else:
                match &= (self.table[key] == wanted).to_numpy()
        hits = self.table.loc[match, "reason"]
        return str(hits.iloc[0]) if not hits.empty else ""

    def reasons(self, table: pd.DataFrame, **columns) -> pd.Series:
        """Per row of `table`, the reason of its flagged job ('' where it has none); `columns` maps a key of
        `reason` to the column of `table` that holds it (a column `table` lacks is left out)."""
        if self.table.empty or table.empty:
            return pd.Series("", index=table.index, dtype=object)
        present = {key: col for key, col in columns.items() if col in table}
        return pd.Series([self.reason(**{key: row[col] for key, col in present.items()})
                          for _, row in table.iterrows()], index=table.index, dtype=object)
