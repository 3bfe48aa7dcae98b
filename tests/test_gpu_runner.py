"""The GPU runner on a real device: every GPU method through compile_cubin + run_job, on odd shapes, and a wrong
kernel reported as failed. Skipped without PyCUDA and a CUDA device."""

import shutil

import pytest

from matmul_study.measure import gpu_device as device

from matmul_study.launch import kernels

from matmul_study.core import geometry, registry, specs
from matmul_study.core.backends import PYCUDA, module_available
from matmul_study.measure.runner import Job, run_job

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (17, 33, 65), (100, 37, 250), (257, 511, 129)]
FAST = {"warmup": 1, "min_reps": 2, "max_reps": 3, "min_time_s": 0.0001, "max_time_s": 0.5}


@pytest.fixture(scope="module")
def arch():
    pytest.importorskip("pycuda.driver")
    from matmul_study.measure.gpu_device import GpuUnavailable, device_arch

    try:
        return device_arch()
    except GpuUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def cubins(arch, tmp_path_factory):
    cache = {}
    root = tmp_path_factory.mktemp("cubins")

    def get(method, dtype, block):
        key = (method, dtype, kernels.template_block(method, block))
        if key not in cache:
            path = root / f"{method}_{dtype}_b{key[2]}.cubin"
            kernels.compile_cubin(method, dtype, block, arch, str(path))
            cache[key] = str(path)
        return cache[key]

    return get


def gpu_cases():
    for name, method in registry.METHODS.items():
        if not method.on_gpu:
            continue
        for dtype in method.dtypes:
            for block in ((16, 32) if method.block_axis else (0,)):
                yield name, dtype, block


@pytest.mark.parametrize("method, dtype, block", list(gpu_cases()))
def test_every_gpu_method_is_verified_on_odd_shapes(method, dtype, block, arch, cubins, make_config, tmp_path):
    unmet = registry.get(method).unmet_requirement(device.compute_capability(arch), module_available)
    if unmet:
        pytest.skip(unmet)
    cfg = make_config(measurement=FAST)
    cubin = cubins(method, dtype, block) if registry.get(method).compiled else None
    most = registry.get(method).max_rows  # a method of a few rows (kernel 18): its most, N and K as odd
    for m, k, n in dict.fromkeys((min(m, most or m), k, n) for m, k, n in SHAPES):
        rec = run_job(Job(method, dtype, block, m, k, n), cfg, str(tmp_path / f"{m}_{k}_{n}.json"), cubin=cubin)
        v = rec["verification"]
        assert rec["status"] == "passed", (m, k, n, v)
        assert v["unwritten"] == 0 and rec["gflops"] > 0
        assert rec["env"]["device_kind"] == "gpu" and rec["env"]["compute_capability"]


def test_a_wrong_kernel_is_reported_failed_not_fast(arch, make_config, tmp_path, monkeypatch):
    kernel_dir = tmp_path / "kernels"
    shutil.copytree(kernels.KERNEL_DIR, kernel_dir)
    # Skips the last row of C: exactly the bug a missing or off-by-one guard produces.
    (kernel_dir / "9_broken.cu").write_text(
        '#include "01_naive.cu"\n'
        "template <typename T, typename Acc>\n"
        "__device__ void broken_matmul(const T* A, const T* B, Acc* C, int m, int n, int k) {\n"
        "    if (blockIdx.y * blockDim.y + threadIdx.y == m - 1) return;\n"
        "    naive_matmul<T, Acc>(A, B, C, m, n, k);\n}\n")
    broken = specs.Method("broken", "test only", ("float32",), backend=PYCUDA, block_axis=True,
                             source="9_broken.cu", template="broken_matmul<{T}, {Acc}>",
                             launch=geometry.square_thread_blocks)
    monkeypatch.setitem(registry.METHODS, "broken", broken)
    monkeypatch.setattr(kernels, "KERNEL_DIR", kernel_dir)
    cubin = tmp_path / "broken.cubin"
    kernels.compile_cubin("broken", "float32", 16, arch, str(cubin))
    rec = run_job(Job("broken", "float32", 16, 40, 24, 40), make_config(measurement=FAST),
                  str(tmp_path / "r.json"), cubin=str(cubin))
    assert rec["status"] == "failed" and rec["gflops"] is None
    assert rec["verification"]["unwritten"] == 40 and rec["timing"]["reps"] == 0


