"""Command line:
    python -m matmul_study model --method tiled --m 512 --k 512 --n 512 --block 16 --dtype float32
    python -m matmul_study compare run1/results.csv run2/results.csv [--markdown comparison.md]
    python -m matmul_study compare results/reference/NVIDIA_H200 results   (a run's folder: its tables/results.csv)
    python -m matmul_study compare results/reference/NVIDIA_H200 results/reference/NVIDIA_H100/study --across-devices
    python -m matmul_study gpus results/tables/results.csv
    python -m matmul_study pick --dtype float16 --m 64 --k 4096 --n 4096 [--method ...] [--device H100]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from matmul_study.core import dtypes, registry


def results_csv(parser: argparse.ArgumentParser, name: str, path: str) -> str:
    """The results table `path` names: a results.csv, or a run's folder holding tables/results.csv (as results/ and
    results/reference/<device>/ do) or results.csv; else a usage error naming the argument and what it takes."""
    if os.path.isdir(path):
        for inside in (os.path.join(path, "tables", "results.csv"), os.path.join(path, "results.csv")):
            if os.path.isfile(inside):
                return inside
        parser.error(f"{name} {path!r}: a folder without tables/results.csv or results.csv; give a results.csv or a "
                     "run's folder (results/, results/reference/<device>/)")
    if not os.path.isfile(path):
        parser.error(f"{name} {path!r}: no such file; give a results.csv or a run's folder holding tables/results.csv")
    return path


def pick(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Print each method's planned builds for the problem (configs.plan under "auto": the heuristic's pick, and the
    pick of another accuracy class that a study runs beside it), a line each: method, build, reason."""
    from matmul_study.analysis.ladder import DATASHEET_TBPS
    from matmul_study.core import configs

    for name in ("m", "k", "n"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    ours = [name for name in registry.compiled_methods() if not registry.get(name).reference_line]
    methods = args.method or [name for name in ours if args.dtype in registry.get(name).dtypes]
    for name in methods:
        if name not in ours:
            parser.error(f"--method {name}: not a compiled kernel of ours; those are {', '.join(ours)}")
        if args.dtype not in registry.get(name).dtypes:
            parser.error(f"--method {name}: it does not run {args.dtype}; it runs "
                         f"{', '.join(registry.get(name).dtypes)}")
    # The card's datasheet bandwidth (the SXM boards'); its SMs the registry Problem's (132) unless given.
    problem = configs.job_problem(dtypes.get(args.dtype), args.block, args.m, args.k, args.n,
                                  sm_count=args.sm_count, hbm_bytes_per_s=DATASHEET_TBPS[args.device] * 1e12)
    for name in methods:
        method = registry.get(name)
        unmet = method.unmet_shape_requirement(args.m)
        if method.block_axis and not 1 <= args.block <= 32:
            unmet = "needs --block (1 to 32)"
        if unmet:
            print(f"{name}\t-\tnot run: {unmet}")
            continue
        for choice in configs.plan(method, problem, configs.AUTO):
            print(f"{name}\t{choice.variant}\t{choice.reason}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matmul_study")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("model", help="print the analytic work and traffic model of one kernel and shape as JSON")
    p.add_argument("--method", required=True, choices=list(registry.METHODS))
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--block", type=int, default=0, help="block size for methods with a block axis")
    p.add_argument("--dtype", required=True, choices=list(dtypes.NAMES))
    p.add_argument("--variant", default="default", help="a registered build of the method (default: its default)")
    c = sub.add_parser("compare", help="compare the rates of two runs' results.csv (reproducibility): JSON on stdout")
    c.add_argument("first", help="a results.csv, or a run's folder holding tables/results.csv")
    c.add_argument("second", help="the same, of the other run")
    c.add_argument("--tolerance", type=float, default=0.03, help="relative change counted as reproduced")
    c.add_argument("--markdown", metavar="FILE", help="also write the comparison as Markdown to FILE")
    c.add_argument("--across-devices", action="store_true",
                   help="join jobs on the job alone, so that runs on two card models compare (their ratios to the "
                        "vendor, vs_cublas, are what should agree)")
    g = sub.add_parser("gpus", help="which GPU each job of a results.csv held, and whether two jobs shared one "
                                    "(exit status 1 if so)")
    g.add_argument("results")
    k = sub.add_parser("pick", help="which build of each kernel of ours a study runs for one shape and dtype on a "
                                    "card, and why (the heuristics of matmul_study/core/configs.py; nothing runs)")
    k.add_argument("--dtype", required=True, choices=list(dtypes.NAMES))
    for name in ("m", "k", "n"):
        k.add_argument(f"--{name}", type=int, required=True)
    k.add_argument("--block", type=int, default=0, help="block size, for methods with a block axis")
    k.add_argument("--method", nargs="+", help="kernels of ours (default: every compiled one that runs the dtype)")
    k.add_argument("--device", choices=["H200", "H100"], default="H200",
                   help="plan for this card's SMs and memory bandwidth (default: H200)")
    k.add_argument("--sm-count", type=int, help="the card's SMs, in place of --device's")
    args = parser.parse_args(argv)

    if args.command == "pick":
        return pick(parser, args)

    if args.command == "gpus":
        import pandas as pd

        from matmul_study.measure.gpu_slots import gpu_usage, shared_gpus

        table = pd.read_csv(results_csv(parser, "results", args.results))
        print(gpu_usage(table).to_string(index=False))
        shared = shared_gpus(table)
        print(f"jobs that shared a GPU: {len(shared)}")
        if len(shared):
            print(shared.to_string(index=False))
        return 1 if len(shared) else 0

    if args.command == "compare":
        import pandas as pd

        from matmul_study.analysis.reproduce import compare, markdown

        first, second = results_csv(parser, "first", args.first), results_csv(parser, "second", args.second)
        try:
            result = compare(pd.read_csv(first), pd.read_csv(second), args.tolerance, args.across_devices)
        except ValueError as error:
            parser.error(str(error))
        if result.get("note"):
            print(f"note: {result['note']}", file=sys.stderr)
        json.dump(result, sys.stdout, indent=1)
        print()
        if args.markdown:
            with open(args.markdown, "w") as out:
                out.write(markdown(result, first, second))
        return 0

    from matmul_study.analysis.model import model

    method = registry.get(args.method)
    for name in ("m", "k", "n"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.dtype not in method.dtypes:
        parser.error(f"--dtype {args.dtype}: {args.method} supports {', '.join(method.dtypes)}")
    if method.block_axis and not 1 <= args.block <= 32:
        parser.error(f"--block {args.block}: {args.method} needs a block size from 1 to 32")
    try:
        method.variant(args.variant)
    except KeyError as exc:
        parser.error(f"--variant {args.variant}: {exc.args[0]}")
    json.dump(model(args.method, args.m, args.k, args.n, args.block, args.dtype, args.variant), sys.stdout, indent=1)
    print()
    return 0


# What a shell reports for a command that SIGPIPE ended (128 + 13), as for `cat big | head`. Not 0: the output was
# cut short, and `gpus` uses 0 and 1 for its answer, which a reader that stopped early never saw.
CLOSED_STDOUT = 141


def run(argv: list[str] | None = None) -> int:
    """main, ending quietly when the reader of stdout goes away (`... | head`)."""
    try:
        status = main(argv)
        # Flush here, not at interpreter exit, so that a pipe closed during the last buffered write lands in this
        # handler rather than in an "Exception ignored" message at shutdown.
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python ignores SIGPIPE, so the write raises instead of the process dying quietly. Point stdout at devnull
        # so the flush at interpreter exit has somewhere to go and does not raise a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return CLOSED_STDOUT


if __name__ == "__main__":
    sys.exit(run())
