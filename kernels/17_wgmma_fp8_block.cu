// FP8 tensor-core GEMM with block scales for Hopper (sm_90a), method wgmma_fp8_block: e4m3 A and B with DeepSeek-V3's
// fp32 block scales, A one per row and 128 k (1x128), B one per 128x128 block, and
// C = sum over k blocks kb of (A_kb · B_kb) * sa[row, kb] * sb[kb, col / 128] in fp32.
//
// It is wgmma_fp8's promoted 128x128-tile build (the registry's record of this method has WGMMA_WS_BN=128 and
// WGMMA_WS_PROMOTE=1 in every build) with each k step's partial weighted by its block scales as it is promoted
// (operands_fp8_block.cuh, OpFp8Block, where the scheme and the scales' layout are explained).
//
// Accuracy: as the promoted per-tensor build's (no tensor-core sum runs longer than 128 k), with finer scales.
// Speed and error on an H200: docs/tensor-cores.md ("FP8, block scales").
//
// Host contract: as wgmma_fp8's (16_wgmma_fp8.cu) at 128x128 tiles, with `scales` the block scales instead of
// (scale_a, scale_b). The kernel's arguments end with a split-K build's workspace (null in other builds) and the
// scales.
#pragma once

#include <cuda_fp8.h>

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_fp8_block.cuh"

// workspace: a split-K build's, else null (the generated wrapper passes what the build takes).
template <typename T>
__device__ __forceinline__ void wgmma_fp8_block_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, float* C,
                                                       int m, int n, int k, float* workspace, const float* scales)
{
    static_assert(sizeof(T) == 1, "e4m3 operands");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::OpFp8Block>(tmap_a, tmap_bt, C, m, n, k, workspace, scales);
#endif
}
