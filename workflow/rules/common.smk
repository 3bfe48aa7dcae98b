# Validation, the job grid and path helpers shared by every rule.
import os
import re
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod
from snakemake.utils import Paramspace

from matmul_study.pipeline import config as study_config
from matmul_study.measure import gpu_device as device
from matmul_study.measure import gpu_slots
from matmul_study.measure import input_cache
from matmul_study.core import dtypes, registry
from matmul_study.core.records import measured_settings
from matmul_study.pipeline import grid, job_script, kept, progress, recovery, resources, stops

REPO = Path(workflow.basedir)

# A config error stops the run with its message alone (stops.fail; --verbose adds Snakemake's frames).
# `methods: default` and `methods: all` become the registry's lists here; a method listed by name that needs a
# package not installed stops the run, one of a set is left out with a note.
_METHODS_LISTED = isinstance(config.get("methods"), list)
try:
    study_config.validate(config)
    if _METHODS_LISTED:
        grid.check_listed_methods(config)
except study_config.ConfigError as exc:
    stops.fail(f"Invalid configuration: {exc}")

# Under --cores 1 GPU jobs and compiles hold no core, so that one of each runs at a time beside the other; one GPU
# slot and one compile slot then keep each kind apart.
resources.default_slots(workflow)
# The host's GPUs counted once, for every job's GPU slot (each would otherwise start NVML to count them).
gpu_slots.announce_host_gpus()

# threads "auto" becomes every core a numpy job holds (--cores less one per GPU slot), here, once: every job then
# runs with the same config (and records the same config hash).
if config["threads"] == "auto":
    config["threads"] = resources.blas_threads(config, workflow)

# "auto" becomes GPU 0's arch where one is usable, so cubins built for one GPU are never reused on another.
ARCH = device.resolve_arch(config["arch"])
# `variants: auto` plans each kernel's configuration per problem for GPU 0's SM count and memory bandwidth where one
# is usable here, else for the registry's defaults; each job's variant_reason says which.
try:
    JOBS, PRUNED = grid.build(config, device.compute_capability(ARCH), device_facts=device.planning_facts)
except study_config.ConfigError as exc:
    stops.fail(f"Invalid configuration: {exc}")
for _note in grid.pruned_methods_note(PRUNED):
    print(_note, file=sys.stderr)

# Before Snakemake plans, with the config final: a result whose rerun did not finish is put back from results/.kept/
# where it was measured under this config, else set aside so that its job is measured again (pipeline/kept.py).
for _line in kept.restore_kept(config):
    print(_line, file=sys.stderr)

# block~, variant~, m~, k~, n~ go in the file name; method and dtype become folders.
RUN_FILENAME_PARAMS = ["block", "variant", "m", "k", "n"]
RUNS = Paramspace(JOBS[grid.GRID_COLUMNS], filename_params=RUN_FILENAME_PARAMS)
RUN_PATTERN = RUNS.wildcard_pattern
CPU_METHODS = [name for name, m in registry.METHODS.items() if not m.on_gpu]
GPU_METHODS = [name for name, m in registry.METHODS.items() if m.on_gpu]
COMPILED_METHODS = list(registry.compiled_methods())
# Every registered variant name (the default build is "default"), for the variant wildcard.
VARIANT_NAMES = sorted({v.name for m in registry.METHODS.values() for v in m.variants})


