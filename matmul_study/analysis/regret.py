"""Configuration regret: where a sweep (config `variants: all` or a list) measured several configurations of a
method on one shape, how close the per-problem heuristic's pick (core/configs.py) came to the fastest one measured.

The pick is the one each result recorded (`variant_pick`: the heuristic on the device that ran the job); results
without it get the heuristic's pick now (configs.choose on configs.job_problem, as the grid and the job make it),
for the SM count the job's device reported (the registry Problem's default where none). Regret is the pick's
verified rate over the best verified rate: 1.00 means the heuristic chose the fastest configuration measured, 0.80
that it left 20 % on the table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.core import configs, dtypes, registry

COLUMNS = ["device", "method", "dtype", "block", "shape", "m", "k", "n", "variants", "pick", "pick_gflops", "best",
           "best_gflops", "regret"]


def _pick(method: str, dtype: str, block: int, m: int, k: int, n: int, sm_count, hbm_bytes_per_s=None) -> str | None:
    """The heuristic's pick for a job whose result did not record it; None for a method or dtype the registry
    does not know. A result table holds names: they are resolved here, once per such group."""
    if method not in registry.METHODS or dtype not in dtypes.DTYPES:
        return None
    problem = configs.job_problem(dtypes.get(dtype), block, m, k, n,
                                  sm_count=int(sm_count) if pd.notna(sm_count) and sm_count else None,
                                  hbm_bytes_per_s=hbm_bytes_per_s)
    return configs.choose(registry.get(method), problem).variant


def _in_class_of(method: str, dtype: str, pick: str | None, variants: pd.Index) -> list[bool]:
    """Which of `variants` are in the accuracy class of the pick (Method.accuracy_of): a pick is weighed against the
    builds of its own class only (FP8's promoted builds run beside a fast-accumulation pick, configs.class_picks).
    All of them for a method the registry does not know, or no pick."""
    if pick is None or method not in registry.METHODS:
        return [True] * len(variants)
    record = registry.get(method)
    known = {configs.DEFAULT, *(v.name for v in record.variants)}
    if pick not in known:
        return [True] * len(variants)
    accuracy = record.accuracy_of(pick, dtype)
    return [name not in known or record.accuracy_of(name, dtype) == accuracy for name in variants]


def regret_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (device, method, dtype, block, shape) with two or more configurations verified: the variants measured,
    the heuristic's pick and its rate (NaN where the pick was not measured or failed), the fastest variant and its
    rate, and regret = pick rate / best rate, among the builds of the pick's accuracy class. Rows in device, method
    (ladder order), dtype and size order."""
    needed = {"method", "dtype", "status", "gflops", "m", "k", "n", "variant"}
    if results.empty or not needed <= set(results.columns):
        return pd.DataFrame(columns=COLUMNS)
    gflops = pd.to_numeric(results["gflops"], errors="coerce")
    ok = results[(results["status"] == "passed") & gflops.notna() & (gflops > 0)].assign(
        gflops=gflops, variant=results["variant"].fillna(configs.DEFAULT).astype(str))
    ok = ok.assign(device=ok["env_device_name"].fillna("") if "env_device_name" in ok else "",
                   block=pd.to_numeric(ok["block"], errors="coerce").fillna(0).astype(int) if "block" in ok else 0)
    rows = []
    for (device, method, dtype, block, m, k, n), group in ok.groupby(
            ["device", "method", "dtype", "block", "m", "k", "n"], sort=False):
        rates = group.groupby("variant", sort=False)["gflops"].max()
        if len(rates) < 2:
            continue
        recorded = group["variant_pick"].dropna() if "variant_pick" in group else pd.Series(dtype=object)
        sm_count = group["env_sm_count"].iloc[0] if "env_sm_count" in group else None
        hbm = group["env_hbm_bytes_per_s"].iloc[0] if "env_hbm_bytes_per_s" in group else None
        pick = (str(recorded.iloc[0]) if not recorded.empty else
                _pick(method, dtype, int(block), int(m), int(k), int(n), sm_count, hbm))
        rates = rates[_in_class_of(method, dtype, pick, rates.index)]
        if len(rates) < 2:
            continue
        best = rates.idxmax()
        pick_rate = rates.get(pick, np.nan) if pick is not None else np.nan
        rows.append({"device": device, "method": method, "dtype": dtype, "block": int(block),
                     "shape": f"{m}x{k}x{n}", "m": int(m), "k": int(k), "n": int(n),
                     "variants": len(rates), "pick": pick if pick is not None else "", "pick_gflops": pick_rate,
                     "best": best, "best_gflops": rates[best], "regret": pick_rate / rates[best]})
    out = pd.DataFrame(rows, columns=COLUMNS)
    if out.empty:
        return out
    order = {name: i for i, name in enumerate(registry.METHODS)}
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    sort = out.assign(_method=out["method"].map(lambda v: order.get(v, len(order))),
                      _dtype=out["dtype"].map(lambda v: rank.get(v, len(rank))),
                      _size=out["m"].astype(float) * out["k"] * out["n"])
    return out.loc[sort.sort_values(["device", "_method", "_dtype", "block", "_size"], kind="stable").index] \
        .reset_index(drop=True)


def summary(table: pd.DataFrame) -> dict | None:
    """The median and the worst regret over the rows whose pick was measured, the row of the worst, and how many
    rows the pick was not measured in; None without a row."""
    if table.empty:
        return None
    measured = table.dropna(subset=["regret"])
    worst = measured.loc[measured["regret"].idxmin()] if not measured.empty else None
    return {"problems": len(table), "measured": len(measured),
            "unmeasured": len(table) - len(measured),
            "median": float(measured["regret"].median()) if not measured.empty else None,
            "worst": float(worst["regret"]) if worst is not None else None,
            "worst_row": worst.to_dict() if worst is not None else None,
            "no_regret": int((measured["regret"] >= 1 - 1e-12).sum())}
