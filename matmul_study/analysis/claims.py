"""The source study's claims, checked against the measured results, and after them the datasheet's, 3xTF32's and
3xFP16's claims for the element types the study added (FP8, int8, fp32 on the tf32 and fp16 tensor cores).

`check_claims` pairs verified jobs that differ in one thing only (the method, the element type or the block
size) on the same GPU device and the same shape, and says whether the ratio of their GFLOP/s lies where the
claim said it would. CPU jobs (numpy) belong to no GPU; they are the CPU side of a GPU device whose
jobs ran on the same host (`env_host`), or of the only GPU device when there is one. A comparison with the CPU
states the CPU line's BLAS threads against the machine's cores (analysis.cpu_line), and a row whose pairs use a
job that missed its noise target (analysis.noise) says how many, with noise.MARK.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from matmul_study.analysis.cpu_line import fewer_threads_words, load_words, threads_words
from matmul_study.analysis.ladder import DATASHEET_TFLOPS
from matmul_study.analysis.noise import MARK, noise_flags
from matmul_study.analysis.result_devices import gpu_devices, passed_with_device
from matmul_study.core import dtypes

CLAIM_COLUMNS = ["device", "claim", "comparison", "pairs", "median", "min", "max", "verdict"]
VERDICTS = ("holds", "partly holds", "does not hold", "not measured")

SIMT_METHODS = ("naive", "tiled", "tiled_unrolled", "register_tiled")
CLASSIC_GPU_METHODS = ("naive", "tiled", "tiled_unrolled", "wmma")

TILED = "Tiled is 5–10× faster than naive"
WMMA = "WMMA is 5–20× faster than tiled"
FLOAT = "float is about 2× faster than double"
BLOCKS = "32×32 blocks win for larger matrices and 16×16 for small ones"
GPU_CPU = "The GPU is 10–50× faster than the CPU"
# The datasheet's dense peaks on Hopper (H100/H200 SXM; analysis.ladder): FP8 and int8 at twice fp16's.
_SHEET = DATASHEET_TFLOPS["H200"]
FP8 = (f"FP8 runs at twice fp16's rate (datasheet: {_SHEET['float8_e4m3']:.0f} against "
       f"{_SHEET['float16']:.0f} TF/s dense)")
INT8 = (f"int8 runs at twice fp16's rate (datasheet: {_SHEET['int8']:.0f} TOPS against {_SHEET['float16']:.0f} "
        "TF/s dense)")
X3TF32 = "3xTF32 runs fp32 faster than SGEMM, at fp32's accuracy"
X3FP16 = "3xFP16 runs fp32 faster than SGEMM, at fp32's accuracy"
CLAIMS = (TILED, WMMA, FLOAT, BLOCKS, GPU_CPU, FP8, INT8, X3TF32, X3FP16)


@dataclass(frozen=True)
class Ratios:
    """Measured ratios of one comparison; `range` is the claim's (low, high), None for the block claim."""

    claim: str
    comparison: str
    ratios: np.ndarray
    range: tuple[float, float] | None = None
    verdict: str | None = None  # set directly where the verdict is not a range test
    noisy: np.ndarray | None = None  # per ratio: whether a job of its pair missed its noise target


# --------------------------------------------------------------------------------------------------------------
# the comparisons


