"""Launchers: a zero-argument callable that runs one method once over the job's device buffers.

- `kernel`: our compiled kernels. Pointer kernels go through PyCUDA's prepared call; kernels fed by TMA take
  tensor maps by value (64-byte aligned, which PyCUDA's packed arguments do not deliver intact) and may run in
  thread-block clusters, so they go through cuda-bindings' cuLaunchKernelEx, in PyCUDA's primary context.
- `cublas`: cuBLAS gemmEx through CuPy's handle, with the dtype record's data and compute types.
- `cublaslt`: cuBLASLt's FP8 GEMM, in its own module (launch/cublaslt.py), which `make` imports only for the jobs
  that call it.

A method may name a pre-pass (specs.Prepass): a kernel of its own module that writes the operands its tensor maps
read, into buffers allocated once per launcher; it runs before the GEMM in every launch, so it is timed with it.

A kernel of ours may be a named variant of its method (specs.Variant): the job hands its Variant record over
(`make` resolves a name, from bench/ or a test, once); its launch geometry and workspace come from that record,
its symbol from kernels.symbol, and its cubin must have been built for that variant.

Every launch is queued on the legacy default stream, the one the timing events and the stream hold use.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Callable

import numpy as np

from matmul_study.launch.kernels import symbol, template_block, trailing_arguments
from matmul_study.launch.operands import (DeviceBuffers, KMajorBytes, PitchedOperand, PrepassOperand,
                                        transposed_operand)

from matmul_study.core import dtypes
from matmul_study.core.specs import Variant

if TYPE_CHECKING:  # annotations only
    from matmul_study.core.specs import Launch, Method, Problem


# cudaDataType_t and cublasComputeType_t values, for CuPy builds that do not export every name.
CUDA_DATA_TYPES = {"CUDA_R_32F": 0, "CUDA_R_64F": 1, "CUDA_R_16F": 2, "CUDA_R_16BF": 14, "CUDA_R_8I": 3,
                   "CUDA_R_32I": 10}
CUBLAS_COMPUTE_TYPES = {"CUBLAS_COMPUTE_32F": 68, "CUBLAS_COMPUTE_64F": 70,
                        "CUBLAS_COMPUTE_32F_FAST_TF32": 77, "CUBLAS_COMPUTE_32I": 72}
# The tensor map's element type, by the job's dtype. tf32 is fp32 in memory, read as TFLOAT32: the copy engine
# rounds each element to tf32 (to nearest) as it lands in shared memory, where wgmma would otherwise truncate the
# raw fp32 bits. Measured on an H200 (bench/compare.py): the relative error at 4096³ and 8192³ fell
# from 8.2e-4 to 3.1e-4, cuBLAS's own, at the same rate.
TMA_DATA_TYPES = {"float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
                  "tf32": "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32", "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
                  "int8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",  # 8-bit operands: bytes moved as they are
                  "float8_e4m3": "CU_TENSOR_MAP_DATA_TYPE_UINT8", "float8_e4m3_block": "CU_TENSOR_MAP_DATA_TYPE_UINT8"}


def make(method: Method, problem: Problem, buffers: DeviceBuffers, cubin: str | None,
         variant: Variant | str | None = None) -> Callable[[], None]:
    """The launcher the method's backend names (Backend.launcher), over the job's buffers, for `variant`: the job's
    Variant record, or a name of one of the method's variants (bench/ and tests; None: the default build), resolved
    here, once. A launcher that is not a function of this module is the function of that name in its own module
    (launch/cublaslt.py), imported only when a job needs it, so that only that job loads the library it calls."""
    name = method.backend.launcher
    build = globals().get(name)
    if build is None:
        import importlib

        build = getattr(importlib.import_module(f"matmul_study.launch.{name}"), name)
    return build(method, problem, buffers, cubin, variant if isinstance(variant, Variant) else method.variant(variant))


def kernel(method: Method, problem: Problem, buffers: DeviceBuffers, cubin: str | None,
           variant: Variant) -> Callable[[], None]:
    """The PyCUDA backend's launcher: a kernel of ours, fed by pointers or by tensor maps."""
    if method.tensor_maps:
        return tensor_map_kernel(method, problem, buffers, cubin, variant)
    return pointer_kernel(method, problem, buffers, cubin, variant)


def _symbol(method: Method, problem: Problem, variant: Variant) -> str:
    return symbol(method.name, problem.dtype.name, template_block(method.name, problem.block), variant.name)


