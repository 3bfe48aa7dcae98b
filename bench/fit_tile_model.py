#!/usr/bin/env python3
"""Fit a SIMT kernel's tile model (configs.simt_tile_model) to committed sweeps of its builds, and check it on others.

  python bench/fit_tile_model.py warptiled float32 \\
      --fit results/reference/NVIDIA_H200/small-problems/simt-tiles-fit-float32.txt \\
      --check results/reference/NVIDIA_H200/small-problems/simt-tiles-check-float32.txt

Prints the best facts of the grid (rates per tile rows or tile shape, shares of 4 and 8 resident warps, a block's
own time, the partials' rate; where the default tiles' waves are too ragged, the registry's), the pick and its regret
at each fitted shape, and the same at each checked shape. --descend moves the registry's facts one at a time instead,
for a method with more tiles than the whole grid can try.

--model names another of the method's tile models (registry.TILE_MODELS: kernel 7's small tiles' `small` and
`beside`), descended from the registry's facts and weighed by the whole heuristic's pick at every shape:

  python bench/fit_tile_model.py warptiled float32 --model small --descend \
      --fit simt-small-tiles-four-blocks-{1,2}-float32.txt --over simt-small-tiles-pass-float32.txt \
      --as m64_n128_free=m64_n128 m64_n128_splitk2_free=m64_n128_splitk2 \
      --hold-out simt-small-tiles-check-float32.txt simt-small-tiles-fresh-float32.txt

(tables in results/reference/NVIDIA_H200/small-problems/; --over: builds measured again, which replace the --fit
tables' build by build; --as: a build measured under another name; --hold-out: the shapes of these tables are checked
on the sweep, not fitted).
"""
from __future__ import annotations

import argparse

from matmul_study.analysis import tile_fit
from matmul_study.core import registry


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("method", help="a method with a tile model, e.g. warptiled")
    p.add_argument("dtype")
    p.add_argument("--fit", nargs="+", required=True, help="bench/compare.py tables to fit to")
    p.add_argument("--again", nargs="*", default=[],
                   help="tables that measured some --fit shapes again: theirs replace the --fit tables' measurements")
    p.add_argument("--over", nargs="*", default=[],
                   help="tables that measured some builds again: theirs replace the --fit tables' build by build")
    p.add_argument("--as", dest="renamed", nargs="*", default=[], metavar="MEASURED=BUILD",
                   help="a build the --over tables measured under another name (and BUILD's own rows there are a "
                        "scratch state, left out)")
    p.add_argument("--check", nargs="*", default=[], help="tables to check the fit on")
    p.add_argument("--hold-out", nargs="*", default=[],
                   help="tables whose shapes are checked on the assembled sweep instead of fitted")
    p.add_argument("--model", default="main",
                   help="which of the method's tile models to fit (registry.TILE_MODELS; default: main)")
    p.add_argument("--rates", nargs="+", type=float, default=[20, 30, 40, 50, 60, 70, 80, 100, 120, 140],
                   help="multiply-adds a nanosecond an SM to try for each tile's rows")
    p.add_argument("--four-warps", nargs="+", type=float, default=[0.4, 0.5, 0.6, 0.7])
    p.add_argument("--eight-warps", nargs="+", type=float, default=[0.7, 0.8, 0.9, 1.0])
    p.add_argument("--block-us", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    p.add_argument("--partial-gbps", nargs="+", type=float, default=[50.0, 100.0, 200.0])
    p.add_argument("--twelve-warps", nargs="+", type=float, default=[0.8, 0.9, 1.0],
                   help="shares of 12 resident warps, where the facts have one (with --descend)")
    p.add_argument("--split-us", nargs="+", type=float, default=[0.0, 1.0, 2.0, 3.0],
                   help="a split's own time, microseconds (with --descend)")
    p.add_argument("--descend", action="store_true",
                   help="start from the registry's facts and move one at a time over these values (tile_fit.descend) "
                        "instead of trying the whole grid: for a method with more tiles than the grid can take")
    return p


def show(title: str, result: tile_fit.Fit) -> None:
    print(f"{title}: total regret {result.total:.3f}, worst {result.worst:.3f}")
    for shape, (pick, regret) in sorted(result.picks.items(), key=lambda kv: tuple(map(int, kv[0].split("x")))):
        print(f"  {shape:>16} {pick:>14} {'not measured' if regret == 1.0 else f'regret {regret:.3f}'}")


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.method not in registry.TILE_MODELS:
        p.error(f"{args.method}: no tile model; these have one: {', '.join(registry.TILE_MODELS)}")
    models = registry.TILE_MODELS[args.method]
    if args.model not in models or args.dtype not in models[args.model]:
        have = "; ".join(f"{name} ({', '.join(facts)})" for name, facts in models.items())
        p.error(f"--model {args.model} in {args.dtype}: {args.method} has the tile models {have}")
    if args.model != "main" and not args.descend:
        p.error(f"--model {args.model}: only --descend fits it (the grid search fits the main model)")
    pairs = [name.split("=", 1) for name in args.renamed]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        p.error(f"--as {' '.join(args.renamed)}: each is MEASURED=BUILD")
    sweep = tile_fit.sweep_of(args.method, args.dtype, args.fit, args.again, args.over, dict(pairs))
    held = {shape for (_, _, shape) in tile_fit.table_ratios(args.hold_out)}
    held_out = {shape: builds for shape, builds in sweep.items() if shape in held}
    sweep = {shape: builds for shape, builds in sweep.items() if shape not in held}
    grids = tuple(args.four_warps), tuple(args.eight_warps), tuple(args.block_us), tuple(args.partial_gbps)
    start = models[args.model][args.dtype]

    def weigh(rates, shapes) -> tile_fit.Fit:
        return tile_fit.weigh(args.method, args.dtype, rates, shapes, args.model)

    if args.descend:
        show("the registry's facts", weigh(start, sweep))
        best = tile_fit.descend(args.method, args.dtype, sweep, start, tuple(args.rates), *grids, tuple(args.split_us),
                                tuple(args.twelve_warps), model=args.model)
        print(f"descended to: {best.rates}")
    else:
        m = registry.get(args.method)
        # A rate per tile rows (the widest tile of those rows); a narrower tile of the same rows has a rate of its
        # own, keyed (rows, columns). The tiles of the dtype's builds whose rows the registry's facts rate: the model
        # weighs no other (kernel 7's 8-row tiles are the token-row rule's, its fp32 16 x 256 ones the decode rule's:
        # registry.TILE_BUILDS).
        rated = {key if isinstance(key, int) else key[0] for key in start.gmacs}
        shapes = {(v.tile or m.tile)(0, args.dtype)[:2] for v in tile_fit.model_builds(args.method).values()
                  if not v.dtypes or args.dtype in v.dtypes}
        shapes = {(r, c) for r, c in shapes | {m.tile(0, args.dtype)[:2]} if r in rated}
        widest = {r: max(c for rr, c in shapes if rr == r) for r, _ in shapes}
        keys = [*sorted(widest), *sorted((r, c) for r, c in shapes if c < widest[r])]
        fits = tile_fit.fit(args.method, args.dtype, sweep, {key: tuple(args.rates) for key in keys}, *grids,
                            ragged_fill=start.ragged_fill)
        best = fits[0]
        print(f"best of {len(fits)}: {best.rates}")
    show("fitted", best)
    if args.check:
        show("checked", weigh(best.rates, tile_fit.sweep_of(args.method, args.dtype, args.check)))
    if held_out:
        show("held out", weigh(best.rates, held_out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
