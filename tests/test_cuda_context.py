"""The GPU tests after one that ends the CUDA context are skipped, naming it (cuda_context.py), in a pytest run of
fake GPU tests on the CPU."""

import subprocess
import sys
from pathlib import Path

import pytest

from cuda_context import sticky_error

TESTS = Path(__file__).resolve().parent

FAKE = '''
import pytest

pytestmark = pytest.mark.gpu


def test_a_wrong_result():
    assert 1 == 2


def test_b_faults():
    raise RuntimeError("cuCtxSynchronize failed: {error}")


def test_c_after():
    pass


def test_d_after():
    pass
'''


def run_fake(tmp_path: Path, error: str) -> str:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from cuda_context import pytest_runtest_makereport, pytest_runtest_setup  # noqa: F401\n")
    (tmp_path / "test_fake.py").write_text(FAKE.format(error=error))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: fake\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done.stdout


def test_later_gpu_tests_are_skipped_naming_the_fault(tmp_path):
    out = run_fake(tmp_path, "an illegal instruction was encountered")
    assert "SKIPPED [2]" in out and "2 failed, 2 skipped" in out
    assert ("not run: test_fake.py::test_b_faults ended this process's CUDA context "
            "(an illegal instruction was encountered)") in out


def test_an_ordinary_failure_skips_nothing(tmp_path):
    out = run_fake(tmp_path, "out of memory")
    assert "2 failed, 2 passed" in out
    assert "skipped" not in out


@pytest.mark.parametrize("text,error", [
    ("cuCtxSynchronize failed: an illegal memory access was encountered", "an illegal memory access was encountered"),
    ("CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered", "an illegal instruction was encountered"),
    ("cuMemAlloc failed: out of memory", None),
    ("relative Frobenius error 9.999e-01 > 1e-02", None),
])
def test_sticky_errors_are_told_from_others(text, error):
    assert sticky_error(text) == error