def geometry(method: Method, p: Problem, variant: Variant) -> Launch:
    """The build's launch geometry: the variant's own where it has one, else the method's (Method.launch_for, from
    the record the job holds instead of its name)."""
    return (variant.launch or method.launch)(p)


def trailing_arguments_of(method: Method, p: Problem, variant: Variant, buffers: DeviceBuffers, workspace,
                          operands: dict | None = None) -> tuple[ctypes.c_uint64 | ctypes.c_int, ...]:
    """The arguments a kernel takes after k (kernels.trailing_arguments), in order, as the driver reads them: the
    build's workspace, then the scales, pointers: those the method's pre-pass writes (Prepass.scales, one of its
    `operands`: 3xFP16's per row and column), else the job's (DeviceBuffers.scales: FP8's per tensor or per block);
    then B's L2 flag, an int (specs.Method.stream_b, asked of the build's launch geometry for this problem)."""
    names = trailing_arguments(method.name, p.dtype.name, variant.name)
    pointers = {"workspace": workspace, "scales": None}
    if method.prepass is not None and method.prepass.scales is not None:
        pointers["scales"] = operands[method.prepass.scales].pointer
    elif "scales" in names:
        if buffers.scales is None:
            raise ValueError(f"{method.name} in {p.dtype.name} needs its scales on the device (DeviceBuffers.scales)")
        pointers["scales"] = buffers.scales.gpudata
    return tuple(ctypes.c_int(int(method.stream_b(p, geometry(method, p, variant)))) if name == "stream_b"
                 else ctypes.c_uint64(int(pointers[name])) for name in names)


def kernel_workspace(p: Problem, variant: Variant):
    """The build's workspace (specs.Variant.workspace: a split-K build's partial tiles and counters), allocated
    once per launcher and zeroed, or None where the build takes none. The kernel keeps its counters at zero
    between launches, so the launches of one launcher share it (one at a time: they are queued on one stream)."""
    import pycuda.driver as cuda

    size = variant.workspace(p) if variant.workspace else 0
    if size <= 0:
        return None
    workspace = cuda.mem_alloc(size)
    cuda.memset_d8(workspace, 0, size)
    return workspace


def pointer_kernel(method: Method, p: Problem, buffers: DeviceBuffers, cubin: str,
                   variant: Variant) -> Callable[[], None]:
    import pycuda.driver as cuda

    if geometry(method, p, variant).dependent and waits_for_previous_grid(cubin):
        return dependent_pointer_kernel(method, p, buffers, cubin, variant)
    func = cuda.module_from_file(cubin).get_function(_symbol(method, p, variant))
    workspace = kernel_workspace(p, variant)
    trailing = trailing_arguments_of(method, p, variant, buffers, workspace)
    func.prepare("PPPiii" + "".join("i" if isinstance(x, ctypes.c_int) else "P" for x in trailing))
    launch = geometry(method, p, variant)
    if launch.shared_bytes > 48 * 1024:
        func.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
    args = (buffers.a.gpudata, buffers.b.gpudata, buffers.c.gpudata, np.int32(p.m), np.int32(p.n), np.int32(p.k),
            *(x.value for x in trailing))

    def launch_once():
        func.prepared_call(launch.grid, launch.threads, *args, shared_size=launch.shared_bytes)

    launch_once.keep_alive = workspace
    return launch_once


def waits_for_previous_grid(cubin: str) -> bool:
    """Whether a build that asks to be launched as a programmatic dependent (Launch.dependent) can be: machine code
    (ELF) on a GPU of compute capability 9.0 or newer, which then is its target, where the kernels wait for the
    previous grid (griddepcontrol.wait, compiled for sm_90 and newer only). PTX for an older target, compiled here
    just in time, has no wait, and an older GPU no programmatic launch: those are launched plainly."""
    import pycuda.driver as cuda

    with open(cubin, "rb") as image:
        elf = image.read(4) == b"\x7fELF"
    return elf and cuda.Context.get_device().compute_capability() >= (9, 0)


