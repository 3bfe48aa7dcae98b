"""Repetition policy, statistics, FLOP accounting and verification math."""

import numpy as np
import pytest

from matmul_study.measure import inputs
from matmul_study.core.records import flops, gflops
from matmul_study.measure.stats import Policy, done, rsd, sample, summarize
from matmul_study.core import dtypes
from matmul_study.measure.verify import INT_SENTINEL, compare, sample_indices, unwritten, verify_on_host


def test_flops_counts_one_multiply_and_one_add_per_term():
    assert flops(1, 1, 1) == 2
    assert flops(2, 3, 4) == 48  # 2*3*4 products and as many additions
    assert gflops(1000, 1000, 1000, 1.0) == pytest.approx(2.0)
    assert gflops(8192, 8192, 8192, 1.0) == pytest.approx(1099.511627776)


def test_policy_needs_min_reps_and_min_time_and_quiet_samples():
    p = Policy(min_reps=3, max_reps=10, min_time_s=1.0, max_time_s=100, noise_target=0.01)
    assert not done([0.5, 0.5], p)                 # too few reps
    assert not done([0.1, 0.1, 0.1], p)            # too little time
    assert done([0.4, 0.4, 0.4], p)                # enough of both, no noise
    assert not done([0.2, 0.6, 0.4], p)            # noisy: keep going
    assert done([0.2, 0.6, 0.4] * 4, p)            # ... until max_reps


def test_policy_time_cap_stops_a_slow_noisy_job():
    p = Policy(min_reps=2, max_reps=100, min_time_s=0.1, max_time_s=5, noise_target=0.001)
    assert done([3.0, 4.0], p)
    assert not done([3.0], p)  # min_reps still runs


def test_sample_warms_up_then_repeats_until_done():
    calls = []
    times = sample(lambda: calls.append(1) or 0.25, Policy(warmup=2, min_reps=4, min_time_s=1.0))
    assert len(times) == 4 and len(calls) == 6


def test_samples_that_each_run_max_time_s_need_only_three():
    p = Policy(min_reps=5, max_reps=100, min_time_s=0.5, max_time_s=1.0, noise_target=0.01)
    assert not done([1.5, 1.5], p) and done([1.5, 1.5, 1.5], p)
    assert done([0.3] * 3, p, launches=5)  # each sample averaged five 0.3 s launches
    assert not done([0.5] * 3, p) and done([0.5] * 5, p)  # shorter samples: min_reps


def test_a_warm_up_that_already_ran_max_time_s_ends_early():
    calls = []
    slow = Policy(warmup=3, min_reps=2, max_time_s=1.0, noise_target=1e-9)
    times = sample(lambda: calls.append(1) or 0.3, slow, launches=5)  # 1.5 s samples
    assert len(calls) - len(times) == 1  # one warm-up sample, not three
    calls.clear()
    times = sample(lambda: calls.append(1) or 0.3, slow, launches=1)  # 0.3 s samples: warmed after 0.9 s
    assert len(calls) - len(times) == 3


def test_short_launches_are_batched_into_one_millisecond_samples():
    from matmul_study.measure.timing import launches_per_sample

    assert launches_per_sample(10e-6) == 100
    assert launches_per_sample(3e-4) == 4  # rounded up: a sample is never shorter than the target
    assert launches_per_sample(5e-3) == 1
    assert launches_per_sample(0.0) == 256  # capped: the launch queue must hold a whole batch


def test_every_sample_averages_at_least_the_minimum_launches():
    from matmul_study.measure.timing import launches_per_sample

    assert launches_per_sample(0.29, minimum=5) == 5  # a launch past the burst window still averages 5
    # ... but where 5 launches would outlast the 25 ms a sample may take, as many as fit, at least one:
    assert launches_per_sample(0.018, minimum=5) == 1  # fp64 at 8192^3 on the H200
    assert launches_per_sample(0.006, minimum=5) == 4
    assert launches_per_sample(0.0023, minimum=5) == 5  # 11.5 ms: fits
    assert launches_per_sample(10e-6, minimum=5) == 100  # a short one is batched by time as before
    assert launches_per_sample(1.0, minimum=1000) == 256
    assert Policy().min_launches_per_sample == 5


def test_time_caps_count_every_launch_of_a_sample():
    p = Policy(min_reps=2, max_reps=100, min_time_s=0.1, max_time_s=1.0, noise_target=1e-9)
    assert not done([0.3, 0.31], p)          # 0.61 s of single launches: under the cap
    assert done([0.3, 0.31], p, launches=2)  # 1.22 s when each sample averaged two launches
    assert summarize([0.3, 0.31], launches=2)["total_s"] == pytest.approx(1.22)
    calls = []
    times = sample(lambda: calls.append(1) or 0.25, Policy(warmup=0, min_reps=1, max_time_s=1.0, noise_target=1e-9),
                   launches=2)
    assert len(times) == 2  # 2 samples x 2 launches x 0.25 s reach the 1 s cap


