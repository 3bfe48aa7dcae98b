"""Why the ladder climbs: each step from one rung to the next, the technique it adds, what that does to the
modelled global-memory traffic (analysis.model: what the kernel asks of memory as written, caches ignored) and
what it bought in the same run. Also the facts behind the report's opening sentences.

Everything here is read from the tidy results table (one row per job) and the ladder table built from it; nothing
is measured or assumed beyond the analytic model and the datasheet peaks of analysis.ladder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import like_with_like, vendor_rate, with_classes
from matmul_study.analysis.ladder import datasheet_tflops, ladder_table
from matmul_study.analysis.result_devices import device_kind, device_labels
from matmul_study.core import dtypes, registry

# What a step adds, for the steps of the study's ladder (the rung below, the rung above): the technique that
# rung brings over the one before it.
STEP_TECHNIQUES = {
    ("naive", "tiled_runtime_block"): "shared-memory tiles: a block stages BLOCK×BLOCK tiles of A and B once and "
                                      "every thread reuses them, so an element is read once per tile instead of "
                                      "once per thread (tile size read at run time, inner loop rolled)",
    ("tiled_runtime_block", "tiled"): "the tile size fixed at compile time: constant shared-memory offsets and an "
                                      "inner loop the compiler can unroll",
    ("tiled", "tiled_unrolled"): "an explicit #pragma unroll on the inner loop",
    ("tiled_unrolled", "register_tiled"): "register tiling: each thread computes an 8×8 sub-tile of C from "
                                          "registers, 128×128 block tiles, so one shared-memory load feeds eight "
                                          "multiply-adds",
    ("register_tiled", "warptiled"): "warp tiles, register double buffering, 128-bit shared loads (A transposed), "
                                     "a multi-stage cp.async pipeline and grouped block order",
    ("warptiled", "warptiled_mbarrier"): "a full and an empty mbarrier per stage instead of a block-wide barrier "
                                         "per k slice",
    ("warptiled", "dmma"): "fp64 on the tensor cores (DMMA mma.sync m16n8k4, m16n8k8 in its smaller tiles) behind a "
                           "cp.async pipeline",
    ("wmma", "wmma_tiled"): "block tiles for the tensor cores: 8 warps share 128×128 tiles staged in shared memory",
    ("wmma_tiled", "mma_async_copy"): "mma.sync with ldmatrix fragments, 128×256 tiles and a 4-stage cp.async "
                                      "pipeline through swizzled shared memory",
    ("mma_async_copy", "wgmma_tma"): "Hopper's wgmma fed by TMA, but on 64×128 tiles and one stage: copies and math "
                                     "take turns",
    ("wgmma_tma", "wgmma_warp_specialized"): "warp specialization: a TMA producer and two wgmma consumer "
                                             "warpgroups, 128×256 tiles, 4 stages, a persistent grid and 2-CTA "
                                             "clusters sharing B by multicast",
}
# What a rung is, said so that it reads alone: for a step the table above does not list (a ladder with rungs
# missing, say naive straight to tiled). A method in neither falls back to its registry description.
TECHNIQUES = {
    "naive": "one thread per element of C, every operand read from global memory",
    "tiled_runtime_block": "shared-memory tiles (tile size read at run time, inner loop rolled)",
    "tiled": "shared-memory BLOCK×BLOCK tiles, the tile size fixed at compile time",
    "tiled_unrolled": "shared-memory tiles with an explicitly unrolled inner loop",
    "wmma": "tensor cores (nvcuda::wmma): one warp per 16×16 tile of C, operands straight from global memory",
    "register_tiled": STEP_TECHNIQUES[("tiled_unrolled", "register_tiled")],
    "warptiled": "SIMT warp tiles, register double buffering, 128-bit shared loads, a multi-stage cp.async "
                 "pipeline and grouped block order",
    "dmma": STEP_TECHNIQUES[("warptiled", "dmma")],
    "wmma_tiled": STEP_TECHNIQUES[("wmma", "wmma_tiled")],
    "mma_async_copy": STEP_TECHNIQUES[("wmma_tiled", "mma_async_copy")],
    "wgmma_tma": "Hopper's wgmma fed by TMA on 64×128 tiles, one stage: copies and math take turns",
    "wgmma_warp_specialized": STEP_TECHNIQUES[("wgmma_tma", "wgmma_warp_specialized")],
    "wgmma_tf32": "wgmma in tf32 on the warp-specialized pipeline, B transposed on every launch (timed)",
}

STEP_COLUMNS = ["device", "dtype", "shape", "from", "to", "adds", "traffic_from_gb", "traffic_to_gb",
                "traffic_cut", "intensity_from", "intensity_to", "tflops_from", "tflops_to", "gain", "reading"]


def technique(method: str, below: str | None = None) -> str:
    """What `method` adds over the rung `below` it: the step's own note, else what the method is."""
    if (below, method) in STEP_TECHNIQUES:
        return STEP_TECHNIQUES[(below, method)]
    if method in TECHNIQUES:
        return TECHNIQUES[method]
    return registry.get(method).description if method in registry.METHODS else method


