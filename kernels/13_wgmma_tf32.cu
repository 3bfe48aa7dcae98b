// tf32 tensor-core GEMM for Hopper (sm_90a), method wgmma_tf32: fp32 A and B in memory, wgmma in tf32 (the
// tensor cores read the top 19 bits of each fp32 operand: 10-bit mantissa, truncated), fp32 accumulate, fp32 C.
//
// The pipeline, schedule and epilogue are wgmma_warp_specialized's (12_wgmma_warp_specialized.cu: TMA producer
// warpgroup + 2 wgmma consumer warpgroups, 128x256 tiles, persistent grid in the order of ws_tile_schedule.cuh,
// 2-CTA clusters with B multicast, stream-K tail, staged epilogue with paced drain), and so are its compile
// definitions (WGMMA_WS_*; clusters of 1 or 2 here); this file supplies the tf32 operands. wgmma reads tf32
// operands only K-major (no transpose immediates for 32-bit types), so B comes in transposed: the launcher passes
// a tensor map over Bt = B^T (n x k row-major, i.e. K-major B) in the B slot of the ABI and refreshes Bt from B
// before each launch. Both A and Bt then have 128-byte rows of BK = 32 floats per k step: A 128 x 32 (16 KiB) and
// Bt 256 x 32 (32 KiB), the same 48 KiB stage as the fp16 operands. Each CTA of a cluster loads one 128-row half
// of the Bt tile and multicasts it to both. wgmma m64n256k8: per stage 4 instructions per consumer warpgroup, A
// and B descriptors both K-major (SBO = 1024 bytes between 8-row swizzle atoms, next 8 k = 32 bytes on).
//
// Host contract: as wgmma_warp_specialized's (block THREADS = 384, dynamic smem SMEM_BYTES, cluster (CLUSTER, 1,
// 1), persistent grid of G <= co-resident CTAs, G a multiple of CLUSTER; programmatic stream serialisation
// allowed, since the shared pipeline waits for the previous grid before its first global access).
// tmap_a over A (fp32, dims (k, m), row pitch a multiple of 16 bytes): box (rows 128, cols 32), 128B swizzle.
// tmap_bt over Bt (fp32, dims (k, n), row pitch a multiple of 16 bytes): box (rows 128, cols 32), 128B
// swizzle. Both zero-fill out of bounds. Split-K builds (WGMMA_WS_SPLIT_K > 1) take wgmma_warp_specialized's
// workspace as their last argument.
#pragma once

#include "12_wgmma_warp_specialized.cu"

namespace wgmma_tf32 {

using wgmma_ws::CLUSTER;
using wgmma_ws::SMEM_BYTES;
using wgmma_ws::THREADS;
constexpr int BK = 32;
constexpr int BOX_A_ROWS = wgmma_ws::BM, BOX_A_COLS = BK;
constexpr int BOX_BT_ROWS = 128, BOX_BT_COLS = BK;
constexpr int BT_HALF_BYTES = BOX_BT_ROWS * BK * 4;  // 16 KiB

#if HOPPER_SM90A
struct OpTf32 {
    using Acc = float;  // accumulators and C
    static_assert(wgmma_ws::BN == 256, "WGMMA_WS_BN: the tf32 operands have 128x256 tiles only (WGMMA_WS_BN=256)");
    static constexpr int BK = wgmma_tf32::BK;
    static constexpr bool GROUP_ALONG_N = false;  // groups of cluster-rows: columns measured 0.3 % slower at 4096^3
    static_assert(BK * 4 == 128 && wgmma_ws::A_BYTES == wgmma_ws::BM * BK * 4 &&
                      wgmma_ws::STAGE_BYTES - wgmma_ws::A_BYTES == wgmma_ws::BN * BK * 4,
                  "stage layout");
    static_assert(wgmma_ws::BN == 2 * BOX_BT_ROWS, "two Bt halves per tile");
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
#endif

}  // namespace wgmma_tf32

template <typename T>
__device__ __forceinline__ void wgmma_tf32_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, float* C,
                                                  int m, int n, int k, float* workspace = nullptr)
{
    static_assert(sizeof(T) == 4, "fp32 operands (tf32 math)");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_tf32::OpTf32>(tmap_a, tmap_bt, C, m, n, k, workspace);
#endif
}
