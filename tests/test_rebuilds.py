"""An edit to a file a kernel includes rebuilds exactly the cubins built from it, and reruns their benchmark jobs:
the compile rule's inputs are the source and every file it includes (kernels.included_files), and that scan finds
what the compiler reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matmul_study.core import registry
from matmul_study.core.backends import module_available
from matmul_study.launch import kernels
from test_kernels_compile import needs_nvcc
from test_workflow import REPO, write_config

COMPILED = registry.compiled_methods()
COMPILE_RULES = ("compile_kernel", "compile_kernel_variant")
# A planned job's rule and (first) output, from a dry run's job listing.
PLANNED_JOB = re.compile(r"^rule (\w+):\n(?:    .*\n)*?    output: ([^,\s]+)", re.M)


def source_of(method: str) -> Path:
    return kernels.KERNEL_DIR / registry.get(method).source


def cubin_method(path: str) -> str:
    """results/kernels/<arch>/<method>/<build>.cubin"""
    return Path(path).parts[3]


def test_the_scan_follows_quoted_includes_through_folders_and_cycles(tmp_path):
    kernel_dir = tmp_path / "kernels"
    (kernel_dir / "family").mkdir(parents=True)
    (kernel_dir / "rung.cu").write_text('#include <stdint.h>\n#include "family/mainloop.cuh"\n'
                                        '// #include "commented_out.cuh"\n  #  include "shared.cuh"\n')
    (kernel_dir / "family/mainloop.cuh").write_text('#pragma once\n#include "pipeline.cuh"\n#include "../shared.cuh"\n')
    # pipeline.cuh and mainloop.cuh include each other; hopper.cuh is found through kernel_dir (the -I), not next
    # to the including file; cuda_fp16.h is in neither folder (a toolkit header).
    (kernel_dir / "family/pipeline.cuh").write_text('#pragma once\n#include "mainloop.cuh"\n#include "hopper.cuh"\n'
                                                    '#include "cuda_fp16.h"\n')
    (kernel_dir / "hopper.cuh").write_text("#pragma once\n")
    (kernel_dir / "shared.cuh").write_text('#pragma once\n#include "rung.cu"\n')  # back to the source itself
    (kernel_dir / "commented_out.cuh").write_text("")
    found = kernels.included_files(kernel_dir / "rung.cu", kernel_dir)
    assert found == sorted(p.resolve() for p in (kernel_dir / "family/mainloop.cuh", kernel_dir / "family/pipeline.cuh",
                                                 kernel_dir / "hopper.cuh", kernel_dir / "shared.cuh"))
    assert kernels.included_files(kernel_dir / "hopper.cuh", kernel_dir) == []


def nvcc_project_dependencies(method: str, tmp_path: Path) -> list[Path]:
    """The files under the repository, other than the source, that nvcc reads for the method's default build, by
    its own dependency scan with the compile's flags (nvcc_command: arch, options, -D definitions, -I)."""
    deps, arch = tmp_path / f"{method}.d", kernels.target(method, "sm_90")
    command = kernels.nvcc_command(source_of(method), deps, arch, kernels.compile_options(method, None, arch),
                                   target="generate-dependencies")
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, f"nvcc --generate-dependencies failed for {method}:\n{result.stderr}"
    listed = deps.read_text().replace("\\\n", " ").split(":", 1)[1].split()
    paths = {(tmp_path / p).resolve() for p in listed} - {source_of(method).resolve()}
    # A toolkit installed into the repository's virtual environment is not the project's.
    venv = Path(sys.prefix).resolve()
    return sorted(p for p in paths if p.is_relative_to(REPO.resolve()) and not p.is_relative_to(venv))


@needs_nvcc
@pytest.mark.parametrize("method", COMPILED)
def test_the_scan_finds_the_files_nvcc_reads(method, tmp_path):
    assert kernels.included_files(source_of(method)) == nvcc_project_dependencies(method, tmp_path)


def stand_ins(folder: Path) -> Path:
    """Empty packages for the modules that planning looks for (find_spec) and this machine lacks (cuda-bindings,
    CuPy without a GPU): a dry run imports none of them, and without them the Hopper rungs are left out of the plan."""
    for name in {name for m in COMPILED for name in registry.get(m).requires.modules if not module_available(name)}:
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            package = folder.joinpath(*parts[:depth])
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
    return folder