def reference_lines() -> set[str]:
    """The methods drawn as reference lines (numpy, cuBLAS): not rungs of the ladder."""
    return {name for name, m in registry.METHODS.items() if m.reference_line}


def _reading(cut: float, gain: float) -> str:
    """One phrase on how the modelled traffic and the measured rate moved together. `cut` is traffic before over
    traffic after (2 = half the traffic), `gain` is rate after over rate before."""
    if not (np.isfinite(cut) and np.isfinite(gain)):
        return ""
    same_traffic = 0.9 <= cut <= 1.1
    if gain < 0.95:
        return ("more traffic and slower" if cut < 0.9 else
                "slower at the same traffic" if same_traffic else "less traffic, yet slower")
    if gain <= 1.05:
        return "no clear change (within 5%)" if same_traffic else "traffic moved, the rate did not"
    if same_traffic:
        return "same traffic, faster: the gain is in the instructions and the pipeline, not in what memory is asked for"
    if cut > 1.1 and cut > 3 * gain:
        return (f"traffic cut {cut:.3g}×, rate up only {gain:.3g}×: the caches (which the model ignores) "
                "already served most of the re-reads")
    if cut > 1.1:
        return "less traffic, faster"
    return "more traffic, yet faster"


def ladder_steps(results: pd.DataFrame) -> pd.DataFrame:
    """Per (device, dtype) at the dtype's largest shape: each step between consecutive rungs of our kernels in
    ladder order (reference lines left out), with the modelled traffic (GB read and written), the intensity
    (FLOP/byte) and the measured burst rate (TF/s) before and after, the traffic cut (before / after), the gain
    (after / before) and a reading of the two together."""
    table = ladder_table(results)
    table = table[~table["method"].isin(reference_lines())]
    rows = []
    for (device, dtype), part in table.groupby(["device", "dtype"], sort=False):
        part = part.reset_index(drop=True)
        for i in range(1, len(part)):
            a, b = part.iloc[i - 1], part.iloc[i]
            cut = a["traffic_bytes"] / b["traffic_bytes"] if b["traffic_bytes"] > 0 else np.nan
            gain = b["tflops"] / a["tflops"]
            rows.append({"device": device, "dtype": dtype, "shape": b["shape"], "from": a["label"],
                         "to": b["label"], "adds": technique(b["method"], a["method"]),
                         "traffic_from_gb": a["traffic_bytes"] / 1e9, "traffic_to_gb": b["traffic_bytes"] / 1e9,
                         "traffic_cut": cut, "intensity_from": a["intensity"], "intensity_to": b["intensity"],
                         "tflops_from": a["tflops"], "tflops_to": b["tflops"], "gain": gain,
                         "reading": _reading(cut, gain)})
    out = pd.DataFrame(rows, columns=STEP_COLUMNS)
    rank = {name: i for i, name in enumerate(dtypes.NAMES)}
    order = out.assign(_r=out["dtype"].map(lambda d: rank.get(d, len(rank))), _i=range(len(out)))
    return out.loc[order.sort_values(["device", "_r", "_i"]).index].reset_index(drop=True)


