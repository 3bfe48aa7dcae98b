// Operand policy of the tf32 rungs (kernels/13_wgmma_tf32.cu, and 14_wgmma_3xtf32.cu over its split operands): fp32
// A and B in memory, wgmma m64nNk8 in tf32 (the tensor cores read the top 19 bits of each fp32 operand: 10-bit
// mantissa, truncated), fp32 accumulators, for the warp-specialised pipeline (kernel.cuh).
//
// wgmma reads tf32 operands only K-major (no transpose immediates for 32-bit types), so B comes in transposed: the
// launcher passes a tensor map over Bt = B^T (n x k row-major, i.e. K-major B) in the B slot of the ABI. Both A and
// Bt then have 128-byte rows of BK = 32 floats per k step: A 128 x 32 (16 KiB) and Bt BN x 32, the same stages as
// the fp16 operands'. Tiles are 128x256 (WGMMA_WS_BN=256: two Bt boxes of 128 rows, one per CTA of a 2-cluster,
// multicast) or 128x128 (one box, the CTAs of a 2-cluster taking turns by k step: load_bt in config.cuh), in
// clusters of 1 or 2. Per stage 4 wgmma m64nBNk8 per consumer warpgroup, A and B descriptors both K-major (SBO =
// 1024 bytes between 8-row swizzle atoms, next 8 k = 32 bytes on). At BN 128 the registers also hold a promoted
// accumulation (WGMMA_WS_PROMOTE, mainloop.cuh): the 3xTF32 rung's fp32-accurate build.
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
    static constexpr bool PROMOTABLE = true;  // its sums truncate as they add (3xTF32's promoted builds)
    static constexpr int BK = wgmma_ws::BK;
    static constexpr int BOX_BT_ROWS = BT_BOX_ROWS;            // Bt's box: 128 rows of BK floats (BN 64: 64)
    static constexpr int BT_BOX_BYTES = BOX_BT_ROWS * BK * 4;  // 16 KiB (8 at BN 64)
    static constexpr bool GROUP_ALONG_N = false;  // groups of cluster-rows: columns measured 0.3 % slower at 4096^3
    static_assert(BK * 4 == 128 && A_BYTES == BM * BK * 4 && STAGE_BYTES - A_BYTES == BN * BK * 4,
                  "WGMMA_WS_BK: 32 for tf32 operands (stage layout: 128-byte rows)");
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_bt, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        load_bt<BOX_BT_ROWS, BT_BOX_BYTES>(sb, tmap_bt, bar, n0, kt, rank);
    }
    // Both operands K-major with 128-byte swizzled rows (SBO 1024 bytes between groups of 8 rows); the next 8
    // k are 32 bytes on in each row, 2 units of the descriptors' 16-byte address field.
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, 16); }
    static __device__ __forceinline__ void mma(float (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk)
            hopper::wgmma_m64k8_tf32<BN>(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                         hopper::desc_join(db + kk * (32 >> 4), 1024), kk > 0 || accumulate);
    }
    // One k step on COLS of the tile's columns from col0, from zero or (`accumulate`) onto d (the promoted mainloop's
    // column parts): rows col0.. of the Bt tile, 128 bytes each.
    template <int COLS>
    static __device__ __forceinline__ void mma_columns(float (&d)[COLS / 2], uint32_t da, uint32_t db, int col0,
                                                       bool accumulate = false)
    {
        const uint32_t dbc = db + ((col0 * 128) >> 4);
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk)
            hopper::wgmma_m64k8_tf32<COLS>(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                           hopper::desc_join(dbc + kk * (32 >> 4), 1024), kk > 0 || accumulate);
    }
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
