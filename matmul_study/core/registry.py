"""The methods the study can run: one entry per method, the single place a new kernel is registered.

A CUDA method names its `kernels/*.cu` file, the C++ template call that instantiates it, its launch geometry
and what it needs of the GPU. `matmul_study.launch.kernels` turns (method, dtype, block) into an `extern "C"` wrapper
around that call, so the driver can find the kernel by a plain name. The order of METHODS is the ladder's order:
tables, legends and the schema's list of names all come from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from matmul_study.core import configs
from matmul_study.core import dtypes as dt
from matmul_study.core.backends import CUBLAS, CUBLASLT, NUMPY, PYCUDA, Backend


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Problem:
    """What a launch geometry depends on: the shape, the block axis, the dtype and the device."""
    m: int
    n: int
    k: int
    block: int
    dtype: dt.DType
    sm_count: int = 132
    max_shared_bytes: int = 232_448  # the most dynamic shared memory a block may opt in to (H100/H200)


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

    @property
    def clustered(self) -> bool:
        return self.cluster != (1, 1, 1)

    def resized(self, blocks: int) -> "Launch":
        return replace(self, grid=(blocks, 1, 1))


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
    name): rows x cols elements of the dtype's storage, given by the problem, with the row pitch padded to 16
    bytes. The launcher allocates it once, not per launch."""
    name: str
    shape: Callable[["Problem"], tuple[int, int]]


@dataclass(frozen=True)
class Prepass:
    """A kernel of the method's own source run before its GEMM in the same timed launch, to turn the user's A and
    B into the operands the GEMM's tensor maps read: extern "C" `symbol`(const A, const B, one pointer per
    output in order, int m, int n, int k), launched with `launch`."""
    symbol: str
    outputs: tuple[PrepassOutput, ...]
    launch: Callable[["Problem"], "Launch"]


@dataclass(frozen=True)
class Requirements:
    """What a method needs of the GPU and the host, so that it is pruned with a reason instead of trapping."""
    min_compute_capability: tuple[int, int] = (0, 0)
    # Compiled for the arch-specific target (sm_90a: wgmma, setmaxnreg), whose code runs on that exact
    # compute capability only.
    arch_specific: bool = False
    # Python modules the launch needs beyond the backend's (cuda.bindings for tensor maps and clusters).
    modules: tuple[str, ...] = ()


