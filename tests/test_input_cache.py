"""The run's shared inputs: read back bit for bit, keyed by everything they depend on, regenerated when unreadable."""

import numpy as np
import pytest

from matmul_study.core import dtypes
from matmul_study.measure import input_cache, inputs


@pytest.fixture(autouse=True)
def nothing_kept():
    """Each test starts with no inputs kept in this process's memory (a worker's, in the pipeline)."""
    input_cache._kept.clear()
    yield
    input_cache._kept.clear()


@pytest.fixture
def small_cached(monkeypatch):
    monkeypatch.setattr(input_cache, "MIN_MULTIPLY_ADDS", 1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3", "float8_e4m3_block", "int8", "float64"])
def test_a_cached_pair_is_the_generated_pair(tmp_path, small_cached, dtype):
    fresh = inputs.generate(33, 17, 9, dtype, 7)
    first = input_cache.load_or_generate(33, 17, 9, dtype, 7, directory=tmp_path)
    again = input_cache.load_or_generate(33, 17, 9, dtype, 7, directory=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    for got in (first, again):
        for x, y in zip(got, fresh):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
        assert np.array_equal(got.scales, fresh.scales) and got.quantization == fresh.quantization


def test_the_key_holds_shape_dtype_seed_and_range(tmp_path, small_cached):
    for args in [(8, 8, 8, "float32", 1), (8, 8, 8, "float32", 2), (8, 8, 9, "float32", 1), (8, 8, 8, "tf32", 1)]:
        input_cache.load_or_generate(*args, directory=tmp_path)
    input_cache.load_or_generate(8, 8, 8, "float32", 1, low=0, high=1, directory=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 5


def test_an_unreadable_file_is_generated_again(tmp_path, small_cached):
    input_cache.load_or_generate(16, 16, 16, "float16", 3, directory=tmp_path)
    (stored,) = tmp_path.glob("*.npz")
    stored.write_bytes(b"half a file")
    a, b = input_cache.load_or_generate(16, 16, 16, "float16", 3, directory=tmp_path)
    assert np.array_equal(a, inputs.generate(16, 16, 16, "float16", 3)[0])
    assert np.array_equal(input_cache.load_or_generate(16, 16, 16, "float16", 3, directory=tmp_path)[1], b)


def test_small_problems_and_runs_without_a_folder_are_not_written(tmp_path):
    input_cache.load_or_generate(64, 64, 64, "float32", 1, directory=tmp_path)  # below MIN_MULTIPLY_ADDS
    input_cache.load_or_generate(64, 64, 64, "float32", 1, directory=None)
    assert not list(tmp_path.iterdir())


def test_clear_removes_the_folder(tmp_path, small_cached):
    folder = tmp_path / "inputs"
    input_cache.load_or_generate(8, 8, 8, "float32", 1, directory=folder)
    input_cache.clear(folder)
    assert not folder.exists()
    input_cache.clear(folder)  # nothing there: no error


def test_a_process_keeps_the_inputs_it_read_and_the_next_job_takes_them_from_memory(tmp_path, small_cached,
                                                                                       monkeypatch):
    first = input_cache.load_or_generate(32, 16, 8, "float32", 5, directory=tmp_path)
    for stored in tmp_path.glob("*.npz"):
        stored.unlink()

    def no_file(*args):
        raise AssertionError("read from the file")

    monkeypatch.setattr(input_cache, "_read", no_file)
    again = input_cache.load_or_generate(32, 16, 8, "float32", 5, directory=tmp_path)
    assert again is first
    # Read-only: a job that wrote into its inputs would fail, not change the next job's.
    for array in (*again, again.scales):
        with pytest.raises(ValueError):
            array[...] = 0


def test_kept_inputs_past_the_budget_are_dropped_oldest_first(tmp_path, small_cached, monkeypatch):
    one = input_cache._nbytes(input_cache.load_or_generate(16, 16, 16, "float32", 1, directory=tmp_path))
    input_cache._kept.clear()
    monkeypatch.setattr(input_cache, "KEEP_BYTES", 2 * one)
    for seed in (1, 2, 3):
        input_cache.load_or_generate(16, 16, 16, "float32", seed, directory=tmp_path)
    assert [input_cache.path_for(tmp_path, 16, 16, 16, dtypes.get("float32"), seed, -5, 5)
            for seed in (2, 3)] == list(input_cache._kept)
    input_cache.clear(tmp_path)
    assert not input_cache._kept