def one_of(names):
    """A wildcard constraint matching exactly these names (one that never matches where there are none)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    method="|".join(registry.METHODS),
    dtype="|".join(dtypes.NAMES),
    arch=r"auto|sm_\d+a?",
    block=r"\d+",
    variant=one_of(["default", *VARIANT_NAMES]),
    m=r"\d+",
    k=r"\d+",
    n=r"\d+",
    figure=r"[a-z_]+",


def run_files():
    return result_files(RUNS)


def result_files(space):
    """The result files of the jobs of a Paramspace over GRID_COLUMNS (RUNS, or a part of JOBS)."""
    return expand(f"results/runs/{{params}}.json", params=space.instance_patterns)


# Result sets from other machines: copy their results/runs and results/tables/calibration.csv into
# results/imported/<name>/ and they are collated into the same report, side by side.
IMPORTED_RUNS = sorted(str(p) for p in Path("results/imported").glob("*/runs/**/*.json"))
IMPORTED_CALIBRATIONS = sorted(str(p) for p in Path("results/imported").glob("*/tables/calibration.csv"))


def calibration_job_files(wildcards=None):
    """The result files of the study's cuBLAS jobs that calibration reuses as ceilings (steps.calibration_jobs)."""
    from matmul_study.pipeline.steps import calibration_jobs

    reused = calibration_jobs(JOBS, config)
    if reused.empty:
        return []
    return result_files(Paramspace(reused[grid.GRID_COLUMNS], filename_params=RUN_FILENAME_PARAMS))


def calibration_files():
    """This run's ceilings (only when it has GPU jobs and config `calibrate` is on) plus imported ones."""
    local = ["results/tables/calibration.csv"] if grid.gpu_methods(JOBS) and config["calibrate"] else []
    return local + IMPORTED_CALIBRATIONS


def cubin_path(method, dtype, block, variant="default"):
    """The default build keeps its name; a variant's cubin carries the variant's name."""
    from matmul_study.launch.kernels import template_block

    tag = "" if variant == "default" else f"_{variant}"
    return f"results/kernels/{ARCH}/{method}/{dtype}_b{template_block(method, int(block))}{tag}.cubin"


def cubin_for(wildcards):
    if not registry.get(wildcards.method).compiled:
        return []
    return cubin_path(wildcards.method, wildcards.dtype, wildcards.block, wildcards.variant)


def compile_benchmarks():
    """The compile steps' wall times (their benchmark files) of every cubin this run's jobs load."""
    cubins = {cubin_path(j.method, j.dtype, j.block, j.variant) for j in JOBS.itertuples()
              if registry.get(j.method).compiled}
    return sorted(c.replace("results/kernels/", "results/benchmarks/compile/", 1).removesuffix(".cubin") + ".tsv"
                  for c in cubins)


def kernel_source(wildcards):
    return REPO / "kernels" / registry.get(wildcards.method).source


def kernel_includes(wildcards):
    """The files the source includes: an edit to a shared header rebuilds the cubins built from it, and through
    them reruns their benchmark jobs, and no others."""
    from matmul_study.launch.kernels import included_files

    return included_files(kernel_source(wildcards), REPO / "kernels")


def build_recipe(wildcards):
    """What the registry puts into a build: a param, so that a change to a method's template, options or a
    variant's -D definitions rebuilds its cubins (the code trigger watches the script file only)."""
    from matmul_study.launch.kernels import compile_options, module_source, target

    variant = wildcards.get("variant")
    # "auto" is GPU 0's arch, known to the job only: its build's target-dependent definitions are not in the param.
    arch = None if wildcards.arch == "auto" else target(wildcards.method, wildcards.arch)
    return {"options": compile_options(wildcards.method, variant, arch),
            "source": module_source(wildcards.method, [(wildcards.dtype, int(wildcards.block))], variant)}


def get_final_output():
    return ["report/report.html"]


