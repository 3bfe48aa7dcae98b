#!/usr/bin/env python3
"""Profile one case with Nsight Compute: a warm launch of our kernel, and with --cublas of cuBLAS's beside it, launched
as the pipeline launches them (bench/compare.py's profile mode: ours and cuBLAS alternately, then ours verified),
with the clocks left alone (--clock-control none).

  python bench/ncu_profile.py wgmma_warp_specialized --variant cluster1 --dtype float16 --shape 4096
  python bench/ncu_profile.py wgmma_warp_specialized --shape 4096 --cublas -- --section WarpStateStats -o $OUT/ws

  python bench/ncu_profile.py wgmma_fp8_block --shape 8192 --source $OUT/block.csv.gz

Arguments before "--" are bench/compare.py's and make one case; those after it go to ncu as they are. With
--cublas, the second launch of each is profiled: cuBLAS's kernel is the one whose name holds "nvjet" or "gemm", and
a cuBLAS call that launches two kernels (a split-K reduction) shifts the count: check the names in the report.

--source PATH samples where the warps wait, instruction by instruction: ncu's warp-state sampling (its
WarpStateStats and SourceCounters sections) into a report beside PATH, then that report's source page, the SASS of
each profiled kernel with its samples and their stall reasons, as CSV at PATH (gzipped where it ends in .gz); the
instructions with the most samples are printed, each with its share of the kernel's samples and its leading reason.
"""
from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

import compare as front  # bench/compare.py, beside this file

from matmul_study.core import configs
from matmul_study.launch import kernels
from matmul_study.measure import gpu_device

CUBLAS_KERNELS = ("nvjet", "gemm")  # substrings of cuBLAS's GEMM kernel names (nvjet_* on Hopper)
ROUNDS = 3  # launches of each; the second is profiled, warm
SOURCE_SECTIONS = ("--section", "WarpStateStats", "--section", "SourceCounters", "--import-source", "no")
TOP_INSTRUCTIONS = 12  # printed from a --source page


def source_option(argv: list[str]) -> tuple[list[str], Path | None]:
    """`argv` without --source PATH (before "--"), and PATH."""
    cut = argv.index("--") if "--" in argv else len(argv)
    if "--source" not in argv[:cut]:
        return argv, None
    at = argv.index("--source")
    if at + 1 >= cut:
        raise SystemExit("--source needs a path for the CSV of the source page, e.g. --source block.csv.gz")
    return argv[:at] + argv[at + 2:], Path(argv[at + 1])


def report_stem(source: Path) -> Path:
    """What ncu -o is given for a --source PATH: PATH without .csv(.gz); ncu adds .ncu-rep."""
    return source.with_name(source.name.removesuffix(".gz").removesuffix(".csv"))


def report_path(source: Path) -> Path:
    """The ncu report that a --source PATH is read from: its report_stem with .ncu-rep, as ncu -o writes it."""
    stem = report_stem(source)
    return stem.with_name(stem.name + ".ncu-rep")


def command(argv: list[str]) -> tuple[list[str], Path | None]:
    """The ncu command line that profiles the case `argv` makes, and its --source PATH (None without one)."""
    argv, source = source_option(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, ncu_args = [a for a in argv[:cut] if a != "--cublas"], argv[cut + 1:]
    if source is not None:
        ncu_args = [*SOURCE_SECTIONS, "-o", str(report_stem(source)), "-f", *ncu_args]
    with_cublas = "--cublas" in argv[:cut]
    p = front.parser()
    args = p.parse_args(ours)
    # "auto": the pick for GPU 0, as compare.py in the profiled process plans it (none usable: the defaults)
    todo = front.cases(args, p, gpu_device.planning_facts() if configs.AUTO in args.variant else None)
    if len(todo) != 1:
        p.error(f"profile one case at a time; these arguments make {len(todo)} (one variant, dtype and shape)")
    case = todo[0]
    names = [kernels.symbol(case.method, case.dtype, kernels.template_block(case.method, case.block), case.variant),
             *(CUBLAS_KERNELS if with_cublas else ())]
    per_round = 2 if with_cublas else 1  # matching launches per round: skip the first round, profile the second
    run = ["ncu", "--clock-control", "none", "--kernel-name", "regex:" + "|".join(names),
           "--launch-skip", str(per_round), "--launch-count", str(per_round), *ncu_args,
           sys.executable, str(Path(__file__).with_name("compare.py")), *ours, "--profile", str(ROUNDS)]
    return run, source


def source_pages(text: str) -> dict[str, pd.DataFrame]:
    """ncu's source page as CSV (`ncu -i REPORT --page source --csv --print-source sass`): per kernel, a line
    "Kernel Name",<name>, then a table of its SASS instructions."""
    lines = text.splitlines(keepends=True)
    heads = [at for at, line in enumerate(lines) if line.startswith('"Kernel Name"')]
    pages = {}
    for at, end in zip(heads, [*heads[1:], len(lines)]):  # a kernel's table runs to the next header or the end
        name = lines[at].split(",", 1)[1].strip().strip(",").strip('"')
        pages[name] = pd.read_csv(io.StringIO("".join(lines[at + 1:end])))
    return pages


def waits(page: pd.DataFrame, top: int = TOP_INSTRUCTIONS) -> pd.DataFrame:
    """The instructions of one kernel's source page with the most warp-state samples: their share of the kernel's
    samples, the stall reason with most of theirs (ncu's stall_* columns) and the instruction."""
    samples = pd.to_numeric(page["Warp Stall Sampling (All Samples)"], errors="coerce").fillna(0)
    reasons = page[[c for c in page.columns if c.startswith("stall_") and not c.endswith("(Not Issued)")]]
    reasons = reasons.apply(pd.to_numeric, errors="coerce").fillna(0)
    order = samples.sort_values(ascending=False, kind="stable").index[:top]
    return pd.DataFrame({"share": samples[order] / max(samples.sum(), 1),
                         "reason": reasons.loc[order].idxmax(axis=1).str.removeprefix("stall_"),
                         "instruction": page.loc[order, "Source"].str.strip()}).reset_index(drop=True)


def write_source(report: Path, source: Path) -> str:
    """The report's source page as CSV at `source` (gzipped where it ends in .gz); returns the text."""
    text = subprocess.run(["ncu", "-i", str(report), "--page", "source", "--csv", "--print-source", "sass"],
                          check=True, capture_output=True, text=True).stdout
    if source.suffix == ".gz":
        with gzip.open(source, "wt") as f:
            f.write(text)
    else:
        source.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    run, source = command(argv)
    if shutil.which("ncu") is None:
        print("ncu (Nsight Compute) is not on PATH: it comes with the CUDA toolkit; add its bin/ to PATH",
              file=sys.stderr)
        return 1
    print(" ".join(run), flush=True)
    status = subprocess.call(run)
    if status != 0 or source is None:
        return status
    for name, page in source_pages(write_source(report_path(source), source)).items():
        print(f"\n{name}: the instructions where its warps were sampled most ({source})")
        for row in waits(page).itertuples():
            print(f"  {row.share:6.1%}  {row.reason:16s} {row.instruction}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