def dependent_pointer_kernel(method: Method, p: Problem, buffers: DeviceBuffers, cubin: str,
                             variant: Variant) -> Callable[[], None]:
    """A pointer kernel launched as a programmatic dependent of the previous kernel on the stream (PDL: its blocks
    may start while that one ends; the kernel waits for it before its first global access), which PyCUDA's launch
    cannot ask for: cuLaunchKernelEx through cuda-bindings, in PyCUDA's primary context, with the same arguments."""
    from cuda.bindings import driver as cu

    module, image, func, launch = load_function(method, p, cubin, variant)
    workspace = kernel_workspace(p, variant)
    args = (*(ctypes.c_uint64(int(x)) for x in (buffers.a.gpudata, buffers.b.gpudata, buffers.c.gpudata)),
            ctypes.c_int(p.m), ctypes.c_int(p.n), ctypes.c_int(p.k),
            *trailing_arguments_of(method, p, variant, buffers, workspace))
    params = (ctypes.c_void_p * len(args))(*(ctypes.addressof(a) for a in args))
    config = launch_config(launch)

    def launch_once():
        checked(cu.cuLaunchKernelEx(config, func, ctypes.addressof(params), 0))

    launch_once.keep_alive = (module, image, args, params, config, workspace)
    return launch_once


def load_function(method: Method, p: Problem, cubin: str, variant: Variant):
    """The build's kernel through cuda-bindings, for cuLaunchKernelEx: its module (loaded into the current, primary
    context from the cubin's bytes, which must outlive it), the bytes, the function, and its launch geometry, with
    the function's dynamic shared-memory limit raised to it."""
    from pathlib import Path

    from cuda.bindings import driver as cu

    checked(cu.cuInit(0))
    image = np.frombuffer(Path(cubin).read_bytes(), dtype=np.uint8).copy()
    module = checked(cu.cuModuleLoadData(image.ctypes.data))
    func = checked(cu.cuModuleGetFunction(module, _symbol(method, p, variant).encode()))
    launch = geometry(method, p, variant)
    if launch.shared_bytes > 48 * 1024:
        checked(cu.cuFuncSetAttribute(
            func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes))
    return module, image, func, launch


def as_dependent(method: Method, variant: Variant) -> Variant:
    """`variant` launched as a programmatic dependent of the previous kernel (Launch.dependent), for a method whose
    kernel waits for the previous grid itself (Method.waits_for_previous_grid); ValueError for one that does not."""
    from dataclasses import replace

    if not method.waits_for_previous_grid:
        raise ValueError(f"{method.name}'s kernel does not wait for the previous grid (griddepcontrol.wait), so it "
                         "cannot be launched as a programmatic dependent")
    base = variant.launch or method.launch
    return replace(variant, launch=lambda p: replace(base(p), dependent=True))


def checked(result):
    """cuda-bindings returns (CUresult, value...): raise on an error, return the value(s)."""
    from cuda.bindings import driver as cu

    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        _, text = cu.cuGetErrorString(err)
        raise RuntimeError(f"CUDA driver error {err.name}: {text.decode() if text else ''}")
    return values[0] if len(values) == 1 else tuple(values)


def prepass(method: Method, p: Problem, buffers: DeviceBuffers, module, operands: dict) -> Callable[[], None] | None:
    """The method's pre-pass (specs.Prepass), or None: its outputs, allocated here and added to `operands` for
    the tensor maps, and a callable that launches it from the method's module over A and B."""
    from cuda.bindings import driver as cu

    spec = method.prepass
    if spec is None:
        return None
    for output in spec.outputs:
        storage = dtypes.get(output.storage) if output.storage else p.dtype
        operands[output.name] = PrepassOperand(*output.shape(p), storage.itemsize, output.storage)
    func = checked(cu.cuModuleGetFunction(module, spec.symbol.encode()))
    config = launch_config(spec.launch(p))
    pointers = [buffers.a.gpudata, buffers.b.gpudata, *(operands[o.name].pointer for o in spec.outputs)]
    args = (*(ctypes.c_uint64(int(x)) for x in pointers), ctypes.c_int(p.m), ctypes.c_int(p.n), ctypes.c_int(p.k))
    params = (ctypes.c_void_p * len(args))(*(ctypes.addressof(a) for a in args))

    def launch_once():
        checked(cu.cuLaunchKernelEx(config, func, ctypes.addressof(params), 0))

    launch_once.keep_alive = (args, params, config)
    return launch_once


def encode_tensor_map(spec, operand: PitchedOperand, dtype: str):
    from cuda.bindings import driver as cu

    swizzles = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    return checked(cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, TMA_DATA_TYPES[dtype]), 2, operand.pointer,
        [u64(operand.cols), u64(operand.rows)],  # innermost dimension first
        [u64(operand.pitch * operand.itemsize)],
        [u32(spec.box_cols), u32(spec.box_rows)],
        [u32(1), u32(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzles[spec.swizzle]}"),
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        # NONE fills out-of-bounds elements with zeros (the NaN request is the other choice).
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))


