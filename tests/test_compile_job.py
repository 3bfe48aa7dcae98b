"""The compile step's command (matmul_study/pipeline/compile_script.py, workflow/scripts/compile_job.py), on the CPU:
the rule hands it the build that its cubin's path names, and it writes that build's cubin without loading
Snakemake's modules (PyCUDA's compiler is a fake here: CI has nvcc, but no PyCUDA)."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from matmul_study.launch import kernels

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

# The command with PyCUDA's compiler replaced by one that writes what it was asked for; then which of the modules
# that a `script:` job loads this process has loaded.
FAKE_COMPILE = f"""
import json, sys, types
sys.path.insert(0, {str(REPO / "workflow/scripts")!r})
compiler = types.ModuleType("pycuda.compiler")
compiler.compile = lambda source, **kw: json.dumps({{"source": source, **kw}}).encode()
package = types.ModuleType("pycuda")
package.compiler, package.VERSION_TEXT = compiler, "fake"
sys.modules.update({{"pycuda": package, "pycuda.compiler": compiler}})
import runpy
sys.argv = [{str(REPO / "workflow/scripts/compile_job.py")!r}, *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
print(json.dumps(sorted(m for m in ("snakemake", "pandas") if m in sys.modules)))
"""


def planned_compiles(tmp_path, config: dict) -> list[str]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
                          "-n", "-p", "--cores", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line.split("Shell command:", 1)[-1].strip() for line in out.stdout.splitlines()
            if "$MATMUL_STUDY_COMPILE_JOB" in line]


def test_each_compile_command_builds_the_cubin_its_path_names(tmp_path):
    commands = planned_compiles(tmp_path, {"sizes": [64], "methods": ["naive", "warptiled"], "dtypes": ["float32"],
                                           "block_sizes": [16], "arch": "sm_90",
                                           "variants": {"warptiled": ["default", "splitk4"]}})
    assert len(commands) == 3, commands  # naive, warptiled's default build and its split-K build
    env = {**os.environ, "MATMUL_STUDY_PYTHON": sys.executable, "MATMUL_STUDY_BUILD_CACHE": str(tmp_path / "cache"),
           "MATMUL_STUDY_COMPILE_JOB": str(REPO / "workflow/scripts/compile_job.py")}
    for command in commands:
        argv = shlex.split(command)[2:]  # after "$MATMUL_STUDY_PYTHON" "$MATMUL_STUDY_COMPILE_JOB"
        output, log = tmp_path / argv[argv.index("--output") + 1], tmp_path / argv[argv.index("--log") + 1]
        log.parent.mkdir(parents=True, exist_ok=True)
        ran = subprocess.run([sys.executable, "-c", FAKE_COMPILE, *argv], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120, env=env)
        assert ran.returncode == 0, ran.stderr + log.read_text()
        assert json.loads(ran.stdout.strip().splitlines()[-1]) == []  # no Snakemake, no pandas
        build = dict(word.split("=", 1) for word in argv if "=" in word and not word.startswith("-"))
        variant = build.get("variant")
        built = json.loads(output.read_bytes())
        # The path's build: results/kernels/<arch>/<method>/<dtype>_b<block>[_<variant>].cubin
        assert output.parts[-3:] == ("sm_90", build["method"], f"float32_b{build['block']}"
                                     + (f"_{variant}" if variant else "") + ".cubin")
        assert built["source"] == kernels.module_source(build["method"], [("float32", int(build["block"]))], variant)
        assert built["options"] == kernels.compile_options(build["method"], variant, "sm_90")
        assert built["arch"] == "sm_90" and built["cache_dir"] is False
        assert "wrote " in log.read_text()


def test_a_compile_command_without_its_build_says_what_is_missing(tmp_path):
    ran = subprocess.run([sys.executable, str(REPO / "workflow/scripts/compile_job.py"), "--arch", "sm_90",
                          "--output", "x.cubin", "--log", "x.log", "method=naive", "dtype=float32"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "missing wildcards: block" in ran.stderr, ran.stderr
