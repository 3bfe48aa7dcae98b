"""envs/*.yaml (for --sdm conda) must list what pyproject.toml lists, with the same lower bounds, as conda
packages; and nothing in them may depend on where the env file lies, because Snakemake copies each env file
under .snakemake/conda/ before it creates the environment."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
# pip name -> conda-forge name, where they differ.
CONDA_NAMES = {"ml-dtypes": "ml_dtypes", "cupy-cuda13x": "cupy"}
# conda packages with no pip counterpart in pyproject.toml, and why the GPU env needs them.
GPU_CONDA_ONLY = {"cuda-nvcc": "", "cuda-version": ">=13"}  # nvcc for compile_kernel; CUDA 13 as cupy-cuda13x


def requirements(specs):
    out = {}
    for spec in specs:
        name, bound = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", spec).groups()
        out[name.lower()] = bound.replace(" ", "")
    return out


def as_conda(reqs):
    return {CONDA_NAMES.get(name, name): bound for name, bound in reqs.items()}


def env_file(name):
    return yaml.safe_load((REPO / "envs" / name).read_text())


def env_requirements(name):
    deps = env_file(name)["dependencies"]
    assert all(isinstance(d, str) for d in deps), f"{name}: no pip section; every package comes from conda"
    reqs = requirements(deps)
    reqs.pop("python", None)
    return reqs


def project():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_study_env_matches_core_dependencies():
    assert env_requirements("study.yaml") == as_conda(requirements(project()["dependencies"]))


def test_gpu_env_adds_the_gpu_cublas_hopper_and_fp8_extras_and_nvcc():
    extras = project()["optional-dependencies"]
    expected = as_conda(requirements(project()["dependencies"] + extras["gpu"] + extras["cublas"]
                                     + extras["hopper"] + extras["fp8"]))
    assert env_requirements("gpu.yaml") == {**expected, **GPU_CONDA_ONLY}


def test_env_files_resolve_from_where_snakemake_copies_them(tmp_path):
    """No dependency is a local path or URL: Snakemake runs `conda env create --file
    .snakemake/conda/<hash>.yaml`, so `-e ../` or `./pkg` would resolve under .snakemake/conda/."""
    for env in (REPO / "envs").glob("*.yaml"):
        data = yaml.safe_load(env.read_text())
        for dep in data["dependencies"]:
            text = dep if isinstance(dep, str) else yaml.safe_dump(dep)
            assert not re.search(r"(^|\s)(-e|--editable)\b|file:|://|(^|[\s=])\.{0,2}/", text), (env.name, dep)
        assert data["channels"][0] == "conda-forge"


def test_every_rule_names_a_conda_env_that_exists():
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        rules = re.findall(r"^rule (\w+):", text, re.M)
        envs = re.findall(r'conda:\s*\n\s*"([^"]+)"', text)
        assert len(envs) == len(rules), f"{smk.name}: every rule needs a conda: env"
        for env in envs:
            assert (smk.parent / env).resolve().exists(), env


def test_every_rule_script_imports_the_workflows_own_package_first():
    for script in (REPO / "workflow/scripts").glob("*.py"):
        if script.name == "_study.py":
            continue
        first = next(line for line in script.read_text().splitlines() if line.startswith(("import ", "from ")))
        assert first.startswith("import _study"), script.name


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_a_job_imports_matmul_study_from_the_workflow_it_runs(tmp_path):
    """A job's Python (a conda env without the project) finds the package next to its workflow: a copy of the
    workflow imports the copy's package, not the one installed here."""
    copy = tmp_path / "clone"
    shutil.copytree(REPO / "workflow", copy / "workflow")
    shutil.copytree(REPO / "matmul_study", copy / "matmul_study")
    # As Snakemake's script preamble does: the script's folder is appended to sys.path.
    code = ("import sys; sys.path.append(sys.argv[1]); import _study, matmul_study; "
            "print(matmul_study.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(copy / "workflow/scripts")], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_relative_to(copy / "matmul_study")