def test_summarize():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s["median_s"] == 2.5 and s["min_s"] == 1.0 and s["max_s"] == 4.0
    assert s["iqr_s"] == pytest.approx(1.5) and s["reps"] == 4
    assert s["rsd"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2.5)
    assert np.isnan(rsd([1.0]))


def test_inputs_are_reproducible_bounded_and_typed():
    a1, b1 = inputs.generate(17, 33, 65, "float32", seed=7)
    a2, b2 = inputs.generate(17, 33, 65, "float32", seed=7)
    a3, _ = inputs.generate(17, 33, 65, "float32", seed=8)
    assert a1.shape == (17, 33) and b1.shape == (33, 65) and a1.dtype == np.float32
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2) and not np.array_equal(a1, a3)
    assert a1.min() >= -5 and a1.max() <= 5 and a1.std() > 1  # not zeros
    ai, _ = inputs.generate(64, 64, 64, "int32", seed=7)
    assert ai.dtype == np.int32 and set(np.unique(ai)) <= set(range(-5, 6))
    ah, _ = inputs.generate(8, 8, 8, "float16", seed=7)
    assert ah.dtype == np.float16


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_correct_product_passes_in_its_precision(dtype):
    a, b = inputs.generate(40, 50, 30, dtype, seed=1)
    c = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64 if dtype == "float64" else np.float32)
    if dtype == "float64":
        c = a @ b
    v = verify_on_host(a, b, c, dtypes.get(dtype), full=True, samples=8, seed=0)
    assert v.passed and v.unwritten == 0 and v.rel_fro_error < dtypes.get(dtype).tolerance


def test_int32_must_be_exact():
    a, b = inputs.generate(20, 20, 20, "int32", seed=1)
    c = a @ b
    assert verify_on_host(a, b, c, dtypes.get("int32"), True, 8, 0).passed
    c[3, 4] += 1
    v = verify_on_host(a, b, c, dtypes.get("int32"), True, 8, 0)
    assert not v.passed and v.max_abs_error == 1.0


def test_unwritten_outputs_fail_even_if_everything_else_is_right():
    a, b = inputs.generate(16, 16, 16, "float32", seed=1)
    c = a @ b
    c[15, 15] = np.nan
    v = verify_on_host(a, b, c, dtypes.get("float32"), True, 8, 0)
    assert not v.passed and v.unwritten == 1
    ci = np.full((4, 4), INT_SENTINEL, np.int32)
    assert unwritten(ci) == 16


def test_tf32_rounding_fails_the_float32_tolerance():
    a, b = inputs.generate(256, 256, 256, "float32", seed=3)

    def tf32(x):  # keep 10 mantissa bits, as the tensor cores' TF32 mode does
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)

    c = tf32(a) @ tf32(b)
    v = verify_on_host(a, b, c, dtypes.get("float32"), True, 8, 0)
    assert not v.passed and 1e-4 < v.rel_fro_error < 1e-2


def test_sampled_verification_catches_a_wrong_edge_row_and_column():
    a, b = inputs.generate(300, 40, 200, "float64", seed=2)
    good = a @ b
    v = verify_on_host(a, b, good, dtypes.get("float64"), full=False, samples=16, seed=0)
    assert v.passed and v.scope.startswith("sampled 16 rows")
    bad = good.copy()
    bad[-1, :] += 1.0  # last row: the one a missing guard gets wrong
    assert not verify_on_host(a, b, bad, dtypes.get("float64"), full=False, samples=16, seed=0).passed
    bad = good.copy()
    bad[:, -1] = 0.0
    assert not verify_on_host(a, b, bad, dtypes.get("float64"), full=False, samples=16, seed=0).passed
    bad = good.copy()
    bad[150, 100] = np.nan  # an unwritten element outside the sample still fails
    assert not verify_on_host(a, b, bad, dtypes.get("float64"), full=False, samples=16, seed=0).passed


def test_sample_indices_include_edges_and_are_distinct():
    idx = sample_indices(1000, 10, np.random.default_rng(0))
    assert idx[0] == 0 and idx[-1] == 999 and len(set(idx)) == 10
    assert list(sample_indices(5, 10, np.random.default_rng(0))) == [0, 1, 2, 3, 4]


def test_compare_zero_reference():
    v = compare(np.zeros(3), np.zeros(3), dtypes.get("float32"), "full", "x")
    assert v.passed and v.rel_fro_error == 0
