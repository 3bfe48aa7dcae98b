"""Burst and sustained rates without a GPU: sample selection, settle and recovery waits, modes, energy."""

import math

import pytest

from matmul_study.measure.timing import (Batch, at_full_clock, energy, fastest_plateau, idle, modes, off_fastest, select_burst,
                                 summarize_sustained, wait_until)


class FakeClock:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds


def test_burst_keeps_only_samples_at_full_clock_before_and_after():
    times = [1.0, 2.0, 1.01, 1.2, 1.005, 1.02]
    before = [1980, 1980, 1980, 1500, 1980, 1980]
    after = [1980, 1400, 1980, 1980, 1980, 1980]
    burst = select_burst(times, before, after, threshold_mhz=1782, min_kept=3, plateau_samples=3)
    # Samples 1 (slow end) and 3 (slow start) are dropped; the rest form one plateau: the median of 1.0 .. 1.02.
    assert (burst.kept, burst.total, burst.off_plateau) == (4, 6, 0)
    assert burst.median_s == pytest.approx((1.005 + 1.01) / 2)
    assert burst.note == ""


def test_samples_throttled_inside_a_full_clock_reading_fall_off_the_plateau():
    # What the H200 does under cuBLAS fp16: NVML reads 1980 MHz around every sample, yet after the first ones
    # the power limiter slows them by 10 %. Only the full-clock plateau counts.
    fast, slow = [1.000, 1.002, 1.004, 1.001, 1.003, 1.005], [1.10, 1.11, 1.12, 1.10, 1.09, 1.11, 1.10, 1.12, 1.10]
    times = fast + slow
    burst = select_burst(times, [1980] * len(times), [1980] * len(times), 1782, min_kept=3)
    assert (burst.kept, burst.off_plateau) == (6, 9)
    assert burst.median_s == pytest.approx(1.0025)


def test_a_steady_kernel_keeps_every_sample():
    times = [1.0 + 0.004 * ((7 * i) % 5) for i in range(40)]  # within 1.6 %: noise, not throttling
    burst = select_burst(times, [1980] * 40, [1980] * 40, 1782, min_kept=5)
    assert (burst.kept, burst.off_plateau) == (40, 0)


def test_the_band_and_the_sample_count_set_the_plateau():
    assert fastest_plateau([1.0, 1.0, 1.04, 1.04, 1.04], samples=2, band=0.02) == [1.0, 1.0]
    assert fastest_plateau([1.0, 1.0, 1.04, 1.04, 1.04], samples=2, band=0.05) == [1.0, 1.0, 1.04, 1.04, 1.04]
    # Fewer fast samples than the plateau needs: it moves onto the slow level, and the burst rate with it.
    assert fastest_plateau([1.0, 1.04, 1.04, 1.04, 1.04, 1.04], samples=2, band=0.02) == [1.0] + [1.04] * 5
    assert fastest_plateau([1.04, 1.0], samples=5, band=0.0) == [1.04, 1.0]  # more asked for than there are
    assert fastest_plateau([], 5, 0.02) == []


def test_a_few_fast_samples_among_many_throttled_ones_set_the_burst_rate():
    # dmma fp64 at 4096^3 on an H200 (15190bb): the first 5 of 81 samples at 59.3 TF/s, then the limiter held it
    # near 55 with NVML reading 1950 MHz. A quantile rule (the fastest fifth) took the throttled level.
    times = [1.0, 1.001, 0.999, 1.0, 1.002] + [1.08 + 0.001 * (i % 5) for i in range(76)]
    burst = select_burst(times, [1950] * 81, [1950] * 81, 1782, min_kept=5, plateau_samples=5, band=0.02)
    assert burst.median_s == pytest.approx(1.0) and (burst.kept, burst.at_fastest) == (5, 5)
    assert burst.note == ""


def test_too_few_samples_at_the_fastest_level_say_so():
    burst = select_burst([1.0, 1.0, 1.1, 1.1, 1.1, 1.1], [1980] * 6, [1980] * 6, 1782, min_kept=5,
                         plateau_samples=5, band=0.02)
    assert burst.at_fastest == 2 and "only 2 samples within 2% of the fastest" in burst.note
    assert burst.median_s == pytest.approx(1.1)  # the fifth fastest's plateau: the honest, slower level


