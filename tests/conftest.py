import copy
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent


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
