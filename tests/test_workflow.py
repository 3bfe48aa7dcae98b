"""The Snakemake workflow as a user runs it: lint, dry-run, bad configs, no GPU, and a full CPU-only study."""

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from matmul_study.pipeline import grid
from matmul_study.present.figures import FIGURES, left_out
from matmul_study.pipeline.config import validate

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
CPU_STUDY = {
    "sizes": [32, 48, {"m": 17, "k": 33, "n": 65}],
    "methods": ["numpy"],
    "dtypes": ["float32", "float64"],
    "measurement": {"warmup": 1, "min_reps": 3, "max_reps": 10, "min_time_s": 0.01, "max_time_s": 1},
}


def snakemake(workdir, *args, timeout=600):
    return subprocess.run([*SNAKEMAKE, "--directory", str(workdir), *args], capture_output=True, text=True,
                          timeout=timeout)


def job_counts(output: str) -> dict:
    """Per-rule job counts from the 'Job stats' table of a (dry) run."""
    table = output.split("Job stats:")[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def write_config(workdir: Path, config: dict) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def test_lint_passes():
    out = snakemake(REPO, "--lint")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "good condition" in out.stdout + out.stderr


def test_dry_run_of_the_default_study_lists_one_job_per_combination():
    t0 = time.perf_counter()
    out = snakemake(REPO, "-n", "--cores", "1", "--forceall")
    elapsed = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    counts = job_counts(out.stdout)
    jobs, _ = grid.build(validate(yaml.safe_load((REPO / "config.yaml").read_text())))
    gpu = jobs["method"] != "numpy"
    assert counts["benchmark_cpu"] == (~gpu).sum()
    assert counts["benchmark_gpu"] == gpu.sum()
    assert counts.get("compile_kernel", 0) + counts.get("compile_kernel_variant", 0) == len(grid.compile_units(jobs))
    # Every figure this study can have data for (the device comparison needs results from a second GPU).
    drawn = [name for name in FIGURES if name not in left_out(jobs, gpu_sources=int(gpu.any()))]
    assert "devices" not in drawn and {"throughput", "speedup", "roofline"} <= set(drawn)
    # One job draws them all (one Python and matplotlib start, not one per figure).
    assert counts["collate"] == counts["report"] == counts["figures"] == 1
    assert elapsed < 10  # includes interpreter start; the DAG itself is built in about 2 s


@pytest.mark.parametrize("gpu_slots, granted_cores", [(None, "4"), ("1", "3"), ("2", "2"), ("5", None)])
def test_the_numpy_job_holds_every_core_but_one_per_gpu_slot(tmp_path, gpu_slots, granted_cores):
    # No CPU step runs beside it; with --resources gpu=N, N GPU jobs (one core each) still can.
    write_config(tmp_path, {**CPU_STUDY, "threads": 2})
    out = snakemake(tmp_path, "-n", "--cores", "4", *(["--resources", f"gpu={gpu_slots}"] if gpu_slots else []))
    assert out.returncode == 0, out.stderr
    granted = re.findall(r"^rule benchmark_cpu:\n(?:    .*\n)*?    threads: (\d+)$", out.stdout + out.stderr, re.M)
    # Snakemake prints no "threads:" line for one thread: more GPU slots than cores still leave the job one.
    assert granted == ([granted_cores] * 6 if granted_cores else [])
    assert len(re.findall(r"^rule benchmark_cpu:", out.stdout + out.stderr, re.M)) == 6


@pytest.mark.parametrize("override, expected", [
    ("block_sizes=[64]", "config key 'block_sizes[0]': value 64 is not allowed; allowed: an integer from 1 to 32"),
    ('dtypes=["float8"]', "config key 'dtypes[0]': value \"float8\" is not allowed"),
    ("sizes=[0]", "config key 'sizes[0]': value 0 is not allowed"),
    ("colour=1", "unknown key(s) 'colour'"),
])
def test_bad_config_fails_before_any_job(tmp_path, override, expected):
    write_config(tmp_path, CPU_STUDY)
    out = snakemake(tmp_path, "--cores", "1", "--config", override)
    assert out.returncode != 0
    assert expected in out.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("methods, dtypes, supported", [
    (["numpy"], ["float16"], "numpy supports float32, float64 only"),
    (["wmma"], ["float32"], "wmma supports float16 only"),
])
def test_a_config_that_selects_no_job_stops_before_any_job_and_says_what_is_supported(tmp_path, methods, dtypes,
                                                                                     supported):
    write_config(tmp_path, {**CPU_STUDY, "methods": methods, "dtypes": dtypes})
    out = snakemake(tmp_path, "--cores", "1")
    assert out.returncode != 0
    assert "select no job" in out.stderr and supported in out.stderr
    assert not (tmp_path / "results").exists()


THROWAWAY = """
import sys
from matmul_study.core import geometry, registry, specs
from matmul_study.core.backends import PYCUDA
registry.register(specs.Method("throwaway", "a test's kernel", ("float32",), backend=PYCUDA,
                                  source=sys.argv[1], template="naive_matmul<{T}, {Acc}>",
                                  launch=geometry.square_thread_blocks, block_axis=True))
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[2:]]
main()
"""


def test_a_new_kernel_is_one_cu_file_and_one_registry_entry(tmp_path):
    # The method is known to nothing but the registry: the schema, the grid, the compile rule and the
    # benchmark rule must all take it from there.
    source = tmp_path / "throwaway.cu"
    source.write_text('#include "01_naive.cu"\n')
    write_config(tmp_path, {**CPU_STUDY, "methods": ["numpy", "throwaway"], "dtypes": ["float32"]})
    out = subprocess.run([sys.executable, "-c", THROWAWAY, str(source), "-s", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path), "-n", "--cores", "1"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    counts = job_counts(out.stdout)
    assert counts["benchmark_gpu"] == 3 * 2  # 3 sizes x 2 blocks, float32
    assert counts["compile_kernel"] == 1  # the block is only a launch parameter: one cubin
    assert "results/runs/method~throwaway/dtype~float32/" in out.stdout
    assert "/throwaway/float32_b0.cubin" in out.stdout


THROWAWAY_VARIANTS = """
import sys
from matmul_study.core import configs, geometry, registry, specs
from matmul_study.core.backends import PYCUDA

def choose(problem, names):
    return configs.Choice("deep_k" if problem.k > 40 else "default", f"k {problem.k} on {problem.sm_count} SMs")

registry.register(specs.Method(
    "throwaway", "a test's kernel with configurations", ("float32",), backend=PYCUDA, source=sys.argv[1],
    template="naive_matmul<{T}, {Acc}>", launch=geometry.square_thread_blocks, block_axis=True,
    variants=(specs.Variant("wide", ("THROWAWAY_WIDE=1",)), specs.Variant("deep_k", ("THROWAWAY_DEEP=1",)),
              specs.Variant("probe", diagnostic=True)),
    choose=choose))
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("variants, runs, cubins", [
    # auto: the heuristic's pick per shape (K 32 and 33: default; K 48: deep_k), one build each.
    ("auto", {("32", "default"), ("48", "deep_k"), ("17", "default")}, {"float32_b0.cubin", "float32_b0_deep_k.cubin"}),
    # all: every shape in the default build and each variant but the diagnostic one.
    ("all", {(m, v) for m in ("32", "48", "17") for v in ("default", "wide", "deep_k")},
     {"float32_b0.cubin", "float32_b0_wide.cubin", "float32_b0_deep_k.cubin"}),
    ("{throwaway: [wide]}", {(m, "wide") for m in ("32", "48", "17")}, {"float32_b0_wide.cubin"}),
])
def test_variants_plan_one_job_per_configuration_and_one_build_per_variant(tmp_path, variants, runs, cubins):
    source = tmp_path / "throwaway.cu"
    source.write_text('#include "01_naive.cu"\n')
    write_config(tmp_path, {**CPU_STUDY, "methods": ["numpy", "throwaway"], "dtypes": ["float32"],
                            "block_sizes": [16]})
    out = subprocess.run([sys.executable, "-c", THROWAWAY_VARIANTS, str(source), "-s", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path), "-n", "--cores", "1", "--config", f"variants={variants}"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    planned = set(re.findall(r"results/runs/method~throwaway/dtype~float32/block~16_variant~(\w+?)_m~(\d+)_",
                             out.stdout))
    assert {(m, v) for v, m in planned} == runs
    assert set(re.findall(r"/throwaway/(float32_b0\w*\.cubin)", out.stdout)) == cubins
    counts = job_counts(out.stdout)
    assert counts["benchmark_gpu"] == len(runs) and counts["benchmark_cpu"] == 3
    assert counts.get("compile_kernel", 0) + counts.get("compile_kernel_variant", 0) == len(cubins)
    # numpy has one configuration: its result files say so like the rest.
    assert len(set(re.findall(r"results/runs/method~numpy/\S+variant~default_\S+\.json", out.stdout))) == 3


def test_a_bad_variants_value_stops_before_any_job_and_names_what_is_allowed(tmp_path):
    write_config(tmp_path, CPU_STUDY)
    out = snakemake(tmp_path, "-n", "--cores", "1", "--config", "variants={numpy: [fast]}")
    assert out.returncode != 0
    assert ("config key 'variants.numpy[0]': value \"fast\" is not allowed (not a variant of the method); allowed: "
            "numpy's variants: default") in out.stderr


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    (tmp_path / "config.yaml").write_text("sizes: [32, 48\nmethods: [numpy]\n")
    out = snakemake(tmp_path, "--cores", "1")
    assert out.returncode != 0
    assert "config.yaml, line 2" in out.stderr and "YAML syntax error" in out.stderr
    assert not (tmp_path / "results").exists()


def test_gpu_methods_without_a_gpu_stop_fast_with_the_cpu_only_command(tmp_path):
    pytest.importorskip("numpy")
    try:
        from matmul_study.measure.gpu_device import require_pycuda

        require_pycuda()
        pytest.skip("this machine has a usable GPU")
    except Exception:
        pass
    write_config(tmp_path, {**CPU_STUDY, "methods": ["numpy", "naive"]})
    t0 = time.perf_counter()
    out = snakemake(tmp_path, "--cores", "1")
    assert time.perf_counter() - t0 < 30
    assert out.returncode != 0
    assert "GPU job(s) cannot run" in out.stderr
    assert "snakemake --cores 1 --config 'methods=[\"numpy\"]'" in out.stderr
    assert not (tmp_path / "results" / "runs").exists()  # no job ran, not even the CPU ones


def test_parallel_gpu_runs_need_the_gpu_resource_and_a_missing_gpu_is_named_first(tmp_path):
    from matmul_study.measure.gpu_device import GpuUnavailable, require_pycuda

    try:
        require_pycuda()
        usable = True
    except GpuUnavailable:
        usable = False
    write_config(tmp_path, {**CPU_STUDY, "methods": ["naive"]})
    out = snakemake(tmp_path, "--cores", "2")
    assert out.returncode != 0
    if usable:
        assert "add --resources gpu=1" in out.stderr
    else:  # the real cause, not the resource it would need once it could run
        assert "GPU job(s) cannot run" in out.stderr and "--resources" not in out.stderr
    assert not (tmp_path / "results" / "runs").exists()


def test_a_listed_method_whose_package_is_missing_stops_the_run(tmp_path):
    pytest.importorskip("numpy")
    from matmul_study.core.backends import module_available

    if module_available("cupy"):
        pytest.skip("CuPy is installed here")
    write_config(tmp_path, {**CPU_STUDY, "methods": ["numpy", "cublas"]})
    out = snakemake(tmp_path, "--cores", "1")
    assert out.returncode != 0
    assert "config key 'methods[1]': value \"cublas\" cannot run here: cupy is not installed" in out.stderr
    assert """--config 'methods=["numpy"]'""" in out.stderr
    assert not (tmp_path / "results" / "runs").exists()


@pytest.mark.parametrize("override", ["block_sizes=[64]", "colour=1"])
def test_a_config_error_prints_its_message_alone_unless_verbose(tmp_path, override):
    write_config(tmp_path, CPU_STUDY)
    out = snakemake(tmp_path, "-n", "--cores", "1", "--config", override)
    assert out.returncode != 0 and out.stderr.startswith("Invalid configuration: ")
    assert "WorkflowError" not in out.stderr and ".smk" not in out.stderr and 'File "' not in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    verbose = snakemake(tmp_path, "-n", "--cores", "1", "--config", override, "--verbose")
    assert verbose.returncode != 0 and "common.smk" in verbose.stdout + verbose.stderr


def test_a_key_given_twice_in_a_configfile_is_an_error(tmp_path):
    write_config(tmp_path, CPU_STUDY)
    other = tmp_path / "other.yaml"
    other.write_text("sizes: [32]\nmethods: [numpy]\nsizes: [64]\n")
    out = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(other))
    assert out.returncode != 0
    assert f'{other}, line 3, column 1: config key "sizes" is given twice (first on line 1)' in out.stderr


def test_a_syntax_error_in_a_configfile_is_snakemakes_message_and_verbose_names_the_line(tmp_path):
    # Documented behaviour: Snakemake reads --configfile files before the workflow runs, so the workflow cannot
    # reword its message; --verbose shows PyYAML's, with the file and line.
    write_config(tmp_path, CPU_STUDY)
    other = tmp_path / "other.yaml"
    other.write_text("sizes: [32, 48\nmethods: [numpy]\n")
    out = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(other))
    assert out.returncode != 0 and "not valid JSON or YAML" in out.stdout + out.stderr
    out = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(other), "--verbose")
    assert out.returncode != 0 and re.search(r'in "[^"]*other.yaml", line 2', out.stdout + out.stderr)


def test_quick_yaml_plans_the_ladder_at_4096_with_block_32_only(tmp_path):
    from matmul_study.core import registry

    (tmp_path / "config.yaml").write_text((REPO / "config.yaml").read_text())
    out = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(REPO / "quick.yaml"))
    assert out.returncode == 0, out.stderr[-3000:]
    # Snakemake merges quick.yaml over config.yaml, key by key.
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    quick = yaml.safe_load((REPO / "quick.yaml").read_text())
    config.update({k: v for k, v in quick.items() if k != "measurement"})
    config["measurement"].update(quick["measurement"])
    config = validate(config)
    assert config["methods"] == list(registry.default_methods()) and config["sizes"] == [4096]
    assert config["measurement"]["sustained_min_size"] > 4096  # no sustained window
    jobs, _ = grid.build(config)
    counts = job_counts(out.stdout)
    gpu = jobs["method"].map(lambda m: registry.get(m).on_gpu)
    assert counts["benchmark_cpu"] == (~gpu).sum() == 2
    assert counts.get("benchmark_gpu", 0) == gpu.sum()
    assert "calibrate" not in counts and config["calibrate"] is False  # no ceilings: the report leaves them out
    runs = set(re.findall(r"results/runs/\S+\.json", out.stdout))
    assert runs and all("_m~4096_k~4096_n~4096" in r and re.search(r"block~(0|32)_", r) for r in runs)


def test_snakemakes_report_archive_is_ignored_by_git(tmp_path):
    import shutil

    if not shutil.which("git") or not (REPO / ".git").exists():
        pytest.skip("needs git and the repository's .git")
    out = subprocess.run(["git", "check-ignore", "-q", "report.zip"], cwd=REPO)
    assert out.returncode == 0


@pytest.fixture(scope="module")
def cpu_study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("study")
    write_config(workdir, CPU_STUDY)
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    (workdir / "console.txt").write_text(out.stdout + out.stderr)
    return workdir


def test_a_cpu_study_prints_no_traceback_and_one_progress_line_per_job(cpu_study):
    console = (cpu_study / "console.txt").read_text()
    assert "Traceback" not in console and "Exception ignored" not in console
    lines = re.findall(r"^numpy (float32|float64) (\d+x\d+x\d+): ([\d,.]+) GFLOP/s, verified \(rel. error [^)]*\) "
                       r"\[(\d+) of 6 jobs done, (\d+) left.*\]$", console, re.M)
    assert len(lines) == 6
    assert sorted(int(done) for *_, done, _ in lines) == list(range(1, 7))
    assert all(int(done) + int(left) == 6 for *_, done, left in lines)
    assert {(d, s) for d, s, *_ in lines} == {(d, s) for d in ("float32", "float64")
                                              for s in ("32x32x32", "48x48x48", "17x33x65")}


def test_a_deleted_result_is_measured_again_by_the_plain_command(cpu_study, tmp_path):
    workdir = copy_study(cpu_study, tmp_path)
    runs = sorted((workdir / "results/runs").rglob("*.json"))
    before = {p: p.read_bytes() for p in runs}
    report_before = (workdir / "report/report.html").stat().st_mtime_ns
    runs[0].unlink()
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert job_counts(out.stdout + out.stderr)["benchmark_cpu"] == 1
    assert runs[0].exists() and all(p.read_bytes() == content for p, content in before.items() if p != runs[0])
    assert (workdir / "report/report.html").stat().st_mtime_ns > report_before


def test_cpu_study_tables(cpu_study):
    df = pd.read_csv(cpu_study / "results/tables/results.csv")
    assert len(df) == 6
    assert set(df["shape"]) == {"32x32x32", "48x48x48", "17x33x65"}
    assert set(df["dtype"]) == {"float32", "float64"}
    assert (df["status"] == "passed").all() and (df["gflops"] > 0).all()
    assert (df["verification_rel_fro_error"] < df["verification_tolerance"]).all()
    for name in ("best", "speedup", "blocks", "float_vs_double", "pruned"):
        assert (cpu_study / f"results/tables/{name}.csv").exists(), name
    fvd = pd.read_csv(cpu_study / "results/tables/float_vs_double.csv")
    assert len(fvd) == 3 and (fvd["float_over_double"] > 0).all()
    pruned = pd.read_csv(cpu_study / "results/tables/pruned.csv")
    assert "no block-size axis" in " ".join(pruned["reason"])


def test_cpu_study_figures_and_report(cpu_study):
    # A CPU-only run draws the figures it has data for; the others are left out (see the next test).
    for name in ("throughput", "float_vs_double", "verification_error"):
        for ext in ("png", "svg"):
            assert (cpu_study / f"results/figures/{name}.{ext}").stat().st_size > 1000, (name, ext)
    html = (cpu_study / "report/report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    assert "<script src=" not in html and "<link " not in html  # self-contained: nothing fetched
    df = pd.read_csv(cpu_study / "results/tables/results.csv")
    for row in df.itertuples():
        assert row.label in html and row.shape in html
    assert "Failed or unverified" in html
    assert "Pruned" in html or "pruned" in html
    # Each job records its own start-up; the report says where the jobs' time went.
    assert (df["overhead_startup_s"] > 0).all() and (df["overhead_startup_s"] < df["overhead_job_s"] + 60).all()
    assert "Where the jobs&#39; own time went" in html or "Where the jobs' own time went" in html


def test_rerun_with_nothing_changed_runs_no_job(cpu_study):
    t0 = time.perf_counter()
    out = snakemake(cpu_study, "--cores", "1")
    assert out.returncode == 0
    assert "Nothing to be done" in out.stdout + out.stderr
    assert time.perf_counter() - t0 < 10  # about 2 s here, interpreter start included


def test_turning_the_measurement_worker_on_reruns_no_measurement(cpu_study):
    # measurement.worker chooses the process that measures a GPU job, not what it measures: no result is stale.
    out = snakemake(cpu_study, "-n", "--cores", "1", "--config", "measurement={worker: true, worker_idle_s: 5}")
    assert out.returncode == 0, out.stderr[-2000:]
    counts = job_counts(out.stdout) if "Job stats:" in out.stdout else {}
    assert not {"benchmark_cpu", "benchmark_gpu", "calibrate"} & set(counts), counts


def test_adding_a_size_runs_only_that_sizes_jobs(cpu_study):
    out = snakemake(cpu_study, "-n", "--cores", "1", "--config", "sizes=[32, 48, 24, {m: 17, k: 33, n: 65}]")
    assert out.returncode == 0, out.stderr
    counts = job_counts(out.stdout)
    assert counts["benchmark_cpu"] == 2  # 24x24x24 in float32 and float64, nothing else
    assert counts.get("benchmark_gpu", 0) == 0


def test_snakemake_report_zip(cpu_study, tmp_path):
    out = snakemake(cpu_study, "--report", str(tmp_path / "report.zip"))
    assert out.returncode == 0, out.stderr[-2000:]
    names = zipfile.ZipFile(tmp_path / "report.zip").namelist()
    assert any(n.endswith("throughput.png") for n in names)
    assert any(n.endswith("results.csv") for n in names)


def test_imported_results_from_another_device_are_merged_side_by_side(cpu_study, tmp_path):
    import shutil

    workdir = tmp_path / "merged"
    shutil.copytree(cpu_study, workdir)
    reference = REPO / "results/reference/NVIDIA_H200"
    imported = workdir / "results/imported/h200"
    shutil.copytree(reference / "runs", imported / "runs", copy_function=shutil.copy)  # fresh mtimes, as cp
    (imported / "tables").mkdir()
    if (reference / "tables/calibration.csv").exists():
        shutil.copy(reference / "tables/calibration.csv", imported / "tables/calibration.csv")
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr[-3000:]
    df = pd.read_csv(workdir / "results/tables/results.csv")
    local = set(pd.read_csv(cpu_study / "results/tables/results.csv")["env_device_name"])
    imported_names = {json.loads(p.read_text())["env"]["device_name"] for p in (reference / "runs").rglob("*.json")}
    # This machine's CPU, and the imported GPU with its host's CPU (which may or may not be this CPU model).
    assert "NVIDIA H200" in imported_names
    assert set(df["env_device_name"]) == local | imported_names
    assert len(df) == 6 + len(list((reference / "runs").rglob("*.json")))
    html = (workdir / "report/report.html").read_text()
    assert "NVIDIA H200" in html


def copy_study(cpu_study, tmp_path) -> Path:
    """A copy of the finished CPU-only study (results, metadata and all) that a test may change."""
    import shutil

    workdir = tmp_path / "study"
    shutil.copytree(cpu_study, workdir, symlinks=True)
    return workdir


def test_a_config_key_that_changes_a_measurement_reruns_its_jobs_and_the_report_states_what_was_measured(
        cpu_study, tmp_path):
    workdir = copy_study(cpu_study, tmp_path)
    # threads=2 with 2 cores: numpy's BLAS gets 2 threads, so every numpy job is measured again.
    out = snakemake(workdir, "-n", "--cores", "2", "--config", "threads=2")
    assert out.returncode == 0, out.stderr[-2000:]
    assert job_counts(out.stdout)["benchmark_cpu"] == 6
    out = snakemake(workdir, "-n", "--cores", "1", "--config", "measurement={min_reps: 4}")
    assert job_counts(out.stdout)["benchmark_cpu"] == 6
    # threads=2 with 1 core still measures with 1 thread: no job reruns, and the report says 1, not 2.
    out = snakemake(workdir, "--cores", "1", "--config", "threads=2")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "benchmark_cpu" not in job_counts(out.stdout + out.stderr)
    for path in (workdir / "results/runs").rglob("*.json"):
        assert json.loads(path.read_text())["measured_config"]["threads"] == 1
    html = (workdir / "report/report.html").read_text()
    shown = html.split("config asks for (not what the results were measured with)")
    assert len(shown) == 2, "the report must say that the config asks for what was not measured"
    assert re.search(r"(?:^|<pre>)threads: 1$", shown[0], re.M)
    assert not re.search(r"(?:^|<pre>)threads: 2$", shown[0], re.M)
    assert re.search(r"^\s+threads: 2(?:$|</pre>)", shown[1], re.M)


def test_snakemake_report_after_a_run_with_config_says_what_to_type(cpu_study, tmp_path):
    workdir = copy_study(cpu_study, tmp_path)
    # As in the README: the run used --config 'methods=["numpy"]' over a config.yaml with GPU methods.
    write_config(workdir, {**CPU_STUDY, "methods": ["numpy", "naive"]})
    out = snakemake(workdir, "--report", str(tmp_path / "report.zip"))
    assert out.returncode != 0
    command = f"snakemake --report {tmp_path / 'report.zip'} --config 'methods=[\"numpy\"]'"
    assert command in out.stderr, out.stderr[-2000:]
    out = snakemake(workdir, "--report", str(tmp_path / "report.zip"), "--config", 'methods=["numpy"]')
    assert out.returncode == 0, out.stderr[-2000:]
    assert any(n.endswith("results.csv") for n in zipfile.ZipFile(tmp_path / "report.zip").namelist())


def test_a_size_too_large_for_host_memory_stops_before_any_job(tmp_path):
    write_config(tmp_path, {**CPU_STUDY, "sizes": [32, 1_000_000]})
    out = snakemake(tmp_path, "--cores", "1")
    assert out.returncode != 0
    assert "config key 'sizes[1]': value 1000000 is too large for this machine" in out.stderr
    assert re.search(r"needs at least [\d.,]+ TiB of host memory .* this machine has [\d.,]+ [GT]iB", out.stderr)
    assert not (tmp_path / "results").exists()


def test_a_corrupt_result_file_is_set_aside_and_measured_again_by_the_plain_command(cpu_study, tmp_path):
    workdir = copy_study(cpu_study, tmp_path)
    corrupt = sorted((workdir / "results/runs").rglob("*.json"))[0]
    corrupt.write_text(corrupt.read_text()[:100])  # cut short, as a full disk would leave it
    out = snakemake(workdir, "--cores", "1")
    assert out.returncode == 0, out.stderr
    assert f"{corrupt.relative_to(workdir)}:" in out.stderr and "set aside" in out.stderr
    assert corrupt.with_name(corrupt.name + ".corrupt").is_file()
    assert json.loads(corrupt.read_text())["status"] in ("passed", "failed")  # measured again, whole
    assert "Traceback" not in out.stderr


def test_the_yaml_check_names_the_line_and_column_and_passes_a_valid_file(tmp_path):
    from matmul_study.pipeline.config import ConfigError, check_yaml_syntax

    bad = tmp_path / "config.yaml"
    bad.write_text("sizes: [32, 48]\nmethods: [numpy]\n  dtypes: [float32]\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(bad))}, line 3, column 3: YAML syntax error"):
        check_yaml_syntax(bad)
    bad.write_text("sizes: [32\nmethods: [numpy]\n")
    with pytest.raises(ConfigError, match=r"line 2, column \d+: YAML syntax error.*opened on line 1"):
        check_yaml_syntax(bad)
    bad.write_text(yaml.safe_dump(CPU_STUDY))
    check_yaml_syntax(bad)  # a valid file passes


def test_result_files_are_readable_by_everyone_like_other_outputs(cpu_study):
    for path in (cpu_study / "results/runs").rglob("*.json"):
        assert path.stat().st_mode & 0o044 == 0o044, oct(path.stat().st_mode)


def test_a_cpu_only_report_leaves_out_what_it_cannot_show_and_says_why_once(cpu_study):
    html = (cpu_study / "report/report.html").read_text()
    # No "no data" boxes: figures without data are not drawn at all, and each is explained in one sentence.
    assert "no data" not in html.lower()
    for name, sentence in (("speedup", "Speedup over naive is not drawn"),
                           ("blocks", "Thread-block size is not drawn"),
                           ("roofline", "Roofline is not drawn"),
                           ("devices", "Devices compared is not drawn")):
        assert not (cpu_study / f"results/figures/{name}.png").exists(), name
        assert html.count(sentence) == 1, sentence
    # throughput, float32 against float64, verification error, where the study's time went
    assert html.count("data:image/png;base64,") == 4
    assert (cpu_study / "results/figures/study_time.png").exists()
    # Tables with no rows are left out, not shown as headers only.
    assert "<h3>Speedup over naive</h3>" not in html and "<h3>Thread-block sizes</h3>" not in html
    assert "<h3>float32 against float64</h3>" in html and "<h3>Best throughput</h3>" in html


def test_the_stated_config_is_the_measured_one_where_results_differ_from_it():
    from matmul_study.pipeline.report_inputs import ASKED_KEY, config_as_measured

    config = {"threads": 4, "measurement": {"min_reps": 5, "max_reps": 50, "mode": "hot"}}
    records = [
        {"method": "numpy", "threads": 2, "measured_config": {"threads": 2, "measurement": {
            "min_reps": 5, "max_reps": 20, "mode": "hot"}}},
        {"method": "numpy", "threads": 2, "measured_config": {"threads": 2, "measurement": {
            "min_reps": 5, "max_reps": 30, "mode": "cold"}}},
    ]
    shown = config_as_measured(config, records)
    assert shown["threads"] == 2 and shown["measurement"]["min_reps"] == 5
    assert shown["measurement"]["mode"] == ["hot", "cold"]  # results measured two ways: both are stated
    assert shown["measurement"]["max_reps"] == 30  # the report computes with it: the largest cap it ran under
    assert shown[ASKED_KEY] == {"threads": 4, "measurement": {"max_reps": 50, "mode": "hot"}}
    assert config["threads"] == 4  # the caller's config is not changed
    assert config_as_measured(config, [{"method": "numpy", "threads": 4, "measured_config": {
        "threads": 4, "measurement": dict(config["measurement"])}}]) == config  # as measured: stated as is


class _Workflow:
    """What resources.cpu_job_cores reads of Snakemake's workflow object."""

    def __init__(self, cores, gpu_slots=None, local=True):
        self.cores, self.local_exec, self.remote_exec = cores, local, not local
        self.global_resources = {"gpu": gpu_slots} if gpu_slots is not None else {}


@pytest.mark.parametrize("threads, cores, gpu_slots, local, expected", [
    ("auto", 16, None, True, 16),   # every core the job holds
    ("auto", 16, 1, True, 15),      # less one per GPU slot
    ("auto", 16, 1, False, 16),     # a cluster job has its node's cores
    (4, 16, None, True, 4),         # a number caps it
    (32, 16, 2, True, 14),          # at most the cores held
])
def test_numpys_threads_are_the_jobs_cores_unless_the_config_sets_them(threads, cores, gpu_slots, local, expected):
    from matmul_study.pipeline.resources import blas_threads

    assert blas_threads({"threads": threads}, _Workflow(cores, gpu_slots, local)) == expected


def test_threads_all_takes_the_whole_machine_and_the_whole_run(monkeypatch):
    # The CPU line a claim about "the CPU" is judged by: every core of the machine even under --cores 1, and the job
    # holds every core and GPU slot of the run, so that nothing runs beside it.
    from matmul_study.pipeline import resources

    monkeypatch.setattr(resources, "machine_cores", lambda: 16)
    config = {"threads": "all"}
    assert resources.blas_threads(config, _Workflow(1, 1)) == 16
    assert resources.cpu_job_threads(config, _Workflow(4, 2)) == 4
    assert resources.cpu_job_gpu_slots(config, _Workflow(4, 2)) == 2
    auto = {"threads": "auto"}
    assert resources.cpu_job_threads(auto, _Workflow(4, 2)) == 2 and resources.cpu_job_gpu_slots(auto, _Workflow(4, 2)) == 0


def test_under_one_core_gpu_jobs_and_compiles_hold_no_core_and_slots_keep_each_kind_apart(monkeypatch):
    # --cores 1 on this host: a compile runs beside a GPU job (which mostly waits for its GPU); the default GPU slot
    # keeps two GPU jobs apart and the compile slot two compiles; a numpy job holds the compile slot, and the GPU
    # slot only on a machine with no second core for the GPU job.
    from matmul_study.pipeline import resources

    monkeypatch.setattr(resources, "machine_cores", lambda: 1)

    def slots(workflow, name):
        value = workflow.global_resources.get(name)
        return int(getattr(value, "value", value)) if value is not None else None

    one = _Workflow(1)
    resources.default_slots(one)
    assert resources.slot_job_threads(one) == 0
    assert slots(one, "gpu") == 1 and slots(one, "compile") == 1 and resources.compile_slots(one) == 1
    assert resources.cpu_job_gpu_slots({"threads": 1}, one) == 1 and resources.cpu_job_threads({"threads": 1}, one) == 1
    monkeypatch.setattr(resources, "machine_cores", lambda: 2)
    assert resources.cpu_job_gpu_slots({"threads": "auto"}, one) == 0 and resources.compile_slots(one) == 1
    assert resources.cpu_job_threads({"threads": "auto"}, one) == 0  # else Snakemake would start nothing beside it
    assert resources.blas_threads({"threads": "auto"}, one) == 1
    assert resources.cpu_job_gpu_slots({"threads": "all"}, one) == 1  # the CPU line that takes the whole machine
    named = _Workflow(1, 2)  # --resources gpu=2 stays the user's
    named.global_resources["compile"] = 3
    resources.default_slots(named)
    assert named.global_resources["gpu"] == 2 and named.global_resources["compile"] == 3
    # More cores, or a cluster executor: GPU jobs and compiles hold a core each, and no slot is made up.
    for workflow in (_Workflow(4, 1), _Workflow(1, None, local=False)):
        resources.default_slots(workflow)
        assert resources.slot_job_threads(workflow) == 1 and resources.slot_job_threads(workflow) == 1
        assert resources.compile_slots(workflow) == 0 and "compile" not in workflow.global_resources
        assert workflow.global_resources.get("gpu") in (1, None)
    assert resources.cpu_job_gpu_slots({"threads": "auto"}, _Workflow(4, 1)) == 0
    assert resources.cpu_job_gpu_slots({"threads": "auto"}, named) == 2  # two GPU jobs and numpy: three cores
    monkeypatch.setattr(resources, "machine_cores", lambda: 3)
    assert resources.cpu_job_gpu_slots({"threads": "auto"}, named) == 0


ONE_CORE_SNAKEFILE = """
from matmul_study.pipeline import resources
resources.default_slots(workflow)

rule all:
    input: expand("compiled/{i}", i=range(2)), expand("measured/{i}", i=range(4))

rule compile:
    output: "compiled/{i}"
    threads: resources.slot_job_threads(workflow)
    resources: compile=resources.compile_slots(workflow)
    shell: "python -c 'import time; time.sleep(2); print(time.time())' > {output}"

rule measure:
    output: "measured/{i}"
    threads: resources.slot_job_threads(workflow)
    resources: gpu=1
    shell: "python -c 'import time; print(time.time()); time.sleep(0.2)' > {output}"
"""


def test_under_one_core_gpu_jobs_keep_starting_while_a_compile_runs(tmp_path):
    # Snakemake selects no job while one holds its only core: a compile that held it would keep the next GPU job
    # waiting until the compile ended. With the slots, all four short "GPU jobs" start within the first compile.
    (tmp_path / "Snakefile").write_text(ONE_CORE_SNAKEFILE)
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"], cwd=tmp_path,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    first_compiled = min(float((tmp_path / "compiled" / str(i)).read_text()) for i in range(2))
    measured = sorted(float((tmp_path / "measured" / str(i)).read_text()) for i in range(4))
    compiles = sorted(float((tmp_path / "compiled" / str(i)).read_text()) for i in range(2))
    assert measured[-1] < first_compiled, (measured, compiles)
    assert compiles[1] - compiles[0] >= 1.9  # and the compile slot kept the two compiles apart


NUMPY_BESIDE_SNAKEFILE = """
import time
from matmul_study.pipeline import resources
resources.default_slots(workflow)
config.setdefault("threads", "auto")

def stamp(path, seconds):
    return f"python -c 'import time; a = time.time(); time.sleep({seconds}); print(a, time.time())' > {path}"

rule all:
    input: "numpy", expand("measured/{i}", i=range(6))

rule compile:
    output: "compiled/{i}"
    threads: resources.slot_job_threads(workflow)
    resources: compile=resources.compile_slots(workflow)
    priority: 1
    shell: stamp("{output}", 1)

rule numpy:
    output: "numpy"
    threads: resources.cpu_job_threads(config, workflow)
    resources:
        gpu=resources.cpu_job_gpu_slots(config, workflow),
        compile=resources.compile_slots(workflow),
    shell: stamp("{output}", 3)

rule measure:
    input: lambda wildcards: f"compiled/{int(wildcards.i) % 2}"
    output: "measured/{i}"
    threads: resources.slot_job_threads(workflow)
    resources: gpu=1
    shell: stamp("{output}", 0.3)
"""


@pytest.mark.parametrize("cores", [1, 2])
def test_under_one_core_numpy_runs_after_the_compiles_and_beside_gpu_jobs_where_a_core_is_free(tmp_path, cores):
    # The study's layout under --cores 1, the machine limited to one core or two: the compiles (priority) take the
    # compile slot before the numpy job, which holds it; on two cores the GPU jobs go on while numpy runs, on one
    # none does.
    if cores > len(os.sched_getaffinity(0)):
        pytest.skip(f"this machine lets the tests use {len(os.sched_getaffinity(0))} core(s), not {cores}")
    (tmp_path / "Snakefile").write_text(NUMPY_BESIDE_SNAKEFILE)
    allowed = sorted(os.sched_getaffinity(0))[:cores]
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"], cwd=tmp_path,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=lambda: os.sched_setaffinity(0, allowed))
    assert result.returncode == 0, result.stderr

    def spans(*names):
        return [tuple(map(float, (tmp_path / name).read_text().split())) for name in names]

    (numpy,) = spans("numpy")
    compiled = spans("compiled/0", "compiled/1")
    measured = spans(*(f"measured/{i}" for i in range(6)))
    assert max(end for _, end in compiled) <= numpy[0], (compiled, numpy)
    beside = [span for span in measured if span[0] < numpy[1] and span[1] > numpy[0]]
    assert (len(beside) >= 2) if cores == 2 else not beside, (numpy, measured)


def test_a_numpy_job_under_threads_all_ignores_the_cores_it_was_granted():
    from matmul_study.measure.cpu_job import resolve_threads
    from matmul_study.measure.runner import _blas_threads

    assert _blas_threads({"threads": "all"}, 1) == resolve_threads("all") >= 1
    assert _blas_threads({"threads": 8}, 2) == 2