def square_thread_blocks(p: Problem) -> Launch:
    """BLOCK x BLOCK threads, one per element of C; x walks columns so B reads and C writes coalesce."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1))


def square_thread_blocks_dynamic_tiles(p: Problem) -> Launch:
    """As above, plus two BLOCK x BLOCK tiles (A and B) in dynamic shared memory."""
    return Launch((cdiv(p.n, p.block), cdiv(p.m, p.block), 1), (p.block, p.block, 1),
                  2 * p.block * p.block * p.dtype.itemsize)


def fixed_tiles(tile_m: int, tile_n: int, threads: int,
                shared_bytes: Callable[[dt.DType], int] | int = 0) -> Callable[[Problem], Launch]:
    """Kernels whose block computes a fixed tile_m x tile_n tile of C with a fixed thread count."""

    def launch(p: Problem) -> Launch:
        smem = shared_bytes(p.dtype) if callable(shared_bytes) else shared_bytes
        return Launch((cdiv(p.n, tile_n), cdiv(p.m, tile_m), 1), (threads, 1, 1), smem)

    return launch


def persistent(tile_m: int, tile_n: int, threads: int, shared_bytes: Callable[[dt.DType], int] | int,
               cluster: int = 1, dependent: bool = False) -> Callable[[Problem], Launch]:
    """One block per SM (rounded down to whole clusters), each walking tiles of C until none are left."""

    def launch(p: Problem) -> Launch:
        smem = shared_bytes(p.dtype) if callable(shared_bytes) else shared_bytes
        tiles = cdiv(p.m, tile_m) * cdiv(p.n, tile_n)
        blocks = max(cluster, min(p.sm_count // cluster, cdiv(tiles, cluster)) * cluster)
        return Launch((blocks, 1, 1), (threads, 1, 1), smem, (cluster, 1, 1), persistent=True, dependent=dependent)

    return launch


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
    requires: Requirements = field(default_factory=Requirements)
    # Named builds beyond the default (see Variant); the default build is the method itself.
    variants: tuple[Variant, ...] = ()
    # A kernel run before the GEMM in every launch, writing the operands its tensor maps read (see Prepass).
    prepass: Prepass | None = None
    # The per-problem heuristic over the variants (core/configs.py): (problem, variant names) -> Choice.
    choose: Callable | None = None

    def variant(self, name: str | None) -> Variant:
        """The named variant, or the default build (name None or "default")."""
        if name in (None, "", "default"):
            return Variant("default")
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(["default", *(v.name for v in self.variants)])
        raise KeyError(f"{self.name} has no variant {name!r}; its variants: {known}")

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


SIMT_DTYPES = ("float32", "float64", "int32")
HOPPER = Requirements(min_compute_capability=(9, 0), arch_specific=True, modules=("cuda.bindings",))


def _tiled(block: int, dtype: str) -> tuple[int, int, int]:
    return block, block, block


Geometry = tuple[int, int, int, int, int]  # tile_m, tile_n, tile_k, threads, shared bytes


def tiles_by_dtype(geometry: dict[str, Geometry | list[Geometry]]) -> tuple[Callable, Callable]:
    """(launch, tile) for kernels whose tile depends on the dtype: {dtype: geometry, or a list of them in order of
    preference}. A launch takes the first whose shared memory the device allows a block (the configuration compiled
    for the device's arch must fit in it); the tile is the first's."""
    options = {dtype: g if isinstance(g, list) else [g] for dtype, g in geometry.items()}

    def launch(p: Problem) -> Launch:
        fitting = [g for g in options[p.dtype.name] if g[4] <= p.max_shared_bytes] or options[p.dtype.name][-1:]
        tile_m, tile_n, _, threads, smem = fitting[0]
        return Launch((cdiv(p.n, tile_n), cdiv(p.m, tile_m), 1), (threads, 1, 1), smem)

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return options[dtype][0][:3]

    return launch, tile


# warptiled (07_warptiled.cu) compiles, per target, the first configuration that fits the opt-in shared memory of
# that target's GPUs (warptiled::target_smem_optin: 163 KB on sm_80/87, 227 KB on sm_90/100/103, else 99 KB), and
# the launch gives the first that fits the device's own limit: the same choice for a cubin of the device's arch. A
# target the kernel does not know compiles the small one and, should its GPU allow more, gets the big size: part
# unused, harmless. The reverse (an sm_90 cubin on an sm_86 GPU) traps.
# warptiled fp32: BK 32 (149 KB) or BK 16; fp64 one configuration.
WARPTILED_LAUNCH, WARPTILED_TILE = tiles_by_dtype({"float32": [(128, 256, 32, 256, 148_992),
                                                               (128, 256, 16, 256, 74_496)],
                                                   "float64": (128, 128, 8, 256, 66_048)})
# warptiled_mbarrier fp32: BK 32 with 4 stages (199 KB: sm_90/100/103) or BK 16.
WARPTILED_MBARRIER_LAUNCH, WARPTILED_MBARRIER_TILE = tiles_by_dtype({"float32": [(128, 256, 32, 256, 198_656),
                                                                                 (128, 256, 16, 256, 99_328)]})



# The warp-specialised Hopper kernel (kernels/12_wgmma_warp_specialized.cu) and its tf32 rung share one pipeline and
# one shared-memory layout: a 1 KiB alignment slack, `stages` stages of A (128 rows) and B (`bn` columns: the tile
# width, 256 or 128) at 128 bytes per row or column (fp16/bf16 BK 64, tf32 BK 32), the consumers' epilogue staging
# (8 warps x 16x64 fp32) and a full and an empty mbarrier per stage: wgmma_ws::SMEM_BYTES, checked against this by
# tests/test_kernels_compile.py.
WS_STAGES = 4  # the kernel's default at BN 256 (WGMMA_WS_STAGES: the most 48 KiB stages that fit)
WS_BN128_STAGES = 6  # and at BN 128 (WGMMA_WS_BN=128: the most 32 KiB stages that fit)
WS_CLUSTER = 2  # the kernel's default (WGMMA_WS_CLUSTER)


def ws_stages(stages: int | None, bn: int) -> int:
    """`stages`, or where None the kernel's default for tiles `bn` wide."""
    return stages if stages is not None else WS_BN128_STAGES if bn == 128 else WS_STAGES


def ws_shared_bytes(stages: int | None = None, bn: int = 256) -> int:
    """Dynamic shared memory of a wgmma_warp_specialized / wgmma_tf32 build with `stages` pipeline stages (None:
    the kernel's default) and tiles `bn` columns wide."""
    stages = ws_stages(stages, bn)
    stage = (128 + bn) * 128
    staging = 2 * 4 * 16 * 64 * 4
    return 1024 + stages * stage + staging + 2 * stages * 8


def ws_launch(stages: int | None = None, cluster: int = WS_CLUSTER, split: int = 1, bn: int = 256
              ) -> Callable[[Problem], Launch]:
    """Persistent grid of 384-thread CTAs (a producer and two consumer warpgroups) over 128 x `bn` tiles, in clusters
    along M, launched as a programmatic dependent of the previous kernel. A split-K build (split > 1) has
    `split` work items per cluster tile (256 x bn with clusters of 2), so its grid is as large as those items,
    up to one CTA per SM."""
    smem = ws_shared_bytes(stages, bn)
    if split == 1:
        return persistent(128, bn, 384, shared_bytes=smem, cluster=cluster, dependent=True)

    def launch(p: Problem) -> Launch:
        items = cdiv(p.m, 128 * cluster) * cdiv(p.n, bn) * split
        blocks = max(1, min(p.sm_count // cluster, items)) * cluster
        return Launch((blocks, 1, 1), (384, 1, 1), smem, (cluster, 1, 1), persistent=True, dependent=True)

    return launch


WS_SPLITS = (2, 4, 8, 16, 32)  # split-K variants of the warp-specialised pipeline (WGMMA_WS_SPLIT_K)


def ws_split_workspace(split: int, cluster: int = WS_CLUSTER, bn: int = 256) -> Callable[[Problem], int]:
    """A split-K build's workspace (kernels/12_wgmma_warp_specialized.cu, host contract): per 128 x `bn` CTA tile
    (cluster tiles x `cluster` of them, so a last cluster row past m still has its own) `split` fp32 partial
    tiles, then one 32-bit counter per CTA tile."""

    def workspace(p: Problem) -> int:
        cta_tiles = cdiv(p.m, 128 * cluster) * cluster * cdiv(p.n, bn)
        return cta_tiles * (split * 128 * bn * 4 + 4)

    return workspace


def ws_variants(groups_along_n: bool, clusters: tuple[int, ...]) -> tuple[Variant, ...]:
    """The configuration axes of the warp-specialised pipeline (compile definitions WGMMA_WS_*), each moved away
    from the default by one step: clusters (those the operands allow), stages, the stream-K tail, balanced waves,
    the tile order (the operands' own order is the default: groups along N or along M) and group size, and the
    paced drain of the epilogue."""
    cluster_variants = tuple(
        Variant(f"cluster{c}", (f"WGMMA_WS_CLUSTER={c}",),
                "no cluster: every CTA loads all of B (48 KiB per k step from L2 instead of 32)" if c == 1 else
                f"clusters of {c} CTAs along M, each loading 1/{c} of B and multicasting it (fewer clusters fit "
                "at once: 30 of 4 on 132 SMs)",
                launch=ws_launch(cluster=c))
        for c in clusters if c != WS_CLUSTER)
    order = (Variant("row_groups", ("WGMMA_WS_GROUP_ORDER=1",),
                     "tile order in groups of cluster-rows walked column by column (the default groups columns)")
             if groups_along_n else
             Variant("column_groups", ("WGMMA_WS_GROUP_ORDER=2",),
                     "tile order in groups of cluster-columns walked row by row (the default groups rows)"))
    return (
        *cluster_variants,
        Variant("stages3", ("WGMMA_WS_STAGES=3",), "3 pipeline stages instead of 4 (less copy latency covered)",
                launch=ws_launch(stages=3)),
        Variant("no_streamk", ("WGMMA_WS_STREAMK=0",),
                "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would pay"),
        Variant("unbalanced", ("WGMMA_WS_BALANCED=0",),
                "every cluster takes tiles, instead of the fewest clusters that keep the number of waves"),
        order,
        Variant("group4", ("WGMMA_WS_GROUP_M=4",), "tile groups of 4 cluster tiles instead of 8"),
        Variant("group16", ("WGMMA_WS_GROUP_M=16",), "tile groups of 16 cluster tiles instead of 8"),
        Variant("drain0", ("WGMMA_WS_DRAIN_EVERY=0",),
                "no paced drain: every tile is stored whole at its end, none during the next tile's k steps"),
        Variant("drain4", ("WGMMA_WS_DRAIN_EVERY=4",), "paced drain every 4 k steps instead of 2"),
        *(Variant(f"splitk{s}", (f"WGMMA_WS_SPLIT_K={s}",),
                  f"split-K: each tile's k steps in {s} slices on {s} clusters, summed in slice order through a "
                  "workspace (deterministic); no stream-K tail. For too few tiles or deep K",
                  launch=ws_launch(split=s), workspace=ws_split_workspace(s))
          for s in WS_SPLITS),
    )


WS_BN128_SPLITS = (2, 4)  # split-K builds of the 128x128 tiles


def ws_bn128_variants() -> tuple[Variant, ...]:
    """The 128x128-tile builds of the fp16/bf16 pipeline (WGMMA_WS_BN=128: each consumer warpgroup 64x128, wgmma
    m64n128k16), for problems whose 128x256 tiles leave most SMs idle: twice the tiles, each half the work; 6
    stages of 32 KiB by default (what fits), 4 as the control; split-K on top where even those tiles are few."""
    bn128 = "WGMMA_WS_BN=128"

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return 128, 128, 64

    return (
        Variant("bn128", (bn128,), "128x128 tiles (twice as many, half the work each) and 6 stages of 32 KiB",
                launch=ws_launch(bn=128), tile=tile),
        Variant("bn128_stages4", (bn128, "WGMMA_WS_STAGES=4"),
                "128x128 tiles with 4 stages instead of 6 (the copy latency covered at half the math per stage)",
                launch=ws_launch(stages=4, bn=128), tile=tile),
        *(Variant(f"bn128_splitk{s}", (bn128, f"WGMMA_WS_SPLIT_K={s}"),
                  f"128x128 tiles, each tile's k steps in {s} slices on {s} clusters, summed in slice order through a "
                  "workspace (deterministic); no stream-K tail",
                  launch=ws_launch(split=s, bn=128), tile=tile, workspace=ws_split_workspace(s, bn=128))
          for s in WS_BN128_SPLITS),
    )


def fp8_bn128_variants() -> tuple[Variant, ...]:
    """The FP8 rung's 128x128-tile builds (WGMMA_WS_BN=128: m64n128k32, 6 stages of 32 KiB), where a consumer's
    registers hold the promoted accumulation (WGMMA_WS_PROMOTE, kernels/16_wgmma_fp8.cu), and the same tiles without
    it as the control that tells the promotion's cost from the tile's."""
    bn128 = "WGMMA_WS_BN=128"

    def tile(block: int, dtype: str) -> tuple[int, int, int]:
        return 128, 128, 128

    return (
        Variant("bn128", (bn128,),
                "128x128 tiles, 6 stages of 32 KiB, the tensor cores' FP8 sums as they come (the control of "
                "bn128_promote): twice the tiles of 128x256 ones, each with 3/4 of their math per byte loaded",
                launch=ws_launch(bn=128), tile=tile),
        Variant("bn128_promote", (bn128, "WGMMA_WS_PROMOTE=1"),
                "128x128 tiles with each k step's FP8 sum (128 k) promoted into fp32 accumulators (DeepGEMM's "
                "remedy, cuBLASLt's default): an error that does not grow with k, for 64 fp32 adds per thread and "
                "k step, some of them not hidden under the tensor cores' work, and the smaller tiles that the "
                "three accumulator sets need",
                launch=ws_launch(bn=128), tile=tile),
    )


FP8_BLOCK_DEFINES = ("WGMMA_WS_BN=128", "WGMMA_WS_PROMOTE=1")  # wgmma_fp8_block: the bn128_promote build's
FP8_BLOCK_SPLITS = (2, 4, 8)  # its split-K builds (slices of whole k steps, so of whole scale blocks)


def fp8_block_variants() -> tuple[Variant, ...]:
    """The configurations of the block-scaled FP8 rung (kernels/17_wgmma_fp8_block.cu), whose every build is
    128x128 tiles with promoted sums (FP8_BLOCK_DEFINES, the method's compile options): the cluster, the stream-K
    tail, and split-K for too few tiles. A k step is one scale block, and slices and stream-K pieces are whole k
    steps, so every one of them weights its partials itself."""
    return (
        Variant("cluster1", ("WGMMA_WS_CLUSTER=1",),
                "no cluster: every CTA loads its own Bt tile (the 2-CTA clusters multicast it on alternate k steps)",
                launch=ws_launch(cluster=1, bn=128)),
        Variant("no_streamk", ("WGMMA_WS_STREAMK=0",),
                "no stream-K tail: the last wave is whole tiles, even where splitting it by k steps would pay"),
        *(Variant(f"splitk{s}", (f"WGMMA_WS_SPLIT_K={s}",),
                  f"split-K: each tile's k steps (scale blocks) in {s} slices on {s} clusters, summed in slice "
                  "order through a workspace (deterministic); no stream-K tail. For too few tiles or deep K",
                  launch=ws_launch(split=s, bn=128), workspace=ws_split_workspace(s, bn=128))
          for s in FP8_BLOCK_SPLITS),
    )


# The 3xTF32 rung (kernels/14_wgmma_3xtf32.cu): a pre-pass splits each fp32 operand into a big and a small tf32
# part and writes A3 = [A_big | A_small | A_big] (m x K') and BT3 = [B_smallᵀ | B_bigᵀ | B_bigᵀ] (n x K'), each
# block of k padded with zeros to 4 floats (the tensor maps' 16-byte row pitch), K' = 3 kp; wgmma_tf32's GEMM runs on
# them over K'. These mirror the kernel's wgmma_3xtf32::wide_k and prepass_blocks (checked by tests/test_3xtf32.py).
SPLIT_K_ALIGN = 4  # floats: 16 bytes
SPLIT_TILE = 32  # the pre-pass's 32 x 32 tiles, blocks of 32 x 8 threads


def split_tf32_k(k: int) -> int:
    """Columns of the 3xTF32 rung's split operands (its GEMM's K): three blocks of k rounded up to 4 floats."""
    return 3 * cdiv(k, SPLIT_K_ALIGN) * SPLIT_K_ALIGN


def split_tf32_prepass_launch(p: Problem) -> Launch:
    """One block per 32 x 32 tile: A's (m x kp) then B's (kp x n), kp = k rounded up to 4; at least one block.
    A programmatic dependent: it waits for the previous GEMM, which reads its outputs, before writing them."""
    kp = split_tf32_k(p.k) // 3
    tiles = cdiv(p.m, SPLIT_TILE) * cdiv(kp, SPLIT_TILE) + cdiv(kp, SPLIT_TILE) * cdiv(p.n, SPLIT_TILE)
    return Launch((max(1, tiles), 1, 1), (SPLIT_TILE, 8, 1), dependent=True)


SPLIT_TF32_PREPASS = Prepass(
    "wgmma_3xtf32_split",
    (PrepassOutput("A3", lambda p: (p.m, split_tf32_k(p.k))),
     PrepassOutput("BT3", lambda p: (p.n, split_tf32_k(p.k)))),
    split_tf32_prepass_launch)


def tile_split_k_variants(define: str, launch: Callable[[Problem], Launch],
                          tile: Callable[[int, str], tuple[int, int, int]], splits: tuple[int, ...] = (2, 4, 8, 16, 32)
                          ) -> tuple[Variant, ...]:
    """Split-K builds of a kernel with one block per output tile (kernels/split_k.cuh, host contract): -D{define}=S,
    the method's launch with grid z = S, and a workspace of S partial tiles of tile_m x tile_n accumulators per
    output tile (the launch's grid x times y of them), then a 32-bit counter per tile."""

    def variant(s: int) -> Variant:
        def split_launch(p: Problem) -> Launch:
            base = launch(p)
            return replace(base, grid=(base.grid[0], base.grid[1], s))

        def workspace(p: Problem) -> int:
            grid = launch(p).grid
            tile_m, tile_n, _ = tile(p.block, p.dtype.name)
            return grid[0] * grid[1] * (s * tile_m * tile_n * p.dtype.output.itemsize + 4)

        return Variant(f"splitk{s}", (f"{define}={s}",),
                       f"split-K: each tile's k steps in {s} slices on {s} blocks (grid z); the last slice to finish "
                       "sums the partials in slice order through a workspace (deterministic). For too few tiles or "
                       "deep K", launch=split_launch, workspace=workspace)

    return tuple(variant(s) for s in splits)


# dmma (08_dmma.cu): dmma::DefaultConfig, 128x128x16 tiles, 256 threads, 149,504 bytes of shared memory.
DMMA_LAUNCH, DMMA_TILE = tiles_by_dtype({"float64": (128, 128, 16, 256, 149_504)})


def ws_rung(name: str, description: str, dtypes: tuple[str, ...], source: str, template: str, bk: int,
            operands: tuple[str, str], bn: int = 256, **fields) -> Method:
    """A rung on the warp-specialised pipeline (kernel 12, and the files that reuse it with other operands): a
    persistent grid of 384-thread CTAs over 128 x `bn` tiles (256, or 128 for a rung built at WGMMA_WS_BN=128 by its
    compile options), fed by TMA in 128-byte rows of `bk` elements, built for sm_90a. `operands` names the tensor
    maps' operands: A (or a pre-pass's A3), then B, read in 64-column strips, or a K-major Bᵀ (BT, BT3) read in
    128-row boxes like A. `fields` are the rest of the Method's (variants, choose, requires, prepass, ...)."""
    a, b = operands
    b_map = TensorMap(b, 64, 64) if b == "B" else TensorMap(b, 128, bk)
    return Method(name, description, dtypes, backend=PYCUDA, source=source, template=template, launch=ws_launch(bn=bn),
                  tile=lambda block, dtype: (128, bn, bk), tensor_maps=(TensorMap(a, 128, bk), b_map),
                  launch_bounds=(384, 1), **{"requires": HOPPER, **fields})


METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method(
            "numpy",
            "numpy matmul on the CPU (BLAS), the CPU reference line",
            ("float32", "float64"),
            backend=NUMPY,
            reference_line=True,
        ),
        Method(
            "naive",
            "one thread per element of C, global memory only",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="01_naive.cu",
            template="naive_matmul<{T}, {Acc}>",
            launch=square_thread_blocks,
            tile=lambda block, dtype: (1, 1, 1),  # each thread reads its own row of A and column of B
        ),
        Method(
            "tiled_runtime_block",
            "the tiled kernel with the tile size read at run time (dynamic shared memory), inner loop kept rolled",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="02_tiled_runtime_block.cu",
            template="tiled_runtime_block_matmul<{T}, {Acc}>",
            launch=square_thread_blocks_dynamic_tiles,
            tile=_tiled,
        ),
        Method(
            "tiled",
            "the source study's kernel: BLOCK x BLOCK shared-memory tiles, BLOCK fixed at compile time",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="03_tiled.cu",
            template="tiled_matmul<{T}, {Acc}, {BLOCK}>",
            launch=square_thread_blocks,
            tile=_tiled,
        ),
        Method(
            "tiled_unrolled",
            "the tiled kernel with an explicit #pragma unroll on the inner loop (the A100 post's step)",
            SIMT_DTYPES,
            backend=PYCUDA,
            block_axis=True,
            source="04_tiled_unrolled.cu",
            template="tiled_unrolled_matmul<{T}, {Acc}, {BLOCK}>",
            launch=square_thread_blocks,
            tile=_tiled,
        ),
        Method(
            "wmma",
            "tensor cores through nvcuda::wmma, fp16 in, fp32 accumulate; one warp per 16x16 tile of C",
            ("float16",),
            backend=PYCUDA,
            source="05_wmma.cu",
            template="wmma_matmul",
            launch=fixed_tiles(32, 32, 128),
            tile=lambda block, dtype: (16, 16, 16),  # one warp per 16x16 tile of C, loading its own strips
        ),
        Method(
            "register_tiled",
            "128x128 block tiles, BK=8, each of 256 threads computing an 8x8 sub-tile of C in registers",
            ("float32", "float64"),
            backend=PYCUDA,
            source="06_register_tiled.cu",
            template="register_tiled_matmul<{T}, {Acc}>",
            launch=fixed_tiles(128, 128, 256),
            tile=lambda block, dtype: (128, 128, 8),
        ),
        Method(
            "warptiled",
            "SIMT: 8 warps of 64x64 (fp32) or 64x32 (fp64) warp tiles, register double buffering, A transposed "
            "in shared memory for LDS.128, a 3-4 stage cp.async pipeline, grouped block order",
            ("float32", "float64"),
            backend=PYCUDA,
            source="07_warptiled.cu",
            template="warptiled_matmul<{T}, {Acc}>",
            launch=WARPTILED_LAUNCH,
            tile=WARPTILED_TILE,
            launch_bounds=(256, 1),
            variants=tile_split_k_variants("WARPTILED_SPLIT_K", WARPTILED_LAUNCH, WARPTILED_TILE),
            choose=configs.wave_split_k(WARPTILED_TILE, min_slice_k=64),
        ),
        Method(
            "warptiled_mbarrier",
            "SIMT fp32: warptiled with a full and an empty mbarrier per stage instead of a block barrier per "
            "k slice (warps drift up to a slice apart), 4 stages of BK 32; a second tile configuration, for the "
            "study's answer to take the faster per shape",
            ("float32",),
            backend=PYCUDA,
            source="07_warptiled.cu",
            template="warptiled_mbarrier_matmul<{T}, {Acc}>",
            launch=WARPTILED_MBARRIER_LAUNCH,
            tile=WARPTILED_MBARRIER_TILE,
            launch_bounds=(256, 1),
            default_study=False,
        ),
        Method(
            "dmma",
            "fp64 on the tensor cores: mma.sync m16n8k4 (DMMA), 128x128x16 block tiles of 8 warps, a 4-stage "
            "cp.async pipeline, grouped block order",
            ("float64",),
            backend=PYCUDA,
            source="08_dmma.cu",
            template="dmma_matmul<{T}, {Acc}>",
            launch=DMMA_LAUNCH,
            tile=DMMA_TILE,
            launch_bounds=(256, 1),
            variants=tile_split_k_variants("DMMA_SPLIT_K", DMMA_LAUNCH, DMMA_TILE),
            # A k step costs DMMA half the time it costs the SIMT fp32/fp64 rungs: twice the minimum depth a slice.
            choose=configs.wave_split_k(DMMA_TILE, min_slice_k=128),
        ),
        Method(
            "wmma_tiled",
            "tensor cores, 8 warps per 128x128 tile of C, each warp 64x32 from shared-memory tiles (BK=32)",
            ("float16",),
            backend=PYCUDA,
            source="09_wmma_tiled.cu",
            template="wmma_tiled_matmul",
            launch=fixed_tiles(128, 128, 256),
            tile=lambda block, dtype: (128, 128, 32),
        ),
        Method(
            "mma_async_copy",
            "the pre-Hopper rung: Ampere-style mma.sync m16n8k16 with ldmatrix fragments, 128x256x32 block tiles "
            "of 8 warps (64x64 each), a 4-stage cp.async pipeline through XOR-swizzled shared memory, grouped "
            "block order",
            ("float16", "bfloat16"),
            backend=PYCUDA,
            source="10_mma_async_copy.cu",
            template="mma_async_copy_matmul<{T}>",
            launch=fixed_tiles(128, 256, 256, shared_bytes=98_304),
            tile=lambda block, dtype: (128, 256, 32),
            launch_bounds=(256, 1),
            requires=Requirements(min_compute_capability=(8, 0)),
        ),
        Method(
            "wgmma_tma",
            "Hopper's first rung: one warpgroup per 64x128 tile of C, wgmma fed by TMA tiles on one mbarrier, "
            "one stage (no overlap of copy and math)",
            ("float16", "bfloat16"),
            backend=PYCUDA,
            source="11_wgmma_tma.cu",
            template="wgmma_tma_matmul<{T}>",
            launch=fixed_tiles(64, 128, 128, shared_bytes=25_616),
            tile=lambda block, dtype: (64, 128, 64),
            tensor_maps=(TensorMap("A", 64, 64), TensorMap("B", 64, 64)),
            launch_bounds=(128, 1),
            requires=HOPPER,
        ),
        ws_rung(
            "wgmma_warp_specialized",
            "Hopper, fast: a TMA producer warpgroup and two wgmma consumer warpgroups (setmaxnreg), 128x256 "
            "tiles, 4 stages, persistent grid in grouped order, 2-CTA clusters sharing B by TMA multicast",
            ("float16", "bfloat16"), "12_wgmma_warp_specialized.cu", "wgmma_ws_matmul<{T}>", 64, ("A", "B"),
            variants=(*ws_variants(groups_along_n=True, clusters=(1, 2, 4)), *ws_bn128_variants()),
            choose=configs.persistent_split_k(128, 256, 64, narrow_n=128),
        ),
        ws_rung(
            "wgmma_tf32",
            "Hopper tf32: wgmma_warp_specialized's pipeline with both operands K-major (wgmma m64n256k8 tf32); B is "
            "transposed on every launch (cuBLAS geam), and that transpose is timed with the kernel",
            ("tf32",), "13_wgmma_tf32.cu", "wgmma_tf32_matmul<{T}>", 32, ("A", "BT"),
            requires=Requirements((9, 0), arch_specific=True, modules=("cuda.bindings", "cupy")),
            variants=ws_variants(groups_along_n=False, clusters=(1, 2)),
            choose=configs.persistent_split_k(128, 256, 32),
        ),
        ws_rung(
            "wgmma_3xtf32",
            "Hopper fp32 at tensor-core speed (3xTF32): a pre-pass splits A and B into big and small tf32 parts "
            "(and transposes B), then wgmma_tf32's pipeline sums big·small + small·big + big·big over K' = 3k; "
            "the pre-pass is timed with the GEMM",
            ("float32",), "14_wgmma_3xtf32.cu", "wgmma_3xtf32_matmul<{T}>", 32, ("A3", "BT3"),
            prepass=SPLIT_TF32_PREPASS,
            # wgmma_tf32's configurations; split-K slices also shorten each tensor-core sum (its accuracy).
            variants=ws_variants(groups_along_n=False, clusters=(1, 2)),
        ),
        ws_rung(
            "wgmma_int8",
            "Hopper int8: wgmma_warp_specialized's pipeline on int8 operands, both K-major (wgmma m64n256k32 s8, "
            "exact int32 accumulation and output); B is transposed on every launch by a byte-transpose kernel "
            "(kernels/transpose_bytes.cu), and that transpose is timed with the kernel",
            ("int8",), "15_wgmma_int8.cu", "wgmma_int8_matmul<{T}>", 128, ("A", "BT"),
            # No split-K builds: their workspace sums fp32 partials (the kernel refuses WGMMA_WS_SPLIT_K > 1).
            variants=tuple(v for v in ws_variants(groups_along_n=False, clusters=(1, 2)) if v.workspace is None),
        ),
        ws_rung(
            "wgmma_fp8",
            "Hopper FP8: the int8 rung's pipeline on e4m3 operands with per-tensor scales (wgmma m64n256k32 e4m3, "
            "fp32 accumulation, the scales applied to the accumulators as they leave); B is transposed on every "
            "launch by the byte-transpose kernel, timed with the GEMM",
            ("float8_e4m3",), "16_wgmma_fp8.cu", "wgmma_fp8_matmul<{T}>", 128, ("A", "BT"),
            variants=(*ws_variants(groups_along_n=False, clusters=(1, 2)), *fp8_bn128_variants()),
            choose=configs.persistent_split_k(128, 256, 128),
        ),
        ws_rung(
            "wgmma_fp8_block",
            "Hopper FP8 with block scales (DeepSeek-V3's: A 1x128, B 128x128): wgmma_fp8's 128x128-tile build with "
            "promoted sums (m64n128k32 e4m3), each k step's partial (one 128-k scale block) added into the fp32 "
            "accumulators times its rows' A scales and its tile's B scale; B transposed on every launch by the "
            "byte-transpose kernel, timed with the GEMM",
            ("float8_e4m3_block",), "17_wgmma_fp8_block.cu", "wgmma_fp8_block_matmul<{T}>", 128, ("A", "BT"),
            bn=128, compile_options=tuple(f"-D{d}" for d in FP8_BLOCK_DEFINES),
            variants=fp8_block_variants(),
            choose=configs.persistent_split_k(128, 128, 128),
        ),
        Method(
            "cublas",
            "cuBLAS GEMM through CuPy (gemmEx with the dtype's data and compute types); the vendor line",
            ("float16", "bfloat16", "tf32", "float32", "float64", "int8"),
            backend=CUBLAS,
            reference_line=True,
        ),
        Method(
            "cublaslt",
            "cuBLASLt FP8 GEMM through nvmath-python's bindings (e4m3 with per-tensor scale pointers, or block "
            "scales: VEC128 for A, BLK128x128 for B; fp32 accumulation and output); B is transposed first on every "
            "call (cuBLASLt's FP8 wants both operands K-major), timed with the GEMM; the vendor line for FP8",
            ("float8_e4m3", "float8_e4m3_block"),
            backend=CUBLASLT,
            reference_line=True,
            requires=Requirements(min_compute_capability=(8, 9)),
            variants=(Variant("fast_accum", description="CUBLASLT_MATMUL_DESC_FAST_ACCUM on: the tensor cores' own "
                                                        "accumulation over all of k, without cuBLASLt's promotion "
                                                        "(float8_e4m3 only: block scales are applied to each 128-k "
                                                        "partial)", dtypes=("float8_e4m3",)),),
        ),
    ]
}


def register(method: Method) -> None:
    """Add a method (a kernel of one's own, or a test's throwaway one) after the built-in ones."""
    METHODS[method.name] = method


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(METHODS)}") from None


def vendor_methods() -> tuple[str, ...]:
    """The vendor libraries' GPU lines (cuBLAS, cuBLASLt): each dtype has one of them, its "× cuBLAS" denominator."""
    return tuple(name for name, m in METHODS.items() if m.reference_line and m.on_gpu)


def vendor_method(dtype: str) -> str:
    """The vendor's line for a dtype: the first GPU reference-line method that runs it (cuBLAS; cuBLASLt for FP8)."""
    for name, m in METHODS.items():
        if m.reference_line and m.on_gpu and dtype in m.dtypes:
            return name
    raise KeyError(f"no vendor library method runs {dtype!r}")


def default_methods() -> tuple[str, ...]:
    """The default study's methods (config `methods: default`), in ladder order."""
    return tuple(name for name, m in METHODS.items() if m.default_study)


def compiled_methods() -> tuple[str, ...]:
    return tuple(name for name, m in METHODS.items() if m.compiled)

