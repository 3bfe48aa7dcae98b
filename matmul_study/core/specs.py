"""The records a method is made of: the problem a launch is planned for, the launch geometry, tensor maps, a pre-pass,
what a method requires of the GPU, its named builds (Variant) and the method itself. The method table is
core/registry.py; the geometry helpers that fill these records are core/geometry.py and core/warp_specialized.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from matmul_study.core import dtypes as dt
from matmul_study.core.backends import PYCUDA, Backend


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


TMA_ALIGNMENT = 16  # bytes: a tensor map's global address and row pitch must be multiples of this


def pitch_elements(cols: int, itemsize: int) -> int:
    """Row pitch in elements that TMA accepts: cols rounded up to a multiple of 16 bytes. An operand whose rows are
    narrower than their pitch is copied into padded rows on every launch (launch.operands.PitchedOperand)."""
    per = TMA_ALIGNMENT // itemsize
    return cdiv(cols, per) * per


# The most dynamic shared memory a block may opt in to, per compute capability (CUDA C++ Programming Guide, technical
# specifications per compute capability: 163 KB, 99 KB or 227 KB). A kernel whose configuration depends on it is
# compiled for a target with the configuration this table allows there (core/geometry.py, TileFamily), and launched
# on a device with the one it allows for the device's compute capability (measure/ sets Problem.max_shared_bytes
# from it): one table, so both make the same choice.
SHARED_OPT_IN_BYTES: dict[tuple[int, int], int] = {
    (8, 0): 166_912, (8, 6): 101_376, (8, 7): 166_912, (8, 9): 101_376,
    (9, 0): 232_448, (10, 0): 232_448, (10, 3): 232_448,
    (12, 0): 101_376, (12, 1): 101_376,
}
# The compute capability the planning defaults describe (H100, H200) where no device is known.
DEFAULT_COMPUTE_CAPABILITY = (9, 0)


def compute_capability(target: str | tuple[int, int]) -> tuple[int, int]:
    """(8, 6) for sm_86, compute_86 or (8, 6); (9, 0) for sm_90a; (10, 0) for sm_100."""
    if isinstance(target, tuple):
        return target
    match = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)[af]?", target)
    if not match:
        raise ValueError(f"not an nvcc target: {target!r} (sm_XY, sm_XYa or compute_XY)")
    return int(match.group(1)), int(match.group(2))


def shared_opt_in_bytes(target: str | tuple[int, int]) -> int:
    """SHARED_OPT_IN_BYTES of a target (sm_XY, compute_XY) or compute capability; one the table does not know gets
    the least of them, which every GPU with cp.async (sm_80 and newer) allows."""
    return SHARED_OPT_IN_BYTES.get(compute_capability(target), min(SHARED_OPT_IN_BYTES.values()))


@dataclass(frozen=True)
class Problem:
    """What a launch geometry depends on: the shape, the block axis, the dtype and the device."""
    m: int
    n: int
    k: int
    block: int
    dtype: dt.DType
    sm_count: int = 132
    # The most dynamic shared memory a block may opt in to on the device (shared_opt_in_bytes of its compute
    # capability; the default: H100/H200's).
    max_shared_bytes: int = shared_opt_in_bytes(DEFAULT_COMPUTE_CAPABILITY)
    # The device's memory bandwidth in bytes a second (bus width x memory clock x 2, hbm_bytes_per_s in
    # measure/gpu_device.py); None where it is not known: the heuristics then plan as for an H200.
    hbm_bytes_per_s: float | None = None
    # The device's L2 cache in bytes (the driver's L2_CACHE_SIZE); None where it is not known: DEFAULT_L2_BYTES.
    l2_bytes: int | None = None


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    threads: tuple[int, int, int]
    shared_bytes: int = 0  # dynamic shared memory; over 48 KB the launcher raises the kernel's limit
    cluster: tuple[int, int, int] = (1, 1, 1)  # thread-block cluster (cuLaunchKernelEx); (1, 1, 1): none
    # A persistent grid's blocks loop over the tiles, so the grid may shrink to what fits on the GPU at once.
    persistent: bool = False
    # Programmatic dependent launch (cuLaunchKernelEx): the kernel may start while the previous kernel on the
    # stream ends, because it waits (griddepcontrol.wait) before its first global access.
    dependent: bool = False
    # The kernel computes Cᵀ = Bᵀ·Aᵀ: it takes the problem's (n, m, k) where it would take (m, n, k).
    transposed: bool = False

    @property
    def clustered(self) -> bool:
        return self.cluster != (1, 1, 1)

    def resized(self, blocks: int) -> "Launch":
        return replace(self, grid=(blocks, 1, 1))


# The L2 a launch plans for where the device's is not known (Problem.l2_bytes): an H100's or an H200's.
DEFAULT_L2_BYTES = 50 * 2**20


@dataclass(frozen=True)
class StreamB:
    """B's L2 policy, chosen at launch (Method.stream_b: the kernel takes a `stream_b` flag after its pointers). A
    launch that reads each element of B once, its grid one row of tiles (grid y of 1: kernel 10's grid), copies B
    under an L2 evict_first policy where B's bytes pass `share` of the device's L2: the L2 cannot keep such a B for
    the next launch, and its lines would only push out those read again. Where B fits, B is copied plainly, so that
    the next launch of a burst finds it in L2."""
    share: float

    def __post_init__(self):
        if not 0 < self.share:
            raise ValueError(f"StreamB.share: {self.share!r} is not a positive share of the L2")

    @staticmethod
    def b_bytes(p: Problem) -> int:
        return p.k * p.n * p.dtype.itemsize

    @staticmethod
    def l2_bytes(p: Problem) -> int:
        return p.l2_bytes or DEFAULT_L2_BYTES

    def __call__(self, p: Problem, launch: Launch) -> bool:
        return launch.grid[1] == 1 and self.b_bytes(p) > self.share * self.l2_bytes(p)

    def reason(self, p: Problem, launch: Launch) -> str:
        """Why B's copies of `launch` take the L2 policy they take, in a sentence."""
        if launch.grid[1] != 1:
            return f"B copied plainly: {launch.grid[1]} rows of tiles read it again"
        share = f"{self.share:g} of the {self.l2_bytes(p) / 1e6:.3g} MB L2"
        if self(p, launch):
            return f"B streamed (L2 evict_first): its {self.b_bytes(p) / 1e6:.3g} MB pass {share}"
        return f"B copied plainly: its {self.b_bytes(p) / 1e6:.3g} MB are within {share}"


@dataclass(frozen=True)
class TensorMap:
    """A TMA tensor map over one row-major operand, built on the host and passed to the kernel by value.

    A is m x k and B is k x n; "BT" is B transposed (n x k), for kernels whose tensor-core instruction needs
    both operands K-major (wgmma in tf32): the launcher transposes B into it on every launch, inside the
    timed region. The box is the tile one copy brings into shared memory, and `swizzle` (0, 32, 64 or 128
    bytes) must match how the kernel's shared-memory descriptors read it. Elements past the matrix come back
    zero."""
    operand: str
    box_rows: int
    box_cols: int
    swizzle: int = 128


@dataclass(frozen=True)
class PrepassOutput:
    """A device buffer that a method's pre-pass writes and its tensor maps read (a TensorMap whose operand is this
    name), or that its GEMM takes as its scales (Prepass.scales): rows x cols elements, given by the problem, with
    the row pitch padded to 16 bytes. The elements are the dtype's storage, or `storage` (a dtype name whose
    elements the buffer holds and its tensor map reads: 3xFP16's fp16 parts of fp32 operands). The launcher
    allocates it once, not per launch."""
    name: str
    shape: Callable[["Problem"], tuple[int, int]]
    storage: str | None = None


@dataclass(frozen=True)
class Prepass:
    """A kernel of the method's own source run before its GEMM in the same timed launch, to turn the user's A and
    B into the operands the GEMM's tensor maps read: extern "C" `symbol`(const A, const B, one pointer per
    output in order, int m, int n, int k), launched with `launch`. `scales` names the output that the GEMM takes as
    its trailing `scales` pointer (3xFP16's scales per row and column), if any."""
    symbol: str
    outputs: tuple[PrepassOutput, ...]
    launch: Callable[["Problem"], "Launch"]
    scales: str | None = None
    # The user's operands it reads (the analytic model's traffic): A and B, or B alone (the tf32 transpose).
    reads: tuple[str, ...] = ("A", "B")


@dataclass(frozen=True)
class Requirements:
    """What a method needs of the GPU and the host, so that it is pruned with a reason instead of trapping."""
    min_compute_capability: tuple[int, int] = (0, 0)
    # Compiled for the arch-specific target (sm_90a: wgmma, setmaxnreg), whose code runs on that exact
    # compute capability only.
    arch_specific: bool = False
    # Python modules the launch needs beyond the backend's (cuda.bindings for tensor maps and clusters).
    modules: tuple[str, ...] = ()
    # Dtypes that need a newer GPU than the method's others: (dtype, compute capability) pairs (FP8 mma: 8.9).
    dtype_compute_capability: tuple[tuple[str, tuple[int, int]], ...] = ()



# Accuracy classes (Method.accuracy, Variant.accuracy) of the dtypes that have more than one.
FAST_ACCUMULATION = "fast accumulation"  # FP8: the tensor cores' own reduced-precision sum over all of k
PROMOTED = "promoted"  # FP8: partial sums promoted into fp32 accumulators (cuBLASLt's default)
THREE_TF32 = "3xTF32"  # fp32 inputs on tf32 tensor cores, three products: tf32 speed, an error above SGEMM's
# The dtypes each class is a class of: a method that runs other dtypes too (kernel 10: fp16 to FP8) has the one class
# of each of those. So a build of class PROMOTED in fp32 (3xTF32 with its tf32 sums promoted into fp32 every k step,
# wgmma_3xtf32's promote and bn128_promote) is in fp32's one class, SGEMM's: its error is measured below SGEMM's
# (docs/tensor-cores.md).
CLASS_DTYPES: dict[str, tuple[str, ...]] = {
    FAST_ACCUMULATION: ("float8_e4m3",),
    PROMOTED: ("float8_e4m3", "float8_e4m3_block"),
    THREE_TF32: ("float32",),
}


@dataclass(frozen=True)
class Variant:
    """A named build of a method: compile definitions (-D) on top of its source, and the launch geometry they
    imply where it differs from the method's. Variants are how a kernel's configurations (tile, stages, cluster,
    split-K or stream-K, raster order) and its experiments live in the registry instead of in copies of its
    source or its launch code: bench/ and the pipeline build and launch them through the same path."""
    name: str
    defines: tuple[str, ...] = ()  # "NAME=VALUE" or "NAME", passed to nvcc as -DNAME=VALUE
    description: str = ""
    launch: Callable[[Problem], Launch] | None = None  # None: the method's own launch
    tile: Callable[[int, str], tuple[int, int, int]] | None = None  # None: the method's own tile
    # A diagnostic build computes a wrong result on purpose (a stage left out): it is timed, never reported.
    diagnostic: bool = False
    # Bytes of device memory the build needs besides A, B and C (a split-K build's partial tiles and counters),
    # for a problem; None: none. The launcher allocates it once, zeroed, and passes it as the kernel's last
    # argument (the generated wrapper then takes `float* workspace`, `double*` in fp64).
    workspace: Callable[[Problem], int] | None = None
    # The dtypes the build exists for (empty: every dtype of its method): a sweep or a forced list runs it only
    # on those (configs.runnable).
    dtypes: tuple[str, ...] = ()
    # Its accuracy class where it differs from its method's (Method.accuracy): e.g. an FP8 build with promoted sums.
    accuracy: str = ""
    # Its tensor maps where their boxes differ from its method's (Method.tensor_maps; empty: the method's): a
    # warp-specialised build of 64-row tiles reads A in boxes of 64 rows.
    tensor_maps: tuple[TensorMap, ...] = ()
    # __launch_bounds__(threads, min blocks an SM) of its generated kernel where they differ from its method's
    # (Method.launch_bounds; None: the method's): a build of smaller blocks than the method's default, whose
    # registers decide how many of them an SM holds.
    launch_bounds: tuple[int, int] | None = None
    # The most rows of A (M) it serves where that is more than its method's max_rows: a build that a bench may run
    # on such problems though a study's heuristic does not pick it (kernel 18's 16-row builds). None: its method's.
    max_rows: int | None = None


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    dtypes: tuple[str, ...]
    backend: Backend
    # Whether the config's block sizes apply; methods without the axis run once per (dtype, shape).
    block_axis: bool = False
    source: str | None = None
    # C++ call with {T} (input), {Acc} (accumulator and output) and {BLOCK} placeholders.
    template: str | None = None
    launch: Callable[[Problem], Launch] | None = None
    # Block sizes the kernel supports beyond the config's 1..32 (None: all of them).
    blocks: tuple[int, ...] | None = None
    reference_line: bool = False
    # Whether config `methods: default` (the default study, config.yaml) runs it; `methods: all` runs every method.
    default_study: bool = True
    # The traffic model's unit of work, as a function of the block size and dtype: (tile_m, tile_n, tile_k). A unit reads
    # its tile_m rows of A and tile_n columns of B from global memory once, and computes over whole tiles, zero
    # padding included. None: a library call, modelled as ideal (each input read once, no padding).
    tile: Callable[[int, str], tuple[int, int, int]] | None = None
    # Kernels fed by TMA take tensor maps of A and B instead of their pointers.
    tensor_maps: tuple[TensorMap, ...] = ()
    # __launch_bounds__(threads, min blocks per SM) on the generated kernel; setmaxnreg needs it.
    launch_bounds: tuple[int, int] | None = None
    compile_options: tuple[str, ...] = ()
    # The launch contract the kernel is compiled with, as -D definitions ("NAME=VALUE"), for an nvcc target (sm_XY,
    # compute_XY; None: only the definitions that do not depend on one): its geometry record's (core/geometry.py),
    # whose launch and tile are this method's. None: the kernel takes none.
    contract_defines: Callable[[str | None], tuple[str, ...]] | None = None
    requires: Requirements = field(default_factory=Requirements)
    # Named builds beyond the default (see Variant); the default build is the method itself.
    variants: tuple[Variant, ...] = ()
    # A kernel run before the GEMM in every launch, writing the operands its tensor maps read (see Prepass).
    prepass: Prepass | None = None
    # Tensor-core products per multiply-add of C (3xTF32 and 3xFP16: big·small + small·big + big·big, their GEMM
    # running over K' = 3k): the analytic model's FLOP issued and the k its GEMM reads.
    products: int = 1
    # The per-problem heuristic over the variants (core/configs.py): (problem, variant names) -> Choice.
    choose: Callable | None = None
    # A second heuristic, over its builds of another accuracy class than `choose` picks from (FP8's promoted builds
    # beside a fast-accumulation pick): under `variants: auto` a study runs both picks (configs.plan), so that the
    # class has a kernel of this rung beside the vendor line of that class. Same signature as `choose`.
    class_choose: Callable | None = None
    # Its kernel waits for the previous grid itself (griddepcontrol.wait before its first global access), so it may
    # be launched as a programmatic dependent (Launch.dependent, PDL) where its own launch does not ask for it: the
    # bench's --pdl.
    waits_for_previous_grid: bool = False
    # Its accuracy class within its dtype, where the dtype has more than one (FP8: the tensor cores' own
    # accumulation over all of k, or sums promoted into fp32; fp32: 3xTF32 beside SGEMM): a build's ratio is taken
    # against the vendor line of its own class (analysis/collate.py). Empty: the dtype's one class.
    accuracy: str = ""
    # The dtype whose arithmetic it runs, where not its own (3xTF32: fp32 on the tf32 tensor cores): the datasheet
    # peak its share of "the peak" is taken against (analysis/ladder.py). One dtype for all of the method's, or
    # (dtype, arithmetic) pairs where they differ (kernel 18: fp32 FMAs for its 16-bit and tf32 inputs, fp64's own).
    arithmetic: str | tuple[tuple[str, str], ...] = ""
    # The most rows of A (M) it serves, where it serves only a few (kernel 18: a few token rows); None: any M. A study
    # leaves its jobs of more rows out, with the reason (pipeline/grid.py), as it does a dtype the method lacks.
    max_rows: int | None = None
    # B's L2 policy, chosen at launch (StreamB); None: the kernel takes no `stream_b` flag and copies B plainly.
    stream_b: StreamB | None = None

    def accuracy_of(self, variant: str | None = None, dtype: str | None = None) -> str:
        """The accuracy class of a build: its variant's, else the method's; for a `dtype` the class is not one of
        (CLASS_DTYPES), empty: that dtype's one class."""
        accuracy = self.variant(variant).accuracy or self.accuracy
        return "" if dtype is not None and dtype not in CLASS_DTYPES.get(accuracy, (dtype,)) else accuracy

    def variant(self, name: str | None) -> Variant:
        """The named variant, or the default build (name None or "default")."""
        if name in (None, "", "default"):
            return Variant("default")
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(["default", *(v.name for v in self.variants)])
        raise KeyError(f"{self.name} has no variant {name!r}; its variants: {known}")

    def prepass_of(self, variant: "Variant | str | None" = None) -> Prepass | None:
        """The pre-pass a build (a Variant, or its name) runs: the method's, where the build's tensor maps read one
        of its outputs (a build whose maps read none, wgmma_tf32's swapped and *_smem_bt builds, runs without it)."""
        if self.prepass is None:
            return None
        build = variant if isinstance(variant, Variant) else self.variant(variant)
        read = {spec.operand for spec in (build.tensor_maps or self.tensor_maps)}
        return self.prepass if read & {o.name for o in self.prepass.outputs} else None

    def launch_for(self, problem: Problem, variant: str | None = None) -> Launch:
        v = self.variant(variant)
        return (v.launch or self.launch)(problem)

    def workspace_bytes(self, problem: Problem, variant: str | None = None) -> int:
        """Device memory the build needs besides A, B and C (0: none; see Variant.workspace)."""
        v = self.variant(variant)
        return v.workspace(problem) if v.workspace else 0

    @property
    def on_gpu(self) -> bool:
        return self.backend.on_gpu

    @property
    def compiled(self) -> bool:
        """A kernel of ours, compiled from kernels/ (as opposed to a library call)."""
        return self.source is not None

    @property
    def block_in_template(self) -> bool:
        return bool(self.template and "{BLOCK}" in self.template)

    def unmet_requirement(self, compute_capability: tuple[int, int] | None,
                          have_module: Callable[[str], bool]) -> str | None:
        """Why this method cannot run here, or None. An unknown compute capability (no GPU visible at
        planning time) prunes nothing: the GPU check before the first job says what is missing."""
        # A missing PyCUDA is not pruned: the check before the first GPU job stops the run and says so.
        ok, why = self.backend.available(have_module)
        if not ok and self.backend is not PYCUDA:
            return f"{why}, so {self.name} is not run"
        for module in self.requires.modules:
            if not have_module(module):
                return f"{module} is not installed (pip install -e '.[hopper]'), so {self.name} is not run"
        if compute_capability is None:
            return None
        need = self.requires.min_compute_capability
        if compute_capability < need:
            return (f"{self.name} needs compute capability {need[0]}.{need[1]} or newer; this GPU has "
                    f"{compute_capability[0]}.{compute_capability[1]}")
        if self.requires.arch_specific and compute_capability != need:
            return (f"{self.name} is built for sm_{need[0]}{need[1]}a, which runs on compute capability "
                    f"{need[0]}.{need[1]} only; this GPU has {compute_capability[0]}.{compute_capability[1]}")
        return None

    def arithmetic_of(self, dtype: str) -> str:
        """The dtype whose arithmetic the method runs for `dtype` (Method.arithmetic), else `dtype` itself."""
        if isinstance(self.arithmetic, tuple):
            return dict(self.arithmetic).get(dtype, dtype)
        return self.arithmetic or dtype

    def rows_served(self, variant: str | None = None) -> int | None:
        """The most rows of A that a build serves (its own max_rows where it has one, else the method's); None: any."""
        return self.variant(variant).max_rows or self.max_rows

    def unmet_shape_requirement(self, m: int, variant: str | None = None) -> str | None:
        """Why this method (its build `variant`: a bench's; a study's grid asks of the method) does not run a problem
        of `m` rows of A (max_rows), or None."""
        most = self.rows_served(variant)
        if most is None or m <= most:
            return None
        build = f" ({variant})" if variant not in (None, "", "default") else ""
        return f"{self.name}{build} serves M of {most} rows or fewer, not {m}"

    def unmet_dtype_requirement(self, dtype: str, compute_capability: tuple[int, int] | None) -> str | None:
        """Why this method cannot run `dtype` on a GPU of `compute_capability` (Requirements.dtype_compute_capability),
        or None; an unknown compute capability prunes nothing."""
        need = dict(self.requires.dtype_compute_capability).get(dtype)
        if need is None or compute_capability is None or compute_capability >= need:
            return None
        return (f"{self.name} in {dtype} needs compute capability {need[0]}.{need[1]} or newer; this GPU has "
                f"{compute_capability[0]}.{compute_capability[1]}")
