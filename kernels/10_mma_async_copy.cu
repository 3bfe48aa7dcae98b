// Kernel 10 (mma_async_copy): the pre-Hopper tensor-core rung, warp-level mma.sync fed by a cp.async pipeline through
// XOR-swizzled shared memory, with decode tiles and split K for a few token rows. The pipeline, its operand policies
// (fp16, bf16, tf32, int8, FP8) and their design are in mma_async_copy.cuh; this file is the method's entry point.
#pragma once

#include "mma_async_copy.cuh"

// Pipeline entry point (T = __half, __nv_bfloat16, float (tf32), int8_t or __nv_fp8_e4m3; C float, int for int8):
// MMA_ASYNC_COPY_THREADS threads, dynamic shared memory MMA_ASYNC_COPY_SMEM_BYTES, grid (ceil(n / MMA_ASYNC_COPY_BN),
// ceil(m / MMA_ASYNC_COPY_BM)). MMA_ASYNC_COPY_SPLIT_K = S > 1: grid z = S and a workspace (split_k.cuh's host
// contract: S partial tiles of BM x BN accumulators per tile, then a 32-bit counter per tile). FP8: `scales` holds
// scale_a and scale_b. `stream_b` (0 or 1): B's copies are marked evict_first in L2 (the launcher's choice,
// specs.StreamB).
template <typename T, typename Acc>
__device__ __forceinline__ void mma_async_copy_matmul(const T* A, const T* B, Acc* C, int m, int n, int k,
                                                      Acc* workspace = nullptr, const float* scales = nullptr,
                                                      int stream_b = 0)
{
    static_assert(__is_same(Acc, typename mma_async_copy::Op<T>::Acc), "C and the workspace hold the accumulators");
    static_assert(MMA_ASYNC_COPY_SPLIT_K >= 1 && MMA_ASYNC_COPY_SPLIT_K <= 32,
                  "MMA_ASYNC_COPY_SPLIT_K: 1 (whole tiles) to 32 slices");
    mma_async_copy::gemm<mma_async_copy::DefaultConfig, T, MMA_ASYNC_COPY_SPLIT_K>(A, B, C, m, n, k, workspace,
                                                                                    scales, stream_b);
}
