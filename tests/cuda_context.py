"""A GPU test that ends its process's CUDA context (an illegal instruction or address, a trap) fails; every GPU test
after it in that process would fail too, for that reason alone, and bury the one that did it. These hooks (imported
by conftest.py) remember the first such failure and skip the later GPU tests of the process, naming it."""

from __future__ import annotations

import pytest

# The driver's messages for the errors that leave a context unusable (CUDA_ERROR_ILLEGAL_ADDRESS and the rest),
# as PyCUDA and CuPy put them in their exceptions.
STICKY_CUDA_ERRORS = (
    "an illegal memory access was encountered",
    "an illegal instruction was encountered",
    "misaligned address",
    "invalid program counter",
    "unspecified launch failure",
    "hardware stack error",
    "device-side assert triggered",
    "the launch timed out and was terminated",
    "operation not supported on global/shared address space",
)
LOST = pytest.StashKey[tuple]()


def sticky_error(text: str) -> str | None:
    """The sticky CUDA error that `text` (an exception's message) reports, or None."""
    return next((error for error in STICKY_CUDA_ERRORS if error in text), None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.excinfo is not None and item.get_closest_marker("gpu") and LOST not in item.config.stash:
        error = sticky_error(str(call.excinfo.value))
        if error:
            item.config.stash[LOST] = (item.nodeid, error)
    return report


def pytest_runtest_setup(item):
    lost = item.config.stash.get(LOST, None)
    if lost is not None and item.get_closest_marker("gpu"):
        pytest.skip(f"not run: {lost[0]} ended this process's CUDA context ({lost[1]}), so every later GPU test in "
                    "the process would fail for that alone; run them in a new process")
