"""A kernel of ours against cuBLAS in one process: the protocol behind bench/compare.py and bench/ncu_profile.py.

A case is (method, variant, dtype, shape); like a pipeline job it resolves its method, variant and dtype records
once and hands them on. Its kernel is built from the registry (the variant's -D definitions,
kernels.compile_options) and launched through launch.launchers (the variant's launch geometry), so the bench times
exactly what the pipeline would run. Both outputs are checked first: C poisoned, one launch, compared with the
fp64 reference of the same inputs at the dtype's tolerance. Then the two are timed in the batch
protocol: a sample is `batch` back-to-back launches queued behind the stream hold (timing.StreamHold), so the host's
time to queue them is not timed, and ours and cuBLAS alternate sample by sample, so that a drifting clock falls on
both alike. ratio = cuBLAS's median time / ours (above 1: ours is faster); pair = the median of the ratios of each
sample of ours and the cuBLAS sample right after it. A diagnostic variant (a stage left out on purpose) is timed
without passing its check.

PyCUDA, CuPy (cuBLAS and the fp64 reference) and, for the Hopper rungs, cuda-bindings are imported when a Bench
is made; the case parsing and the table need none of them.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import re
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from matmul_study.core import configs, dtypes, registry, specs
from matmul_study.launch import kernels, launchers
from matmul_study.core.backends import CUBLAS, module_available
from matmul_study.core.records import BENCH_AFTER_CHECK, BENCH_BEFORE_CHECK, BENCH_VERIFIED, flops
from matmul_study.measure import gpu_job, inputs
from matmul_study.measure.gpu_device import GpuUnavailable, device_arch, device_facts, require_pycuda
from matmul_study.measure.stats import Measurement, Policy
from matmul_study.measure.timing import StreamHold, launches_per_sample
from matmul_study.measure.verify import Verification

DEFAULTS = Measurement(Policy())  # the pipeline's default seed, input range and launches per sample


@dataclass(frozen=True)
class Case(registry.JobRecords):
    """One comparison. Its method, variant and dtype records are resolved here, once (an unknown name raises
    KeyError naming the known ones), and handed on to the build, the launchers and the checks."""
    method: str
    variant: str | None  # None: the method's default build
    dtype: str
    m: int
    n: int
    k: int
    block: int = 0
    # Launched as a programmatic dependent of the previous launch (PDL; launchers.as_dependent), for the launch floor
    # with and without it.
    dependent: bool = False
    # The L2 its launch plans for, in bytes, where not the GPU's (Problem.l2_bytes): for a kernel that chooses B's L2
    # policy at launch (specs.StreamB), that choice as on a GPU of this L2. None: the GPU's own.
    l2_bytes: int | None = None

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def build(self) -> str:
        """The variant's name, "+pdl" where it is launched as a programmatic dependent, and the L2 it plans for
        where that is not the GPU's."""
        return ((self.variant or "default") + (" +pdl" if self.dependent else "")
                + (f" l2={self.l2_bytes}" if self.l2_bytes is not None else ""))


def vendor_line_of(vendor, accuracy: str, dtype: str) -> str | None:
    """The vendor method's build of accuracy class `accuracy` for `dtype`, of those a study runs
    (configs.vendor_lines); None: its default build."""
    return next((c.variant for c in configs.vendor_lines(vendor, dtype)
                 if c.variant != configs.DEFAULT and vendor.accuracy_of(c.variant, dtype) == accuracy), None)


def parse_shape(text: str) -> tuple[int, int, int]:
    """"4096" (a cube) or "MxNxK" (C is M x N, the inner dimension K), each at least 1."""
    parts = text.lower().split("x")
    if len(parts) not in (1, 3) or not all(re.fullmatch(r"\d+", p) for p in parts) or min(map(int, parts)) < 1:
        raise ValueError(f"shape {text!r} is neither N nor MxNxK with positive integers (e.g. 4096 or 257x511x129)")
    m, n, k = (int(parts[0]),) * 3 if len(parts) == 1 else map(int, parts)
    return m, n, k


def variants_of(method: str, names: list[str]) -> list[str | None]:
    """The variant names asked for, "all" standing for the default build and every registered variant, and "auto"
    for the heuristic's pick of each case (make_case); each other name is checked (KeyError naming the method, the
    value and its variants)."""
    m = registry.get(method)
    if "all" in names:
        names = ["default", *(v.name for v in m.variants)]
    return [name if name == configs.AUTO else None if m.variant(name).name == "default" else name for name in names]


