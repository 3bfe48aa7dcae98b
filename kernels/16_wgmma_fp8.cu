// FP8 tensor-core GEMM for Hopper (sm_90a), method wgmma_fp8: e4m3 A and B with per-tensor fp32 scales, wgmma
// m64n256k32 .f32.e4m3.e4m3 (m64n128k32 in the 128x128-tile builds), C = scale_a * scale_b * (A·B) in fp32.
//
// Everything but the instruction and the scales is the int8 rung's (15_wgmma_int8.cu, OpBytes): the
// warp-specialised pipeline of 12_wgmma_warp_specialized.cu on one-byte operands, both K-major (wgmma has no
// transpose for 8-bit operands, so B comes in transposed, rewritten by kernels/transpose_bytes.cu before each
// launch and timed with it), BK = 128 k per 128-byte swizzle row, 128x256 tiles (or 128x128: WGMMA_WS_BN=128),
// clusters of 1 or 2 sharing the Bt tile by multicast. A k step holds twice the multiply-adds of an fp16 one, at
// twice the rate.
//
// Scales. Each consumer multiplies its accumulators by scale_a * scale_b (read once from the device, where the
// host wrote them, as cuBLASLt's A/B scale pointers are read) before they leave for C, the stream-K tail's
// reductions or a split-K workspace: one multiply per accumulator and tile, nothing in the k loop.
//
// Accumulation. The FP8 wgmma adds its k products into the fp32 accumulators with fewer bits than an fp32 add
// keeps (DeepSeek-V3's report measured about 14 bits on H800), so the error grows with k: at 128x256 tiles 1.2e-3
// at 4096^3 and 1.9e-3 at 8192^3 against cuBLASLt's 1.1e-4 (H200), as cuBLASLt's own FAST_ACCUM. The remedy that
// cuBLASLt's default and DeepGEMM use, promotion, is WGMMA_WS_PROMOTE=1: every k step (128 k) the wgmmas start
// from zero in a scratch set of accumulators, and the partial is added into a second, true fp32 set with ordinary
// adds (12_wgmma_warp_specialized.cu, mainloop). With two scratch sets, so that the adds overlap the next step's
// wgmmas, that is three sets per consumer thread: 384 registers for a 64x256 warpgroup tile, more than the 232
// that setmaxnreg gives, but 192 at 128x128 tiles (64x128 per warpgroup), so promotion is built at WGMMA_WS_BN=128
// only (ptxas: no spills; the SASS uses registers up to R224). Split-K builds (WGMMA_WS_SPLIT_K) bound each
// tensor-core sum another way, by slices that meet in an fp32 workspace. docs/tensor-cores.md has the measured
// errors beside cuBLASLt's.
//
// Host contract: as wgmma_int8's (15_wgmma_int8.cu), plus `scales`: 2 fp32 on the device (scale_a, scale_b),
// and e4m3 elements moved as bytes (the tensor maps' UINT8; the zero byte is +0.0 in e4m3, so the zero fill of
// TMA past the edges adds nothing). The kernel's arguments end with a split-K build's workspace (null in other
// builds) and the scales.
#pragma once

#include <cuda_fp8.h>

#include "15_wgmma_int8.cu"

namespace wgmma_fp8 {

#if HOPPER_SM90A
struct E4M3 {
    using Acc = float;
    static constexpr bool SCALED = true;
    template <int ACC>  // m64n256k32 at BN 256 (128 accumulators per thread), m64n128k32 at BN 128
    static __device__ __forceinline__ void mma_k32(float (&d)[ACC], uint64_t da, uint64_t db, bool accumulate)
    {
        hopper::wgmma_m64k32_e4m3<2 * ACC>(d, da, db, accumulate);
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
