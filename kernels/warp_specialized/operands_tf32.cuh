// Operand policy of the tf32 rungs (kernels/13_wgmma_tf32.cu, and 14_wgmma_3xtf32.cu over its split operands): fp32
// A and B in memory, wgmma m64n256k8 in tf32 (the tensor cores read the top 19 bits of each fp32 operand: 10-bit
// mantissa, truncated), fp32 accumulators, for the warp-specialised pipeline (kernel.cuh).
//
// wgmma reads tf32 operands only K-major (no transpose immediates for 32-bit types), so B comes in transposed: the
// launcher passes a tensor map over Bt = B^T (n x k row-major, i.e. K-major B) in the B slot of the ABI. Both A and
// Bt then have 128-byte rows of BK = 32 floats per k step: A 128 x 32 (16 KiB) and Bt 256 x 32 (32 KiB), the same
// 48 KiB stage as the fp16 operands. Each CTA of a cluster loads one 128-row half of the Bt tile and multicasts it
// to both, so tiles are 128x256 only (WGMMA_WS_BN=256) and clusters of 1 or 2. Per stage 4 wgmma m64n256k8 per
// consumer warpgroup, A and B descriptors both K-major (SBO = 1024 bytes between 8-row swizzle atoms, next 8 k =
// 32 bytes on).
//
// Tensor maps: tmap_a over A (fp32, dims (k, m), row pitch a multiple of 16 bytes): box (rows 128, cols 32), 128B
// swizzle. tmap_bt over Bt (fp32, dims (k, n), row pitch a multiple of 16 bytes): box (rows 128, cols 32), 128B
// swizzle. Both zero-fill out of bounds.
#pragma once

#include "config.cuh"

namespace wgmma_ws {

#if HOPPER_SM90A
struct OpTf32 {
    using Acc = float;  // accumulators and C
    static_assert(BN == 256, "WGMMA_WS_BN: the tf32 operands have 128x256 tiles only (WGMMA_WS_BN=256)");
    static constexpr int BK = wgmma_ws::BK;
    static constexpr int BOX_BT_ROWS = 128;                    // Bt's box: 128 rows of BK floats
    static constexpr int BT_HALF_BYTES = BOX_BT_ROWS * BK * 4;  // 16 KiB
    static constexpr bool GROUP_ALONG_N = false;  // groups of cluster-rows: columns measured 0.3 % slower at 4096^3
    static_assert(BK * 4 == 128 && A_BYTES == BM * BK * 4 && STAGE_BYTES - A_BYTES == BN * BK * 4,
                  "WGMMA_WS_BK: 32 for tf32 operands (stage layout: 128-byte rows)");
    static_assert(BN == 2 * BOX_BT_ROWS, "two Bt halves per tile");
    static_assert(CLUSTER <= 2, "WGMMA_WS_CLUSTER: 1 or 2 for tf32 (one Bt half per CTA of the cluster)");
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_bt, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        hopper::load_halves<CLUSTER, BT_HALF_BYTES, BOX_BT_ROWS>(sb, tmap_bt, bar, kt * BK, n0, rank);
    }
    // Both operands K-major with 128-byte swizzled rows (SBO 1024 bytes between groups of 8 rows); the next 8
    // k are 32 bytes on in each row, 2 units of the descriptors' 16-byte address field.
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, 16); }
    static __device__ __forceinline__ void mma(float (&d)[128], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk)
            hopper::wgmma_m64n256k8_tf32(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                         hopper::desc_join(db + kk * (32 >> 4), 1024), kk > 0 || accumulate);
    }
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
