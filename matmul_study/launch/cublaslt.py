"""The cuBLASLt launcher: NVIDIA's FP8 GEMM, the vendor line of float8_e4m3 and float8_e4m3_block (cuBLAS's gemmEx
has no FP8).

It is called through nvmath-python's low-level bindings (nvmath.bindings.cublasLt: raw pointers and descriptors),
not through nvmath.linalg, which would want torch tensors for FP8 operands. C = scale_a * scale_b * (A·B), with the
per-tensor scales read from the device (DeviceBuffers.scales), or with block scales (cuBLASLt's VEC128 and
BLK128x128 scale modes, see BLOCK_SCALE_MODES), and fp32 accumulation and output. Everything that does not change
between launches (handle, descriptors, layouts, the scales in cuBLASLt's layout, the heuristic's algorithm, its
workspace, alpha and beta) is made once per launcher; a launch queues only the copies the layout needs and the
GEMM, on the legacy default stream, like every launcher.

Its own module, imported by launchers.make only when a job needs it, so that nothing else loads nvmath.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Callable

import numpy as np

from matmul_study.launch.operands import DeviceBuffers, KMajorBytes
from matmul_study.core import dtypes

if TYPE_CHECKING:
    from matmul_study.core.specs import Method, Problem, Variant

# cudaDataType_t (nvmath.CudaDataType) of the inputs, by dtype: E4M3 operands with fp32 C and D and fp32 compute
# and scale types are one of cuBLASLt's FP8 combinations (cuBLAS documentation, cublasLtMatmul, FP8 data types).
INPUT_TYPES = {"float8_e4m3": "CUDA_R_8F_E4M3", "float8_e4m3_block": "CUDA_R_8F_E4M3"}

# cuBLASLt's FP8 kernels want A transposed and B not ("TN") and pointers and matrix dimensions aligned to 16 bytes
# (cuBLAS documentation, cublasLtMatmul, "To use FP8 kernels"). Column-major, cuBLAS computes Cᵀ = Bᵀ·Aᵀ (n x m)
# for our row-major C = A·B: its A is our Bᵀ (n x k, K-major, written by the byte transpose on every launch, as for
# cuBLAS's int8 call in launchers.py), its B our A as stored (m x k row-major is k x m column-major, K-major
# already) and its D our C (n x m column-major, leading dimension n). So its M is our n, its N our m, its K our k.
# Measured on an H100 (cuBLASLt 13.1), the heuristic refuses (CUBLAS_STATUS_NOT_SUPPORTED) a K that is
# not a multiple of 16 (8, 65, 68, 72), even with leading dimensions padded to 16, and an M that is not a multiple
# of 4 (33, even with D's leading dimension padded to 36 or 48); it takes M = 4 or 36, and any N (1, 17). Such
# shapes are padded with zeros, which add nothing to the sums: k to a multiple of 16 (the columns of Bᵀ past k, and
# of A through a padded copy made on every launch), n to a multiple of 4 (the rows of Bᵀ past n, and C through a
# padded buffer copied back after the GEMM); those copies are timed with it. m is never padded.
K_ALIGNMENT, N_ALIGNMENT = 16, 4

# Block scales (float8_e4m3_block, cuBLASLt 12.9 and later on Hopper: 1D blocks of 128 k for one operand, 2D blocks of
# 128 x 128 for the other). In the TN call above cuBLAS's A is our Bᵀ and its B our A, so cuBLAS's A takes B's 2D
# scales (BLK128x128_32F) and cuBLAS's B takes A's 1D ones (VEC128_32F), DeepSeek-V3's weights x activations.
# cuBLASLt's scale tensors, each operand seen K-major as it is stored (K rows, its outer dimension X columns) and
# without a stride of their own (cublasLtMatmulDescAttributes has none): VEC128 at x + q * roundup(X, 4), X
# contiguous per k block q; BLK128x128 at q + j * roundup(ceil(K / 128), 4), the k blocks of column block j
# contiguous. This is what PyTorch's torch._scaled_mm hands cuBLASLt (its 1x128 scales "outer-dim-major", stride
# (1, M); its 128x128 ones with a row stride of round_up(ceil(K / 128), 4)) and what NVIDIA's cuBLASMp samples
# compute for a reference; not taken from the cuBLAS documentation, but checked on an H200 (cuBLASLt 13.1) by the
# GPU tests on eight shapes against the fp64 product of the dequantized inputs, which a wrong layout fails. The two
# sources differ on X's padding (X or roundup(X, 4)); padding m to a multiple of 4 (zero rows of A, which add
# nothing) makes them agree. k is padded to a multiple of 128 (zero columns, in whole scale blocks), so that no k block is partial:
# whether cuBLASLt's block-scaled kernels take a partial last block is not measured. Our scale buffer
# (dtypes.block_scale_layout: A's as kb x m, B's as kb x nb) is relaid into these two (block_scales_for_cublaslt)
# once per launcher.
BLOCK_SCALE_MODES = {"A": "BLK128x128_32F", "B": "VEC128_32F"}  # cuBLAS's A (our Bᵀ), cuBLAS's B (our A)
BLOCK_K_ALIGNMENT, BLOCK_M_ALIGNMENT, BLOCK_SCALE_LD_ALIGNMENT = 128, 4, 4

SCALE_STRIDE = 16  # bytes between the launcher's copies of scale_a and scale_b (see cublaslt())

# The most workspace the heuristic may choose algorithms for: cuBLAS recommends 32 MiB on Hopper (cuBLAS
# documentation, cublasSetWorkspace); the chosen algorithm's own need is allocated, once.
MAX_WORKSPACE_BYTES = 32 * 2**20

# Matmul descriptor attributes (cublasLtMatmulDescAttributes_t) each registered variant sets. FAST_ACCUM: the
# tensor cores' partial sums are no longer promoted to fp32 at intervals (cuBLAS documentation); the default build
# leaves cuBLASLt's default, precise accumulation. Measured on an H100 (uniform inputs, two runs of 50
# launches, B's transpose included): relative error 1.1e-4 precise against 1.2e-3 fast at 4096³ (1.9e-3 at 8192³),
# 1108-1114 against 1179-1186 TF/s at 4096³ and 1333-1338 against 1343-1367 TF/s at 8192³.
VARIANT_ATTRIBUTES = {"default": {}, "fast_accum": {"FAST_ACCUM": 1}}


def padded(n: int, k: int, k_alignment: int = K_ALIGNMENT) -> tuple[int, int]:
    """cuBLAS's M and K for our n and k: n rounded up to a multiple of N_ALIGNMENT, k to one of k_alignment
    (K_ALIGNMENT; BLOCK_K_ALIGNMENT with block scales)."""
    return -(-n // N_ALIGNMENT) * N_ALIGNMENT, -(-k // k_alignment) * k_alignment


def block_scales_for_cublaslt(scales, dtype: dtypes.DType, m: int, n: int, k: int,
                              m_padded: int) -> tuple[np.ndarray, np.ndarray]:
    """Our block scale buffer (dtypes.block_scale_layout of an m x k by k x n product) in cuBLASLt's layouts (see
    BLOCK_SCALE_MODES): (A's VEC128 scales for cuBLAS's B, kb x m_padded; B's BLK128x128 scales for cuBLAS's A,
    nb x roundup(kb, 4)), float32, C-ordered, the padding ones (it scales zeros)."""
    sa, sb = dtypes.block_scale_layout(dtype, m, k, n).split(np.asarray(scales, np.float32))
    (kb, nb), align = sb.shape, BLOCK_SCALE_LD_ALIGNMENT
    vec = np.ones((kb, max(m, m_padded)), np.float32)
    vec[:, :m] = sa
    blk = np.ones((nb, -(-kb // align) * align), np.float32)
    blk[:, :kb] = sb.T
    return vec, blk


def _set(setter, dtype_of, target: int, attribute, value) -> None:
    """One attribute of a descriptor or preference, stored in the binding's type for it."""
    buffer = np.array(value, dtype_of(attribute))
    setter(target, attribute, buffer.ctypes.data, buffer.nbytes)


