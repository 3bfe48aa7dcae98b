"""The 8-bit rungs' rule for their own tiles, apart from their twins that compute Cᵀ = Bᵀ·Aᵀ: configs.swapped_problem
asks that rule for Cᵀ's problem where B's transpose costs enough, so the tests of the rule, and the committed tile
sweeps (which ran the rungs' own builds), weigh it without the twins; test_configs.py weighs the twins' rule."""

from __future__ import annotations

from matmul_study.core import configs


def own_builds(rung, dtype: str) -> tuple[str, ...]:
    """`rung`'s builds for `dtype` that a study may run, but the 8-bit rungs' twins (tf32's stay: its rule picks them
    among the rest, configs.swap_twin)."""
    return tuple(name for name in configs.runnable(rung, dtype)
                 if rung.name not in ("wgmma_int8", "wgmma_fp8") or not rung.variant(name).config.swap_ab)


def own_choice(rung, problem) -> configs.Choice:
    """`rung`'s pick for `problem` among own_builds."""
    return rung.choose(problem, own_builds(rung, problem.dtype.name))
