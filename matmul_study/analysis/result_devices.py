"""Devices in a results table: which rows ran on which GPU (CPU rows go with the GPU of their host), and the
comparison of several GPU devices at their largest common shape. Shared by the claims, the figures and the report.
"""

from __future__ import annotations

import numpy as np
import pandas as pd




def device_kind(results: pd.DataFrame) -> pd.Series:
    """'cpu' or 'gpu' per row: env_device_kind where recorded, else numpy runs on the CPU and the rest on a GPU."""
    guess = pd.Series(np.where(results.get("method", pd.Series("", index=results.index)) == "numpy", "cpu", "gpu"),
                      index=results.index)
    if "env_device_kind" not in results:
        return guess
    kind = results["env_device_kind"].astype("string").str.strip().str.lower()
    return kind.where(kind.isin(["cpu", "gpu"]), guess).astype(object)


def device_name(results: pd.DataFrame) -> pd.Series:
    if "env_device_name" not in results:
        return pd.Series("", index=results.index, dtype=object)
    return results["env_device_name"].fillna("").astype(str).str.strip()


def gpu_devices(results: pd.DataFrame) -> list[str]:
    """Distinct GPU device names in order of first appearance ('' when the results name none)."""
    if results.empty:
        return []
    names = device_name(results)[device_kind(results) == "gpu"]
    return list(dict.fromkeys(names))


def host_name(results: pd.DataFrame) -> pd.Series:
    """The host each row ran on ('' where the results do not say)."""
    if "env_host" not in results:
        return pd.Series("", index=results.index, dtype=object)
    return results["env_host"].fillna("").astype(str).str.strip()


def cpu_device(name: str, host: str) -> str:
    """A CPU device is its model on its host: two hosts with the same CPU model are two devices."""
    return f"{name} on {host}" if host else name


def device_labels(results: pd.DataFrame) -> pd.Series:
    """Per row, the name to list its device under: a GPU's model; a CPU's model, with its host where the same CPU
    model ran on more than one host (so that two machines are never listed as one)."""
    kind, name, host = device_kind(results), device_name(results), host_name(results)
    cpu = kind != "gpu"
    hosts_per_model = host[cpu & (host != "")].groupby(name[cpu & (host != "")]).nunique()
    shared = name.map(hosts_per_model).fillna(0) > 1
    qualified = [cpu_device(n, h) for n, h in zip(name, host)]
    return name.where(~(cpu & shared), pd.Series(qualified, index=results.index))


def with_device(results: pd.DataFrame) -> pd.DataFrame:
    """`results` with a 'device' column: the GPU device of each row. A GPU row is its own device (its model
    name); a CPU row goes with each GPU device that ran on the same host (so it may appear more than once). A CPU
    row from a host without GPU rows stands alone under its CPU model and host ("AMD EPYC on node-01"), so two
    hosts with the same CPU model never merge. Where the results record no host, CPU rows go with the only GPU
    device when there is one, and otherwise stand alone under their CPU model."""
    if results.empty:
        return results.assign(device=pd.Series(dtype=object))
    kind, name, host = device_kind(results), device_name(results), host_name(results)
    gpu, cpu = (kind == "gpu").to_numpy(), (kind != "gpu").to_numpy()
    gpus = gpu_devices(results)
    gpu_rows = results[gpu].assign(device=name[gpu])
    if not cpu.any():
        return gpu_rows
    on_host: dict[str, list[str]] = {}
    for h, g in zip(host[gpu], name[gpu]):
        if h and g not in on_host.setdefault(h, []):
            on_host[h].append(g)
    targets = []
    for h, own in zip(host[cpu], name[cpu]):
        if h:
            targets.append(on_host.get(h) or [cpu_device(own, h)])
        else:
            targets.append(gpus[:1] if len(gpus) == 1 else [own])
    counts = [len(t) for t in targets]
    expanded = results.iloc[np.repeat(np.flatnonzero(cpu), counts)]
    expanded = expanded.assign(device=[d for t in targets for d in t])
    return pd.concat([gpu_rows, expanded])


def passed_with_device(results: pd.DataFrame) -> pd.DataFrame:
    """Verified rows with a positive rate, each with its device (see with_device)."""
    if results.empty or not {"status", "gflops", "method", "dtype", "shape"} <= set(results.columns):
        return pd.DataFrame(columns=["method", "label", "dtype", "block", "shape", "size", "gflops", "device"])
    gf = pd.to_numeric(results["gflops"], errors="coerce")
    ok = results[(results["status"] == "passed") & np.isfinite(gf) & (gf > 0)].assign(gflops=gf)
    ok = ok.assign(block=pd.to_numeric(ok["block"], errors="coerce").fillna(0).astype(int) if "block" in ok else 0)
    if "size" not in ok:
        ok = ok.assign(size=(ok["m"] * ok["k"] * ok["n"]) ** (1 / 3) if {"m", "k", "n"} <= set(ok.columns) else 0.0)
    return with_device(ok)


def largest_common_shapes(results: pd.DataFrame) -> dict[str, str]:
    """Per dtype, the largest shape (by m·k·n) at which every GPU device has a verified job."""
    ok = passed_with_device(results)
    gpus = gpu_devices(results)
    ok = ok[device_kind(ok) == "gpu"] if not ok.empty else ok
    out = {}
    for dtype, g in ok.groupby("dtype", sort=False):
        per_shape = g.groupby("shape")["device"].nunique()
        common = per_shape[per_shape == len(gpus)].index
        if len(common):
            sizes = g[g["shape"].isin(common)].groupby("shape")["size"].max()
            out[dtype] = sizes.idxmax()
    return out


