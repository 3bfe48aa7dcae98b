"""The job grid: one job per valid combination, axes that do not apply collapse, pruning is explained."""

import pytest

from matmul_study.pipeline import grid

from matmul_study.core import configs, registry
from matmul_study.pipeline.config import ConfigError


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
    # Counted from the registry: per default method, its supported dtypes of the config, times the config's blocks
    # where it has a block axis (and supports them), times the shapes; a vendor line once per accuracy class of the
    # dtype (cuBLASLt's FP8: promoted and fast accumulation), and a method with a heuristic for a second class
    # (wgmma_fp8's promoted build) once more.
    expected = 0
    for name in registry.default_methods():
        method = registry.get(name)
        blocks = [b for b in default_config["block_sizes"] if method.blocks is None or b in method.blocks]
        per_dtype = len(blocks) if method.block_axis else 1
        for dtype in set(method.dtypes) & set(default_config["dtypes"]):
            classes = {method.accuracy_of(v) for v in (None, *configs.runnable(method, dtype))}
            expected += per_dtype * (len(classes) if method.reference_line else 1 + (method.class_choose is not None))
    assert len(jobs) == expected * len(default_config["sizes"])
    with_jobs = [m for m in registry.default_methods() if set(registry.get(m).dtypes) & set(default_config["dtypes"])]
    assert list(dict.fromkeys(jobs["method"])) == with_jobs  # in ladder order


def test_without_cupy_cublas_is_pruned_with_a_note(make_config):
    jobs, pruned = grid.build(make_config(methods="default"), have_module=without_cupy)
    assert "cublas" not in set(jobs.method) and "numpy" in set(jobs.method)
    assert "cupy is not installed" in pruned[pruned.method == "cublas"]["reason"].iloc[0]
    # The note the console shows, one line per method left out as a whole.
    notes = grid.pruned_methods_note(pruned)
    assert any("cublas is not run" in note and "pip install -e '.[cublas]'" in note for note in notes)


def test_a_listed_method_that_needs_a_missing_package_stops_and_says_what_to_install(make_config):
    cfg = make_config(methods=["numpy", "cublas"])
    with pytest.raises(ConfigError) as err:
        grid.check_listed_methods(cfg, have_module=without_cupy)
    message = str(err.value)
    assert "config key 'methods[1]'" in message and '"cublas" cannot run here' in message
    assert "pip install -e '.[cublas]'" in message and """--config 'methods=["numpy"]'""" in message
    grid.check_listed_methods(cfg, have_module=everything)  # with CuPy: nothing to say


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
        ("naive", "float32", 0, "default"), ("tiled_unrolled", "float32", 16, "default"),
        ("tiled_unrolled", "float32", 32, "default")}


def test_hopper_rungs_are_pruned_with_a_reason_on_other_gpus(make_config):
    cfg = make_config(methods=["naive", "wgmma_tma"], dtypes=["float32", "float16"])
    jobs, pruned = grid.build(cfg, compute_capability=(8, 0), have_module=everything)
    assert set(jobs.method) == {"naive"}
    reason = pruned[pruned.method == "wgmma_tma"]["reason"].iloc[0]
    assert "compute capability 9.0" in reason and "8.0" in reason
    # sm_90a code runs on 9.0 only: a newer GPU prunes it too, with the reason.
    _, newer = grid.build(cfg, compute_capability=(10, 0), have_module=everything)
    assert "sm_90a" in newer[newer.method == "wgmma_tma"]["reason"].iloc[0]
    hopper, _ = grid.build(cfg, compute_capability=(9, 0), have_module=everything)
    assert {"naive", "wgmma_tma"} == set(hopper.method)


def test_the_pre_hopper_tensor_core_rung_needs_ampere_and_runs_on_every_newer_gpu(make_config):
    cfg = make_config(methods=["naive", "mma_async_copy"], dtypes=["float32", "float16", "bfloat16"])
    jobs, pruned = grid.build(cfg, compute_capability=(7, 5), have_module=everything)
    assert set(jobs.method) == {"naive"}
    reason = pruned[pruned.method == "mma_async_copy"]["reason"].iloc[0]
    assert "compute capability 8.0" in reason and "7.5" in reason
    # Plain mma.sync, no arch-specific build: Ampere, Ada, Hopper and Blackwell all run it, in both 16-bit dtypes.
    for cc in [(8, 0), (8, 9), (9, 0), (10, 0)]:
        jobs, _ = grid.build(cfg, compute_capability=cc, have_module=everything)
        assert set(jobs[jobs.method == "mma_async_copy"].dtype) == {"float16", "bfloat16"}


