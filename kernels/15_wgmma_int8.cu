// int8 tensor-core GEMM for Hopper (sm_90a), method wgmma_int8: signed 8-bit A and B in memory, wgmma
// m64n256k32 .s32.s8.s8, exact int32 accumulation and int32 C.
//
// The pipeline, schedule and epilogue are the warp-specialised family's (kernels/warp_specialized/kernel.cuh), and so
// are its compile definitions (WGMMA_WS_*, from the registry's WsConfig); this file supplies the 8-bit operands with
// int accumulators (operands_bytes.cuh, OpInt8: both operands K-major, B transposed on every launch by
// kernels/transpose_bytes.cu, timed with the GEMM). Split-K builds sum their slices' int32 partials in `workspace`.
//
// Measured on an H200 (bench/compare.py), against cuBLAS int8 in the same run, both with the same timed transpose
// of B in front (cuBLAS's int8 tensor-core kernel also wants B K-major: launch/launchers.py): 4096^3 1302 TOPS,
// 0.970x cuBLAS; 8192^3 1542 TOPS, 1.09x. The transpose alone took 13.9 us at 4096^2 and 44.7 us at 8192^2 (2.4 and
// 3.0 TB/s), 12 % and 6 % of the time. At 4096^3 the stores of C weigh twice as much as in fp16 (the same 128 KiB of
// 32-bit C per tile against half the k-loop time), which the pipeline's epilogue does not hide.
//
// The builds that swap the operands (WGMMA_WS_SWAP_AB=1, the registry's swap*) compute C^T = B^T A^T with B's rows
// read into registers as wgmma's A (operands_bytes.cuh, OpBytesSwapped), and need no transpose of B.
//
// Host contract: the family's (kernel.cuh), with the tensor maps of operands_bytes.cuh.
#pragma once

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_bytes.cuh"

template <typename T>
__device__ __forceinline__ void wgmma_int8_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, int* C, int m,
                                                  int n, int k, int* workspace = nullptr)
{
    static_assert(sizeof(T) == 1, "int8 operands");
#if HOPPER_SM90A
    // (sizeof(T) keeps the condition dependent, so that only the build's own policy is instantiated)
    if constexpr (wgmma_ws::SWAP_AB && sizeof(T) == 1)  // tmap_a over B's rows, tmap_bt over A, (m, n) = (n, m)
        wgmma_ws::ws_gemm<wgmma_ws::OpInt8Swapped>(tmap_a, tmap_bt, C, m, n, k, workspace);
    else
        wgmma_ws::ws_gemm<wgmma_ws::OpInt8>(tmap_a, tmap_bt, C, m, n, k, workspace);
#endif
}
