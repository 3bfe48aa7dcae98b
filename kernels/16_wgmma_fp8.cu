// FP8 tensor-core GEMM for Hopper (sm_90a), method wgmma_fp8: e4m3 A and B with per-tensor fp32 scales, wgmma
// m64n256k32 .f32.e4m3.e4m3, C = scale_a * scale_b * (A·B) in fp32.
//
// Everything but the instruction and the scales is the int8 rung's (15_wgmma_int8.cu, OpBytes): the
// warp-specialised pipeline of 12_wgmma_warp_specialized.cu on one-byte operands, both K-major (wgmma has no
// transpose for 8-bit operands, so B comes in transposed, rewritten by kernels/transpose_bytes.cu before each
// launch and timed with it), BK = 128 k per 128-byte swizzle row, 128x256 tiles, clusters of 1 or 2 sharing the Bt
// tile by multicast. A k step holds twice the multiply-adds of an fp16 one, at twice the rate.
//
// Scales. Each consumer multiplies its accumulators by scale_a * scale_b (read once from the device, where the
// host wrote them, as cuBLASLt's A/B scale pointers are read) before they leave for C, the stream-K tail's
// reductions or a split-K workspace: 128 multiplies per thread per tile, nothing in the k loop.
//
// Accumulation. The FP8 wgmma adds its k products into the fp32 accumulators with fewer bits than an fp32 add
// keeps (DeepSeek-V3's report measured about 14 bits on H800), so the error grows with k. The remedy that
// DeepGEMM uses, adding the accumulators into a second set of fp32 registers every few k steps, needs 128 more
// registers per consumer thread for this 64x256 warpgroup tile, more than the 232 that setmaxnreg gives; split-K
// builds (WGMMA_WS_SPLIT_K) instead cut each sum into slices that meet in an fp32 workspace, which bounds the
// length of every tensor-core sum. docs/tensor-cores.md has the measured errors beside cuBLASLt's.
//
// Host contract: as wgmma_int8's (15_wgmma_int8.cu), plus `scales`: 2 fp32 on the device (scale_a, scale_b),
// and e4m3 elements moved as bytes (the tensor maps' UINT8; the zero byte is +0.0 in e4m3, so the zero fill of
// TMA past the edges adds nothing). The kernel's arguments end with a split-K build's workspace (null in other builds) and the
// scales.
#pragma once

#include <cuda_fp8.h>

#include "15_wgmma_int8.cu"

namespace wgmma_fp8 {

#if HOPPER_SM90A
struct E4M3 {
    using Acc = float;
    static constexpr bool SCALED = true;
    static __device__ __forceinline__ void mma_k32(float (&d)[128], uint64_t da, uint64_t db, bool accumulate)
    {
        hopper::wgmma_m64n256k32_e4m3(d, da, db, accumulate);
    }
};
using OpFp8 = wgmma_int8::OpBytes<E4M3>;
#endif

}  // namespace wgmma_fp8

// workspace: a split-K build's, else null (the generated wrapper passes what the build takes).
template <typename T>
__device__ __forceinline__ void wgmma_fp8_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, float* C, int m,
                                                 int n, int k, float* workspace, const float* scales)
{
    static_assert(sizeof(T) == 1, "e4m3 operands");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_fp8::OpFp8>(tmap_a, tmap_bt, C, m, n, k, workspace, scales);
#endif
}
