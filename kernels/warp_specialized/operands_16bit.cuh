// Operand policy of the 16-bit rung (kernels/12_wgmma_warp_specialized.cu): fp16 or bf16 A and B, wgmma m64nBNk16
// with fp32 accumulators, for the warp-specialised pipeline (kernel.cuh).
//
// A row-major m x k = K-major for wgmma, 128-byte rows (BK = 64 halves) in 1024-byte swizzle atoms, the next 16
// columns of K 32 bytes on; B row-major k x n = N-major (imm-trans-b = 1), as 64-column strips of 64 k-rows x 128
// bytes: descriptor LBO = distance between strips, SBO = 1024 bytes between groups of 8 k-rows, the next 16 k-rows
// 2048 bytes on. Either tile width (WGMMA_WS_BN 256 or 128), clusters of 1, 2 or 4 (at most BN / 64).
//
// Tensor maps: tmap_a over A, dims (k, m), box (rows BM = 128, cols BK = 64), 128B swizzle; tmap_b over B, dims
// (n, k), box (rows BK = 64, cols 64), 128B swizzle. Zero OOB fill. The twins that compute C^T (Op16Swapped, below)
// take the two the other way round.
#pragma once

#include "config.cuh"

namespace wgmma_ws {

#if HOPPER_SM90A
template <typename T>
struct Op16 {
    using Acc = float;  // accumulators and C
    static constexpr int BK = wgmma_ws::BK;
    // B's 64-column strips (tensor map box: BK k-rows x 64 columns, 128 bytes each).
    static constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB
    // Tile groups of cluster-columns: +0.3-0.4 % at 4096^3 against groups of rows, the same at 6144^3 and 8192^3
    // (on an H200 in the pair ratio to cuBLAS in the same run); groups of 2, 4 or 16 columns were slower.
    static constexpr bool GROUP_ALONG_N = true;
    static_assert(BK * sizeof(T) == 128 && A_BYTES == BM * BK * sizeof(T) && STAGE_BYTES - A_BYTES == BK * BN * 2,
                  "WGMMA_WS_BK: 64 for 16-bit operands (stage layout: 128-byte rows)");
    // This CTA's share of the stage's B (k rows kt*BK.., columns n0..n0+BN-1): BN / 64 / CLUSTER of its
    // 64-column strips from strip rank * BN / 64 / CLUSTER on, multicast to every CTA of the cluster.
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_b, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        constexpr int per = BN / 64 / CLUSTER;
#pragma unroll
        for (int jj = 0; jj < per; ++jj) {
            const int j = static_cast<int>(rank) * per + jj;
            if constexpr (CLUSTER == 1)
                hopper::tma_load_2d(sb + j * B_STRIP_BYTES, tmap_b, bar, n0 + 64 * j, kt * BK);
            else
                hopper::tma_load_2d_multicast(sb + j * B_STRIP_BYTES, tmap_b, bar, n0 + 64 * j, kt * BK,
                                              static_cast<uint16_t>((1u << CLUSTER) - 1));
        }
    }
    // Low descriptor words of a warpgroup's A rows and of B in stage 0; stage s is s * STAGE_DESC on (the
    // mainloop adds it). A: SBO = 1024 bytes between groups of 8 rows. B: LBO = distance between 64-column
    // strips, SBO = 1024 bytes between groups of 8 k-rows; the same at either BN (n128 reads 2 strips, n256 4).
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, B_STRIP_BYTES); }
    // One stage for one consumer warpgroup. The next 16 columns of K are 32 bytes on in each swizzled 128-byte
    // row of A, and 16 k-rows (2048 bytes) on in B: the address field counts 16-byte units.
    static __device__ __forceinline__ void mma(float (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            hopper::wgmma_m64k16<BN, T>(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                        hopper::desc_join(db + kk * (2048 >> 4), 1024), kk > 0 || accumulate);
    }
};

