"""Do two runs of the same study agree? Per job, the change of the headline rate (a GPU job's burst rate, the
CPU's median), counted separately for GPU and CPU jobs; and the sustained rates with their settled clock and
power, shown side by side (they depend on the card's power and thermal state, which differ between machines).

Jobs are joined on their device as well, so that two runs on different card models share no GPU job. Across card
models (a second reference GPU against the first) the rates differ by design and the ratios to the vendor in the
same run are what should agree: across_devices joins on the job alone."""

from __future__ import annotations

import pandas as pd

from matmul_study.core.records import JOB_KEYS
from matmul_study.core.results import job_names

KEYS = ["env_device_name", *JOB_KEYS]
SUSTAINED = ["sustained_gflops", "sustained_sm_clock_mhz", "sustained_power_w", "sustained_gflop_per_j"]
# The study's claims are ratios to cuBLAS measured in the same run: a card that runs everything 3 % slower than
# another moves every rate but none of these.
RATIO = "pct_of_cublas"


def _rates(df: pd.DataFrame) -> pd.DataFrame:
    """Passed jobs indexed by KEYS: the headline rate, whether it ran on a GPU, and the sustained columns."""
    df = df[df["status"] == "passed"].copy()
    # Tables collated before configurations were a pipeline axis ran every method's default build.
    df["variant"] = df["variant"].fillna("default") if "variant" in df else "default"
    if "gflops" not in df:  # older tables: only the median time
        df["gflops"] = 2 * df["m"] * df["k"] * df["n"] / df["timing_median_s"] / 1e9
    kind = df["env_device_kind"] if "env_device_kind" in df else pd.Series("gpu", index=df.index)
    df["on_gpu"] = (kind.fillna("gpu") == "gpu") & (df["method"] != "numpy")
    for col in [*SUSTAINED, RATIO]:
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else float("nan")
    return df.set_index(KEYS)[["gflops", "on_gpu", *SUSTAINED, RATIO]]


def _summary(both: pd.DataFrame, tolerance: float) -> dict:
    change = both["change"].abs()
    worst = both.reindex(change.sort_values(ascending=False).index).head(10).reset_index()
    return {
        "jobs_compared": len(both),
        "within_tolerance": int((change <= tolerance).sum()),
        "fraction_within": float((change <= tolerance).mean()) if len(both) else None,
        "median_abs_change": float(change.median()) if len(both) else None,
        "worst_abs_change": float(change.max()) if len(both) else None,
        "worst": worst.assign(label=job_names(worst))[["label", "first_gflops", "second_gflops", "change"]]
        .to_dict("records"),
    }


def _ratios(gpu: pd.DataFrame) -> pd.DataFrame:
    """GPU jobs other than cuBLAS with a ratio to cuBLAS in both runs, as the rate columns _summary reads."""
    ratios = gpu[gpu.index.get_level_values("method") != "cublas"].dropna(subset=[f"{RATIO}_a", f"{RATIO}_b"])
    ratios = ratios.assign(first_gflops=ratios[f"{RATIO}_a"] / 100, second_gflops=ratios[f"{RATIO}_b"] / 100)
    return ratios.assign(change=ratios["second_gflops"] / ratios["first_gflops"] - 1)


def _devices(rates: pd.DataFrame) -> list[str]:
    """The GPU models a run's passed jobs ran on."""
    gpu = rates[rates["on_gpu"]]
    return sorted(str(d) for d in gpu.index.get_level_values("env_device_name").unique())


def _job_only(rates: pd.DataFrame, side: str) -> pd.DataFrame:
    """The rates indexed by the job alone; a run holding one job on two card models cannot be joined so."""
    rates = rates.droplevel("env_device_name")
    if rates.index.duplicated().any():
        twice = job_names(rates[rates.index.duplicated()].reset_index().head(1))[0]
        raise ValueError(f"the {side} run holds {twice} on more than one device model: compare it per device "
                         "(without --across-devices)")
    return rates