def chosen_algorithm(lt, result) -> dict:
    """The algorithm the heuristic chose, as cuBLASLt's algorithm configuration names it (id, tile, stages, split-K,
    reduction scheme, CTA swizzling, cluster shape...), with its workspace and waves: host calls, made once. An
    attribute this cuBLASLt cannot report is left out."""
    enums = {"TILE_ID": lt.MatmulTile, "STAGES_ID": lt.MatmulStages, "CLUSTER_SHAPE_ID": lt.ClusterShape}
    found = {"workspace_bytes": int(result.workspace_size), "waves": float(result.waves_count)}
    written = np.zeros(1, np.uint64)
    for attribute in lt.MatmulAlgoConfigAttribute:
        value = np.zeros(1, lt.get_matmul_algo_config_attribute_dtype(attribute))
        try:
            lt.matmul_algo_config_get_attribute(result.ptr, attribute, value.ctypes.data, value.nbytes,
                                                written.ctypes.data)
        except lt.cuBLASLtError:
            continue
        number = int(value[0])
        try:
            found[attribute.name.lower()] = enums[attribute.name](number).name
        except (KeyError, ValueError):  # not an enum, or a value newer than the binding's enum
            found[attribute.name.lower()] = number
    return found


def _destroy(lt, handle: int, desc: int, preference: int, layouts: tuple[int, ...]) -> None:
    for layout in layouts:
        lt.matrix_layout_destroy(layout)
    lt.matmul_preference_destroy(preference)
    lt.matmul_desc_destroy(desc)
    lt.destroy(handle)


