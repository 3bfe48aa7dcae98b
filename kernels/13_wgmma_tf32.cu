// tf32 tensor-core GEMM for Hopper (sm_90a), method wgmma_tf32: fp32 A and B in memory, wgmma in tf32 (the
// tensor cores read the top 19 bits of each fp32 operand: 10-bit mantissa, truncated), fp32 accumulate, fp32 C.
//
// The pipeline, schedule and epilogue are the warp-specialised family's (kernels/warp_specialized/kernel.cuh, as
// wgmma_warp_specialized's), and so are its compile definitions (WGMMA_WS_*, from the registry's WsConfig; clusters
// of 1 or 2 here); this file supplies the tf32 operands (operands_tf32.cuh: both operands K-major, 128x256 tiles,
// wgmma m64n256k8). B comes in transposed: a pre-pass (wgmma_tf32_transpose, warp_specialized/transpose_tf32.cuh)
// writes Bt = B^T before each launch, timed with the kernel; or, in the builds with a Bt ring (WGMMA_WS_BT_BUFFERS >
// 0, the registry's *_smem_bt), B comes as it is and the producer warpgroup writes each k step's Bt tile in shared
// memory (mainloop.cuh, bt_writer); or, in the builds that swap the operands (WGMMA_WS_SWAP_AB=1, the registry's
// *swap), the kernel computes C^T = B^T A^T with B's rows read into registers as wgmma's A (operands_tf32.cuh,
// OpTf32Swapped), and no transpose at all.
// Split-K builds (WGMMA_WS_SPLIT_K > 1) take the family's workspace as their last argument.
#pragma once

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_tf32.cuh"
#include "warp_specialized/transpose_tf32.cuh"

template <typename T>
__device__ __forceinline__ void wgmma_tf32_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, float* C,
                                                  int m, int n, int k, float* workspace = nullptr)
{
    static_assert(sizeof(T) == 4, "fp32 operands (tf32 math)");
#if HOPPER_SM90A
    // (sizeof(T) keeps the condition dependent, so that only the build's own policy is instantiated)
    if constexpr (wgmma_ws::SWAP_AB && sizeof(T) == 4)  // tmap_a over B's rows, tmap_bt over A, (m, n) = (n, m)
        wgmma_ws::ws_gemm<wgmma_ws::OpTf32Swapped>(tmap_a, tmap_bt, C, m, n, k, workspace);
    else
        wgmma_ws::ws_gemm<wgmma_ws::OpTf32>(tmap_a, tmap_bt, C, m, n, k, workspace);
#endif
}