def compare(first: pd.DataFrame, second: pd.DataFrame, tolerance: float = 0.03,
            across_devices: bool = False) -> dict:
    """Jobs passed in both runs, joined on device (unless across_devices), method, dtype, block, variant and
    shape."""
    a, b = _rates(first), _rates(second)
    devices = {"first": _devices(a), "second": _devices(b)}
    if across_devices:
        a, b = _job_only(a, "first"), _job_only(b, "second")
    both = a.merge(b, how="inner", left_index=True, right_index=True, suffixes=("_a", "_b"))
    both = both.rename(columns={"gflops_a": "first_gflops", "gflops_b": "second_gflops"})
    both["change"] = both["second_gflops"] / both["first_gflops"] - 1
    gpu = both[both["on_gpu_a"]]
    sustained = gpu.dropna(subset=["sustained_gflops_a", "sustained_gflops_b"]).reset_index()
    cublas = gpu.reset_index()
    cublas = cublas[(cublas["method"] == "cublas") & (cublas["m"] == cublas["k"]) & (cublas["k"] == cublas["n"])
                    & cublas["m"].isin([4096, 8192])]
    note = None
    if not across_devices and devices["first"] and devices["second"] and not len(gpu):
        note = (f"no GPU job ran on the same device model in both runs (first: {', '.join(devices['first'])}; "
                f"second: {', '.join(devices['second'])}): --across-devices joins on the job alone, and its "
                "vs_cublas compares the ratios to the vendor measured in each run")
    return {
        "tolerance": tolerance,
        "devices": devices,
        "across_devices": across_devices,
        **({"note": note} if note else {}),
        "rate": "burst for GPU jobs, median for CPU jobs (the results' gflops column)",
        **_summary(both, tolerance),  # all jobs, as before
        "gpu": _summary(gpu, tolerance),
        "cpu": _summary(both[~both["on_gpu_a"]], tolerance),
        "vs_cublas": _summary(_ratios(gpu), tolerance),
        "cublas_4096_8192": cublas.assign(label=job_names(cublas))[["label", "first_gflops", "second_gflops", "change"]]
        .to_dict("records"),
        "sustained": [
            {"label": label, **{f"{side}_{col}": row[f"{col}_{s}"] for side, s in (("first", "a"), ("second", "b"))
                                for col in SUSTAINED},
             "change": row["sustained_gflops_b"] / row["sustained_gflops_a"] - 1}
            for label, (_, row) in zip(job_names(sustained), sustained.iterrows())],
    }


def markdown(result: dict, first: str, second: str) -> str:
    """The comparison as a short Markdown page (for committing beside the two runs)."""
    lines = [f"# {first} vs {second}", "",
             f"Rate: {result['rate']}; a job reproduces when its rate changed by at most {result['tolerance']:.0%}.", ""]
    devices = result.get("devices")
    if devices:
        joined = "the job alone, across device models" if result.get("across_devices") else "the device and the job"
        lines += [f"GPUs: {', '.join(devices['first']) or 'none'} (first), {', '.join(devices['second']) or 'none'} "
                  f"(second); jobs joined on {joined}.", ""]
    if result.get("note"):
        lines += [f"Note: {result['note']}.", ""]
    for part in ("gpu", "cpu"):
        s = result[part]
        if s["jobs_compared"]:
            lines.append(f"- **{part.upper()} jobs**: {s['within_tolerance']} of {s['jobs_compared']} within "
                         f"({s['fraction_within']:.1%}); median |change| {s['median_abs_change']:.2%}, worst "
                         f"{s['worst_abs_change']:.2%}.")
    ratios = result.get("vs_cublas") or {}
    if ratios.get("jobs_compared"):
        lines.append(f"- **× cuBLAS in the same run** (GPU jobs other than cuBLAS): {ratios['within_tolerance']} of "
                     f"{ratios['jobs_compared']} within ({ratios['fraction_within']:.1%}); median |change| "
                     f"{ratios['median_abs_change']:.2%}, worst {ratios['worst_abs_change']:.2%}.")
    lines += ["", "## cuBLAS at 4096³ and 8192³ (burst GFLOP/s)", "", "| job | first | second | change |",
              "| --- | --- | --- | --- |"]
    lines += [f"| {r['label']} | {r['first_gflops']:.0f} | {r['second_gflops']:.0f} | {r['change']:+.2%} |"
              for r in result["cublas_4096_8192"]]
    lines += ["", "## Largest changes (GPU jobs)", "", "| job | first | second | change |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['label']} | {r['first_gflops']:.4g} | {r['second_gflops']:.4g} | {r['change']:+.2%} |"
              for r in result["gpu"]["worst"]]
    if ratios.get("jobs_compared"):
        lines += ["", "## Largest changes of × cuBLAS (same run)", "", "| job | first | second | change |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {r['label']} | {r['first_gflops']:.3f} | {r['second_gflops']:.3f} | {r['change']:+.2%} |"
                  for r in ratios["worst"]]
    lines += ["", "## Sustained rates (GFLOP/s at the settled SM clock and power)", "",
              "| job | first | clock, power | second | clock, power | change |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['label']} | {r['first_sustained_gflops']:.4g} | {r['first_sustained_sm_clock_mhz']:.0f} MHz, "
              f"{r['first_sustained_power_w']:.0f} W | {r['second_sustained_gflops']:.4g} | "
              f"{r['second_sustained_sm_clock_mhz']:.0f} MHz, {r['second_sustained_power_w']:.0f} W | "
              f"{r['change']:+.2%} |" for r in result["sustained"]]
    return "\n".join(lines) + "\n"
