#!/usr/bin/env python3
"""Time kernels of ours against cuBLAS on this GPU, each output verified first (matmul_study.measure.compare).

One case, or a sweep over variants and shapes in one process with one table at the end:

  python bench/compare.py wgmma_warp_specialized --variant cluster1 --dtype float16 --shape 4096
  python bench/compare.py wgmma_warp_specialized --variant all --shape 4096 8192 4096x4096x1024
  python bench/compare.py tiled --block 16 --dtype float32 --shape 2048 --json /tmp/tiled.json

A shape is N (a cube) or MxNxK; a variant is one the registry lists for the method ("default": the default
build, "auto": the pipeline's pick for each case on this GPU, "all": every one). A case that fails its check is
reported and not timed; the exit status is 1 if any case failed or raised. ratio and pair are cuBLAS's time over
ours: above 1, ours is faster.
"""
from __future__ import annotations

import argparse
import json
import sys

from matmul_study.core import configs, registry
from matmul_study.measure import compare


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("method", help=f"a kernel of ours: {', '.join(registry.compiled_methods())}")
    p.add_argument("--variant", nargs="+", default=["default"],
                   help="registered variants of the method (default: the default build; auto: the pipeline's pick "
                        "for each case on this GPU; all: every one)")
    p.add_argument("--dtype", nargs="+", help="dtypes (default: the method's first)")
    p.add_argument("--pdl", action="store_true",
                   help="time each case twice: as it launches, and as a programmatic dependent of the previous "
                        "launch (PDL), for kernels that wait for the previous grid themselves")
    p.add_argument("--l2-bytes", nargs="+", type=int, metavar="BYTES",
                   help="time each case once for each of these L2 sizes instead of this GPU's, for kernels that "
                        "choose B's L2 policy at launch (1: B streamed wherever one row of tiles reads it; more "
                        "than B's bytes: copied plainly)")
    p.add_argument("--shape", nargs="+", default=["4096"], help="N or MxNxK (default: 4096)")
    p.add_argument("--block", type=int, default=0, help="block size, for methods with a block axis")
    p.add_argument("--samples", type=int, default=20, help="timed samples of each (default: 20)")
    p.add_argument("--batch", type=int, help="launches per sample (default: as the pipeline sizes them)")
    p.add_argument("--seed", type=int, default=compare.DEFAULTS.seed, help="input seed (default: the pipeline's)")
    p.add_argument("--jobs", type=int, help="compiler processes that build the cases' kernels before any is timed "
                                            "(default: one per CPU)")
    p.add_argument("--json", metavar="PATH", help="also write every case's samples and checks here")
    p.add_argument("--profile", type=int, metavar="ROUNDS", help=argparse.SUPPRESS)  # bench/ncu_profile.py's mode
    return p


def cases(args: argparse.Namespace, p: argparse.ArgumentParser, device: dict | None = None) -> list[compare.Case]:
    """The cross product of the arguments, every value checked; a bad one ends with its message (exit 2). "auto"
    plans for the `device` facts (Bench.facts; None: the registry's defaults)."""
    try:
        variants = compare.variants_of(args.method, args.variant)
        dtypes = args.dtype or registry.get(args.method).dtypes[:1]
        return [compare.make_case(args.method, v, d, s, args.block, dependent, device, l2) for v in variants
                for d in dtypes for s in args.shape for dependent in ((False, True) if args.pdl else (False,))
                for l2 in (args.l2_bytes or (None,))]
    except (KeyError, ValueError) as exc:
        p.error(exc.args[0])


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        p.error(f"--jobs {args.jobs}: the compiler processes must be at least 1")
    todo = cases(args, p)  # every value checked before the GPU is touched
    try:
        bench = compare.Bench(args.seed)
    except compare.GpuUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    if configs.AUTO in args.variant:
        todo = cases(args, p, bench.facts())  # the picks for this GPU, as the pipeline plans for it
    bench.build(todo, args.jobs)  # a build that failed fails again, with its case, when that case is timed
    results = []
    for case in todo:
        try:
            result = (bench.profile(case, args.profile) if args.profile
                      else bench.compare(case, args.samples, args.batch))
        except Exception as exc:  # noqa: BLE001  (reported in the table; after a sticky CUDA error, all later fail)
            result = compare.Result(case, error=f"{type(exc).__name__}: {exc}")
        results.append(result)
        ratio = f", ratio {result.ratio:.3f}" if result.ratio else ""
        print(f"{case.method} {case.build} {case.dtype} {case.shape}: {result.check_text()}{ratio}",
              flush=True)
    print("\n" + compare.table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.as_dict() for r in results], f, indent=1)
    return 0 if all(r.error == "" and (r.verified or r.diagnostic) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
