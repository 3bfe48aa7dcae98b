"""The noise flag (analysis.noise): one rule for "this job missed its noise target", marked in every table, figure
and headline sentence that shows the job's rate; the CPU line's threads, cores and load where it is shown. On small
synthetic results (no GPU needed)."""

from __future__ import annotations

import html
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from test_figures_report import _row, _section, make_results

from matmul_study.analysis import collate
from matmul_study.analysis.claims import GPU_CPU, check_claims
from matmul_study.analysis.noise import MARK, NoisyJobs, noise_flags
from matmul_study.core import dtypes
from matmul_study.measure import cpu_job
from matmul_study.measure.stats import Measurement
from matmul_study.present import report
from matmul_study.present.figures import FIGURES
from matmul_study.present.figures.style import NOISY_LABEL

LARGEST = "1024x512x2048"


def _render(results: pd.DataFrame, tables: dict | None = None) -> str:
    return report.render_report(results, tables or {}, pd.DataFrame(columns=report.PRUNED_COLUMNS), {}, {})


def _text(fragment: str) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", fragment).split()))


def _headline(doc: str) -> str:
    return _text(re.search(r'<p class="headline" id="headline">(.*?)</p>', doc, re.S).group(1))


def _where(df: pd.DataFrame, label: str, dtype: str, shape: str) -> pd.Index:
    return df.index[(df["label"] == label) & (df["dtype"] == dtype) & (df["shape"] == shape)]


def _one(**fields) -> pd.DataFrame:
    row = {"method": "numpy", "label": "numpy", "dtype": "float32", "block": 0, "m": 256, "k": 256, "n": 256,
           "shape": "256x256x256", "status": "passed", "gflops": 100.0, "timing_rsd": 0.004,
           "timing_noise_target": 0.01, "timing_reps": 20, "env_device_kind": "cpu", "env_device_name": "CPU"}
    row.update(fields)
    return pd.DataFrame([row])


# ----------------------------------------------------------------------------------------------------- the rule


def test_a_median_rate_noisier_than_its_target_is_flagged_with_its_reason():
    flags = noise_flags(_one(timing_rsd=1.14, timing_noise_target=0.05, cpu_medians_s="0.0159;0.00014;0.01595"))
    assert flags["noisy"].iloc[0] and flags["over_target"].iloc[0]
    assert flags["reason"].iloc[0].startswith("RSD 114% against a 5% target")
    assert "its processes' medians were 15.9, 0.14 and" in flags["reason"].iloc[0]
    quiet = noise_flags(_one(timing_rsd=0.04, timing_noise_target=0.05))
    assert not quiet["noisy"].iloc[0] and not quiet["over_target"].iloc[0] and quiet["reason"].iloc[0] == ""


def test_a_burst_rate_is_flagged_only_where_its_plateau_fell_short():
    gpu = {"method": "tiled", "label": "tiled b16", "env_device_kind": "gpu", "env_device_name": "GPU",
           "rate": "burst", "timing_rsd": 0.06, "timing_noise_target": 0.01, "burst_samples_total": 150}
    settled = noise_flags(_one(**gpu, burst_samples_at_fastest=120, burst_plateau_samples=5))
    # the spread of all samples is the power limiter's; the burst rate is the median of its plateau
    assert settled["over_target"].iloc[0] and not settled["noisy"].iloc[0]
    short = noise_flags(_one(**gpu, burst_samples_at_fastest=3, burst_plateau_samples=5))
    assert short["noisy"].iloc[0]
    assert short["reason"].iloc[0] == ("RSD 6% against a 1% target, and only 3 samples ran at the fastest level "
                                       "(the burst rule asks 5)")
    # results written before the burst rule recorded its plateau: its note says so
    note = "only 3 samples within 2% of the fastest (fewer than 5): the plateau of the fastest 5"
    assert noise_flags(_one(**gpu, burst_samples_at_fastest=3, burst_note=note))["noisy"].iloc[0]
    assert not noise_flags(_one(**gpu, burst_samples_at_fastest=3, burst_note=np.nan))["noisy"].iloc[0]
    # a short plateau within the target is no noise
    assert not noise_flags(_one(**{**gpu, "timing_rsd": 0.005}, burst_samples_at_fastest=3,
                                burst_plateau_samples=5))["noisy"].iloc[0]


