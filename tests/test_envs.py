"""envs/*.yaml (for --sdm conda) must list what pyproject.toml lists, with the same lower bounds."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def requirements(specs):
    out = {}
    for spec in specs:
        name, bound = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", spec).groups()
        out[name.lower()] = bound.replace(" ", "")
    return out


def env_requirements(path):
    deps = yaml.safe_load(path.read_text())["dependencies"]
    specs = [d for d in deps if isinstance(d, str)]
    for d in deps:
        if isinstance(d, dict):
            specs += [p for p in d.get("pip", []) if not p.startswith("-e")]
    reqs = requirements(specs)
    reqs.pop("python", None)
    reqs.pop("pip", None)
    return reqs


def project():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_study_env_matches_core_dependencies():
    assert env_requirements(REPO / "envs/study.yaml") == requirements(project()["dependencies"])


def test_gpu_env_adds_the_gpu_and_cublas_extras():
    extras = project()["optional-dependencies"]
    expected = requirements(project()["dependencies"] + extras["gpu"] + extras["cublas"])
    assert env_requirements(REPO / "envs/gpu.yaml") == expected


def test_every_rule_names_a_conda_env_that_exists():
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        rules = re.findall(r"^rule (\w+):", text, re.M)
        envs = re.findall(r'conda:\s*\n\s*"([^"]+)"', text)
        assert len(envs) == len(rules), f"{smk.name}: every rule needs a conda: env"
        for env in envs:
            assert (smk.parent / env).resolve().exists(), env
