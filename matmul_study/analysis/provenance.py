"""What produced each device's results: per device, the distinct values of the provenance columns (commits, config
hashes, library and driver versions), and the provenance columns whose values differ across the results."""

from __future__ import annotations

import pandas as pd

from matmul_study.analysis.columns import distinct
from matmul_study.analysis.result_devices import device_kind, device_labels


def provenance_table(results: pd.DataFrame, columns) -> pd.DataFrame:
    """One row per device (its label and kind), with the distinct values of each of `columns` the results have,
    ", "-joined; columns empty for every device left out. Empty where the results have none of `columns`."""
    fields = [c for c in columns if c in results]
    if not fields or results.empty:
        return pd.DataFrame()
    device = device_labels(results)
    kind = device_kind(results)
    rows = []
    for name in dict.fromkeys(device):
        sub = results[device == name]
        what = kind[(device == name).to_numpy()].iloc[0]
        row = {"device": f"{name} ({what})" if name else what}
        for column in fields:
            row[column] = ", ".join(distinct(sub[column]))
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.loc[:, (table != "").any(axis=0)]


def mixed(results: pd.DataFrame, columns) -> dict[str, list[str]]:
    """Those of `columns` that hold more than one distinct value across the results, with their values."""
    out = {}
    for column in columns:
        if column in results:
            values = distinct(results[column])
            if len(values) > 1:
                out[column] = values
    return out
