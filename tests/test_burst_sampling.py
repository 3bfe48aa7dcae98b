"""The burst sampling loop (matmul_study.measure.burst) against a simulated card with a power limiter, without a GPU."""

import math

import pytest

from matmul_study.measure.burst import COOL_DOWN_BUDGET, Card, sample_burst
from matmul_study.measure.stats import Measurement

LAUNCH_S = 2e-3  # one launch at full clock
CONFIG = {"warmup": 2, "min_reps": 5, "max_reps": 200, "min_time_s": 0.5, "max_time_s": 1.0, "noise_target": 0.01,
          "recovery_max_s": 0.5, "burst_plateau_samples": 5, "burst_band": 0.02}


class LimitedCard:
    """A card that runs at full clock for `window_s` of load after it has rested `rest_s`, then `slowdown` times
    slower, while NVML keeps reading its top clock (as the H200's fast limiter does). Time only moves when the
    loop times launches or sleeps."""

    def __init__(self, window_s=0.04, slowdown=1.1, rest_s=0.05, recovers=True, readable=True):
        self.t, self.loaded_since, self.idle_since = 0.0, None, -1.0
        self.window_s, self.slowdown, self.rest_s, self.recovers = window_s, slowdown, rest_s, recovers
        self.readable = readable
        self.launch_times = []

    def time_batch(self, launches):
        if self.loaded_since is None or (self.recovers and self.t - self.idle_since >= self.rest_s):
            self.loaded_since = self.t  # a rested card starts a fresh full-clock window
        total = 0.0
        for _ in range(launches):
            fast = self.t - self.loaded_since < self.window_s
            one = LAUNCH_S * (1 if fast else self.slowdown)
            self.launch_times.append(one)
            self.t += one
            total += one
        self.idle_since = self.t
        return total

    def sm_clock(self):
        return 1980.0 if self.readable else math.nan

    def cooled(self):
        return self.recovers and self.t - self.idle_since >= self.rest_s

    def sleep(self, seconds):
        self.t += seconds

    def now(self):
        return self.t

    def card(self):
        return Card(self.time_batch, self.sm_clock, self.cooled, self.readable, self.sleep, self.now)


def run(card, batch=5, **config):
    return sample_burst(card.card(), batch, Measurement.from_config({**CONFIG, **config}), 1782.0)


def test_cool_downs_collect_enough_full_clock_samples_for_the_burst_rate():
    # 10 ms samples, a 40 ms full-clock window: 4 fast samples from a rested card, then the limiter. Without
    # cool-downs the job would have 4 fast samples of ~100 and the burst rate would be the throttled level.
    card = LimitedCard()
    sampled = run(card)
    assert sampled.burst.median_s == pytest.approx(LAUNCH_S)
    assert sampled.burst.at_fastest >= 5 and sampled.cool_downs >= 1
    assert sampled.cool_down_s == pytest.approx(sampled.cool_downs * card.rest_s, rel=0.3)  # 10 ms polls
    assert len(sampled.clocks_before) == len(sampled.clocks_after) == len(sampled.times)  # warm-up dropped


def test_a_steady_card_needs_no_cool_down():
    sampled = run(LimitedCard(window_s=math.inf))
    assert sampled.cool_downs == 0 and sampled.cool_down_s == 0
    assert sampled.burst.median_s == pytest.approx(LAUNCH_S) and sampled.burst.kept == len(sampled.times)


def test_a_card_that_never_cools_costs_a_bounded_wait_and_says_so():
    card = LimitedCard(window_s=0.012, recovers=False)  # one fast sample after the warm-up, never again
    sampled = run(card)
    budget = COOL_DOWN_BUDGET * CONFIG["recovery_max_s"]
    assert budget <= sampled.cool_down_s < budget + CONFIG["recovery_max_s"] + 0.02
    assert sampled.burst.at_fastest < 5 and "fewer than 5" in sampled.burst.note
    # The plateau of the 5 fastest is then the throttled level: the honest, slower rate.
    assert sampled.burst.median_s == pytest.approx(LAUNCH_S * 1.1)


def test_the_top_up_stops_at_its_caps():
    card = LimitedCard(window_s=0.0, recovers=False)  # every launch throttled: all samples sit on one level
    sampled = run(card, max_reps=7)
    assert len(sampled.times) <= 7 and sampled.burst.median_s == pytest.approx(LAUNCH_S * 1.1)


def test_without_nvml_the_plateau_rule_alone_applies():
    sampled = run(LimitedCard(readable=False))
    assert sampled.burst.median_s == pytest.approx(LAUNCH_S)
    assert "not readable" in sampled.burst.note


def test_the_untimed_sample_after_a_cool_down_is_not_recorded():
    card = LimitedCard()
    sampled = run(card)
    timed_launches = 5 * (len(sampled.times) + CONFIG["warmup"])
    assert len(card.launch_times) == timed_launches + 5 * sampled.cool_downs


def test_samples_that_each_run_max_time_s_stop_after_three():
    # naive fp64 at 8192^3: 0.3 s launches, five to a 1.5 s sample. Three such samples give the burst (here the
    # sustained) rate after one warm-up sample; min_reps (5) still holds for samples shorter than max_time_s.
    card = LimitedCard(window_s=1e9)
    global LAUNCH_S
    saved, LAUNCH_S = LAUNCH_S, 0.3
    try:
        out = run(card, batch=5)
        assert len(out.times) == 3 and len(card.launch_times) == 4 * 5
        assert out.burst.median_s == pytest.approx(0.3) and out.burst.kept == 3 and not out.burst.note
    finally:
        LAUNCH_S = saved
    assert len(run(LimitedCard(window_s=1e9), batch=5).times) >= 5  # 10 ms samples: min_reps as before