def make_case(method: str, variant: str | None, dtype: str, shape: str, block: int = 0,
              dependent: bool = False, device: dict | None = None, l2_bytes: int | None = None) -> Case:
    """A checked case: a kernel of ours (not a library call), one of its variants, one of its dtypes that cuBLAS
    also has, a block size where the method takes one, `dependent` (PDL) only for a kernel that waits for the
    previous grid itself, and `l2_bytes` (at least 1) only for a kernel that chooses B's L2 policy at launch. "auto"
    is the pipeline's pick for the `device` facts (Bench.facts: the SM count and the memory bandwidth; None: the
    registry's defaults, an H200's). Errors name the value and what is allowed."""
    m = registry.get(method)
    if l2_bytes is not None and (m.stream_b is None or l2_bytes < 1):
        choosers = [name for name, r in registry.METHODS.items() if r.stream_b is not None]
        raise ValueError(f"--l2-bytes {l2_bytes}: a size of 1 byte or more, for a kernel that chooses B's L2 policy "
                         f"at launch ({method} does{'' if m.stream_b else ' not'}); methods that do: "
                         f"{', '.join(choosers)}")
    if dependent and not m.waits_for_previous_grid:
        waits = [name for name, r in registry.METHODS.items() if r.waits_for_previous_grid]
        raise ValueError(f"{method}'s kernel does not wait for the previous grid, so --pdl cannot launch it as a "
                         f"programmatic dependent; methods that can: {', '.join(waits)}")
    if not m.compiled:
        raise ValueError(f"{method} is not a kernel of ours; compare one of: {', '.join(registry.compiled_methods())}")
    (variant,) = variants_of(method, [variant or "default"])
    if dtype not in m.dtypes:
        raise ValueError(f"{method} does not run {dtype!r}; its dtypes: {', '.join(m.dtypes)}")
    try:
        registry.vendor_method(dtype)
    except KeyError:
        raise ValueError(f"no vendor library line runs {dtype}, so {method} {dtype} has nothing to be compared "
                         "with") from None
    if m.block_axis and block < 1:
        raise ValueError(f"{method} takes a block size: pass --block (e.g. 16)")
    if m.block_axis and m.blocks is not None and block not in m.blocks:
        raise ValueError(f"{method} supports blocks {', '.join(map(str, m.blocks))}, not {block}")
    m_, n_, k_ = parse_shape(shape)
    if variant == configs.AUTO:  # the pipeline's pick, planned for the device as the pipeline plans for it
        pick = configs.choose(m, configs.job_problem(dtypes.get(dtype), block, m_, k_, n_, **(device or {}))).variant
        variant = None if pick == configs.DEFAULT else pick
    return Case(method, variant, dtype, m_, n_, k_, block=block if m.block_axis else 0, dependent=dependent,
                l2_bytes=l2_bytes)


def alternate(launches: dict[str, Callable[[], None]], sample: Callable[[Callable[[], None]], float],
              samples: int) -> dict[str, list[float]]:
    """`samples` rounds of one sample of each launch, in order: each name's seconds per launch."""
    times: dict[str, list[float]] = {name: [] for name in launches}
    for _ in range(samples):
        for name, launch in launches.items():
            times[name].append(sample(launch))
    return times