def cublaslt(method: Method, p: Problem, buffers: DeviceBuffers, cubin: str | None = None,
             variant: Variant | None = None) -> Callable[[], None]:
    """cuBLASLt's FP8 GEMM over the job's buffers: B transposed first ("TN"), n and k (and with block scales m)
    padded where cuBLASLt refuses them (padded, BLOCK_SCALE_MODES). `variant`: the job's Variant record (None: the
    default build). The returned callable's `algorithm` says what cuBLASLt chose (chosen_algorithm)."""
    name = variant.name if variant is not None else "default"
    refuse_unrunnable(method, p, buffers, name)
    import nvmath
    import pycuda.driver as cuda
    from nvmath.bindings import cublas
    from nvmath.bindings import cublasLt as lt

    m, n, k = p.m, p.n, p.k
    block = p.dtype.block_scaled
    n4, kp = padded(n, k, BLOCK_K_ALIGNMENT if block else K_ALIGNMENT)
    mp = -(-m // BLOCK_M_ALIGNMENT) * BLOCK_M_ALIGNMENT if block else m
    ops = KMajorBytes(buffers, m, n, k, n4, kp, m_padded=mp)  # zero padding, copies timed with the call
    b_op, a_ptr, ld_a, c_ptr = ops.bt, ops.a_ptr, ops.ld_a, ops.c_ptr

    fp8, fp32 = getattr(nvmath.CudaDataType, INPUT_TYPES[p.dtype.name]), nvmath.CudaDataType.CUDA_R_32F
    layouts = (lt.matrix_layout_create(fp8, kp, n4, b_op.pitch),  # cuBLAS's A (kp x n4), read transposed
               lt.matrix_layout_create(fp8, kp, mp, ld_a),  # cuBLAS's B (kp x mp)
               lt.matrix_layout_create(fp32, n4, mp, n4))  # C and D (n4 x mp); beta = 0: C is not read
    desc = lt.matmul_desc_create(cublas.ComputeType.COMPUTE_32F, fp32)
    scales, scale_attributes = (block_scale_attributes(lt, buffers, p, mp) if block else
                                tensor_scale_attributes(cuda, buffers))
    attributes = {"TRANSA": cublas.Operation.T, "TRANSB": cublas.Operation.N, **scale_attributes,
                  **VARIANT_ATTRIBUTES[name]}
    for attribute, value in attributes.items():
        _set(lt.matmul_desc_set_attribute, lt.get_matmul_desc_attribute_dtype, desc,
             lt.MatmulDescAttribute[attribute], value)
    preference = lt.matmul_preference_create()
    _set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, preference,
         lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, MAX_WORKSPACE_BYTES)
    handle = lt.create()
    result = heuristic_algorithm(lt, handle, desc, layouts, preference,
                                 f"{method.name}: cuBLASLt", f"{p.dtype.name} {m}x{k}x{n} (cuBLAS's TN {n4}x{mp}x{kp})")
    workspace_bytes = int(result.workspace_size)
    workspace = cuda.mem_alloc(workspace_bytes) if workspace_bytes else None
    scalars = np.array([1.0, 0.0], np.float32)  # alpha and beta, in the scale type (fp32), read from the host
    args = (handle, desc, scalars.ctypes.data, b_op.pointer, layouts[0], a_ptr, layouts[1],
            scalars.ctypes.data + 4, c_ptr, layouts[2], c_ptr, layouts[2],
            result.ptr,  # the heuristic result starts with its algorithm (cublasLtMatmulHeuristicResult_t.algo)
            int(workspace) if workspace is not None else 0, workspace_bytes, 0)  # stream 0: the legacy default

    def matmul():
        ops.run(lambda: lt.matmul(*args))

    matmul.algorithm = chosen_algorithm(lt, result)
    matmul.keep_alive = (ops, scales, workspace, scalars, result)
    # The handle and descriptors go with the launcher (not at exit, when the CUDA context may be gone already).
    weakref.finalize(matmul, _destroy, lt, handle, desc, preference, layouts).atexit = False
    return matmul