onstart:
    # Stop within seconds, before any job, when GPU jobs are pending but no GPU or PyCUDA is usable.
    pending = progress.pending_results(workflow, run_files())
    pending_gpu = [f for f, method in zip(run_files(), JOBS["method"]) if registry.get(method).on_gpu and f in pending]
    # Under a cluster executor the jobs run elsewhere: the submitting host (a login node) needs no GPU, and the
    # scheduler gives each job a GPU of its own.
    if pending_gpu and workflow.local_exec:
        # The missing GPU or PyCUDA first: it is the cause, whatever the resources.
        try:
            device.require_pycuda()
        except device.GpuUnavailable as exc:
            stops.fail(f"{len(pending_gpu)} GPU job(s) cannot run: {exc}")
        # Two GPU jobs at once would time each other: with several cores, the GPU must be a counted resource.
        if workflow.cores > 1 and "gpu" not in workflow.global_resources:
            stops.fail(
                f"--cores {workflow.cores} could run GPU benchmark jobs side by side; add --resources gpu=1 "
                "(or use --cores 1).")
    # SIGTERM or SIGINT ends every running job at once; each finished job prints a progress line.
    stops.stop_jobs_promptly()
    # Snakemake deletes a result when its job starts again: keep each this run rewrites until the new one is there.
    kept.keep_before_rerun(pending)
    progress.start_progress(pending)


onsuccess:
    # The inputs the jobs shared (matmul_study.measure.input_cache) go when the run ends, either way.
    input_cache.clear()
    kept.drop_settled()  # the kept copies of results that were written again
    # A study whose every job failed is not a success, though its tables and report are written (they say why).
    from matmul_study.pipeline.result_check import every_job_failed

    _all_failed = every_job_failed(run_files())
    if _all_failed:
        stops.fail(_all_failed)


onerror:
    # A result written just before a stop is whole: record it finished, so that the same command resumes.
    recovery.keep_finished_results(workflow)
    input_cache.clear()
    kept.drop_settled()  # a result whose job did not finish stays kept, for the next start


# The benchmark and compile jobs are plain commands (workflow/scripts/benchmark_job.py, compile_job.py), not
# `script:`s: a `script:` job starts by loading Snakemake's own modules to read its job, about 0.6 s, and a job
# measured by its slot's worker then loads neither those nor numpy. What a command needs besides its job travels in
# the environment, not in params (Snakemake reruns a job whose params changed): the Python (Snakemake's own, or the
# job's conda environment's), the scripts, the run's config (a file written here, once per config: turning the worker
# on or off changes it and reruns nothing) and the run's inputs folder.
_JOB_SCRIPTS = (Path(workflow.current_basedir) / ".." / "scripts").resolve()
os.environ.update(
    MATMUL_STUDY_PYTHON="python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else sys.executable,
    MATMUL_STUDY_BENCHMARK_JOB=str(_JOB_SCRIPTS / "benchmark_job.py"),
    MATMUL_STUDY_COMPILE_JOB=str(_JOB_SCRIPTS / "compile_job.py"),
    MATMUL_STUDY_RUN_CONFIG=str(job_script.write_config(config).absolute()),
    MATMUL_STUDY_INPUTS=input_cache.RUN_DIRECTORY,
)


def benchmark_command(*options):
    """A benchmark job's command: its job's wildcards, the run's config and inputs, its result, log and cores, and
    `options` (the GPU job's cubin, or --cpu)."""
    return ('"$MATMUL_STUDY_PYTHON" "$MATMUL_STUDY_BENCHMARK_JOB" --config "$MATMUL_STUDY_RUN_CONFIG"'
            ' --inputs-dir "$MATMUL_STUDY_INPUTS" --output {output:q} --log {log:q} --threads {threads} '
            + " ".join(options) +
            " method={wildcards.method} dtype={wildcards.dtype} block={wildcards.block} variant={wildcards.variant}"
            " m={wildcards.m} k={wildcards.k} n={wildcards.n}")


def build_words(wildcards):
    """A compile job's build as its command's KEY=VALUE words: every wildcard of its cubin but the arch (method,
    dtype, block, and variant for a registry variant's build)."""
    return " ".join(f"{key}={value}" for key, value in wildcards.items() if key != "arch")


def compile_command():
    """The compile job's command: its build (params.build, build_words), target arch, cubin and log."""
    return ('"$MATMUL_STUDY_PYTHON" "$MATMUL_STUDY_COMPILE_JOB" --arch {params.arch} --output {output.cubin:q}'
            " --log {log:q} {params.build}")