def _ratio(num: pd.DataFrame, den: pd.DataFrame, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The ratios of the pairs, and per pair whether either side is flagged (its `_noisy` column)."""
    both = num.merge(den, on=on, suffixes=("_num", "_den"))
    noisy = both["_noisy_num"].astype(bool) | both["_noisy_den"].astype(bool) if len(both) else both.index == 0
    return (both["gflops_num"] / both["gflops_den"]).to_numpy(dtype=float), np.asarray(noisy, dtype=bool)


def _cols(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return df.groupby(keys, as_index=False).agg(gflops=("gflops", "median"), _noisy=("_noisy", "max"))


def _fastest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of `keys`, the fastest row's rate and flag."""
    return df.loc[df.groupby(keys)["gflops"].idxmax(), keys + ["gflops", "_noisy"]] if not df.empty else \
        pd.DataFrame(columns=keys + ["gflops", "_noisy"])


def _tiled_over_naive(ok: pd.DataFrame, method: str) -> Ratios:
    keys = ["dtype", "block", "shape"]
    r, noisy = _ratio(_cols(ok[ok["method"] == method], keys), _cols(ok[ok["method"] == "naive"], keys), keys)
    claim = TILED if method == "tiled" else f"{TILED} ({method})"
    return Ratios(claim, f"{method} GFLOP/s over naive at the same dtype, block size and shape; claimed 5–10×",
                  r, (5, 10), noisy=noisy)


def _wmma_over_tiled(ok: pd.DataFrame, method: str) -> Ratios:
    wmma = _cols(ok[(ok["method"] == method) & (ok["dtype"] == "float16")], ["shape"])
    tiled = _fastest(ok[(ok["method"] == "tiled") & (ok["dtype"] == "float32")], ["shape"])
    r, noisy = _ratio(wmma, tiled, ["shape"])
    claim = WMMA if method == "wmma" else f"{WMMA} ({method})"
    return Ratios(claim, f"{method} float16 GFLOP/s over the best tiled float32 block size at the same shape; "
                  "claimed 5–20×", r, (5, 20), noisy=noisy)


def _float_over_double(ok: pd.DataFrame, methods: tuple[str, ...]) -> Ratios:
    sel = ok[ok["method"].isin(methods)]
    keys = ["method", "block", "shape"]
    r, noisy = _ratio(_cols(sel[sel["dtype"] == "float32"], keys), _cols(sel[sel["dtype"] == "float64"], keys), keys)
    which = ", ".join(methods)
    claim = FLOAT if methods == SIMT_METHODS else f"{FLOAT} ({which})"
    return Ratios(claim, f"float32 GFLOP/s over float64 for the same kernel, block size and shape ({which}); "
                  "'about 2×' read as 1.6–2.5×", r, (1.6, 2.5), noisy=noisy)


def _blocks(ok: pd.DataFrame) -> Ratios:
    sel = _cols(ok[ok["block"].isin([16, 32])], ["method", "dtype", "block", "shape", "size"])
    ratios, large_wins, small_wins, n_small, both, groups = [], 0, 0, 0, 0, 0
    for _, g in sel.groupby(["method", "dtype"]):
        per = g.pivot_table(index=["shape", "size"], columns="block", values="gflops").dropna()
        if 16 not in per or 32 not in per or per.empty:
            continue
        per = per.reset_index().sort_values("size")
        groups += 1
        big = per.iloc[-1][32] / per.iloc[-1][16]
        ratios.append(big)
        large_ok = big > 1
        large_wins += large_ok
        small_ok = False
        if per["size"].iloc[0] < per["size"].iloc[-1]:
            small = per.iloc[0][32] / per.iloc[0][16]
            ratios.append(small)
            n_small += 1
            small_ok = small < 1
            small_wins += small_ok
        both += large_ok and small_ok
    if not groups:
        verdict = "not measured"
    elif both > groups / 2:
        verdict = "holds"
    elif large_wins > groups / 2 or (n_small and small_wins > n_small / 2) or both:
        verdict = "partly holds"
    else:
        verdict = "does not hold"
    words = (f"32×32 over 16×16 GFLOP/s, same kernel and dtype: at the largest size 32×32 wins {large_wins} of "
             f"{groups}, at the smallest 16×16 wins {small_wins} of {n_small}; holds if both for most")
    return Ratios(BLOCKS, words, np.array(ratios, dtype=float), None, verdict)


def cpu_line_words(cpu_rows: pd.DataFrame) -> tuple[str, str]:
    """The CPU line of a comparison (its verified numpy jobs): what it ran on ("numpy on 1 BLAS thread of a
    16-core machine"), and the sentences after the comparison: fewer threads than cores, the load beside it."""
    if cpu_rows.empty:
        return "numpy on the host CPU (no verified CPU job)", ""
    load = load_words(cpu_rows)
    after = [fewer_threads_words(cpu_rows), f"Beside the CPU jobs: {load}." if load else None]
    return threads_words(cpu_rows), " ".join(filter(None, after))


def _gpu_over_cpu(ok: pd.DataFrame, methods: tuple[str, ...], what: str) -> Ratios:
    gpu = _fastest(ok[ok["method"].isin(methods)], ["dtype", "shape"])
    numpy = ok[ok["method"] == "numpy"]
    r, noisy = _ratio(gpu, _cols(numpy, ["dtype", "shape"]), ["dtype", "shape"])
    claim = GPU_CPU if what == "classic" else f"{GPU_CPU} ({what})"
    kernels = "the best of " + ", ".join(methods) if len(methods) > 1 else methods[0]
    line, after = cpu_line_words(numpy)
    return Ratios(claim, f"{kernels} GFLOP/s over {line} at the same dtype and shape; claimed 10–50×."
                  + (f" {after}" if after else ""), r, (10, 50), noisy=noisy)


def _over_fp16(ok: pd.DataFrame, dtype: str, claim: str) -> Ratios:
    fastest = _fastest(ok, ["dtype", "shape"])
    r, noisy = _ratio(fastest[fastest["dtype"] == dtype], fastest[fastest["dtype"] == "float16"], ["shape"])
    return Ratios(claim, f"the fastest verified {dtype} kernel (ours or the vendor's) over the fastest float16 one "
                  "at the same shape, operations per second; 'twice' read as 1.6–2.5×", r, (1.6, 2.5), noisy=noisy)


def _over_sgemm(ok: pd.DataFrame, method: str, claim: str) -> Ratios:
    """An fp32 rung on the tensor cores (3xTF32, 3xFP16) against cuBLAS SGEMM."""
    fp32 = ok[ok["dtype"] == "float32"]
    r, noisy = _ratio(_cols(fp32[fp32["method"] == method], ["shape"]),
                      _cols(fp32[fp32["method"] == "cublas"], ["shape"]), ["shape"])
    return Ratios(claim, f"{method} GFLOP/s over cuBLAS SGEMM at the same shape, both verified against float32's "
                  f"tolerance ({dtypes.get('float32').tolerance:g}); 'faster' read as above 1×", r, (1, np.inf),
                  noisy=noisy)


def verdict(ratios: np.ndarray, low: float, high: float) -> str:
    """holds: the median lies in [low, high]; partly: [min, max] overlaps it; else does not hold."""
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return "not measured"
    if low <= np.median(ratios) <= high:
        return "holds"
    if ratios.min() <= high and ratios.max() >= low:
        return "partly holds"
    return "does not hold"


def _noisy_words(r: Ratios) -> str:
    """How many of the measured pairs use a flagged job: '' where none does."""
    finite = np.isfinite(r.ratios)
    flagged = int(r.noisy[finite].sum()) if r.noisy is not None and len(r.noisy) == len(r.ratios) else 0
    if not flagged:
        return ""
    return (f" {flagged} of the {int(finite.sum())} pairs use a job that missed its noise target {MARK}, so "
            "those ratios are less certain.")


def _row(device: str, r: Ratios) -> dict:
    x = r.ratios[np.isfinite(r.ratios)]
    return {
        "device": device,
        "claim": r.claim,
        "comparison": r.comparison + _noisy_words(r),
        "pairs": int(x.size),
        "median": float(np.median(x)) if x.size else np.nan,
        "min": float(x.min()) if x.size else np.nan,
        "max": float(x.max()) if x.size else np.nan,
        "verdict": r.verdict if r.verdict is not None else verdict(x, *r.range),
    }


def check_claims(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (GPU device, claim): the measured ratios' count, median, min and max, and the verdict."""
    results = results.reset_index(drop=True)
    flags = noise_flags(results)["noisy"] if not results.empty else pd.Series(dtype=bool)
    ok = passed_with_device(results)
    ok = ok.assign(_noisy=flags.reindex(ok.index, fill_value=False).to_numpy(dtype=bool)).reset_index(drop=True)
    devices = gpu_devices(results) or [""]
    rows = []
    for device in devices:
        d = ok[ok["device"] == device] if not ok.empty else ok
        for r in (
            _tiled_over_naive(d, "tiled"),
            _tiled_over_naive(d, "tiled_unrolled"),
            _wmma_over_tiled(d, "wmma"),
            _wmma_over_tiled(d, "wmma_tiled"),
            _float_over_double(d, SIMT_METHODS),
            _float_over_double(d, ("cublas",)),
            _blocks(d),
            _gpu_over_cpu(d, CLASSIC_GPU_METHODS, "classic"),
            _gpu_over_cpu(d, ("cublas",), "cublas"),
            _over_fp16(d, "float8_e4m3", FP8),
            _over_fp16(d, "int8", INT8),
            _over_sgemm(d, "wgmma_3xtf32", X3TF32),
            _over_sgemm(d, "wgmma_3xfp16", X3FP16),
        ):
            rows.append(_row(device, r))
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