def refuse_unrunnable(method: Method, p: Problem, buffers: DeviceBuffers, variant: str) -> None:
    """Refuse, before any library is imported, what this launcher cannot run: a variant it has no settings for,
    a dtype other than the FP8 ones, fast accumulation with block scales, and scales missing from the device."""
    if variant not in VARIANT_ATTRIBUTES:
        raise ValueError(f"{method.name}: the cuBLASLt launcher has no settings for variant {variant!r}; it knows "
                         f"{', '.join(VARIANT_ATTRIBUTES)}")
    if p.dtype.name not in INPUT_TYPES:
        raise ValueError(f"{method.name}: cuBLASLt's FP8 GEMM runs {', '.join(INPUT_TYPES)}, not {p.dtype.name}")
    block = p.dtype.block_scaled
    if block and VARIANT_ATTRIBUTES[variant]:
        raise ValueError(f"{method.name}: variant {variant!r} is for per-tensor scales; {p.dtype.name} runs the "
                         "default build only (block scales are applied to each 128-k partial, which leaves no "
                         "fast accumulation to choose)")
    if buffers.scales is None:
        what = "block scales (dtypes.block_scale_layout)" if block else "per-tensor scales"
        raise ValueError(f"{method.name}: {p.dtype.name} needs its {what} on the device "
                         f"(DeviceBuffers.scales{'' if block else ': float32 scale_a, scale_b'})")


def block_scale_attributes(lt, buffers: DeviceBuffers, p: Problem, m_padded: int) -> tuple[tuple, dict]:
    """The block scales in cuBLASLt's layouts, in device buffers of their own (256-byte aligned), made once, and
    the descriptor attributes that point cuBLAS's A and B at them with their scale modes: (buffers, attributes)."""
    import pycuda.gpuarray as gpuarray

    vec, blk = block_scales_for_cublaslt(buffers.scales.get(), p.dtype, p.m, p.n, p.k, m_padded)
    scales = (gpuarray.to_gpu(blk), gpuarray.to_gpu(vec))
    scale_a, scale_b = (int(x.gpudata) for x in scales)  # cuBLAS's A's (our B's), cuBLAS's B's (our A's)
    modes = {f"{operand}_SCALE_MODE": int(lt.MatmulMatrixScale[mode]) for operand, mode in BLOCK_SCALE_MODES.items()}
    return scales, {**modes, "A_SCALE_POINTER": scale_a, "B_SCALE_POINTER": scale_b}


def tensor_scale_attributes(cuda, buffers: DeviceBuffers) -> tuple[object, dict]:
    """The per-tensor scales copied SCALE_STRIDE bytes apart, and the descriptor attributes that point each of
    cuBLAS's operands at its own: (buffer, attributes).

    Each scale pointer must be 16-byte aligned, where DeviceBuffers.scales holds scale_b 4 bytes after scale_a:
    measured on an H100 (cuBLASLt 13.1), a scale pointer 4 bytes past a 16-byte boundary made
    cublasLtMatmul fail with CUBLAS_STATUS_NOT_SUPPORTED (its heuristic had accepted it), one 16 bytes past ran. So
    the two scales are copied once, here: a job's scales do not change while it runs."""
    scales = cuda.mem_alloc(2 * SCALE_STRIDE)
    for i in range(2):
        cuda.memcpy_dtod(int(scales) + i * SCALE_STRIDE, int(buffers.scales.gpudata) + 4 * i, 4)
    scale_a, scale_b = int(scales), int(scales) + SCALE_STRIDE
    # cuBLAS's A is our Bᵀ, its B our A: each scale goes with its operand.
    return scales, {"A_SCALE_POINTER": scale_b, "B_SCALE_POINTER": scale_a}


def heuristic_algorithm(lt, handle: int, desc: int, layouts: tuple[int, int, int], preference: int, who: str,
                        shape: str):
    """cuBLASLt's heuristic's first algorithm for the descriptor and layouts (its MatmulHeuristicResult); an error
    or no algorithm at all raises RuntimeError naming `who` and the `shape`."""
    result, count = lt.MatmulHeuristicResult(), np.zeros(1, np.int32)
    try:
        lt.matmul_algo_get_heuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], preference, 1,
                                     result.ptr, count.ctypes.data)
    except lt.cuBLASLtError as exc:
        raise RuntimeError(f"{who}'s heuristic failed for {shape}: {exc}") from exc
    if count[0] < 1:
        raise RuntimeError(f"{who} has no algorithm for {shape} on this GPU")
    return result