def test_cold_mode_flushes_l2_and_still_verifies(cubins, make_config, tmp_path):
    cfg = make_config(measurement={**FAST, "mode": "cold"})
    rec = run_job(Job("tiled", "float32", 16, 256, 256, 256), cfg, str(tmp_path / "r.json"),
                  cubin=cubins("tiled", "float32", 16))
    assert rec["status"] == "passed" and rec["timing"]["mode"] == "cold"


def test_a_size_that_cannot_fit_is_refused_before_allocating(arch, make_config, tmp_path):
    with pytest.raises(MemoryError, match="GiB of GPU memory.*remove this size"):
        run_job(Job("cublas", "float32", 0, 400_000, 400_000, 400_000), make_config(measurement=FAST),
                str(tmp_path / "r.json"))
    assert not (tmp_path / "r.json").exists()


def test_the_stream_hold_keeps_queued_work_waiting_until_released(arch):
    import time

    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as cuda

    from matmul_study.measure.timing import StreamHold

    hold = StreamHold(cuda, arch)
    hold.hold()
    queued = cuda.Event()
    queued.record()
    time.sleep(0.05)
    assert not queued.query()  # still behind the hold
    hold.release()
    assert queued.query()


def test_a_hold_that_is_never_released_times_out_with_an_error(arch):
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as cuda

    from matmul_study.measure.timing import StreamHold

    hold = StreamHold(cuda, arch, timeout_s=0.01)
    hold.hold()
    cuda.Context.synchronize()  # the kernel gives up by itself after 10 ms
    with pytest.raises(RuntimeError, match="launch queue is probably full"):
        hold.release()


def test_small_cublas_calls_are_batched_and_verified(arch, make_config, tmp_path):
    pytest.importorskip("cupy")
    rec = run_job(Job("cublas", "float16", 0, 128, 96, 160), make_config(measurement=FAST),
                  str(tmp_path / "r.json"))
    assert rec["status"] == "passed" and rec["timing"]["launches_per_sample"] > 1


def test_long_launches_are_still_averaged_over_the_minimum_per_sample(cubins, make_config, tmp_path):
    # naive fp64 at 2048^3 takes about 5 ms, above the 1 ms sample target: only the minimum batches it.
    meas = {**FAST, "min_launches_per_sample": 3}
    rec = run_job(Job("naive", "float64", 16, 2048, 2048, 2048), make_config(measurement=meas),
                  str(tmp_path / "r.json"), cubin=cubins("naive", "float64", 16))
    timing = rec["timing"]
    assert rec["status"] == "passed" and timing["launches_per_sample"] == 3
    assert timing["total_s"] == pytest.approx(3 * sum(timing["times_s"]))


def test_a_large_job_records_burst_sustained_and_energy(arch, make_config, tmp_path):
    pytest.importorskip("cupy")
    meas = {**FAST, "sustained_s": 1.0, "sustained_min_size": 2048}
    rec = run_job(Job("cublas", "float32", 0, 2048, 2048, 2048), make_config(measurement=meas),
                  str(tmp_path / "r.json"))
    burst, sustained = rec["burst"], rec["sustained"]
    assert rec["status"] == "passed" and rec["rate"] == "burst"
    assert burst["samples_kept"] <= burst["samples_total"] and burst["settle_s"] >= 0
    if burst["gflops"] is not None:
        assert rec["gflops"] == burst["gflops"] and burst["samples_kept"] >= FAST["min_reps"]
    else:
        assert rec["gflops"] is None and "no burst rate" in burst["note"]
    assert sustained["window_s"] >= 1.0 and sustained["measured_s"] > 0 and sustained["gflops"] > 0
    assert sustained["sm_clock_mhz"] > 0 and sustained["power_w"] > 0
    assert sustained["gflop_per_j"] is None or sustained["gflop_per_j"] > 0
    # Where its time went: set-up, two checks and the timing (settle, samples, window), within the job's own time.
    steps = rec["overhead"]
    assert steps["setup_s"] > 0 and steps["checks_s"] > 0 and steps["timing_s"] >= sustained["window_s"]
    assert steps["inputs_s"] + steps["setup_s"] + steps["checks_s"] + steps["timing_s"] <= steps["job_s"]
    small = run_job(Job("cublas", "float32", 0, 256, 256, 256), make_config(measurement=meas),
                    str(tmp_path / "s.json"))
    assert small["sustained"] == {}  # below sustained_min_size: no window
