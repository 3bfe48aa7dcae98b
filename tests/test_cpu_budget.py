"""The CPU job's time budget (measurement.cpu_max_s): what it plans, and what the result says it did."""

import contextlib
import os
import time
from dataclasses import replace

import numpy as np
import pytest

from matmul_study.core import dtypes
from matmul_study.measure import cpu_job
from matmul_study.measure.inputs import generate
from matmul_study.measure.stats import Measurement, Policy

POLICY = Policy(warmup=2, min_reps=5, max_reps=200, min_time_s=0.5, max_time_s=1.0)


def test_the_policy_minimum_is_its_warmups_then_min_reps_and_min_time():
    many = replace(POLICY, max_reps=10_000)
    assert cpu_job.policy_minimum_s(many, 0.001) == pytest.approx(0.002 + 0.5)  # min_time_s dominates
    assert cpu_job.policy_minimum_s(POLICY, 1.0) == pytest.approx(2 + 5)  # min_reps dominates
    assert cpu_job.policy_minimum_s(POLICY, 0.001) == pytest.approx(0.002 + 0.2)  # max_reps stops it first


def test_a_share_that_fits_the_policy_only_shortens_the_window():
    plan = cpu_job.process_policy(POLICY, share_s=1.0, t_call=0.001, startup_s=0.2)
    assert (plan.warmup, plan.min_reps, plan.min_time_s) == (2, 5, 0.5)
    assert plan.max_time_s == pytest.approx(0.8 - 0.002)
    roomy = cpu_job.process_policy(POLICY, share_s=10.0, t_call=0.001, startup_s=0.2)
    assert roomy == POLICY  # never longer than max_time_s


def test_a_share_too_small_cuts_warmups_then_samples_down_to_one():
    # 1 s calls, 4.5 s left after start-up: one warm-up, then 3 samples instead of 2 and 5.
    plan = cpu_job.process_policy(POLICY, share_s=4.7, t_call=1.0, startup_s=0.2)
    assert (plan.warmup, plan.min_reps) == (1, 3)
    # Less than two calls' time: no warm-up, one sample.
    plan = cpu_job.process_policy(POLICY, share_s=1.5, t_call=1.0, startup_s=0.2)
    assert (plan.warmup, plan.min_reps) == (0, 1)
    plan = cpu_job.process_policy(POLICY, share_s=0.0, t_call=60.0, startup_s=0.2)
    assert (plan.warmup, plan.min_reps) == (0, 1)


def test_below_minimum_means_less_than_the_policy_asks_at_least():
    assert not cpu_job.below_minimum([0.1] * 5, 2, POLICY)
    assert cpu_job.below_minimum([0.1] * 5, 1, POLICY)  # a warm-up short
    assert cpu_job.below_minimum([0.2] * 2, 2, POLICY)  # fewer than min_reps
    assert cpu_job.below_minimum([0.01] * 6, 2, POLICY)  # 0.06 s < min_time_s
    assert not cpu_job.below_minimum([0.001] * 200, 2, POLICY)  # max_reps stops it: the policy's own cap


def _measurement(**overrides) -> Measurement:
    section = {"warmup": 2, "min_reps": 5, "max_reps": 50, "min_time_s": 0.05, "max_time_s": 0.2,
               "cpu_processes": 2, "cpu_max_s": 30}
    section.update(overrides)
    return Measurement.from_config(section)


def _run(size: int, measurement: Measurement):
    a, b = generate(size, size, size, "float64", 1, -5, 5)
    spec = cpu_job.InputSpec(size, size, size, "float64", 1, -5, 5)
    t0 = time.monotonic()
    times, verifications, medians = cpu_job.run(a, b, dtypes.get("float64"), measurement, 1, spec)
    return time.monotonic() - t0, times, verifications, medians, cpu_job.last_run_budget()


def test_a_roomy_budget_runs_the_whole_policy_and_says_it_was_not_capped():
    _, times, verifications, medians, budget = _run(64, _measurement())
    assert len(medians) == 2 and len(verifications) == 2 and all(v.passed for v in verifications)
    assert budget["capped"] is False and budget["verified_after_timing"] is True
    assert budget["processes_asked"] == 2 and budget["warmup"] == [2, 2] and sum(budget["reps"]) == len(times)
    assert all(r >= 5 for r in budget["reps"]) and budget["max_s"] == 30


def test_a_tight_budget_caps_the_job_and_the_result_says_so():
    # One 768^3 float64 call on one thread takes tens of milliseconds; 5 ms of budget leaves room for none: one
    # process, no warm-up, one sample, no check after timing.
    elapsed, times, verifications, medians, budget = _run(768, _measurement(cpu_max_s=0.005, min_time_s=1,
                                                                             max_time_s=2))
    assert budget["capped"] is True
    assert budget["reps"] == [1] and budget["warmup"] == [0] and len(medians) == 1 and len(times) == 1
    assert budget["verified_after_timing"] is False and len(verifications) == 1 and verifications[0].passed
    # The call outlasted the whole budget: the verified call is the sample, with no second call.
    assert budget["timed_in"] == "the verified call" and times == medians
    assert elapsed < 20


def test_a_budget_under_the_policy_minimum_times_fewer_samples_in_a_fresh_process():
    # A 256^3 call takes about a millisecond: 0.3 s cannot hold two processes of min_time_s 1 s each, so one
    # fresh process times a shortened window, and the result says the cap shaped it.
    _, times, verifications, medians, budget = _run(256, _measurement(cpu_max_s=0.3, min_time_s=1, max_time_s=2))
    assert budget["capped"] is True and budget["timed_in"] == "fresh processes"
    assert len(medians) == 1 and sum(budget["reps"]) == len(times) >= 1
    assert all(v.passed for v in verifications)


def test_threads_auto_is_every_core_this_process_may_use():
    assert cpu_job.resolve_threads("auto") >= 1
    assert cpu_job.resolve_threads(3) == 3


def test_a_failure_in_the_timing_process_is_raised_in_the_job_with_its_traceback():
    with pytest.raises(RuntimeError, match="(?s)numpy timing process failed.*ZeroDivisionError"):
        cpu_job.call_in_fresh_process(divmod, 1, 0)
    assert cpu_job.call_in_fresh_process(divmod, 7, 2) == (3, 1)
    assert np.isfinite(cpu_job.STARTUP_GUESS_S)


def test_what_a_timing_process_prints_goes_to_the_jobs_log_not_to_the_console(tmp_path, capfd):
    # A child stopped mid-start-up prints to its file descriptor 2: inside a job's log (stops.logged) that is
    # the log, not Snakemake's console.
    log = tmp_path / "job.log"
    with open(log, "w") as stream, contextlib.redirect_stderr(stream), contextlib.redirect_stdout(stream):
        assert cpu_job.call_in_fresh_process(os.write, 2, b"written by the child\n") > 0
        print("the job's own line")
    assert "written by the child" in log.read_text()
    os.write(2, b"the console again\n")  # the job's descriptor 2 is the console again after the start
    console = capfd.readouterr()
    assert "written by the child" not in console.err + console.out and "the console again" in console.err
