// FP8 tensor-core GEMM for Hopper (sm_90a), method wgmma_fp8: e4m3 A and B with per-tensor fp32 scales, wgmma
// m64n256k32 .f32.e4m3.e4m3 (m64n128k32 in the 128x128-tile builds), C = scale_a * scale_b * (A·B) in fp32.
//
// Everything but the instruction and the scales is the int8 rung's: the warp-specialised pipeline
// (kernels/warp_specialized/kernel.cuh) on one-byte operands, both K-major (operands_bytes.cuh, OpFp8; B transposed
// on every launch by kernels/transpose_bytes.cu, timed with the GEMM), BK = 128 k per 128-byte swizzle row, 128x256
// tiles (or 128x128: the registry's bn128 builds), clusters of 1 or 2 sharing the Bt tile by multicast. A k step
// holds twice the multiply-adds of an fp16 one, at twice the rate. The scales, the FP8 wgmma's short accumulation
// and its remedy, promoted sums (WGMMA_WS_PROMOTE, the bn128_promote build), are explained in operands_bytes.cuh.
//
// Host contract: as wgmma_int8's (15_wgmma_int8.cu), plus `scales`: 2 fp32 on the device (scale_a, scale_b), and
// e4m3 elements moved as bytes (the tensor maps' UINT8). The kernel's arguments end with a split-K build's
// workspace (null in other builds) and the scales.
#pragma once

#include <cuda_fp8.h>

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_bytes.cuh"

// workspace: a split-K build's, else null (the generated wrapper passes what the build takes).
template <typename T>
__device__ __forceinline__ void wgmma_fp8_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, float* C, int m,
                                                 int n, int k, float* workspace, const float* scales)
{
    static_assert(sizeof(T) == 1, "e4m3 operands");
#if HOPPER_SM90A
    // (sizeof(T) keeps the condition dependent, so that only the build's own policy is instantiated)
    if constexpr (wgmma_ws::SWAP_AB && sizeof(T) == 1)  // tmap_a over B's rows, tmap_bt over A, (m, n) = (n, m)
        wgmma_ws::ws_gemm<wgmma_ws::OpFp8Swapped>(tmap_a, tmap_bt, C, m, n, k, workspace, scales);
    else
        wgmma_ws::ws_gemm<wgmma_ws::OpFp8>(tmap_a, tmap_bt, C, m, n, k, workspace, scales);
#endif
}
