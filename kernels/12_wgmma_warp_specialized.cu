// Warp-specialised, persistent wgmma + TMA GEMM for Hopper (sm_90a): method wgmma_warp_specialized (fp16 and bf16
// in, fp32 accumulate and out), the rung that kernels 13-17 share their pipeline with.
//
// The pipeline is kernels/warp_specialized/ (kernel.cuh: a TMA producer warpgroup and two wgmma consumer
// warpgroups, persistent grid in grouped order, 2-CTA clusters sharing B by TMA multicast, stream-K tail, staged
// epilogue with paced drain, split-K builds); this file gives it the 16-bit operands (operands_16bit.cuh: A
// row-major, B row-major read as 64-column strips, wgmma m64nBNk16) at 128x256 tiles, or 128x128 in the registry's
// bn128 builds; its swap* builds compute C^T = B^T A^T (Op16Swapped), B's columns as the tile's rows. Every build's
// configuration and launch come from the registry (WsConfig, matmul_study/core/warp_specialized.py), passed as
// WGMMA_WS_* definitions (warp_specialized/config.cuh).
#pragma once

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_16bit.cuh"

// workspace: a split-K build's (see epilogue.cuh); the default build takes none.
template <typename T>
__device__ __forceinline__ void wgmma_ws_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                int m, int n, int k, float* workspace = nullptr)
{
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");
#if HOPPER_SM90A
    // (sizeof(T) keeps the condition dependent, so that only the build's own policy is instantiated)
    if constexpr (wgmma_ws::SWAP_AB && sizeof(T) == 2)  // tmap_a over B's rows, tmap_b over A, (m, n) = (n, m)
        wgmma_ws::ws_gemm<wgmma_ws::Op16Swapped<T>>(tmap_a, tmap_b, C, m, n, k, workspace);
    else
        wgmma_ws::ws_gemm<wgmma_ws::Op16<T>>(tmap_a, tmap_b, C, m, n, k, workspace);
#endif
}