def launch_config(launch, stream: int = 0):
    """cuLaunchKernelEx's configuration: grid, block, dynamic shared memory, the cluster, if any, and programmatic
    stream serialisation for kernels that wait for the previous grid themselves (launch.dependent)."""
    from cuda.bindings import driver as cu

    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = launch.grid
    config.blockDimX, config.blockDimY, config.blockDimZ = launch.threads
    config.sharedMemBytes = launch.shared_bytes
    config.hStream = cu.CUstream(stream)
    attrs = []
    if launch.clustered:
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = launch.cluster
        attrs.append(attr)
    if launch.dependent:
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config


def tensor_map_kernel(method: Method, p: Problem, buffers: DeviceBuffers, cubin: str,
                      variant: Variant) -> Callable[[], None]:
    from cuda.bindings import driver as cu

    module, image, func, launch = load_function(method, p, cubin, variant)
    if launch.clustered and launch.persistent:
        # Not every SM can host a cluster at once (clusters stay inside a GPC): a persistent grid is only as
        # large as the clusters that fit together.
        fits = checked(cu.cuOccupancyMaxActiveClusters(func, launch_config(launch)))
        launch = launch.resized(min(launch.grid[0], max(1, int(fits)) * launch.cluster[0]))
    item = p.dtype.itemsize
    specs = variant.tensor_maps or method.tensor_maps  # the build's boxes
    needed = {spec.operand for spec in specs}
    operands = {}
    if "A" in needed:
        operands["A"] = PitchedOperand(buffers.a, p.m, p.k, item)
    if "B" in needed:
        operands["B"] = PitchedOperand(buffers.b, p.k, p.n, item)
    # A pre-pass writes the operands it names (wgmma_tf32's Bt, 3xTF32's split A and B); a build whose maps read
    # none of them (wgmma_tf32's *_smem_bt, which reads B) runs without it (Method.prepass_of).
    runs = method.prepass_of(variant)
    written = {o.name for o in runs.outputs} if runs is not None else set()
    if "BT" in needed and "BT" not in written:
        operands["BT"] = transposed_operand(buffers.b, p.k, p.n, item, p.dtype.storage)
    before = prepass(method, p, buffers, module, operands) if runs is not None else None  # adds its outputs
    maps = {spec.operand: encode_tensor_map(spec, operands[spec.operand],
                                            getattr(operands[spec.operand], "storage", None) or p.dtype.name)
            for spec in specs}
    first, second = (spec.operand for spec in specs)
    config = launch_config(launch)
    # kernelParams as the driver reads it: an array of pointers to each argument's bytes (a CUtensorMap is
    # copied by value from its own 64-byte-aligned storage).
    m, n = (p.n, p.m) if launch.transposed else (p.m, p.n)  # a kernel of Cᵀ = Bᵀ·Aᵀ takes (n, m, k)
    scalars = (ctypes.c_uint64(int(buffers.c.gpudata)), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(p.k))
    workspace = kernel_workspace(p, variant)  # a split-K build's
    scalars += trailing_arguments_of(method, p, variant, buffers, workspace, operands)
    params = (ctypes.c_void_p * (2 + len(scalars)))(maps[first].getPtr(), maps[second].getPtr(),
                                                    *(ctypes.addressof(s) for s in scalars))

    def launch_once():
        for operand in operands.values():
            operand.refresh()
        if before is not None:
            before()
        checked(cu.cuLaunchKernelEx(config, func, ctypes.addressof(params), 0))

    # The module, the padded and pre-pass buffers, the maps and the argument storage live as long as the launcher.
    launch_once.keep_alive = (module, image, operands, maps, scalars, params, before, workspace)
    return launch_once


