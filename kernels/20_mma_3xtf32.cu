// Kernel 20 (mma_3xtf32): fp32 A and B in, fp32 C out, at fp32's accuracy on the tf32 tensor cores, with no
// pre-pass: kernel 10's pipeline (mma_async_copy.cuh: cp.async stages, warp-level mma.sync m16n8k8 tf32, its
// decode tiles and split K) with an operand policy that splits each fp32 fragment in registers.
//
// Where memory decides (a few token rows against a weight matrix, a deep K with few tiles) fp32 on the CUDA cores
// has to issue an FMA per multiply-add, and at 16 rows that is over 40 % of an H200's FMA peak at 75 % of its
// memory bandwidth. The wgmma rungs in SGEMM's class (14: 3xTF32, 19: 3xFP16) run a pre-pass that reads the
// operands and writes their parts before the GEMM reads those again: three times SGEMM's bytes, which loses where
// bytes decide. Here the operands travel as fp32, once, as SGEMM's do, and the three products run on the tensor
// cores from the registers the fragments are loaded into.
//
// Split (Op3xTf32::split): x = big + small + r, big = tf32(x) and small = tf32(x - big), both rounded to nearest
// (cvt.rna.tf32.f32; x - big is exact in fp32), so |r| <= 2^-22 |x|, about. Each tile's k step (8 k) is
//     part = A_big·B_small + A_small·B_big + A_big·B_big    (three mma.sync m16n8k8 from zero, small terms first)
// and part is added into fp32 accumulators: the tensor cores' own sum, which truncates, runs over 24 exact products
// at most, so the result is in SGEMM's accuracy class (as wgmma 3xTF32's promoted builds: 2.3e-7 against SGEMM's
// 1.1e-6 at 4096^3). A_small·B_small (about 2^-22 of a product) is left out. An infinite element has big = inf and
// small = 0 (not inf - inf). The split costs three instructions an element of a fragment (A's once a k step, B's
// for each row tile that reads them: gemm's compute), and the tile's mma issue triples: cheap where B streams from
// memory at a few rows, not at large tiles, where kernels 14 and 19 run.
//
// Host contract: kernel 10's (its configuration macros, grid, shared memory and split-K workspace), fp32 A, B, C.
#pragma once

#include "mma_async_copy.cuh"

namespace mma_async_copy {

// fp32 fragments loaded as they are (tf32's loads, no rounding) and split in registers before the mmas.
struct Op3xTf32 : Op<float> {
    static constexpr bool THREE_PRODUCTS = true;
    __device__ static void convert(uint32_t&) {}
    __device__ static void split(uint32_t x, uint32_t& big, uint32_t& small)
    {
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "r"(x));
        const float b = __uint_as_float(big);
        const float rest = isfinite(b) ? __uint_as_float(x) - b : 0.f;
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "r"(__float_as_uint(rest)));
    }
};

}  // namespace mma_async_copy

// Pipeline entry point (T = float): as mma_async_copy_matmul's, with the 3xTF32 policy (no scales: the generated
// kernel passes its null pointer where the arguments' order has them).
template <typename T>
__device__ __forceinline__ void mma_3xtf32_matmul(const T* A, const T* B, float* C, int m, int n, int k,
                                                  float* workspace = nullptr, const float* = nullptr,
                                                  int stream_b = 0)
{
    static_assert(__is_same(T, float), "fp32 operands (3xTF32 math)");
    static_assert(MMA_ASYNC_COPY_SPLIT_K >= 1 && MMA_ASYNC_COPY_SPLIT_K <= 32,
                  "MMA_ASYNC_COPY_SPLIT_K: 1 (whole tiles) to 32 slices");
    mma_async_copy::gemm<mma_async_copy::DefaultConfig, float, MMA_ASYNC_COPY_SPLIT_K, mma_async_copy::Op3xTf32>(
        A, B, C, m, n, k, workspace, nullptr, stream_b);
}