def climb(results: pd.DataFrame) -> pd.DataFrame:
    """Per (device, dtype): the first and the top rung of the ladder, the factor between them and the single step
    that bought the largest factor."""
    steps = ladder_steps(results)
    rows = []
    for (device, dtype), part in steps.groupby(["device", "dtype"], sort=False):
        best = part.loc[part["gain"].idxmax()]
        top = part.loc[part["tflops_to"].idxmax()]
        rows.append({"device": device, "dtype": dtype, "shape": part["shape"].iloc[0],
                     "first": part["from"].iloc[0], "first_tflops": part["tflops_from"].iloc[0],
                     "top": top["to"], "top_tflops": top["tflops_to"],
                     "factor": top["tflops_to"] / part["tflops_from"].iloc[0],
                     "biggest_from": best["from"], "biggest_to": best["to"], "biggest_gain": best["gain"]})
    return pd.DataFrame(rows, columns=["device", "dtype", "shape", "first", "first_tflops", "top", "top_tflops",
                                       "factor", "biggest_from", "biggest_to", "biggest_gain"])


HEADLINE_COLUMNS = ["device", "kind", "dtype", "shape", "m", "k", "n", "label", "variant", "tflops", "cublas_tflops",
                    "vs_cublas", "datasheet_tflops", "pct_of_datasheet", "threads", "accuracy", "like_with_like"]


def headline_facts(results: pd.DataFrame) -> pd.DataFrame:
    """Per device and dtype, at the largest shape with a verified job: the fastest kernel of ours (on a device
    where none ran, such as a CPU, the fastest verified method), its TF/s, cuBLAS at that shape, their ratio and
    the share of the datasheet peak where the device is known. Rows in device order (GPUs first), then fastest
    first."""
    needed = {"method", "dtype", "status", "gflops", "m", "k", "n"}
    if results.empty or not needed <= set(results.columns):
        return pd.DataFrame(columns=HEADLINE_COLUMNS)
    results = results.reset_index(drop=True)
    gf = pd.to_numeric(results["gflops"], errors="coerce")
    keep = (results["status"] == "passed") & np.isfinite(gf) & (gf > 0)
    columns = [c for c in ("method", "label", "variant", "dtype", "shape", "m", "k", "n", "threads", "accuracy_class")
               if c in results]
    ok = with_classes(results.loc[keep, columns]).assign(gflops=gf[keep], device=device_labels(results)[keep],
                                           kind=device_kind(results)[keep],
                                           size3=results["m"].astype(float) * results["k"] * results["n"])
    if "label" not in ok:
        ok = ok.assign(label=ok["method"])
    reference = reference_lines()
    rows = []
    for (device, dtype), group in ok.groupby(["device", "dtype"], sort=False):
        ours = group[~group["method"].isin(reference)]
        pool = ours if not ours.empty else group
        top = pool[pool["size3"] == pool["size3"].max()]
        shape = group[(group["m"] == top["m"].iloc[0]) & (group["k"] == top["k"].iloc[0])
                      & (group["n"] == top["n"].iloc[0])]
        top = like_with_like(shape, top) if not ours.empty else top  # a trade of accuracy is not the headline
        best = top.loc[top["gflops"].idxmax()]
        vendor, alike = vendor_rate(shape, best["accuracy_class"])
        cublas_tf = vendor / 1e3
        tf = best["gflops"] / 1e3
        sheet = datasheet_tflops(device, dtype, best["method"]) if best["kind"] == "gpu" else None
        threads = pd.to_numeric(pd.Series([best.get("threads")]), errors="coerce").iloc[0]
        rows.append({"device": device, "kind": best["kind"], "dtype": dtype, "shape": best.get("shape", ""),
                     "m": int(best["m"]), "k": int(best["k"]), "n": int(best["n"]), "label": best["label"],
                     "variant": str(best.get("variant") or "default") if pd.notna(best.get("variant")) else "default",
                     "tflops": tf, "cublas_tflops": cublas_tf,
                     "vs_cublas": tf / cublas_tf if np.isfinite(cublas_tf) and cublas_tf > 0 else np.nan,
                     "datasheet_tflops": sheet if sheet else np.nan,
                     "pct_of_datasheet": 100 * tf / sheet if sheet else np.nan, "threads": threads,
                     "accuracy": best["accuracy_class"], "like_with_like": alike})
    out = pd.DataFrame(rows, columns=HEADLINE_COLUMNS)
    if out.empty:
        return out
    devices = list(dict.fromkeys(out.sort_values("kind", key=lambda k: k.map({"gpu": 0}).fillna(1),
                                                 kind="stable")["device"]))
    out = out.assign(_d=out["device"].map(devices.index))
    return out.sort_values(["_d", "tflops"], ascending=[True, False]).drop(columns="_d").reset_index(drop=True)
