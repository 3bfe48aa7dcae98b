"""The facts of a SIMT kernel's tile model (configs.simt_tile_model, configs.TileRates), fitted to committed sweeps.

A sweep is bench/compare.py's tables: every build of the method at shapes past its token rows, each verified and
timed against the vendor in one process. For each candidate set of facts the model picks a build at every shape
where it applies (the default tiles fill less than half a wave, or hold a few columns); its regret there is 1 - the
pick's ratio / the best ratio measured. The fit is the candidate of least total regret (then least worst regret); a shape whose pick the
sweep did not run counts as a miss, so a fit cannot hide behind builds nobody measured.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from matmul_study.core import configs, dtypes, registry
from matmul_study.core.records import BENCH_AFTER_CHECK, BENCH_BEFORE_CHECK, BENCH_VERIFIED


def table_ratios(paths) -> dict[tuple[str, str, str], dict[str, float]]:
    """(method, dtype, MxNxK) -> {build: its mean ratio to the vendor} of the verified cases in bench/compare.py's
    tables (records.BENCH_*: a row per case; its one-line summaries are left out)."""
    check, ratio = len(BENCH_BEFORE_CHECK), BENCH_AFTER_CHECK.index("ratio") - len(BENCH_AFTER_CHECK)
    out: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            words = line.split()
            if len(words) > check + len(BENCH_AFTER_CHECK) and words[check] == BENCH_VERIFIED:
                method, build, dtype, shape = words[:4]
                out.setdefault((method, dtype, shape), {}).setdefault(build, []).append(float(words[ratio]))
    return {key: {b: sum(r) / len(r) for b, r in builds.items()} for key, builds in out.items()}


@dataclass(frozen=True)
class Fit:
    rates: configs.TileRates
    total: float  # the regrets summed over the shapes
    worst: float  # the largest regret
    picks: dict[str, tuple[str, float]]  # shape -> (the pick, its regret; 1.0 where the sweep did not run it)


_REST = configs.Choice("", "")  # the model's `rest`: where it does not apply


def _fit_of(method: str, dtype: str, rates: configs.TileRates, choose, sweep: dict[str, dict[str, float]],
            sm_count: int) -> Fit:
    """`choose`'s pick and regret at every shape of the sweep where it picks (not _REST), as a Fit of `rates`."""
    names = configs.runnable(registry.get(method), dtype)
    picks = {}
    for shape, builds in sweep.items():
        rows, cols, depth = map(int, shape.split("x"))
        choice = choose(configs.job_problem(dtypes.get(dtype), 0, rows, depth, cols, sm_count=sm_count), names)
        if choice is _REST:
            continue
        regret = 1 - builds[choice.variant] / max(builds.values()) if choice.variant in builds else 1.0
        picks[shape] = (choice.variant, regret)
    regrets = [r for _, r in picks.values()]
    return Fit(rates, sum(regrets), max(regrets, default=0.0), picks)


def model_builds(method: str) -> dict[str, object]:
    """The builds `method`'s tile models weigh, by name: registry.TILE_BUILDS', else all its variants."""
    return registry.TILE_BUILDS.get(method) or {v.name: v for v in registry.get(method).variants}


def evaluate(method: str, dtype: str, rates: configs.TileRates, sweep: dict[str, dict[str, float]],
             sm_count: int = 132) -> Fit:
    """The model with `rates` over a sweep (shape -> {build: ratio}) of `method` in `dtype`."""
    m = registry.get(method)
    model = configs.simt_tile_model(m.tile, m.launch, model_builds(method), {dtype: rates},
                                    lambda problem, variants: _REST, registers=registry.TILE_REGISTERS.get(method))
    return _fit_of(method, dtype, rates, model, sweep, sm_count)


def evaluate_rule(method: str, dtype: str, model: str, rates: configs.TileRates, sweep: dict[str, dict[str, float]],
                  sm_count: int = 132) -> Fit:
    """The method's whole heuristic (registry.TILE_RULES) with one of its tile models' facts (`model`, a key of
    registry.TILE_MODELS) set to `rates` in `dtype`, over a sweep: its pick and regret at every shape. For the models
    that weigh builds beside another rule's pick (kernel 7's small tiles'), whose reach that rule decides."""
    facts = registry.TILE_MODELS[method]
    choose = registry.TILE_RULES[method](**{**facts, model: {**facts[model], dtype: rates}})
    return _fit_of(method, dtype, rates, choose, sweep, sm_count)