@dataclass
class Result:
    case: Case
    checks: dict[str, Verification] = field(default_factory=dict)  # "ours", "ours after timing", "cublas"
    ours_s: list[float] = field(default_factory=list)
    cublas_s: list[float] = field(default_factory=list)
    batch: int = 0
    diagnostic: bool = False
    error: str = ""

    @property
    def verified(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks.values())

    @property
    def ratio(self) -> float | None:
        """cuBLAS's median time over ours: above 1, ours is faster."""
        if not self.ours_s or not self.cublas_s:
            return None
        return float(np.median(self.cublas_s) / np.median(self.ours_s))

    @property
    def pair_ratio(self) -> float | None:
        """The median of cuBLAS's time over ours, sample by sample (each of ours with the cuBLAS sample after it)."""
        if not self.ours_s or not self.cublas_s:
            return None
        return float(np.median(np.asarray(self.cublas_s) / np.asarray(self.ours_s)))

    def check_text(self) -> str:
        if self.error:
            return f"error: {self.error}"
        if not self.checks:
            return "not run"
        worst = max(c.rel_fro_error for name, c in self.checks.items() if name != "cublas")
        failed = [f"{name} {c.rel_fro_error:.1e} ({c.unwritten} unwritten)"
                  for name, c in self.checks.items() if not c.passed]
        if self.diagnostic:
            return f"diagnostic, rel {worst:.1e}"
        vendor = f" (vendor {self.checks['cublas'].rel_fro_error:.1e})" if "cublas" in self.checks else ""
        return f"{BENCH_VERIFIED} rel {worst:.1e}{vendor}" if not failed else "FAILED " + "; ".join(failed)

    def row(self) -> dict:
        c = self.case
        work = flops(c.m, c.k, c.n)
        ours = float(np.median(self.ours_s)) if self.ours_s else None
        theirs = float(np.median(self.cublas_s)) if self.cublas_s else None
        before = (c.method, c.build, c.dtype, c.shape, self.batch or None)
        after = (ours * 1e3 if ours else None, work / ours / 1e12 if ours else None,
                 theirs * 1e3 if theirs else None, work / theirs / 1e12 if theirs else None,
                 self.ratio, self.pair_ratio)
        return {**dict(zip(BENCH_BEFORE_CHECK, before)), "check": self.check_text(),
                **dict(zip(BENCH_AFTER_CHECK, after))}

    def as_dict(self) -> dict:
        return {**self.row(), "block": self.case.block, "ours_s": self.ours_s, "cublas_s": self.cublas_s,
                "checks": {name: c.as_dict() for name, c in self.checks.items()}}


def table(results: list[Result]) -> str:
    """One line per case; ratio and pair are cuBLAS's time over ours (above 1: ours is faster)."""
    frame = pd.DataFrame([r.row() for r in results])
    frame["batch"] = frame["batch"].map(lambda b: "-" if pd.isna(b) else str(int(b)))
    return frame.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:#.4g}")



def _compile_quietly(method: str, dtype: str, block: int, arch: str, output: str, variant: str | None) -> None:
    """kernels.compile_cubin without its log of the source (Bench.build's worker processes)."""
    with contextlib.redirect_stdout(io.StringIO()):
        kernels.compile_cubin(method, dtype, block, arch, output, variant)