def test_one_sample_failed_jobs_and_older_results():
    one = noise_flags(_one(timing_rsd=np.nan, timing_reps=1))
    assert one["noisy"].iloc[0] and "single timed sample" in one["reason"].iloc[0]
    failed = noise_flags(_one(status="failed", gflops=np.nan, timing_rsd=2.0))
    assert not failed["noisy"].iloc[0]
    older = _one(timing_rsd=2.0).drop(columns="timing_noise_target")
    assert not noise_flags(older)["noisy"].iloc[0]  # no target: nothing to have missed
    measured_with = noise_flags(older.assign(measured_config_measurement_noise_target=0.01))
    assert measured_with["noisy"].iloc[0]


def test_noisy_jobs_finds_a_flagged_job_by_what_a_table_names_it():
    df = pd.concat([_one(timing_rsd=0.5), _one(dtype="float64", label="numpy")], ignore_index=True)
    noisy = NoisyJobs(df)
    assert noisy and noisy.reason(label="numpy", dtype="float32", shape="256x256x256", device="CPU")
    assert noisy.reason(dtype="float64", shape="256x256x256") == ""
    assert noisy.reason(label="numpy", dtype="float32", shape="512x512x512") == ""
    table = pd.DataFrame({"dtype": ["float32", "float64"], "shape": ["256x256x256"] * 2, "label": ["numpy"] * 2})
    assert list(noisy.reasons(table, dtype="dtype", shape="shape", label="label").astype(bool)) == [True, False]
    assert not NoisyJobs(_one())


# ---------------------------------------------------------------------------------------------- the report


def _flagged_results() -> pd.DataFrame:
    """make_results with two jobs that missed their target: the numpy float32 job at the largest shape (the CPU
    line of the headline) and cuBLAS float32 at 256³ (the best of its shape)."""
    df = make_results()
    df.loc[_where(df, "numpy", "float32", LARGEST), ["timing_rsd", "timing_noise_target"]] = [1.14, 0.05]
    df.loc[_where(df, "cublas", "float32", "256x256x256"), "timing_rsd"] = 0.031
    return df


def test_a_flagged_job_is_marked_in_the_headline_and_says_why():
    df = _flagged_results()
    doc = _render(df)
    headline = _headline(doc)
    numpy = df.loc[_where(df, "numpy", "float32", LARGEST)[0]]
    assert re.search(rf"runs float32 at [0-9.]+ TF/s {MARK} at 1024×512×2048", headline), headline
    assert f"{MARK} numpy float32 at 1024×512×2048 missed its noise target: RSD 114% against a 5% target" in headline
    # the GPU's sentence has no flagged number: no mark in it
    gpu_sentence = headline[:headline.index("The CPU line")]
    assert MARK not in gpu_sentence
    # a CPU-only run's answer table ranks numpy: only the flagged rate is marked, and the legend says what it means
    answer = _section(_render(df[df["method"] == "numpy"]), "answer")
    rows = re.findall(r"<tr>(.*?)</tr>", answer[answer.index("<tbody>"):answer.index("</table>")], re.S)
    marked = [r for r in rows if MARK in r]
    assert len(marked) == 1 and "float32" in marked[0] and LARGEST in marked[0]
    assert re.search(rf"<td>{str(numpy['gflops'] / 1e3)[:4]}[0-9]* {MARK}</td>", marked[0]), marked[0]
    assert "missed its noise target: RSD 114% against a 5% target" in _text(answer)
    assert 'class="noise-legend"' in answer


