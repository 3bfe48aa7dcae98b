// 3xTF32 GEMM for Hopper (sm_90a), method wgmma_3xtf32: fp32 A and B in, fp32 C out, at fp32's accuracy on the
// tf32 tensor cores. A pre-pass (wgmma_3xtf32_split, warp_specialized/operands_3xtf32.cuh, where the scheme, its
// accuracy and its traffic are explained) splits each operand into a big and a small tf32 part, laid out in two
// blocks of kp; the GEMM is wgmma_tf32's (the warp-specialised pipeline of kernels/warp_specialized/kernel.cuh with
// the tf32 operands) over K' = 3 kp, its third block reading the big parts again: big·small + small·big + big·big.
#pragma once

#include "warp_specialized/kernel.cuh"
#include "warp_specialized/operands_3xtf32.cuh"

// The GEMM: wgmma_tf32's over A3 and BT3 with K' = wide_k(k) (k = 0 stays 0: C = 0). workspace: a split-K build's
// (the family's, see epilogue.cuh); the default build takes none.
template <typename T>
__device__ __forceinline__ void wgmma_3xtf32_matmul(const CUtensorMap* tmap_a3, const CUtensorMap* tmap_bt3, float* C,
                                                    int m, int n, int k, float* workspace = nullptr)
{
    static_assert(sizeof(T) == 4, "fp32 operands (3xTF32 math)");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::Op3xTf32>(tmap_a3, tmap_bt3, C, m, n, wgmma_3xtf32::wide_k(k), workspace);
#endif
}