def devices_long(results: pd.DataFrame) -> pd.DataFrame:
    """GFLOP/s of each GPU device per (dtype, label) at the dtype's largest common shape, and its ratio to the
    vendor line measured in the same run on that device (long form: dtype, shape, label, method, block, device,
    gflops, vs_vendor; the median where a job ran more than once, NaN where the results have no ratio)."""
    columns = ["dtype", "shape", "label", "method", "block", "device", "gflops", "vs_vendor"]
    ok = passed_with_device(results)
    shapes = largest_common_shapes(results)
    if ok.empty or not shapes:
        return pd.DataFrame(columns=columns)
    ok = ok[device_kind(ok) == "gpu"]
    ok = ok[ok["shape"] == ok["dtype"].map(shapes)]
    if "label" not in ok:
        ok = ok.assign(label=np.where(ok["block"] > 0, ok["method"] + " b" + ok["block"].astype(str), ok["method"]))
    ok = ok.assign(vs_vendor=pd.to_numeric(ok["pct_of_cublas"], errors="coerce") if "pct_of_cublas" in ok
                   else np.nan)
    return ok.groupby(columns[:-2], as_index=False, sort=False)[["gflops", "vs_vendor"]].median()[columns]


def devices_table(results: pd.DataFrame, dtype_order=(), method_order=()) -> pd.DataFrame:
    """Wide form of `devices_long`: one row per (dtype, label), one GFLOP/s column per device, and each other
    device's ratio to the first."""
    long = devices_long(results)
    if long.empty:
        return pd.DataFrame(columns=["dtype", "label", "shape"])
    devices = list(dict.fromkeys(long["device"]))
    index = ["dtype", "shape", "label", "method", "block"]
    wide = long.pivot_table(index=index, columns="device", values="gflops", aggfunc="median").reset_index()
    wide.columns.name = None
    vendor = long.pivot_table(index=index, columns="device", values="vs_vendor", aggfunc="median", dropna=False)
    wide = wide.merge(vendor.rename(columns=lambda d: f"_vendor {d}").reset_index(), on=index, how="left")
    rank_d = {d: i for i, d in enumerate(dtype_order)}
    rank_m = {m: i for i, m in enumerate(method_order)}
    wide = wide.assign(
        _d=wide["dtype"].map(lambda v: rank_d.get(v, len(rank_d))),
        _m=wide["method"].map(lambda v: rank_m.get(v, len(rank_m))),
    ).sort_values(["_d", "dtype", "_m", "method", "block"])
    out = wide[["dtype", "label", "shape"]].copy()
    for d in devices:
        out[f"{d} GFLOP/s"] = wide[d]
    for d in devices[1:]:
        out[f"{d} / {devices[0]}"] = wide[d] / wide[devices[0]]
    # Each card's ratio to its own vendor line, measured in the same run: comparable across cards of different speed.
    if wide[[f"_vendor {d}" for d in devices if f"_vendor {d}" in wide]].notna().any().any():
        for d in devices:
            out[f"{d} × vendor"] = wide.get(f"_vendor {d}", np.nan)
    return out.reset_index(drop=True)


PICK_COLUMNS = ["method", "dtype", "block", "shape"]


def pick_differences(results: pd.DataFrame) -> pd.DataFrame:
    """Where the per-problem heuristic picked a different configuration on different GPU devices for the same job
    (method, dtype, block, shape): each device's pick (the `variant_pick` its results recorded) and, where a sweep
    on that device measured several configurations, the fastest one and the pick's rate over it (regret; NaN where
    none was swept). Empty where every device picked the same, or the results record no picks."""
    from matmul_study.analysis.regret import regret_table

    devices = gpu_devices(results)
    if len(devices) < 2 or "variant_pick" not in results:
        return pd.DataFrame(columns=PICK_COLUMNS)
    found = with_device(results)
    found = found[(device_kind(found) == "gpu") & found["variant_pick"].notna()]
    if found.empty:
        return pd.DataFrame(columns=PICK_COLUMNS)
    found = found.assign(shape=found["m"].astype(int).astype(str) + "x" + found["k"].astype(int).astype(str) + "x"
                         + found["n"].astype(int).astype(str),
                         block=pd.to_numeric(found["block"], errors="coerce").fillna(0).astype(int))
    picks = found.groupby([*PICK_COLUMNS, "device"], sort=False)["variant_pick"].first().unstack("device")
    picks = picks.dropna()
    picks = picks[picks.nunique(axis=1) > 1]
    if picks.empty:
        return pd.DataFrame(columns=PICK_COLUMNS)
    regret = regret_table(results).set_index(["device", *PICK_COLUMNS])
    out = picks.reset_index()[PICK_COLUMNS]
    for d in devices:
        if d not in picks:
            continue
        out[f"{d} pick"] = picks[d].to_numpy()
        keys = [(d, *row) for row in out[PICK_COLUMNS].itertuples(index=False)]
        out[f"{d} best swept"] = [regret["best"].get(key, "") for key in keys]
        out[f"{d} regret"] = [regret["regret"].get(key, np.nan) for key in keys]
    return out
