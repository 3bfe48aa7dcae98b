// 3xFP16 GEMM for Hopper (sm_90a), method wgmma_3xfp16: fp32 A and B in, fp32 C out, at fp32's accuracy on the
// fp16 tensor cores, twice the rate of 3xTF32's tf32 ones. A pre-pass (wgmma_3xfp16_split,
// warp_specialized/operands_3xfp16.cuh, where the scheme, its scaling and its accuracy are explained) scales each
// row of A and column of B by a power of two and splits it into a big and a small fp16 part; the GEMM is the 16-bit
// rung's pipeline (kernels/warp_specialized/kernel.cuh) over K' = 3 kp, summing big·small + small·big + big·big with
// its sums promoted into fp32, and the epilogue undoes the scales.
#pragma once

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_3xfp16.cuh"

// The GEMM over A3 and B3 with K' = wide_k(k) (k = 0 stays 0: C = 0); scales: the pre-pass's S3. workspace: a
// split-K build's (the family's, see epilogue.cuh); the default build takes none.
template <typename T>
__device__ __forceinline__ void wgmma_3xfp16_matmul(const CUtensorMap* tmap_a3, const CUtensorMap* tmap_b3, float* C,
                                                    int m, int n, int k, float* workspace, const float* scales)
{
    static_assert(sizeof(T) == 4, "fp32 operands (3xFP16 math)");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::Op3xFp16>(tmap_a3, tmap_b3, C, m, n, wgmma_3xfp16::wide_k(k), workspace, scales);
#endif
}
