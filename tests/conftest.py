import copy
import os
import shutil
from pathlib import Path

import pytest
import yaml
from cuda_context import pytest_runtest_makereport, pytest_runtest_setup  # noqa: F401  (hooks)

REPO = Path(__file__).resolve().parent.parent
# CI sets MATMUL_STUDY_REQUIRE_CHROMIUM=1 where it installed Chromium: there a missing browser fails the layout
# tests instead of skipping them (as MATMUL_STUDY_REQUIRE_SLURM does for the Slurm test).
CHROMIUM_REQUIRED = os.environ.get("MATMUL_STUDY_REQUIRE_CHROMIUM") == "1"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


SHARD_VARIABLE = "MATMUL_STUDY_TEST_SHARD"


def shard_range(count: int, spec: str) -> range:
    """The tests that shard `spec` ("i/n": the i-th of n, from 1) keeps of `count` collected ones: the i-th of n
    contiguous parts, so that one build's tests stay in one process, which compiles it once."""
    try:
        i, n = (int(part) for part in spec.split("/"))
    except ValueError:
        i = n = 0
    if not 1 <= i <= n:
        raise pytest.UsageError(f"{SHARD_VARIABLE}={spec!r}: expected i/n with 1 <= i <= n, e.g. 1/4")
    return range((i - 1) * count // n, i * count // n)


def pytest_collection_modifyitems(config, items):
    """With MATMUL_STUDY_TEST_SHARD=i/n, keep the i-th of n contiguous parts of the collected tests and deselect the
    rest: n processes share one run (the GPU suite on a machine with several GPUs, each process on one, with a build
    cache of its own or a shared one)."""
    spec = os.environ.get(SHARD_VARIABLE)
    if not spec:
        return
    kept = shard_range(len(items), spec)
    config.hook.pytest_deselected(items=[item for j, item in enumerate(items) if j not in kept])
    items[:] = [items[j] for j in kept]


@pytest.fixture(scope="package")
def chromium() -> str:
    """The path of a headless-capable Chromium (CHROMIUM, else the first of CHROMIUM_NAMES on the PATH), for the
    tests that render the report in a browser; skipped where there is none, failed under
    MATMUL_STUDY_REQUIRE_CHROMIUM=1."""
    names = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else list(CHROMIUM_NAMES)
    found = next((path for path in map(shutil.which, names) if path), None)
    if found is None:
        reason = (f"no Chromium here ({', '.join(names)} not found): install it with apt-get install -y chromium, "
                  "or set CHROMIUM to its path")
        if CHROMIUM_REQUIRED:
            pytest.fail(f"MATMUL_STUDY_REQUIRE_CHROMIUM=1, but {reason}")
        pytest.skip(reason)
    return found


@pytest.fixture
def default_config():
    """config.yaml, validated and with schema defaults filled in."""
    from matmul_study.pipeline.config import validate

    return validate(yaml.safe_load((REPO / "config.yaml").read_text()))


@pytest.fixture
def make_config():
    """A validated config from overrides of a minimal CPU-only study."""
    from matmul_study.pipeline.config import validate

    def make(**overrides):
        base = {"sizes": [32], "methods": ["numpy"], "dtypes": ["float32", "float64"]}
        base.update(copy.deepcopy(overrides))
        return validate(base)

    return make


@pytest.fixture
def variant_method():
    """A throwaway GPU method with three registered variants (one a diagnostic build) and a heuristic that splits K
    while its 64x64 tiles fill less than half the SMs: registered for the test, removed after it."""
    from matmul_study.core import configs, geometry, registry, specs
    from matmul_study.core.backends import PYCUDA

    def choose(problem, names):
        tiles = specs.cdiv(problem.m, 64) * specs.cdiv(problem.n, 64)
        if 2 * tiles > problem.sm_count:
            return configs.Choice("default", f"{tiles} tiles on {problem.sm_count} SMs: whole tiles")
        return configs.Choice("deep_k", f"{tiles} tiles on {problem.sm_count} SMs: K split")

    method = specs.Method(
        "fake_tiles", "a test's kernel with configurations", ("float32", "float16"), backend=PYCUDA,
        source="01_naive.cu", template="naive_matmul<{T}, {Acc}>", launch=geometry.square_thread_blocks,
        variants=(specs.Variant("wide", ("FAKE_WIDE=1",)), specs.Variant("deep_k", ("FAKE_DEEP_K=1",)),
                  specs.Variant("probe", ("FAKE_PROBE=1",), diagnostic=True)),
        choose=choose)
    registry.register(method)
    yield method
    registry.METHODS.pop(method.name, None)