class Bench:
    """The GPU side of one process: PyCUDA's primary context (shared with CuPy and cuda-bindings), the stream hold,
    a pair of events and a directory for the cubins built."""

    def __init__(self, seed: int = DEFAULTS.seed):
        self.cuda = require_pycuda()  # says which package or driver is missing, and the command that installs it
        if not module_available(CUBLAS.module):
            raise GpuUnavailable(f"CuPy is not installed: the bench times cuBLAS and computes the fp64 reference "
                                 f"through it ({CUBLAS.install})")
        import pycuda.autoprimaryctx

        self.device = pycuda.autoprimaryctx.device
        self.arch = device_arch(self.device)
        self.hold = StreamHold(self.cuda, self.arch)
        self.start, self.end = self.cuda.Event(), self.cuda.Event()
        self.seed = seed
        self._cubins = tempfile.TemporaryDirectory(prefix="matmul_bench_")

    def facts(self) -> dict:
        """This GPU's facts that the heuristics plan for (configs.job_problem's keywords)."""
        return device_facts(self.cuda, self.device)

    def _path(self, case: Case) -> Path:
        return Path(self._cubins.name) / (kernels.symbol(case.method, case.dtype, case.block, case.variant) + ".cubin")

    def cubin(self, case: Case) -> str:
        """The case's kernel built for this GPU, as the pipeline builds it (kernels.compile_cubin)."""
        path = self._path(case)
        if not path.exists():
            kernels.compile_cubin(case.method, case.dtype, case.block, self.arch, str(path), case.variant)
        return str(path)

    def build(self, cases: list[Case], jobs: int | None = None) -> None:
        """Build every case's kernel before any is timed, `jobs` compiler processes at once (default: one per CPU),
        so that a sweep's compiles overlap each other rather than add up. A build that fails leaves no cubin:
        cubin() then builds it again and raises with the case it belongs to."""
        todo = {path: c for c in cases if not (path := self._path(c)).exists()}
        if not todo:
            return
        # spawn: the children compile only, and must not inherit this process's CUDA context
        with ProcessPoolExecutor(min(jobs or os.cpu_count() or 1, len(todo)),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            for path, c in todo.items():
                pool.submit(_compile_quietly, c.method, c.dtype, c.block, self.arch, str(path), c.variant)

    def prepare(self, case: Case) -> tuple[dict, Callable[[str], Verification]]:
        """Launchers of ours and of cuBLAS over the case's inputs (each its own C), and a check of either."""
        import pycuda.gpuarray as gpuarray

        method, record = case.method_record, case.dtype_record
        capability = self.device.compute_capability()
        why = (method.unmet_requirement(capability, module_available)
               or method.unmet_dtype_requirement(record.name, capability))
        if why:
            raise GpuUnavailable(why)
        gpu_job.ensure_fits(method, record, case.m, case.k, case.n, case.variant)
        operands = inputs.generate(case.m, case.k, case.n, record, self.seed, DEFAULTS.low, DEFAULTS.high)
        facts = {**self.facts(), **({"l2_bytes": case.l2_bytes} if case.l2_bytes is not None else {})}
        problem = configs.job_problem(record, case.block, case.m, case.k, case.n, **facts,
                                      max_shared_bytes=specs.shared_opt_in_bytes(self.device.compute_capability()))
        ours = gpu_job.upload(*operands, record, operands.scales)
        # The vendor's line for the dtype (cuBLAS, or cuBLASLt for FP8) over the same inputs, into its own C.
        vendor = launchers.DeviceBuffers(ours.a, ours.b, gpuarray.empty((case.m, case.n), record.output), ours.scales)
        outputs = {"ours": ours.c, "cublas": vendor.c}
        # Per-tensor scales multiply the product; block scales dequantize each block (they have no single factor).
        scaling = {"block_scales": operands.scales} if record.block_scaled else {"scale": operands.scale}
        # Like with like: the vendor's build of the kernel's accuracy class where it has one (cuBLASLt's FP8 with
        # fast accumulation for a fast-accumulation build), else its default.
        vendor_method = registry.get(registry.vendor_method(case.dtype))
        vendor_build = vendor_line_of(vendor_method, method.accuracy_of(case.variant, case.dtype), case.dtype)
        launches = {
            "ours": launchers.make(method, problem, ours, self.cubin(case),
                                   launchers.as_dependent(method, case.variant_record) if case.dependent
                                   else case.variant_record),
            "cublas": launchers.make(vendor_method, problem, vendor, None, vendor_build)}

        def check(name: str) -> Verification:
            """Poisoned C, one launch, the fp64 reference on the device (cuBLAS DGEMM through CuPy)."""
            gpu_job.poisoned_launch(self.cuda, launches[name], outputs[name], record)
            return gpu_job.verify_on_device(ours.a, ours.b, outputs[name], record, **scaling)

        return launches, check

    def sample(self, launch: Callable[[], None], batch: int) -> float:
        """Seconds per launch of `batch` back-to-back launches queued behind the stream hold."""
        return gpu_job.held_seconds(self.hold, self.start, self.end, launch, batch) / batch

    def compare(self, case: Case, samples: int = 20, batch: int | None = None) -> Result:
        """Check both, then time them alternating; batch None: launches_per_sample of one launch of ours."""
        diagnostic = case.variant_record.diagnostic
        result = Result(case, diagnostic=diagnostic)
        launches, check = self.prepare(case)
        result.checks = {name: check(name) for name in launches}
        if not (result.verified or diagnostic):
            return result
        result.batch = batch or launches_per_sample(self.sample(launches["ours"], 1),
                                                    DEFAULTS.stopping.min_launches_per_sample)
        alternate(launches, lambda launch: self.sample(launch, result.batch), 1)  # warm-up, not kept
        times = alternate(launches, lambda launch: self.sample(launch, result.batch), samples)
        result.ours_s, result.cublas_s = times["ours"], times["cublas"]
        result.checks["ours after timing"] = check("ours")
        return result

    def profile(self, case: Case, rounds: int = 3) -> Result:
        """For a profiler: ours and cuBLAS launched alternately `rounds` times (no stream hold, nothing timed),
        then ours checked. Launch 2r of a kernel name filter matching both is ours, 2r + 1 cuBLAS's."""
        result = Result(case, diagnostic=case.variant_record.diagnostic)
        launches, check = self.prepare(case)
        alternate(launches, lambda launch: launch() or 0.0, rounds)
        self.cuda.Context.synchronize()
        result.checks = {"ours": check("ours")}
        return result