def test_a_sample_off_the_fastest_level_is_one_past_the_band():
    assert not off_fastest(1.02, 1.0, 0.02) and off_fastest(1.021, 1.0, 0.02)


def test_too_few_full_clock_samples_give_no_burst_rate_and_say_so():
    burst = select_burst([1.0, 1.0, 1.0], [1980, 1200, 1200], [1980, 1200, 1200], 1782, min_kept=2)
    assert burst.median_s is None and burst.kept == 1
    assert "only 1 of 3 samples" in burst.note and "1782 MHz" in burst.note


def test_unreadable_clocks_leave_the_plateau_rule_alone_and_say_so():
    burst = select_burst([1.0, 1.01, 1.5, 1.005, 1.0], [], [], None, min_kept=2, plateau_samples=2)
    assert burst.kept == 4 and burst.off_plateau == 1 and burst.median_s == pytest.approx(1.0025)
    assert "not readable" in burst.note


def test_without_clock_readings_a_few_samples_still_give_a_rate_and_none_give_none():
    assert select_burst([1.0, 1.01], [], [], None, min_kept=5).median_s == pytest.approx(1.005)
    assert select_burst([], [], [], None, min_kept=5).median_s is None


def test_an_unreadable_clock_reading_disqualifies_its_sample():
    burst = select_burst([1.0, 9.0], [1980, math.nan], [1980, 1980], 1782, min_kept=1)
    assert burst.median_s == 1.0 and burst.kept == 1


def test_settle_waits_until_idle_and_reports_the_wait():
    fake = FakeClock()
    powers = iter([650.0, 400.0, 150.0, 90.0])
    wait = wait_until(lambda: idle(next(powers), 700.0, 0.3), max_wait_s=5, poll_s=0.1, sleep=fake.sleep, now=fake.now)
    assert wait.reached and wait.waited_s == pytest.approx(0.2)  # two polls above 210 W, then 150 W


def test_settle_gives_up_at_its_bound():
    fake = FakeClock()
    wait = wait_until(lambda: idle(690.0, 700.0, 0.3), max_wait_s=1.0, poll_s=0.25, sleep=fake.sleep, now=fake.now)
    assert not wait.reached and wait.waited_s == pytest.approx(1.0)


def test_the_settle_reads_the_instant_power_unless_told_to_read_the_average(monkeypatch):
    from matmul_study.measure import gpu_job
    from matmul_study.measure.stats import Measurement, Policy

    # A second after a load: the one-second average still high, the instantaneous reading idle, the clock at its top.
    readings = {"power_w": 400.0, "power_instant_w": 90.0, "sm_clock_mhz": 1980}
    monkeypatch.setattr(gpu_job, "gpu_state", lambda handle, keys=None: {k: readings[k] for k in keys})
    before = {"power_limit_w": 700.0, "sm_clock_max_mhz": 1980}
    for reading, ready in (("average", False), ("instant", True)):
        measurement = Measurement(stopping=Policy(), settle_reading=reading)
        _, cooled, _ = gpu_job.card_readings("handle", before, measurement)
        assert gpu_job.settle_rule("handle", before, measurement, cooled)() is ready, reading
    readings["sm_clock_mhz"] = 1500  # the limiter still holds the clock down: "instant" waits too
    assert not gpu_job.settle_rule("handle", before, Measurement(stopping=Policy(), settle_reading="instant"), cooled)()
    assert not gpu_job.settle_rule("handle", before, Measurement(stopping=Policy()), cooled)()  # the default
    readings["power_w"] = 150.0  # the average at idle: "average" is ready whatever the clock
    assert gpu_job.settle_rule("handle", before, Measurement(stopping=Policy(), settle_reading="average"), cooled)()