def test_a_flagged_job_is_marked_in_the_tables_and_an_unflagged_one_is_not():
    df = _flagged_results()
    tables = {"best": collate.best_per_shape(df), "speedup": collate.speedup_table(df)}
    doc = _render(df, tables)
    best = _section(doc, "tables")
    best = best[:best.index("</table>")]
    row = [r for r in re.findall(r"<tr>(.*?)</tr>", best, re.S) if "256x256x256" in r and "float32" in r][0]
    assert f"{MARK}</td>" in row and "cublas" in row
    assert sum(MARK in r for r in re.findall(r"<tr>(.*?)</tr>", best, re.S)) == 1
    assert "missed its noise target" in _section(doc, "tables")  # the legend under the marked table
    jobs = _section(doc, "all-jobs")
    rows = {tuple(re.findall(r"<td>(.*?)</td>", r)[:3]): r for r in re.findall(r"<tr>(.*?)</tr>", jobs, re.S)}
    assert "RSD 114% against a 5% target" in rows[("numpy", "float32", LARGEST)]
    assert MARK not in rows[("numpy", "float64", LARGEST)]
    assert "noise_flag why a job" in jobs
    # without a flagged job, no mark, no legend and no noise_flag column anywhere
    plain = _render(make_results(), {"best": collate.best_per_shape(make_results())})
    assert MARK not in plain and "noise_<wbr>flag" not in plain and 'id="noise-flag"' not in plain


def test_the_measurement_section_says_which_jobs_the_flag_marks_and_why_a_burst_rate_is_spared():
    df = _flagged_results()
    tiled = _where(df, "tiled b16", "float64", "512x512x512")
    df["rate"] = np.where(df["env_device_kind"] == "gpu", "burst", "median")
    df["burst_samples_at_fastest"], df["burst_plateau_samples"] = 150.0, 5.0
    df.loc[tiled, "timing_rsd"] = 0.06  # over its target, but its burst plateau formed
    meas = _section(_render(df), "measurement")
    assert "3 of" in _text(meas) and "missed the noise target" in meas
    assert "1 job is flagged" in _text(meas)  # cuBLAS too has a burst rate now: only numpy stays flagged
    assert "no: its burst rate is the median of its fastest samples" in meas
    assert MARK not in _headline(_render(df)).split("The CPU line")[0]


def test_a_flagged_job_is_ringed_in_the_figures():
    df = _flagged_results()
    for name in ("throughput", "ladder"):
        fig = FIGURES[name].plot(df, None)
        try:
            rings = [c for ax in fig.axes for c in ax.collections if c.get_label() == "_noisy"]
            labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
            if name == "throughput":  # numpy and cuBLAS float32
                assert sum(len(c.get_offsets()) for c in rings) == 2 and NOISY_LABEL in labels
            else:  # the ladder's rungs at the largest shape: none flagged
                assert not rings and NOISY_LABEL not in labels
        finally:
            matplotlib.pyplot.close(fig)
    fig = FIGURES["throughput"].plot(make_results(), None)
    try:
        assert not [c for ax in fig.axes for c in ax.collections if c.get_label() == "_noisy"]
    finally:
        matplotlib.pyplot.close(fig)


def test_older_results_without_the_new_fields_still_render():
    df = make_results().drop(columns=["timing_noise_target", "threads", "timing_reps"])
    doc = _render(df)
    assert MARK not in doc and "load " not in _headline(doc)
    assert "numpy (its BLAS thread count is not recorded)" in _section(doc, "claims")
    assert "The CPU line (numpy on Test CPU 9000)" in _headline(doc)


# ------------------------------------------------------------------------------------- the CPU line's words


HOST = {"cpu_host_cores": 2, "cpu_host_usable_cores": 2, "cpu_host_load_before": 2.9, "cpu_host_load_after": 3.2,
        "cpu_host_others_cores": 1.8, "cpu_host_others": "stress-ng (1.7 cores), python3 (0.1 cores)"}


def _claims(cpu: dict) -> pd.DataFrame:
    rows = []
    for size in (256, 512):
        rows.append(_row("numpy", "float32", 0, (size, size, size), 10.0, 1e-6) | cpu)
        rows.append(_row("naive", "float32", 16, (size, size, size), 200.0, 1e-6))
    return check_claims(pd.DataFrame(rows))


def _cpu_row(table: pd.DataFrame) -> pd.Series:
    return table[table["claim"] == GPU_CPU].iloc[0]


