"""Like with like: every ratio to the vendor pairs a build with the vendor line of its own accuracy class.

A dtype has one accuracy class, except where the registry names several (Method.accuracy, Variant.accuracy): FP8
with the tensor cores' own accumulation over all of k, or with sums promoted into fp32 (cuBLASLt runs both, and a
study runs both of its lines); fp32 on the CUDA cores, or 3xTF32 on tf32 tensor cores, which has no vendor line of
its class. A build whose class has no vendor line is compared with the vendor's own class and marked: that ratio
is a trade of accuracy for speed, and the report never shows it as parity."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.core import registry


def accuracy_class(method: str, variant, dtype: str | None = None) -> str:
    """A build's accuracy class in `dtype` (Method.accuracy_of); empty for a method or variant the registry does not
    know."""
    try:
        name = None if variant is None or (isinstance(variant, float) and np.isnan(variant)) else str(variant)
        return registry.get(method).accuracy_of(name, dtype)
    except KeyError:
        return ""


def with_classes(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with its builds' `accuracy_class` (results collated before the column existed get it computed)."""
    if "accuracy_class" in df:
        return df.assign(accuracy_class=df["accuracy_class"].fillna("").astype(str))
    variants = df["variant"] if "variant" in df else pd.Series(None, index=df.index, dtype=object)
    dtypes = df["dtype"] if "dtype" in df else pd.Series(None, index=df.index, dtype=object)
    return df.assign(accuracy_class=[accuracy_class(m, v, d) for m, v, d in zip(df["method"], variants, dtypes)])


def vendor_default_class(method: str) -> str:
    return registry.get(method).accuracy if method in registry.METHODS else ""


def vendor_rows(vendors: pd.DataFrame, accuracy: str) -> tuple[pd.DataFrame, bool]:
    """Of the vendor lines' rows `vendors` (with `accuracy_class`), those of class `accuracy` and True (like with
    like); else those of the vendor's own class and False; else all of them (an empty frame where none ran)."""
    same = vendors[vendors["accuracy_class"] == accuracy]
    if not same.empty:
        return same, True
    own = vendors[vendors["accuracy_class"] == vendors["method"].map(vendor_default_class)]
    return (own if not own.empty else vendors), False


def vendor_rate(group: pd.DataFrame, accuracy: str) -> tuple[float, bool]:
    """The vendor line's rate (GFLOP/s, the fastest of its rows) among `group`'s rows (one shape, verified, with
    `accuracy_class`) for a build of class `accuracy`, and whether it is of that class (like with like); else the
    vendor's own class and False; NaN and False without a vendor row."""
    rows, same = vendor_rows(group[group["method"].isin(registry.vendor_methods())], accuracy)
    return (float(rows["gflops"].max()), same) if not rows.empty else (np.nan, False)


def like_with_like(group: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """The rows of `ours` whose class has its vendor line in `group`; all of `ours` where none has one."""
    vendors = group[group["method"].isin(registry.vendor_methods())]
    matched = ours[ours["accuracy_class"].isin(set(vendors["accuracy_class"]))]
    return matched if not matched.empty else ours
