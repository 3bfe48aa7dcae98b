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

// The tf32 operands with A and B swapped (WGMMA_WS_SWAP_AB=1, the registry's *swap builds): the kernel computes
// C^T = B^T A^T, so B needs no transpose before it. Its tile rows are the problem's columns and its tile columns the
// problem's rows (the launcher passes (n, m, k) for (m, n, k)); wgmma's A is B^T, which wgmma takes K-major only from
// shared memory but in any layout from registers, and wgmma's B is A^T, whose K-major rows are A's own.
//   A slot: the stage holds B's k step as it is, BK = 32 rows of k by the tile's BM problem columns, as BM / 32 boxes
//     of 32 rows x 32 columns (128 bytes, 128B-swizzled: tensor map over B, dims (n, k), box (32, 32)); box q holds
//     columns 32q..32q+31, so a consumer warpgroup's 64 columns are boxes 2c and 2c + 1, at the offset of its 64 rows
//     in a K-major A tile (8 KiB).
//   B slot: A's rows, as OpTf32's Bt (tensor map over A, dims (k, m), boxes of BT_BOX_ROWS rows of 32 floats).
//   mma: each k step, the thread's wgmma A fragments of the step's four k8 slices (16 floats: rows g and g + 8 of
//     its warp's 16, k t and t + 4, g = lane / 4, t = lane % 4) come from the stage by ld.shared, and each slice's
//     wgmma m64nBNk8 with A from registers is a group of its own. A wgmma reads its registers while in flight, so a
//     slice's loads wait for the previous step's same slice (the three groups after it may still run); by the end of
//     a step the previous step's groups have all retired, and the mainloop releases its stage without a wait of its
//     own (mainloop.cuh, k_step). Element (column c, k) of a box lies at row k, 16-byte chunk (c / 4) ^ (k % 8),
//     word c % 4: the eight g of one load span two chunks and the four t four rows, so a load has two-way bank
//     conflicts (16 loads a step beside the wgmmas' 4 x 64 x 256 x 8 products).
//   epilogue: the accumulators hold C^T; each element goes to C[col][row] (guarded stores, 32 contiguous bytes per
//     eight rows of the tile: epilogue.cuh, store_acc_transposed).
struct OpTf32Swapped : OpTf32 {
    static constexpr bool A_TRANSPOSED = true;
    static constexpr bool COMMITS_ITSELF = true;  // each slice's group, after the wait for its registers (mma)
    static constexpr bool PROMOTABLE = false;
    static constexpr int A_BOX_COLS = 32;  // problem columns per box of the A slot (128 bytes of fp32)
    static_assert(BM % A_BOX_COLS == 0 && A_BYTES == (BM / A_BOX_COLS) * BK * 128,
                  "WGMMA_WS_SWAP_AB: the A slot holds BM / 32 boxes of BK rows x 32 columns");
    // The A slot's BM / 32 boxes of k step kt, columns m0.. of B (the kernel's rows).
    static __device__ __forceinline__ void load_a(uint32_t sa, const CUtensorMap* tmap_b, uint32_t bar, int m0, int kt)
    {
#pragma unroll
        for (int q = 0; q < BM / A_BOX_COLS; ++q)
            hopper::tma_load_2d(sa + q * (BK * 128), tmap_b, bar, m0 + A_BOX_COLS * q, kt * BK);
    }
    static __device__ __forceinline__ void mma(float (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
        extern __shared__ __align__(1024) unsigned char smem_raw[];
        const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32, g = lane / 4, t = lane % 4;
        // This warp's 16 columns lie in box warp / 2 of the warpgroup's two, at columns 16 (warp % 2) + g (+ 8).
        const uint32_t box = hopper::desc_address(da) + hopper::shared_window(hopper::smem_addr(smem_raw)) +
                             (warp >> 1) * (BK * 128);
        const int c0 = 16 * (warp & 1) + g;
        uint32_t a[BK / 8][4];
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) {
            // Slice kk's registers are the previous step's slice kk's, which its wgmma reads while in flight: wait
            // until at most the BK / 8 - 1 groups issued since are (the previous step's later slices, this step's
            // earlier ones).
            hopper::wgmma_wait<BK / 8 - 1>();
#pragma unroll
            for (int v = 0; v < 2; ++v) {
                const int k = 8 * kk + 4 * v + t;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int c = c0 + 8 * h;
                    const uint32_t at = box + k * 128 + ((((c >> 2) ^ (k & 7))) << 4) + (c & 3) * 4;
                    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(a[kk][2 * v + h]) : "r"(at) : "memory");
                }
            }
            hopper::wgmma_fence();  // the fragment's registers are written before the wgmma reads them
            hopper::wgmma_m64k8_tf32_rs<BN>(d, a[kk], hopper::desc_join(db + kk * (32 >> 4), 1024),
                                            kk > 0 || accumulate);
            hopper::wgmma_commit();
        }
    }
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
