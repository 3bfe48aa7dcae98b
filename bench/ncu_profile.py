#!/usr/bin/env python3
"""Profile one case with Nsight Compute: a warm launch of our kernel, and with --cublas of cuBLAS's beside it, launched
as the pipeline launches them (bench/compare.py's profile mode: ours and cuBLAS alternately, then ours verified),
with the clocks left alone (--clock-control none).

  python bench/ncu_profile.py wgmma_warp_specialized --variant cluster1 --dtype float16 --shape 4096
  python bench/ncu_profile.py wgmma_warp_specialized --shape 4096 --cublas -- --section WarpStateStats -o $OUT/ws

Arguments before "--" are bench/compare.py's and make one case; those after it go to ncu as they are. With
--cublas, the second launch of each is profiled: cuBLAS's kernel is the one whose name holds "nvjet" or "gemm", and
a cuBLAS call that launches two kernels (a split-K reduction) shifts the count: check the names in the report.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import compare as front  # bench/compare.py, beside this file

from matmul_study.launch import kernels

CUBLAS_KERNELS = ("nvjet", "gemm")  # substrings of cuBLAS's GEMM kernel names (nvjet_* on Hopper)
ROUNDS = 3  # launches of each; the second is profiled, warm


def command(argv: list[str]) -> list[str]:
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, ncu_args = [a for a in argv[:cut] if a != "--cublas"], argv[cut + 1:]
    with_cublas = "--cublas" in argv[:cut]
    p = front.parser()
    todo = front.cases(p.parse_args(ours), p)
    if len(todo) != 1:
        p.error(f"profile one case at a time; these arguments make {len(todo)} (one variant, dtype and shape)")
    case = todo[0]
    names = [kernels.symbol(case.method, case.dtype, kernels.template_block(case.method, case.block), case.variant),
             *(CUBLAS_KERNELS if with_cublas else ())]
    per_round = 2 if with_cublas else 1  # matching launches per round: skip the first round, profile the second
    return ["ncu", "--clock-control", "none", "--kernel-name", "regex:" + "|".join(names),
            "--launch-skip", str(per_round), "--launch-count", str(per_round), *ncu_args,
            sys.executable, str(Path(__file__).with_name("compare.py")), *ours, "--profile", str(ROUNDS)]


def main(argv: list[str] | None = None) -> int:
    run = command(sys.argv[1:] if argv is None else argv)
    if shutil.which("ncu") is None:
        print("ncu (Nsight Compute) is not on PATH: it comes with the CUDA toolkit; add its bin/ to PATH",
              file=sys.stderr)
        return 1
    print(" ".join(run), flush=True)
    return subprocess.call(run)


if __name__ == "__main__":
    sys.exit(main())