def weigh(method: str, dtype: str, rates: configs.TileRates, sweep: dict[str, dict[str, float]],
          model: str = "main") -> Fit:
    """The facts of one of the method's tile models (registry.TILE_MODELS) over a sweep: the main model's at the
    shapes where it applies (evaluate), another's by the whole heuristic's picks (evaluate_rule)."""
    if model == "main":
        return evaluate(method, dtype, rates, sweep)
    return evaluate_rule(method, dtype, model, rates, sweep)


def fit(method: str, dtype: str, sweep: dict[str, dict[str, float]],
        gmacs: dict[int | tuple[int, int], tuple[float, ...]], four_warps: tuple[float, ...],
        eight_warps: tuple[float, ...], block_us: tuple[float, ...], partial_gbps: tuple[float, ...],
        ragged_fill: float = 0.0) -> list[Fit]:
    """Every candidate of the grid (per tile rows, or tile shape, the rates to try; the shares of 4 and 8 resident
    warps; the block's own time; the partials' rate), best first; `ragged_fill` as given, not fitted."""
    rows = list(gmacs)
    fits = [evaluate(method, dtype, configs.TileRates(dict(zip(rows, rates)), {4: a4, 8: a8}, us, gbps, ragged_fill),
                     sweep)
            for rates in itertools.product(*(gmacs[r] for r in rows))
            for a4, a8, us, gbps in itertools.product(four_warps, eight_warps, block_us, partial_gbps)]
    return sorted(fits, key=lambda f: (round(f.total, 6), round(f.worst, 6)))


def descend(method: str, dtype: str, sweep: dict[str, dict[str, float]], start: configs.TileRates,
            gmacs: tuple[float, ...], four_warps: tuple[float, ...], eight_warps: tuple[float, ...],
            block_us: tuple[float, ...], partial_gbps: tuple[float, ...], split_us: tuple[float, ...] = (),
            twelve_warps: tuple[float, ...] = (), model: str = "main") -> Fit:
    """From `start`, one fact at a time (each tile's rate over `gmacs`, each warp share (12 resident warps' where
    `start` has one), the block's time, the partials' rate, and a split's own time over theirs) to the value of least
    total regret, then least worst, until no fact moves: a fit for more tiles than the whole grid of fit() can try.
    `model`: which of the method's tile models the facts are (weigh)."""
    def key(f: Fit) -> tuple[float, float]:
        return round(f.total, 6), round(f.worst, 6)

    def candidates(r: configs.TileRates):
        for tile in r.gmacs:
            yield from (replace(r, gmacs={**r.gmacs, tile: g}) for g in gmacs)
        for warps, shares in ((4, four_warps), (8, eight_warps), (12, twelve_warps)):
            if warps in r.warp_share:
                yield from (replace(r, warp_share={**r.warp_share, warps: a}) for a in shares)
        yield from (replace(r, block_us=us) for us in block_us)
        yield from (replace(r, partial_gbps=gbps) for gbps in partial_gbps)
        yield from (replace(r, split_us=us) for us in split_us)

    best = weigh(method, dtype, start, sweep, model)
    while True:
        step = min((weigh(method, dtype, r, sweep, model) for r in candidates(best.rates)), key=key)
        if key(step) >= key(best):
            return best
        best = step


def renamed_builds(builds: dict[str, float], renamed: dict[str, str]) -> dict[str, float]:
    """A shape's {build: ratio} with the builds measured under another name (`renamed`: that name -> the build's)
    under their own, and a build measured under a name that `renamed` gives another left out (a scratch state that
    was registered under it)."""
    return {renamed.get(b, b): r for b, r in builds.items() if b not in renamed.values() or b in renamed}


def sweep_of(method: str, dtype: str, paths, again=(), over=(), renamed: dict[str, str] | None = None
             ) -> dict[str, dict[str, float]]:
    """A method's sweep in one dtype, from bench/compare.py's tables: shape -> {build: ratio}. A shape that `again`'s
    tables measured (every build, in another run: after new builds were registered) takes their measurements in
    place of the others' whole, so that no shape mixes two runs' builds (cards differ by a few per cent). `over`'s
    tables measured some builds again (those that changed): theirs replace the others' build by build, `renamed`
    (the name it was measured under -> the build's) first, and a build measured under a name that `renamed` gives
    another is left out (a scratch state registered under that name)."""
    def of(tables, names=None):
        return {shape: renamed_builds(builds, names or {})
                for (name, d, shape), builds in table_ratios(tables).items() if name == method and d == dtype}

    sweep = {**of(paths), **of(again)}
    for shape, builds in of(over, renamed).items():
        sweep[shape] = {**sweep.get(shape, {}), **builds}
    return sweep