def test_tensor_map_rungs_need_cuda_bindings(make_config):
    cfg = make_config(methods=["naive", "wgmma_tma"], dtypes=["float32", "float16"])
    jobs, pruned = grid.build(cfg, compute_capability=(9, 0), have_module=lambda m: m != "cuda.bindings")
    assert set(jobs.method) == {"naive"}
    assert "cuda.bindings is not installed" in pruned[pruned.method == "wgmma_tma"]["reason"].iloc[0]


def test_a_config_that_selects_no_job_is_refused_with_what_each_method_supports(make_config):
    with pytest.raises(ConfigError) as err:
        grid.build(make_config(methods=["numpy", "wmma"], dtypes=["int32"]), have_module=everything)
    message = str(err.value)
    assert "select no job" in message
    assert "numpy supports float32, float64 only" in message and "wmma supports float16 only" in message


def test_a_kernel_with_several_geometries_launches_the_one_the_gpu_can_hold():
    from matmul_study.core import dtypes, registry
    from matmul_study.core.geometry import WARPTILED, WARPTILED_MBARRIER
    from matmul_study.core.specs import Problem, shared_opt_in_bytes

    warptiled, fp32 = registry.get("warptiled"), dtypes.get("float32")
    big, small = WARPTILED.configs["float32"]
    h200 = warptiled.launch(Problem(4096, 4096, 4096, 0, fp32, 132, shared_opt_in_bytes("sm_90")))
    rtx = warptiled.launch(Problem(4096, 4096, 4096, 0, fp32, 24, shared_opt_in_bytes("sm_89")))  # 99 KB per block
    assert shared_opt_in_bytes("sm_89") < big.shared_bytes <= shared_opt_in_bytes("sm_90")
    assert (h200.shared_bytes, rtx.shared_bytes) == (big.shared_bytes, small.shared_bytes)
    assert h200.grid == rtx.grid == (4096 // big.tile_n, 4096 // big.tile_m, 1)  # the same tile, only BK differs
    assert (small.tile_m, small.tile_n) == (big.tile_m, big.tile_n) and small.tile_k < big.tile_k
    (fp64,) = WARPTILED.configs["float64"]
    assert warptiled.launch(Problem(64, 64, 64, 0, dtypes.get("float64"), 24, shared_opt_in_bytes("sm_89"))
                            ).shared_bytes == fp64.shared_bytes
    assert warptiled.tile(0, "float32") == big.tile()
    # The mbarrier configuration's 4 stages of BK 32 need 199 KB: an A100 (163 KB) gets its BK-16 size.
    mbarrier = registry.get("warptiled_mbarrier")
    deep, shallow = WARPTILED_MBARRIER.configs["float32"]
    assert [mbarrier.launch(Problem(4096, 4096, 4096, 0, fp32, 108, shared_opt_in_bytes(arch))).shared_bytes
            for arch in ("sm_90", "sm_80", "sm_89")] == [deep.shared_bytes, shallow.shared_bytes, shallow.shared_bytes]


def test_only_kernels_that_wait_for_the_previous_grid_are_launched_as_dependents():
    from dataclasses import replace

    from matmul_study.core import dtypes, registry
    from matmul_study.core.specs import Problem

    def launch(name):
        method = registry.get(name)
        return method.launch(Problem(4096, 4096, 4096, 16, dtypes.get(method.dtypes[0]), 132))

    assert {name for name in registry.compiled_methods() if launch(name).dependent} == {
        "wgmma_warp_specialized", "wgmma_tf32", "wgmma_3xtf32", "wgmma_int8", "wgmma_fp8", "wgmma_fp8_block",
        "wgmma_3xfp16", "warptiled", "dmma", "few_rows"}
    assert all(registry.get(name).waits_for_previous_grid for name in ("warptiled", "dmma", "few_rows"))
    resized = launch("wgmma_warp_specialized").resized(64)  # a persistent grid shrunk to the clusters that fit
    assert resized.dependent and resized.grid == (64, 1, 1) and resized == replace(launch("wgmma_warp_specialized"),
                                                                                   grid=(64, 1, 1))


def test_a_dependent_launch_asks_the_driver_for_programmatic_stream_serialisation():
    cu = pytest.importorskip("cuda.bindings.driver")
    from dataclasses import replace

    from matmul_study.core import dtypes, registry
    from matmul_study.launch.launchers import launch_config
    from matmul_study.core.specs import Problem

    launch = registry.get("wgmma_warp_specialized").launch(Problem(4096, 4096, 4096, 16, dtypes.get("float16"), 132))
    ids = cu.CUlaunchAttributeID
    dependent, independent = launch_config(launch), launch_config(replace(launch, dependent=False))  # kept alive:
    # the attributes read back point into their configuration
    assert [attr.id for attr in dependent.attrs] == [ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                                     ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION]
    assert dependent.attrs[1].value.programmaticStreamSerializationAllowed == 1
    assert [attr.id for attr in independent.attrs] == [ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION]


# The configuration axis (config `variants:`): a method's registry variants, chosen per problem.
def _variants(jobs, method="fake_tiles"):
    """{(m, k, n): [variants in plan order]} of one method's jobs."""
    out = {}
    for row in jobs[jobs["method"] == method].itertuples():
        out.setdefault((row.m, row.k, row.n), []).append(row.variant)
    return out


def test_auto_runs_the_heuristics_pick_per_problem_for_the_planning_gpus_sm_count(make_config, variant_method):
    # 64x64 tiles: 128x128 is 4 tiles (under half of 132 SMs: K split), 1024x1024 is 256 tiles (whole tiles).
    cfg = make_config(methods=["numpy", "fake_tiles"], dtypes=["float32"], sizes=[128, 1024])
    jobs, _ = grid.build(cfg, have_module=everything, device_facts={"sm_count": 132})
    assert list(jobs.columns) == grid.PLAN_COLUMNS and cfg["variants"] == "auto"
    assert _variants(jobs) == {(128, 128, 128): ["deep_k"], (1024, 1024, 1024): ["default"]}
    assert set(jobs.loc[jobs.method == "numpy", "variant"]) == {"default"}
    assert set(jobs.loc[jobs.method == "numpy", "variant_reason"]) == {"the method has one configuration"}
    reason = jobs.loc[(jobs.method == "fake_tiles") & (jobs.m == 128), "variant_reason"].iloc[0]
    assert reason == "4 tiles on 132 SMs: K split (the SM count of GPU 0 at planning)"
    # A GPU of 4 SMs: 4 tiles are a whole wave there. The SM count is read only once.
    reads = []
    jobs, _ = grid.build(cfg, have_module=everything, device_facts=lambda: reads.append(1) or {"sm_count": 4})
    assert _variants(jobs) == {(128, 128, 128): ["default"], (1024, 1024, 1024): ["default"]} and reads == [1]


def test_without_a_gpu_at_planning_auto_plans_for_the_registrys_sm_count_and_says_so(make_config, variant_method):
    cfg = make_config(methods=["fake_tiles"], dtypes=["float32"], sizes=[128])
    jobs, _ = grid.build(cfg, have_module=everything, device_facts=lambda: {})
    assert jobs["variant"].tolist() == ["deep_k"]
    assert jobs["variant_reason"].iloc[0] == ("4 tiles on 132 SMs: K split (no GPU usable at planning: the "
                                              "registry's default SM count)")


def test_auto_plans_for_the_planning_gpus_memory_bandwidth_too(make_config):
    # FP8's promoted class runs its twins in 128x128 tiles without B's transpose at 4096^3 on a card of 25 GB/s an SM
    # (an H100 SXM: configs.slow_memory_twins), and its own 128x128 tiles without a cluster where the bandwidth is an
    # H200's or not known (configs.PROMOTED_SLOW_MEMORY).
    cfg = make_config(methods=["wgmma_fp8"], dtypes=["float8_e4m3"], sizes=[4096])
    reads = []

    def planned(hbm):
        facts = {"sm_count": 132, "hbm_bytes_per_s": hbm}
        jobs, _ = grid.build(cfg, (9, 0), have_module=everything, device_facts=lambda: reads.append(1) or facts)
        return set(jobs["variant"])

    assert "swap_bn128_promote_cluster1" in planned(3.35e12) and reads == [1]
    assert "bn128_promote_cluster1" in planned(4.9e12)
    assert "bn128_promote_cluster1" in planned(None)


def test_no_sm_count_is_read_where_no_heuristic_runs(make_config, variant_method):
    def no_gpu_here():
        raise AssertionError("the SM count was read")

    for variants in ("default", "all", {"fake_tiles": ["wide"]}):
        grid.build(make_config(methods=["numpy", "naive", "fake_tiles"], dtypes=["float32"], variants=variants),
                   have_module=everything, device_facts=no_gpu_here)


def test_default_runs_every_methods_default_build(make_config, variant_method):
    cfg = make_config(methods=["fake_tiles", "naive"], dtypes=["float32"], sizes=[128, 1024], variants="default")
    jobs, _ = grid.build(cfg, have_module=everything, device_facts={"sm_count": 132})
    assert set(jobs["variant"]) == {"default"}
    assert set(jobs.loc[jobs.method == "fake_tiles", "variant_reason"]) == {"forced by config"}
    assert set(jobs.loc[jobs.method == "naive", "variant_reason"]) == {"the method has one configuration"}


def test_all_sweeps_the_default_and_every_variant_but_the_diagnostic_ones(make_config, variant_method):
    cfg = make_config(methods=["numpy", "fake_tiles"], dtypes=["float32", "float16"], sizes=[128, 1024],
                      variants="all")
    jobs, _ = grid.build(cfg, have_module=everything, device_facts={"sm_count": 132})
    fake = jobs[jobs.method == "fake_tiles"]
    assert len(fake) == 2 * 2 * 3 and set(fake["variant_reason"]) == {"swept"}
    assert fake.groupby(["dtype", "m"])["variant"].apply(list).map(tuple).unique().tolist() == [
        ("default", "wide", "deep_k")]
    assert set(jobs.loc[jobs.method == "numpy", "variant"]) == {"default"} and (jobs.method == "numpy").sum() == 2
    assert not jobs[grid.GRID_COLUMNS].duplicated().any()
    # Each variant is a build of its own: one cubin per (dtype, variant).
    units = grid.compile_units(jobs)
    assert sorted(map(tuple, units[["dtype", "variant"]].values.tolist())) == sorted(
        (d, v) for d in ("float16", "float32") for v in ("default", "wide", "deep_k"))


def test_a_mapping_sets_the_configuration_per_method_and_leaves_the_others_on_auto(make_config, variant_method):
    cfg = make_config(methods=["fake_tiles"], dtypes=["float32"], sizes=[128, 1024],
                      variants={"fake_tiles": ["wide", "default", "wide"]})
    jobs, _ = grid.build(cfg, have_module=everything, device_facts={"sm_count": 132})
    assert _variants(jobs) == {(128, 128, 128): ["wide", "default"], (1024, 1024, 1024): ["wide", "default"]}
    assert set(jobs["variant_reason"]) == {"forced by config"}
    cfg = make_config(methods=["fake_tiles"], dtypes=["float32"], sizes=[128], variants={"fake_tiles": "all"})
    assert _variants(grid.build(cfg, have_module=everything)[0]) == {(128, 128, 128): ["default", "wide", "deep_k"]}
    cfg = make_config(methods=["fake_tiles"], dtypes=["float32"], sizes=[128], variants={"naive": "default"})
    jobs, _ = grid.build(cfg, have_module=everything, device_facts={"sm_count": 132})
    assert _variants(jobs) == {(128, 128, 128): ["deep_k"]}


def test_a_dtype_that_needs_a_newer_gpu_than_its_method_is_pruned_alone(make_config):
    # Kernel 10 runs on sm_80 and newer, its FP8 mma on sm_89 and newer.
    cfg = make_config(methods=["mma_async_copy"], dtypes=["float16", "float8_e4m3"])
    jobs, pruned = grid.build(cfg, compute_capability=(8, 6))
    assert set(jobs.dtype) == {"float16"}
    reason = pruned[(pruned.method == "mma_async_copy") & (pruned.dtype == "float8_e4m3")]["reason"].iloc[0]
    assert "compute capability 8.9" in reason and "8.6" in reason
    jobs, _ = grid.build(cfg, compute_capability=(9, 0))
    assert set(jobs.dtype) == {"float16", "float8_e4m3"}


def test_cublaslt_block_scales_are_pruned_before_hopper(make_config):
    # cuBLASLt's FP8 line runs from Ada (8.9) on, its block scales from Hopper: an Ada card keeps per-tensor FP8.
    cfg = make_config(methods=["cublaslt"], dtypes=["float8_e4m3", "float8_e4m3_block"])
    jobs, pruned = grid.build(cfg, compute_capability=(8, 9), have_module=everything)
    assert set(jobs.dtype) == {"float8_e4m3"}
    reason = pruned[(pruned.method == "cublaslt") & (pruned.dtype == "float8_e4m3_block")]["reason"].iloc[0]
    assert "compute capability 9.0" in reason and "8.9" in reason
    jobs, _ = grid.build(cfg, compute_capability=(9, 0), have_module=everything)
    assert set(jobs.dtype) == {"float8_e4m3", "float8_e4m3_block"}
