"""The compile step's command (compile_kernel, compile_kernel_variant): one kernel build to its cubin, as a plain
process. A `script:` job first loads Snakemake's own modules to read its job, about 0.6 s before its first line;
the default study builds some fifty kernels, one after another under --cores 1, so its compiles would pay that
half a minute. This command reads its build from its command line and imports the registry and the compiler alone.
"""

from __future__ import annotations

import argparse

from matmul_study.core.records import wildcard_words
from matmul_study.launch.kernels import compile_cubin
from matmul_study.measure.gpu_device import device_arch
from matmul_study.pipeline.stops import logged

BUILD_KEYS = ("method", "dtype", "block")


def main(argv: list[str] | None = None) -> None:
    """The compile step's command: the build's wildcards as KEY=VALUE (method, dtype, block, and variant for a
    registry variant), its target arch ("auto": GPU 0's), the cubin it writes and its log."""
    parser = argparse.ArgumentParser(prog="compile_job.py", description=main.__doc__)
    parser.add_argument("--arch", required=True, help="nvcc target (sm_XY), or auto")
    parser.add_argument("--output", required=True, help="the cubin")
    parser.add_argument("--log", required=True)
    parser.add_argument("wildcards", nargs="+", metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        build = wildcard_words(args.wildcards, BUILD_KEYS)
    except ValueError as exc:
        parser.error(str(exc))
    with logged(args.log):
        arch = device_arch() if args.arch == "auto" else args.arch
        compile_cubin(build["method"], build["dtype"], int(build["block"]), arch, args.output,
                      variant=build.get("variant"))
