"""Where the jobs' own time went (analysis/job_time.py), from the times each result records."""

import pandas as pd
import pytest

from matmul_study.analysis.job_time import PHASES, job_time
from matmul_study.present.report.measurement import _job_time_sentence


def results(**columns) -> pd.DataFrame:
    base = {"overhead_startup_s": [1.0, 1.5], "overhead_slot_wait_s": [0.0, 2.0], "overhead_inputs_s": [0.5, 0.5],
            "overhead_timed_s": [3.0, 1.0], "burst_settle_s": [1.0, 0.0], "burst_recovery_s": [0.0, 0.5],
            "overhead_job_s": [6.0, 4.0]}
    base.update(columns)
    return pd.DataFrame(base)


def test_the_phases_add_up_to_the_jobs_own_time():
    phases = job_time(results()).set_index("phase")["seconds"]
    assert list(phases.index) == list(PHASES)
    assert phases["start-up (Python and imports)"] == 2.5 and phases["waiting for a GPU slot"] == 2.0
    assert phases["inputs"] == 1.0 and phases["timed samples"] == 4.0 and phases["settling and cool-down"] == 1.5
    # results that did not time their checks or run a window: the rest of the jobs' time, 10 s less inputs,
    # samples and waits
    assert phases["checks against fp64"] == phases["sustained windows"] == 0.0
    assert phases["set-up, warm-ups and the rest"] == pytest.approx(10.0 - 1.0 - 4.0 - 1.5)
    assert job_time(results())["share"].sum() == pytest.approx(1.0)


def test_checks_and_sustained_windows_are_phases_of_their_own():
    # The second job ran a window of its own (2 s); the first took its sustained record from its burst samples,
    # whose window is in its timed samples already.
    timed = results(overhead_checks_s=[0.5, 0.25], sustained_window_s=[3.0, 2.0],
                    sustained_source=["the burst samples: each launch outlasts the power limiter's window", None])
    phases = job_time(timed).set_index("phase")["seconds"]
    assert phases["checks against fp64"] == 0.75 and phases["sustained windows"] == 2.0
    assert phases["set-up, warm-ups and the rest"] == pytest.approx(10.0 - 1.0 - 4.0 - 1.5 - 0.75 - 2.0)
    assert phases.sum() == pytest.approx(10.0 + 2.5 + 2.0)  # the jobs' spans, their start-ups and slot waits


def test_results_without_the_times_give_no_split_and_older_ones_no_start_up():
    assert job_time(pd.DataFrame({"method": ["numpy"]})) is None
    older = job_time(results().drop(columns=["overhead_startup_s", "overhead_slot_wait_s"])).set_index("phase")
    assert older.loc["start-up (Python and imports)", "seconds"] == 0.0
    assert older.loc["timed samples", "seconds"] == 4.0


def test_the_report_sentence_names_the_largest_phase_first_and_leaves_out_empty_ones():
    text = _job_time_sentence(results(overhead_slot_wait_s=[0.0, 0.0]))
    assert text.startswith("Where the jobs' own time went, 12.5 s over 2 jobs: timed samples 4.0 s (32%); set-up, "
                           "warm-ups and the rest 3.5 s")
    assert "checks against fp64" not in text and "sustained windows" not in text
    assert "waiting for a GPU slot" not in text and "time between jobs" in text and "Compiling" not in text
    with_builds = _job_time_sentence(results(), [2.0, 1.5])
    assert "Compiling the 2 kernel builds they load took 3.5 s" in with_builds


def test_a_process_age_is_no_more_than_the_time_since_it_was_started():
    # The start-up a job records: a fresh process's age, taken at once, fits inside the time since it was launched
    # (to the 10 ms clock tick); an age from a boot time in whole seconds is up to a second too old.
    import subprocess
    import sys
    import time

    code = "from matmul_study.measure.environment import process_age_s; import time; print(process_age_s(), time.time())"
    for _ in range(3):
        launched = time.time()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        age, now = float(out[0]), float(out[1])
        assert 0.0 <= age <= now - launched + 0.02, (age, now - launched)


def _spans(*spans, **columns):
    """Jobs on one GPU of one host with the given (start, end) seconds, each recording job_s as its span."""
    t0 = pd.Timestamp("2026-11-28T10:00:00Z")
    iso = lambda s: (t0 + pd.Timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")  # noqa: E731
    return pd.DataFrame({"method": "naive", "env_device_kind": "gpu", "env_device_name": "GPU", "env_host": "node",
                         "overhead_started_utc": [iso(a) for a, _ in spans],
                         "overhead_finished_utc": [iso(b) for _, b in spans],
                         "overhead_job_s": [b - a for a, b in spans], **columns})


def test_the_study_time_counts_what_no_job_covers_less_the_start_ups_and_waits():
    from matmul_study.analysis.job_time import BETWEEN, study_time

    # gaps of 2 s and 3 s; the second and third jobs overlap (two slots); a 1000 s gap is a pause between runs
    jobs = _spans((0, 10), (12, 20), (15, 25), (28, 30), (1030, 1031), overhead_startup_s=0.5,
                  overhead_slot_wait_s=0.1)
    table = study_time(jobs).set_index("phase")["seconds"]
    assert table["start-up (Python and imports)"] == pytest.approx(2.5)
    assert table["waiting for a GPU slot"] == pytest.approx(0.5)
    assert table[BETWEEN] == pytest.approx(2 + 3 - 2.5 - 0.5)
    assert table.sum() == pytest.approx(10 + 8 + 10 + 2 + 1 + 2 + 3)


def test_the_study_time_is_per_device_and_none_without_the_jobs_times():
    from matmul_study.analysis.job_time import BETWEEN, study_time

    one = _spans((0, 1), (5, 6))
    other = _spans((0, 1), (2, 3)).assign(env_device_name="GPU 2")
    table = study_time(pd.concat([one, other], ignore_index=True))
    between = table[table["phase"] == BETWEEN].set_index("device")["seconds"]
    assert between.to_dict() == pytest.approx({"GPU": 4.0, "GPU 2": 1.0})
    assert study_time(one.drop(columns=["overhead_job_s"])) is None
    assert study_time(one.iloc[0:0]) is None