// The 16-bit operands with A and B swapped (WGMMA_WS_SWAP_AB=1, the registry's swap* builds): the kernel computes
// C^T = B^T A^T, so that a few rows of A (a decode step's tokens) become wgmma's N and B's columns (the weights)
// stream through the tile's rows. Its tile rows are the problem's columns and its tile columns the problem's rows
// (the launcher passes (n, m, k) for (m, n, k)). wgmma reads 16-bit A M-major from shared memory (trans-a = 1), so
// unlike the tf32 and 8-bit twins (OpTf32Swapped, OpBytesSwapped) no fragment passes through registers: both
// operands are copied by TMA and read by descriptors, and the pipeline commits and waits as for Op16.
//   A slot: B's k step as it is, BK = 64 k-rows of the tile's BM problem columns, as BM / 64 strips of 64 columns x
//     64 k-rows (Op16's B strips: tensor map over B, dims (n, k), box (64, 64), 128B swizzle), so a consumer
//     warpgroup's 64 columns are strip r, 8 KiB on: the offset of its 64 rows in a K-major A tile. Descriptor as
//     Op16's B (SBO 1024 bytes between groups of 8 k-rows, the next 16 k-rows 2048 bytes on); its LBO, the distance
//     to the next strip, is never used by m64.
//   B slot: A's rows, K-major, as the 8-bit operands' Bt (tensor map over A, dims (k, m), boxes of BT_BOX_ROWS rows of
//     64 elements, load_bt: one box or two halves, multicast in a 2-CTA cluster); descriptor as Op16's A.
//   epilogue: the accumulators hold C^T; each element goes to C[col][row] (store_acc_transposed).
template <typename T>
struct Op16Swapped : Op16<T> {
    static constexpr bool A_TRANSPOSED = true;
    static_assert(BM % 64 == 0 && A_BYTES == (BM / 64) * Op16<T>::B_STRIP_BYTES,
                  "WGMMA_WS_SWAP_AB: the A slot holds BM / 64 strips of BK k-rows x 64 columns");
    // The A slot's strips of k step kt, columns m0.. of B (the kernel's rows).
    static __device__ __forceinline__ void load_a(uint32_t sa, const CUtensorMap* tmap_b, uint32_t bar, int m0, int kt)
    {
#pragma unroll
        for (int j = 0; j < BM / 64; ++j)
            hopper::tma_load_2d(sa + j * Op16<T>::B_STRIP_BYTES, tmap_b, bar, m0 + 64 * j, kt * BK);
    }
    // The same strips multicast into every CTA of a cluster along N (CLUSTER_ALONG_N: the CTAs of one strip of
    // weights, each with its own tokens), by the CTA whose turn k step kt is, as load_bt takes turns.
    static __device__ __forceinline__ void load_a_shared(uint32_t sa, const CUtensorMap* tmap_b, uint32_t bar, int m0,
                                                         int kt, uint32_t rank)
    {
        if (kt % CLUSTER != static_cast<int>(rank)) return;
#pragma unroll
        for (int j = 0; j < BM / 64; ++j)
            hopper::tma_load_2d_multicast(sa + j * Op16<T>::B_STRIP_BYTES, tmap_b, bar, m0 + 64 * j, kt * BK,
                                          static_cast<uint16_t>((1u << CLUSTER) - 1));
    }
    // A's rows (128 bytes each): in a cluster along M, shared (load_bt); along N, each CTA its own.
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_a, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        if constexpr (CLUSTER_ALONG_N)
            hopper::tma_load_2d(sb, tmap_a, bar, kt * BK, n0);
        else
            load_bt<BT_BOX_ROWS, BT_BOX_ROWS * BK * 2>(sb, tmap_a, bar, n0, kt, rank);
    }
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa)
    {
        return hopper::desc_lo(sa, Op16<T>::B_STRIP_BYTES);
    }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, 16); }
    // One stage for one consumer warpgroup: the next 16 k-rows are 2048 bytes on in A's strip, 32 bytes on in each
    // swizzled 128-byte row of B.
    static __device__ __forceinline__ void mma(float (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            hopper::wgmma_m64k16<BN, T, true>(d, hopper::desc_join(da + kk * (2048 >> 4), 1024),
                                              hopper::desc_join(db + kk * (32 >> 4), 1024), kk > 0 || accumulate);
    }
};
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
