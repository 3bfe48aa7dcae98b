"""Which configuration of a method runs a problem: the per-problem heuristic, kept explainable.

A method's configurations are its registry variants (tile schedule, cluster, split-K, ...). A heuristic is a
function of the problem alone (shape, dtype, the device's SM count) that names one variant and says why, in a
sentence the report prints beside the result ("why this tile" is always answerable). The pipeline runs the choice
unless the config forces a variant or sweeps them all (`variants:` in config.yaml); a sweep measures every
configuration, and the report's regret table compares the heuristic's pick with the best one measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

DEFAULT = "default"
ONE_CONFIGURATION = "the method has one configuration"


@dataclass(frozen=True)
class Choice:
    variant: str  # "default" or the name of one of the method's variants
    reason: str


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def persistent_split_k(tile_m: int, tile_n: int, tile_k: int, min_k_steps_per_slice: int = 4, min_split: int = 4
                       ) -> Callable[[object, tuple[str, ...]], Choice]:
    """The heuristic of a persistent tile kernel with split-K variants named splitk<S>.

    Its output tiles are the work: fewer tiles than half the SMs leave most of the GPU idle, whatever the
    schedule. Splitting each tile's K range S ways multiplies the work items by S at the cost of an fp32
    reduction of S partial tiles, which pays while every slice keeps enough k steps to fill its pipeline. So the
    largest S (of the registered ones, at least `min_split`) with tiles x S <= SMs and at least
    `min_k_steps_per_slice` k steps a slice; otherwise the default build. On an H200 (bench/compare.py, 2b8205c)
    splitk2 never beat the default build in fp16 or bf16 (512³: 0.33 against 0.43 of cuBLAS): the partial
    tiles' write and read cost what half the k steps save, hence min_split 4."""

    def choose(problem, variants: tuple[str, ...]) -> Choice:
        tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, tile_n)
        k_steps = cdiv(problem.k, tile_k)
        sms = problem.sm_count
        where = f"{tiles} output tile{'s' if tiles != 1 else ''} of {tile_m}x{tile_n} on {sms} SMs"
        if 2 * tiles > sms:
            return Choice(DEFAULT, f"{where}: at least half a wave, so whole tiles")
        splits = sorted(int(v.removeprefix("splitk")) for v in variants
                        if v.startswith("splitk") and v.removeprefix("splitk").isdigit())
        fitting = [s for s in splits
                   if s >= min_split and tiles * s <= sms and k_steps >= min_k_steps_per_slice * s]
        if not fitting:
            return Choice(DEFAULT, f"{where}, but {k_steps} k steps of {tile_k} are too few to split "
                                   f"{min_split} or more ways")
        s = fitting[-1]
        return Choice(f"splitk{s}", f"{where} leave SMs idle: K split {s} ways ({k_steps} k steps of {tile_k}, "
                                    f"about {cdiv(k_steps, s)} a slice) gives {tiles * s} work items")

    return choose


def choose(method, problem) -> Choice:
    """The method's configuration for `problem`: its heuristic's pick among its variants (diagnostic builds left
    out), or the default build where it has none."""
    names = runnable(method)
    if not names:
        return Choice(DEFAULT, ONE_CONFIGURATION)
    if method.choose is None:
        return Choice(DEFAULT, "the method has no heuristic over its variants: its default build")
    picked = method.choose(problem, names)
    if picked.variant != DEFAULT and picked.variant not in names:
        raise ValueError(f"{method.name}'s heuristic chose {picked.variant!r}, which is not one of its variants "
                         f"({', '.join(names)})")
    return picked


# The config's `variants:` (pipeline/config.py checks it): one of these for every method, or a mapping from method
# names to one of these or to a list of variant names; methods the mapping leaves out take AUTO.
AUTO, ALL = "auto", "all"
MODES = (AUTO, DEFAULT, ALL)
FORCED = "forced by config"
SWEPT = "swept"


def setting_for(setting, method_name: str):
    """The config's `variants` value for one method: "auto", "default", "all" or a list of variant names."""
    if isinstance(setting, dict):
        return setting.get(method_name, AUTO)
    return AUTO if setting is None else setting


def runnable(method) -> tuple[str, ...]:
    """The method's variant names a study may run: all but the diagnostic builds (which compute a wrong result on
    purpose; bench/compare.py times them)."""
    return tuple(v.name for v in method.variants if not v.diagnostic)


def plan(method, problem, setting) -> list[Choice]:
    """The configurations of `method` to run on `problem` under the config's `variants` value for it (see
    setting_for), each with the reason the report prints: the heuristic's sentence ("auto"), FORCED ("default" or
    a list of names) or SWEPT ("all": the default build, then every variant). A method without variants runs its
    default build whatever the setting."""
    setting = setting_for(setting, method.name)
    if not method.variants:
        return [Choice(DEFAULT, ONE_CONFIGURATION)]
    if setting == AUTO:
        return [choose(method, problem)]
    if setting == DEFAULT:
        return [Choice(DEFAULT, FORCED)]
    if setting == ALL:
        return [Choice(name, SWEPT) for name in (DEFAULT, *runnable(method))]
    known = (DEFAULT, *runnable(method))
    unknown = [name for name in setting if name not in known]
    if unknown:
        raise ValueError(f"{method.name} has no variant {unknown[0]!r}; its variants: {', '.join(known)}")
    return [Choice(name, FORCED) for name in dict.fromkeys(setting)]


def reason_for(method, problem, setting, variant: str) -> str:
    """Why `variant` of `method` runs `problem` (the result's variant_reason): the reason plan() gives it, computed
    with the device that runs the job. A variant the plan does not give on this device (planned with another SM
    count, or asked for by its result path) says so and what the plan would run."""
    planned = plan(method, problem, setting)
    for choice in planned:
        if choice.variant == variant:
            return choice.reason
    pick = choose(method, problem)
    mode = setting_for(setting, method.name)
    if mode == AUTO:
        return (f"planned with another SM count than this device's {problem.sm_count}; here the heuristic picks "
                f"{pick.variant}: {pick.reason}")
    return f"not in the config's variants for {method.name} ({mode}); asked for by its result path"