@pytest.mark.parametrize("cpu, says, caveat", [
    ({"threads": 1, "cpu_host_cores": 16}, "numpy on 1 BLAS thread of a 16-core machine", True),
    ({"threads": 16, "cpu_host_cores": 16}, "numpy on 16 BLAS threads of a 16-core machine", False),
    ({"threads": 1, "env_cpu_cores": 8}, "numpy on 1 BLAS thread of an 8-core machine", True),
    ({"threads": 2, "cpu_host_cores": 64, "cpu_host_usable_cores": 2},
     "numpy on 2 BLAS threads of a 64-core machine (2 of them usable by the job)", True),
    ({"threads": 1}, "numpy on 1 BLAS thread (the machine's core count is not recorded)", True),
])
def test_a_verdict_that_uses_the_cpu_line_names_its_threads(cpu, says, caveat):
    row = _cpu_row(_claims(cpu))
    assert row["verdict"] == "holds" and says in row["comparison"]
    assert ("overstates the GPU's lead" in row["comparison"]) == caveat
    # the claims that do not use the CPU line say nothing of it
    table = _claims(cpu)
    others = table[~table["claim"].str.startswith(GPU_CPU)]
    assert not others["comparison"].str.contains("BLAS thread").any()


def test_a_verdict_says_how_many_pairs_use_a_flagged_job_and_the_load_beside_the_cpu_line():
    rows = []
    for size, rsd in ((256, 0.5), (512, 0.004)):
        rows.append(_row("numpy", "float32", 0, (size, size, size), 10.0, 1e-6) | HOST | {"timing_rsd": rsd})
        rows.append(_row("naive", "float32", 16, (size, size, size), 200.0, 1e-6))
    df = pd.DataFrame(rows)
    row = _cpu_row(check_claims(df))
    assert f"1 of the 2 pairs use a job that missed its noise target {MARK}" in row["comparison"]
    assert "Beside the CPU jobs: load 3.2 on 2 cores, other processes busy on up to 1.8 cores" in row["comparison"]
    assert "(stress-ng, python3)" in row["comparison"]
    doc = _render(df)
    assert "During its jobs: load 3.2 on 2 cores, other processes busy on up to 1.8 cores" in _headline(doc)
    assert "2 BLAS threads" not in _headline(doc) and "1 BLAS thread of 2 cores" in _headline(doc)
    jobs = _section(doc, "all-jobs")
    assert "load 3.2 on 2 cores, other processes busy on 1.8 cores (stress-ng, python3)" in jobs
    assert "cpu_load what else the machine ran" in _text(jobs)


# ------------------------------------------------------------------------------------ what the CPU job records


def test_host_load_from_two_snapshots():
    before = cpu_job.HostSnapshot(0.0, 1.0, 10.0, 1.0, {5: ("stress-ng", 3.0), 7: ("idle", 1.0)})
    after = cpu_job.HostSnapshot(2.0, 3.2, 14.0, 2.0, {5: ("stress-ng", 6.6), 7: ("idle", 1.0), 9: ("new", 1.0)})
    load = cpu_job.host_load(before, after)
    assert (load["load_before"], load["load_after"], load["window_s"]) == (1.0, 3.2, 2.0)
    assert load["busy_cores"] == pytest.approx(2.0) and load["own_cores"] == pytest.approx(0.5)
    assert load["others_cores"] == pytest.approx(1.5) and load["others"] == "stress-ng (1.8 cores)"
    assert load["cores"] >= 1 and 1 <= load["usable_cores"] <= load["cores"]
    # without /proc: what cannot be known is None, nothing raises
    blind = cpu_job.HostSnapshot(0.0, None, None, 1.0, {})
    unknown = cpu_job.host_load(blind, cpu_job.HostSnapshot(1.0, None, None, 1.5, {}))
    assert unknown["busy_cores"] is None and unknown["others_cores"] is None and unknown["others"] is None


def test_a_cpu_job_records_the_load_beside_it():
    a = np.ones((32, 32))
    meas = Measurement.from_config({"warmup": 1, "min_reps": 3, "max_reps": 5, "min_time_s": 0.001,
                                    "max_time_s": 0.05, "cpu_max_s": 5})
    times, verifications, _ = cpu_job.run(a, a, dtypes.get("float64"), meas, 1)
    host = cpu_job.last_run_budget()["host"]
    assert times and verifications[0].passed
    assert host["cores"] >= 1 and host["window_s"] > 0 and host["own_cores"] >= 0
    assert host["load_before"] is None or host["load_before"] >= 0