def cublas(method: Method, p: Problem, buffers: DeviceBuffers, cubin: str | None = None,
           variant: Variant | None = None) -> Callable[[], None]:
    """The CuPy backend's launcher: cuBLAS gemmEx on the job's buffers (no copies). cuBLAS has no variants: `make`
    refuses any name but the default build's."""
    import cupy
    from cupy_backends.cuda.libs import cublas as lib

    if p.dtype.cublas_types is None:
        raise ValueError(f"cuBLAS has no GEMM for {p.dtype.name}")
    in_name, out_name, compute_name = p.dtype.cublas_types
    in_type = getattr(cupy.cuda.runtime, in_name, CUDA_DATA_TYPES[in_name])
    out_type = getattr(cupy.cuda.runtime, out_name, CUDA_DATA_TYPES[out_name])
    compute = getattr(lib, compute_name, CUBLAS_COMPUTE_TYPES[compute_name])
    # alpha and beta have the compute type's precision (int32 for CUBLAS_COMPUTE_32I).
    scalar = {"CUBLAS_COMPUTE_64F": np.float64, "CUBLAS_COMPUTE_32I": np.int32}.get(compute_name, np.float32)
    one, zero = np.array(1, scalar), np.array(0, scalar)
    handle = cupy.cuda.device.get_cublas_handle()
    if compute_name == "CUBLAS_COMPUTE_32I":
        return cublas_int8(lib, handle, p, buffers, (in_type, out_type, compute), (one, zero))
    a, b, c = int(buffers.a.gpudata), int(buffers.b.gpudata), int(buffers.c.gpudata)
    m, n, k = p.m, p.n, p.k

    def gemm_ex():
        # cuBLAS is column-major: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so pass B first.
        lib.gemmEx(handle, lib.CUBLAS_OP_N, lib.CUBLAS_OP_N, n, m, k, one.ctypes.data, b, in_type, n, a, in_type,
                   k, zero.ctypes.data, c, out_type, n, compute, -1)  # -1: CUBLAS_GEMM_DEFAULT

    return gemm_ex


# cuBLAS's int8 GEMM (CUDA_R_8I in, CUDA_R_32I out, CUBLAS_COMPUTE_32I). cublasGemmEx takes it only with A and B
# 4-byte aligned, lda and ldb multiples of 4 and int32 alpha and beta (cuBLAS documentation, cublasGemmEx). Its
# int8 tensor-core (IMMA) kernels want more (cublasLtMatmul, "To use IMMA kernels", regular data ordering): the "TN"
# format, i.e. op(A) transposed and op(B) not (both operands K-major), the leading dimensions of A, B and C and the
# dimensions m and k multiples of 4, pointers 4-byte (better 16-byte) aligned; on an H200 with CUDA 13.0 a C whose
# leading dimension was not a multiple of 4 (n = 65, 511) failed with a CUBLASError. cuBLAS's A is our Bᵀ (it
# computes Cᵀ = Bᵀ·Aᵀ in its column-major terms): our row-major A (m x k) is K-major already, our row-major B
# (k x n) is not. So B is transposed first on every call (operands.KMajorBytes: the int8 rung's own transpose,
# timed with the GEMM as the rung's is) and the call is TN, with n and k padded to multiples of 4.
# Measured on an H200 (CUDA 13.0, ncu kernel names at 4096³): TN runs the Hopper tensor-core kernel
# sm90_xmma_gemm_i8i32_i8i32_i32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas
# (82 µs; the transpose before it 9.5 µs); NN (B as it is) an Ampere WMMA fallback,
# cutlass_80_wmma_tensorop_i161616gemm_s8_forwardCompat_128x128_32x2_nn_align4 (1.08 ms: about 10x slower than
# transpose + TN, 125 TOPS at 4096³ and 8192³).
CUBLAS_INT8_MULTIPLE = 4


def cublas_int8(lib, handle, p: Problem, buffers: DeviceBuffers, types: tuple, scalars: tuple) -> Callable[[], None]:
    """cuBLAS's int8 gemmEx over the job's buffers, TN: B transposed first, n and k padded to multiples of 4."""
    (in_type, out_type, compute), (one, zero) = types, scalars
    n4, k4 = (-(-x // CUBLAS_INT8_MULTIPLE) * CUBLAS_INT8_MULTIPLE for x in (p.n, p.k))
    ops = KMajorBytes(buffers, p.m, p.n, p.k, n4, k4)
    bt, m = ops.bt, p.m

    def call():
        lib.gemmEx(handle, lib.CUBLAS_OP_T, lib.CUBLAS_OP_N, ops.n, m, ops.k, one.ctypes.data, bt.pointer, in_type,
                   bt.pitch, ops.a_ptr, in_type, ops.ld_a, zero.ctypes.data, ops.c_ptr, out_type, ops.n, compute,
                   -1)  # -1: CUBLAS_GEMM_DEFAULT

    def gemm_ex():
        ops.run(call)

    gemm_ex.keep_alive = (ops, scalars)
    return gemm_ex
