"""The job grid: one job per valid combination, axes that do not apply collapse, pruning is explained."""

import pytest

from matmul_study import grid, registry
from matmul_study.config import ConfigError


def everything(module: str) -> bool:
    return True


def without_cupy(module: str) -> bool:
    return module != "cupy"


def test_methods_without_block_axis_run_once_per_dtype_and_shape(make_config):
    cfg = make_config(methods=["numpy", "naive", "wmma", "cublas"], dtypes=["float32", "float16"],
                      block_sizes=[16, 32], sizes=[64, {"m": 17, "k": 33, "n": 65}])
    jobs, pruned = grid.build(cfg, have_module=everything)
    counts = jobs.groupby("method").size().to_dict()
    # numpy: float32 x 2 shapes; naive: float32 x 2 blocks x 2 shapes; wmma: float16 x 2 shapes;
    # cublas: float32 and float16 x 2 shapes.
    assert counts == {"numpy": 2, "naive": 4, "wmma": 2, "cublas": 4}
    assert set(jobs[jobs.method.isin(["numpy", "wmma", "cublas"])]["block"]) == {grid.NO_BLOCK}
    assert not jobs.duplicated().any()
    reasons = {(r.method, r.dtype): r.reason for r in pruned.itertuples()}
    assert "supports float32, float64 only" in reasons[("numpy", "float16")]
    assert "supports float16 only" in reasons[("wmma", "float32")]
    assert "no block-size axis" in reasons[("numpy", "*")]


def test_every_job_is_supported_by_its_method(default_config):
    jobs, _ = grid.build(default_config, have_module=everything)
    for row in jobs.itertuples():
        method = registry.get(row.method)
        assert row.dtype in method.dtypes
        assert (row.block > 0) == method.block_axis


def test_default_grid_size(default_config):
    jobs, _ = grid.build(default_config, have_module=everything)
    # 5 sizes x (numpy 2 dtypes + 3 SIMT kernels x 2 dtypes x 2 blocks + wmma + register_tiled 2 dtypes
    # + wmma_tiled + cublas 3 dtypes)
    assert len(jobs) == 5 * (2 + 12 + 1 + 2 + 1 + 3)


def test_without_cupy_cublas_is_pruned_with_a_note(make_config):
    jobs, pruned = grid.build(make_config(methods=["numpy", "cublas"]), have_module=without_cupy)
    assert set(jobs.method) == {"numpy"}
    assert "cupy is not installed" in pruned[pruned.method == "cublas"]["reason"].iloc[0]


def test_adding_a_size_adds_exactly_that_sizes_jobs(make_config):
    before, _ = grid.build(make_config(methods=["numpy", "naive"], sizes=[32]), have_module=without_cupy)
    after, _ = grid.build(make_config(methods=["numpy", "naive"], sizes=[32, 48]), have_module=without_cupy)
    merged = after.merge(before, how="left", indicator=True)
    new = merged[merged["_merge"] == "left_only"]
    assert len(after) == 2 * len(before)
    assert set(new["m"]) == {48} and len(new) == len(before)


def test_compile_units_share_cubins_where_block_is_only_a_launch_parameter(make_config):
    cfg = make_config(methods=["naive", "tiled_unrolled", "cublas"], block_sizes=[16, 32], dtypes=["float32"])
    jobs, _ = grid.build(cfg, have_module=everything)
    units = grid.compile_units(jobs)
    assert set(map(tuple, units.values.tolist())) == {
        ("naive", "float32", 0), ("tiled_unrolled", "float32", 16), ("tiled_unrolled", "float32", 32)}
