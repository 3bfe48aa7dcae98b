"""Collation: result files -> one tidy table (a row per job) and the summary tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from matmul_study.core import registry, results
from matmul_study.core.configs import DEFAULT
from matmul_study.core.records import CALIBRATION_COLUMNS
from matmul_study.analysis.accuracy import vendor_default_class, with_classes
from matmul_study.analysis.model import known_build, model



def label(method: str, block: int) -> str:
    return f"{method} b{block}" if registry.METHODS.get(method) and registry.get(method).block_axis else method


def add_variant(df: pd.DataFrame) -> pd.DataFrame:
    """The configuration columns: `variant` (the registry variant that ran; result files written before
    configurations were a pipeline axis ran the default build), `variant_reason` (why; empty for those files)."""
    variant = df["variant"] if "variant" in df else pd.Series(np.nan, index=df.index, dtype=object)
    reason = df["variant_reason"] if "variant_reason" in df else pd.Series(np.nan, index=df.index, dtype=object)
    return df.assign(variant=variant.fillna(DEFAULT).astype(str), variant_reason=reason.fillna("").astype(str))


def tidy(records: list[dict], calibration: pd.DataFrame | None = None) -> pd.DataFrame:
    """Flatten result records: nested sections become prefixed columns (timing_median_s, env_device_name, ...),
    plus the analytic model's columns and % of the device's calibrated ceiling."""
    if not records:
        raise ValueError("no result files to collate")
    df = add_variant(pd.json_normalize(records, sep="_"))
    # Per-sample lists (times, clocks) stay in the CSV as ';'-joined strings.
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: ";".join(f"{x:.9g}" for x in v) if isinstance(v, list) else v)
    df["label"] = [label(m, b) for m, b in zip(df["method"], df["block"])]
    df["shape"] = [f"{m}x{k}x{n}" for m, k, n in zip(df["m"], df["k"], df["n"])]
    df["size"] = np.cbrt(df["m"].astype(float) * df["k"] * df["n"]).round(3)
    # Rates are numbers from here on: a failed job's is null, and where every job failed pandas would otherwise keep
    # the column as objects (None), which numpy's NaN tests refuse.
    for col in ("gflops", "gflops_all_samples", "sustained_gflops"):
        if col in df:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    df["tflops"] = df["gflops"] / 1e3
    df["verification_passed"] = df["verification_passed"].astype(bool)
    df = add_ratios(df)
    df = add_model(df)
    df["pct_of_peak"] = pct_of_peak(df, calibration)
    front = ["method", "label", "dtype", "block", "variant", "m", "k", "n", "shape", "size", "status", "gflops",
             "tflops",
             "pct_of_cublas", "pct_of_peak", "speedup_over_naive"]
    return df[front + [c for c in df.columns if c not in front]].sort_values(
        ["dtype", "method", "block", "size"], ignore_index=True)


def add_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """% of cuBLAS at the same dtype and shape; speedup over naive at the same dtype, shape and block
    (the best naive block for methods without a block axis). Only passed rows count.

    Like with like: a build's ratio is taken against the vendor line of its own accuracy class (accuracy_class;
    FP8 with fast accumulation against cuBLASLt's fast-accumulation line). A build whose class has no vendor line
    (3xTF32) is taken against the vendor's own class, and `like_with_like` is False on its row: the report shows
    that ratio as a trade of accuracy for speed, never as parity."""
    df = with_classes(df.drop(columns="accuracy_class", errors="ignore"))
    ok = df[df["status"] == "passed"]
    device = df["env_device_name"] if "env_device_name" in df else pd.Series("", index=df.index)
    df = df.assign(_device=device)
    ok = ok.assign(_device=device[ok.index])
    keys = ["_device", "dtype", "m", "k", "n"]
    idx = pd.MultiIndex.from_frame(df[keys])
    own = pd.MultiIndex.from_frame(df[keys + ["accuracy_class"]])
    vendor_rows = ok[ok["method"].isin(registry.vendor_methods())]
    vendors_class = vendor_rows["method"].map(vendor_default_class)
    # Burst over burst and sustained over sustained: a ratio never mixes the two protocols.
    for rate, column in (("gflops", "pct_of_cublas"), ("sustained_gflops", "pct_of_cublas_sustained")):
        if rate not in df:
            df[column] = np.nan
            continue
        # The dtype's vendor line of the build's class: cuBLAS, or cuBLASLt for FP8 (registry.vendor_methods).
        by_class = vendor_rows.set_index(keys + ["accuracy_class"])[rate]
        by_class = pd.to_numeric(by_class[~by_class.index.duplicated(keep="last")], errors="coerce")
        default = vendor_rows[vendor_rows["accuracy_class"] == vendors_class].set_index(keys)[rate]
        default = pd.to_numeric(default[~default.index.duplicated(keep="last")], errors="coerce")
        same = by_class.reindex(own).to_numpy(dtype=float)
        vendor = np.where(np.isnan(same), default.reindex(idx).to_numpy(dtype=float), same)
        values = pd.to_numeric(df[rate], errors="coerce").to_numpy(dtype=float)
        df[column] = 100 * values / vendor
        if rate == "gflops":
            df["like_with_like"] = ~np.isnan(same)
    naive = ok[ok["method"] == "naive"]
    same_block = naive.set_index(keys + ["block"])["gflops"]
    best_block = naive.groupby(keys)["gflops"].max()
    # As floats: without a verified naive row the lookups are empty, and their NaNs would be objects.
    by_block = same_block.reindex(pd.MultiIndex.from_frame(df[keys + ["block"]])).to_numpy(dtype=float)
    best = best_block.reindex(idx).to_numpy(dtype=float)
    base = np.where(np.isnan(by_block), best, by_block)
    df["speedup_over_naive"] = df["gflops"].to_numpy(dtype=float) / base
    return df.drop(columns="_device")


def add_model(df: pd.DataFrame) -> pd.DataFrame:
    rows = [model(r.method, r.m, r.k, r.n, r.block, r.dtype, known_build(r.method, getattr(r, "variant", None)))
            if r.method in registry.METHODS else {} for r in df.itertuples()]
    modelled = pd.DataFrame(rows, index=df.index)
    for key in ("flops_issued", "bytes_read", "bytes_written", "intensity"):
        df[f"model_{key}"] = modelled.get(key)
    return df


def pct_of_peak(df: pd.DataFrame, calibration: pd.DataFrame | None) -> np.ndarray:
    """GFLOP/s over the calibrated ceiling of the same GPU (by UUID) and dtype; where the job or the table has no
    UUID (older files), of the same device model. NaN without one."""
    if calibration is None or calibration.empty:
        return np.full(len(df), np.nan)
    rates = calibration[calibration["unit"] == "GFLOP/s"].assign(
        value=lambda c: pd.to_numeric(c["value"], errors="coerce"))
    by_name = rates.groupby(["device_name", "ceiling"])["value"].median()  # the model's GPUs' median
    peak = by_name.reindex(pd.MultiIndex.from_arrays([df["env_device_name"], df["dtype"]])).to_numpy(float)
    if "device_uuid" in rates and "env_device_uuid" in df:
        with_uuid = rates[rates["device_uuid"].fillna("").astype(str) != ""]
        by_uuid = with_uuid.set_index(["device_uuid", "ceiling"])["value"]
        by_uuid = by_uuid[~by_uuid.index.duplicated(keep="last")]
        own = by_uuid.reindex(pd.MultiIndex.from_arrays([df["env_device_uuid"], df["dtype"]])).to_numpy(float)
        peak = np.where(np.isnan(own), peak, own)
    return 100 * df["gflops"].to_numpy(dtype=float) / peak


def load(paths: list[str | Path], calibration_paths: list[str | Path] = ()) -> pd.DataFrame:
    return tidy([results.read(p) for p in paths], load_calibration(calibration_paths))


def load_calibration(paths) -> pd.DataFrame:

    frames = []
    for path in paths:
        try:
            frames.append(pd.read_csv(path))
        except (ValueError, UnicodeDecodeError) as exc:  # pandas' parser and empty-file errors are ValueErrors
            raise ValueError(f"{path}: not a readable calibration table ({exc}).") from None
    # Tables written before per-GPU calibration have no UUID or index: their rows stand for the device model.
    return pd.concat(frames, ignore_index=True).reindex(columns=CALIBRATION_COLUMNS) if frames else pd.DataFrame(columns=CALIBRATION_COLUMNS)


def passed(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "passed"]


# What tells one result set's device from another's in a merged table (whichever of them the table has).
DEVICE_KEYS = ("env_device_name", "env_device_uuid", "env_host")


def best_variants(df: pd.DataFrame) -> pd.DataFrame:
    """The table as the figures, summaries and ladder read it: where a sweep measured several configurations
    (variants) of a method on one device, dtype, block and shape, only the rows of the fastest verified one (all of
    them, where none verified). Groups that ran one configuration keep every row, as before."""
    if df.empty or "variant" not in df:
        return df
    keys = [c for c in (*DEVICE_KEYS, "method", "dtype", "block", "m", "k", "n") if c in df]
    variant = df["variant"].fillna(DEFAULT).astype(str).to_numpy()
    gflops = pd.to_numeric(df["gflops"], errors="coerce") if "gflops" in df else pd.Series(np.nan, index=df.index)
    verified = (df["status"] == "passed").to_numpy() if "status" in df else np.ones(len(df), bool)
    frame = df[keys].astype(str).reset_index(drop=True).assign(
        _variant=variant, _score=np.where(verified, gflops.to_numpy(dtype=float), np.nan))
    groups = frame.groupby(keys, sort=False, dropna=False)
    several = groups["_variant"].transform("nunique").to_numpy() > 1
    best_row = groups["_score"].transform(lambda s: s.idxmax() if s.notna().any() else -1).to_numpy()
    best_variant = np.where(best_row >= 0, variant[np.clip(best_row, 0, None)], variant)
    keep = ~several | (variant == best_variant)
    return df.iloc[np.flatnonzero(keep)]


def best_per_shape(df: pd.DataFrame) -> pd.DataFrame:
    ok = passed(df)
    if ok.empty:
        return pd.DataFrame(columns=["shape", "dtype", "best", "gflops", "runner_up", "runner_up_gflops"])
    rows = []
    for (shape, dtype), g in ok.groupby(["shape", "dtype"], sort=False):
        g = g.sort_values("gflops", ascending=False)
        rows.append({"shape": shape, "size": g["size"].iloc[0], "dtype": dtype, "best": g["label"].iloc[0],
                     "gflops": g["gflops"].iloc[0],
                     "runner_up": g["label"].iloc[1] if len(g) > 1 else "",
                     "runner_up_gflops": g["gflops"].iloc[1] if len(g) > 1 else np.nan})
    return pd.DataFrame(rows).sort_values(["dtype", "size"]).drop(columns="size").reset_index(drop=True)


def speedup_table(df: pd.DataFrame) -> pd.DataFrame:
    ok = passed(df).dropna(subset=["speedup_over_naive"])
    return ok.pivot_table(index=["dtype", "shape"], columns="label", values="speedup_over_naive",
                          aggfunc="first", sort=False).round(2).reset_index()


def block_table(df: pd.DataFrame) -> pd.DataFrame:
    """GFLOP/s per block for methods with a block axis, with the ratio of the largest to the smallest block."""
    ok = passed(df)
    ok = ok[ok["block"] > 0]
    if ok.empty:
        return pd.DataFrame(columns=["method", "dtype", "shape"])
    wide = ok.pivot_table(index=["method", "dtype", "shape", "size"], columns="block", values="gflops",
                          aggfunc="first").sort_index(level=["method", "dtype", "size"])
    blocks = sorted(wide.columns)
    wide.columns = [f"gflops_b{b}" for b in blocks]
    if len(blocks) > 1:
        wide[f"b{blocks[-1]}_over_b{blocks[0]}"] = wide[f"gflops_b{blocks[-1]}"] / wide[f"gflops_b{blocks[0]}"]
    return wide.reset_index().drop(columns="size").round(3)


def float_vs_double_table(df: pd.DataFrame) -> pd.DataFrame:
    ok = passed(df)
    ok = ok[ok["dtype"].isin(["float32", "float64"])]
    if ok.empty or ok["dtype"].nunique() < 2:
        return pd.DataFrame(columns=["label", "shape", "gflops_float32", "gflops_float64", "float_over_double"])
    wide = ok.pivot_table(index=["label", "shape", "size"], columns="dtype", values="gflops", aggfunc="first")
    wide = wide.dropna().sort_index(level=["label", "size"])
    out = pd.DataFrame({"gflops_float32": wide["float32"], "gflops_float64": wide["float64"],
                        "float_over_double": wide["float32"] / wide["float64"]})
    return out.reset_index().drop(columns="size").round(3)


def method_ratio(df: pd.DataFrame, numerator: str, denominator: str) -> pd.DataFrame:
    """GFLOP/s of `numerator` over `denominator`, same device, dtype, block and shape (verified rows only)."""
    ok = passed(df)
    keys = ["env_device_name", "dtype", "block", "shape", "size"]
    top = ok[ok["method"] == numerator].set_index(keys)["gflops"]
    bottom = ok[ok["method"] == denominator].set_index(keys)["gflops"]
    both = pd.concat({f"{denominator} GFLOP/s": bottom, f"{numerator} GFLOP/s": top}, axis=1, join="inner")
    if both.empty:
        return pd.DataFrame()
    both[f"{numerator} / {denominator}"] = both[f"{numerator} GFLOP/s"] / both[f"{denominator} GFLOP/s"]
    out = both.reset_index().sort_values(["env_device_name", "dtype", "block", "size"]).drop(columns="size")
    return out.rename(columns={"env_device_name": "device"})


SUMMARIES = {
    "best": best_per_shape,
    "speedup": speedup_table,
    "blocks": block_table,
    "float_vs_double": float_vs_double_table,
}


def spread(calibration: pd.DataFrame) -> pd.DataFrame:
    """Per device model and ceiling with two or more GPUs: the lowest and highest value and their spread
    (highest / lowest - 1). Empty when no model has two calibrated GPUs."""
    cols = ["device_name", "ceiling", "unit", "gpus", "lowest", "highest", "spread"]
    if calibration.empty or "device_uuid" not in calibration:
        return pd.DataFrame(columns=cols)
    df = calibration.dropna(subset=["value"])
    df = df[df["device_uuid"].fillna("").astype(str) != ""]
    rows = []
    for (name, ceiling, unit), group in df.groupby(["device_name", "ceiling", "unit"], sort=False):
        if group["device_uuid"].nunique() < 2:
            continue
        low, high = float(group["value"].min()), float(group["value"].max())
        rows.append((name, ceiling, unit, group["device_uuid"].nunique(), low, high, high / low - 1))
    return pd.DataFrame(rows, columns=cols)

