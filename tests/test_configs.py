"""The per-problem configuration heuristic: the choice for a shape, with its reason, and its limits."""

import pytest

from matmul_study.core import configs, dtypes, registry
from matmul_study.core.registry import Method, Problem, Variant


def problem(m, n, k, sms=132):
    return Problem(m, n, k, 0, dtypes.get("float16"), sm_count=sms)


CHOOSE = configs.persistent_split_k(128, 256, 64)
SPLITS = ("cluster1", "splitk2", "splitk4", "splitk8")


def test_a_full_wave_keeps_whole_tiles():
    pick = CHOOSE(problem(4096, 4096, 4096), SPLITS)
    assert pick.variant == "default" and "512 output tiles" in pick.reason


def test_few_tiles_and_deep_k_split_k_as_far_as_the_sms_allow():
    # 256x256: 2 tiles on 132 SMs; K = 8192 is 128 k steps: the largest registered split, 8.
    pick = CHOOSE(problem(256, 256, 8192), SPLITS)
    assert pick.variant == "splitk8"
    assert "2 output tiles" in pick.reason and "16 work items" in pick.reason
    # 24 tiles (768x1024): 24 x 8 > 132, 24 x 4 = 96 fits.
    assert CHOOSE(problem(768, 1024, 8192), SPLITS).variant == "splitk4"


def test_too_few_k_steps_are_not_split():
    pick = CHOOSE(problem(256, 256, 256), SPLITS)  # 4 k steps: one slice's worth
    assert pick.variant == "default" and "too few to split" in pick.reason
    assert CHOOSE(problem(256, 256, 512), SPLITS).variant == "splitk2"  # 8 k steps: two slices of 4


def test_only_registered_splits_are_chosen():
    assert CHOOSE(problem(256, 256, 8192), ("cluster1", "splitk2")).variant == "splitk2"
    assert CHOOSE(problem(256, 256, 8192), ("cluster1",)).variant == "default"


def test_a_smaller_gpu_splits_less():
    assert CHOOSE(problem(512, 512, 8192, sms=16), SPLITS).variant == "splitk2"  # 8 tiles x 2 = 16 SMs


def test_choose_checks_the_heuristic_against_the_registry():
    plain = registry.get("tiled")
    assert configs.choose(plain, problem(64, 64, 64)) == configs.Choice("default", "the method has one configuration")
    rogue = Method("rogue", "test", ("float16",), backend=plain.backend, variants=(Variant("splitk2"),),
                   choose=lambda p, names: configs.Choice("splitk16", "made up"))
    with pytest.raises(ValueError, match="splitk16.*splitk2"):
        configs.choose(rogue, problem(256, 256, 8192))