def test_without_readings_there_is_nothing_to_wait_for():
    assert idle(None, 700.0, 0.3) and idle(500.0, None, 0.3)
    assert at_full_clock(None, 1782) and at_full_clock(1500, None) and not at_full_clock(1500, 1782)


def test_a_bimodal_kernel_reports_both_modes():
    times = [281.0] * 6 + [298.0] * 4
    found = modes(times)
    assert [round(m["median_s"]) for m in found] == [281, 298]
    assert [m["share"] for m in found] == [0.6, 0.4]


def test_noise_is_one_mode():
    assert len(modes([1.00, 1.01, 0.99, 1.02, 1.00, 0.995])) == 1
    # A lone outlier is not a mode: fewer than a fifth of the samples on one side.
    assert len(modes([1.0] * 9 + [1.5])) == 1


def test_energy_arithmetic():
    # 4 launches of 1e12 FLOP over a counter rise of 8000 mJ: 2 J per launch, 500 GFLOP/J.
    out = energy(10_000.0, 18_000.0, 4, 10**12)
    assert out == {"energy_j_per_launch": pytest.approx(2.0), "gflop_per_j": pytest.approx(500.0)}
    assert energy(5.0, 5.0, 4, 10**12)["gflop_per_j"] is None  # counter did not tick
    assert energy(None, 5.0, 4, 10**12)["gflop_per_j"] is None


def test_sustained_uses_the_second_half_of_the_window():
    # Four 0.5 s batches of 10 launches; the clock falls as the card reaches its power limit.
    batches = [Batch(10, 0.5, 1980, 600, 1000 + 300_000 * (i + 1)) for i in range(2)]
    batches += [Batch(10, 0.5, 1500, 700, 1000 + 600_000 + 350_000 * (i + 1)) for i in range(2)]
    out = summarize_sustained(batches, flops_per_launch=10**12, window_s=2.0, energy_before_mj=1000)
    assert out["launches"] == 20 and out["measured_s"] == pytest.approx(1.0)
    assert out["gflops"] == pytest.approx(20 * 1e12 / 1.0 / 1e9)
    assert out["sm_clock_mhz"] == 1500 and out["power_w"] == 700
    assert out["energy_j_per_launch"] == pytest.approx(700.0 / 20)  # 700 J over the last two batches


def test_the_report_explains_burst_and_sustained_and_lists_what_the_rule_left_out():
    import pandas as pd

    from matmul_study.present.report.measurement import rates

    results = pd.DataFrame({
        "label": ["cublas", "wgmma_warp_specialized", "naive b16"], "dtype": ["float16", "float16", "float64"],
        "shape": ["4096x4096x4096"] * 2 + ["8192x8192x8192"], "status": ["passed"] * 3,
        "env_device_kind": ["gpu"] * 3, "env_device_name": ["NVIDIA H200"] * 3,
        "gflops": [700e3, 710e3, float("nan")], "burst_samples_total": [20, 20, 12],
        "burst_note": ["", "", "only 1 of 12 samples ran at or above 1782 MHz (fewer than 5): no burst rate"],
        "burst_settle_s": [1.0, 0.5, 0.0], "burst_recovery_s": [0.2, 0.0, 5.0], "overhead_job_s": [20, 20, 60],
        "sustained_gflops": [640e3, 650e3, float("nan")], "pct_of_cublas": [100, 101.4, float("nan")],
        "pct_of_cublas_sustained": [100, 101.6, float("nan")], "sustained_sm_clock_mhz": [1500, 1510, None],
        "sustained_power_w": [690, 695, None], "sustained_gflop_per_j": [930, 940, None],
        "burst_modes_s": ["0.0002", "0.0002", "0.281;0.298"], "burst_mode_shares": ["1", "1", "0.6;0.4"],
        "cpu_processes": [None, None, None], "cpu_spread": [None, None, None],
    })
    html = str(rates(results, {"measurement": {"settle_power_fraction": 0.3, "throttle_fraction": 0.9,
                                                "sustained_s": 2, "burst_band": 0.02,
                                                "burst_plateau_samples": 5, "recovery_max_s": 0.5}}))
    assert "burst" in html and "sustained" in html and "GFLOP per joule" in html
    assert "0.3 of its power limit by NVML's one-second average" in html and "0.9 of its maximum" in html
    assert "within 2% of the time the 5 fastest beat" in html  # the plateau rule, with its numbers
    assert "cool-down (up to 0.5 s" in html and "A sample lasts at most 25 ms" in html
    assert "no burst rate" in html  # the naive job is listed with its reason
    assert "281 and 298" in html and "60% / 40%" in html  # its two modes
    assert "2 s of settling and 5 s of cool-downs, 7% of the 100 s" in html
    assert "&lt;" not in html and "<p>" in html  # markup, not text showing tags
    instant = str(rates(results, {"measurement": {"settle_power_fraction": 0.3, "settle_reading": "instant"}}))
    assert "0.3 of its power limit by NVML's instantaneous reading, with the SM clock back at its top" in instant
    # With a CPU line, its paragraph is appended and the GPU part still renders as markup.
    with_cpu = results.assign(label=["numpy", "wgmma_warp_specialized", "naive b16"], cpu_processes=[3, None, None],
                              cpu_spread=[0.2, None, None])
    html = str(rates(with_cpu, {"measurement": {}}))
    assert "3 fresh processes" in html and "&lt;" not in html and html.count("<p>") >= 3


