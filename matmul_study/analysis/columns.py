"""The results table read as the report reads it everywhere: a column as numbers, a column's distinct values as
text, and the two facts that decide which columns name a job (several GPU devices; a configuration worth naming).

Older result files lack newer columns: a missing column reads as NaN, never as an error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.result_devices import gpu_devices
from matmul_study.core import registry


def numeric(results: pd.DataFrame, column: str) -> pd.Series:
    """`column` as numbers, NaN where a value is not one; all NaN where the table has no such column."""
    if column not in results:
        return pd.Series(np.nan, index=results.index, dtype=float)
    return pd.to_numeric(results[column], errors="coerce")


def distinct(series: pd.Series) -> list[str]:
    """Distinct non-empty values as text, in order of first appearance; 12345.0 reads as 12345."""
    out = []
    for value in series.dropna():
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        text = str(value).strip()
        if text and text.lower() not in ("nan", "none") and text not in out:
            out.append(text)
    return out


def several_gpus(results: pd.DataFrame) -> bool:
    return len(gpu_devices(results)) > 1


def has_configurations(results: pd.DataFrame) -> bool:
    """Whether the results hold a configuration worth naming: a variant other than the default build, or a method
    with registry variants (whose default build is then a choice too)."""
    if "variant" in results and (results["variant"].fillna("default").astype(str) != "default").any():
        return True
    ran = set(results["method"]) if "method" in results else set()
    return any(registry.METHODS[name].variants for name in ran if name in registry.METHODS)
