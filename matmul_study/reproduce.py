"""Do two runs of the same study agree? Per job, the ratio of median times, and the worst case."""

from __future__ import annotations

import pandas as pd

KEYS = ["env_device_name", "method", "dtype", "block", "m", "k", "n"]


def compare(first: pd.DataFrame, second: pd.DataFrame, tolerance: float = 0.03) -> dict:
    """Jobs passed in both runs, joined on device, method, dtype, block and shape."""
    a = first[first["status"] == "passed"].set_index(KEYS)["timing_median_s"]
    b = second[second["status"] == "passed"].set_index(KEYS)["timing_median_s"]
    both = pd.concat({"first_s": a, "second_s": b}, axis=1, join="inner")
    both["change"] = both["second_s"] / both["first_s"] - 1
    both = both.reindex(both["change"].abs().sort_values(ascending=False).index)
    worst = both.head(10).reset_index()
    return {
        "jobs_compared": len(both),
        "tolerance": tolerance,
        "within_tolerance": int((both["change"].abs() <= tolerance).sum()),
        "median_abs_change": float(both["change"].abs().median()) if len(both) else None,
        "worst_abs_change": float(both["change"].abs().max()) if len(both) else None,
        "worst": worst.assign(label=worst["method"] + " " + worst["dtype"] + " b" + worst["block"].astype(str)
                              + " " + worst["m"].astype(str) + "x" + worst["k"].astype(str) + "x"
                              + worst["n"].astype(str))[["label", "first_s", "second_s", "change"]]
        .to_dict("records"),
    }