@pytest.fixture(scope="module")
def planned_study(tmp_path_factory):
    """A copy of the workflow and kernels with every compiled method planned (its default build and one variant),
    for sm_90 and at 8 rows so that nothing is pruned: (workdir, environment, {rule: planned outputs})."""
    workdir = tmp_path_factory.mktemp("rebuilds")
    shutil.copy(REPO / "Snakefile", workdir)
    for folder in ("workflow", "kernels", "envs"):
        shutil.copytree(REPO / folder, workdir / folder)
    variants = {m: ["default", next(v.name for v in registry.get(m).variants if not v.diagnostic)]
                for m in COMPILED if registry.get(m).variants}
    write_config(workdir, {
        "sizes": [{"m": 8, "k": 64, "n": 64}], "methods": list(COMPILED),  # 8 rows: kernel 18 serves only a few "block_sizes": [16], "arch": "sm_90", "calibrate": False,
        "dtypes": sorted({d for m in COMPILED for d in registry.get(m).dtypes}), "variants": variants})
    paths = [str(stand_ins(tmp_path_factory.mktemp("stand_ins"))), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    out = dry_run(workdir, env)
    planned = {}
    for rule, output in PLANNED_JOB.findall(out.stdout):
        planned.setdefault(rule, []).append(output)
    assert set(COMPILED) == {cubin_method(p) for rule in COMPILE_RULES for p in planned.get(rule, [])}
    assert planned.get("compile_kernel_variant") and planned.get("benchmark_gpu")
    return workdir, env, planned


def dry_run(workdir: Path, env: dict) -> subprocess.CompletedProcess:
    # The copy's Snakefile, so that its kernels/ are the ones the rules read.
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(workdir / "Snakefile"), "--directory",
                          str(workdir), "-n", "--cores", "1"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def planned_jobs(out: subprocess.CompletedProcess, rules) -> dict[str, set[str]]:
    """The methods of the jobs of these rules that a dry run lists, per rule (rules with none left out)."""
    methods = {}
    for rule, output in PLANNED_JOB.findall(out.stdout):
        if rule in rules:
            method = re.search(r"method~(\w+)/", output)
            methods.setdefault(rule, set()).add(method.group(1) if method else cubin_method(output))
    return methods


RESULT_PATH = re.compile(r"results/runs/method~(?P<method>[^/]+)/dtype~(?P<dtype>[^/]+)/block~(?P<block>\d+)_variant~"
                         r"(?P<variant>.+)_m~(?P<m>\d+)_k~(?P<k>\d+)_n~(?P<n>\d+)\.json$")


def result_of(path: str) -> dict:
    """A passed result of the job that `path` names, as the start-up check reads it."""
    job = RESULT_PATH.search(path).groupdict()
    return {**job, **{key: int(job[key]) for key in ("block", "m", "k", "n")}, "status": "passed", "gflops": 1.0,
            "verification": {"passed": True}}


def test_an_edit_to_a_shared_header_rebuilds_exactly_the_kernels_that_include_it(planned_study):
    workdir, env, planned = planned_study
    kernel_dir = (workdir / "kernels").resolve()  # as included_files gives its paths
    # Every compile and GPU benchmark output is there and newer than every file of the copy (a rule's script
    # too: the code trigger compares its time). Snakemake keeps no metadata for files it did not write, so only
    # the times decide, under the default rerun triggers.
    now = time.time()
    for path in workdir.rglob("*"):
        os.utime(path, (now - 120, now - 120))
    for rule in (*COMPILE_RULES, "benchmark_gpu"):
        for output in planned[rule]:
            (workdir / output).parent.mkdir(parents=True, exist_ok=True)
            # A result must pass the start-up check (a whole record of its own job), or it is set aside and measured
            # again; a cubin is only looked at by its time.
            (workdir / output).write_text(json.dumps(result_of(output)) if rule == "benchmark_gpu" else "")
            os.utime(workdir / output, (now - 60, now - 60))
    rules = (*COMPILE_RULES, "benchmark_gpu")
    out = dry_run(workdir, env)
    assert planned_jobs(out, rules) == {}, "up-to-date cubins or results are built again: " + out.stderr[-2000:]

    sources = {m: (kernel_dir / registry.get(m).source).resolve() for m in COMPILED}
    includes = {m: kernels.included_files(sources[m], kernel_dir) for m in COMPILED}
    includers = {header: {m for m in COMPILED if header in includes[m]} for header in set().union(*includes.values())}
    # Its includers, and the method built from it where it is a rung's source as well.
    readers = {header: methods | {m for m in COMPILED if sources[m] == header} for header, methods in includers.items()}
    # Every header that three or more methods include: an edit to each reruns its readers' builds and no others.
    shared = sorted(h for h, methods in includers.items() if len(methods) >= 3)
    assert len(shared) >= 5, f"expected headers that several kernels share, found {includers}"
    for header in shared:
        text = header.read_text()
        try:
            header.write_text(text + "\n// an edit\n")
            rerun = planned_jobs(dry_run(workdir, env), rules)
        finally:
            header.write_text(text)
            os.utime(header, (now - 120, now - 120))
        expected = {rule: {cubin_method(p) for p in planned[rule]} & readers[header] for rule in COMPILE_RULES}
        expected["benchmark_gpu"] = readers[header]
        assert rerun == {rule: methods for rule, methods in expected.items() if methods}, \
            f"after an edit to {header.relative_to(kernel_dir)}"