def test_the_report_states_how_far_apart_the_cpu_processes_landed():
    import pandas as pd

    from matmul_study.present.report.measurement import rates

    results = pd.DataFrame({"label": ["numpy"] * 2, "dtype": ["float32", "float64"], "shape": ["64x64x64"] * 2,
                            "cpu_processes": [3, 3], "cpu_spread": [0.10, 0.90]})
    html = str(rates(results, {}))
    assert "3 fresh processes" in html and "50.0% at the median" in html and "90.0% at worst" in html


def test_a_run_where_no_claim_can_be_checked_says_so_once():
    import pandas as pd

    from matmul_study.present.report.answer import claims

    results = pd.DataFrame({"method": ["numpy"] * 2, "label": ["numpy"] * 2, "dtype": ["float32", "float64"],
                            "block": [0, 0], "m": [64] * 2, "k": [64] * 2, "n": [64] * 2,
                            "shape": ["64x64x64"] * 2, "size": [64.0] * 2, "status": ["passed"] * 2,
                            "gflops": [10.0, 5.0], "env_device_kind": ["cpu"] * 2, "env_device_name": ["CPU"] * 2})
    html = str(claims(results))
    assert "None of the source study's claims could be checked" in html
    assert "<table" not in html and "not measured" not in html


def test_sustained_from_the_burst_samples_of_long_launches(monkeypatch):
    # Launches longer than the limiter's window: the burst samples' own load is the sustained record, with the
    # rate over every launch, the median clock of the samples and the energy counter's rise over them.
    from matmul_study.measure import gpu_job

    readings = {"power_w": 690.0, "energy_mj": 1_000_000.0 + 30_000.0}
    monkeypatch.setattr(gpu_job, "gpu_state", lambda handle, keys=None: {k: readings[k] for k in keys})
    out = gpu_job.sustained_from_load(12, 3.0, 2 * 8192 ** 3, 1_000_000.0, [1755.0, math.nan, 1785.0], "nvml")
    assert out["gflops"] == pytest.approx(2 * 8192 ** 3 * 12 / 3.0 / 1e9)
    assert out["launches"] == 12 and out["window_s"] == 3.0
    assert out["sm_clock_mhz"] == 1770.0 and out["power_w"] == 690.0
    assert out["energy_j_per_launch"] == pytest.approx(30.0 / 12)
    assert "burst samples" in out["source"]
    # Without NVML nothing is invented: no clock, power or energy.
    monkeypatch.setattr(gpu_job, "gpu_state", lambda handle, keys=None: {})
    bare = gpu_job.sustained_from_load(12, 3.0, 2 * 8192 ** 3, None, [], None)
    assert bare["energy_j_per_launch"] is None and bare["power_w"] is None and bare["sm_clock_mhz"] is None
