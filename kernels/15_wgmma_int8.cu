// int8 tensor-core GEMM for Hopper (sm_90a), method wgmma_int8: signed 8-bit A and B in memory, wgmma
// m64n256k32 .s32.s8.s8, exact int32 accumulation and int32 C.
//
// The pipeline, schedule and epilogue are wgmma_warp_specialized's (12_wgmma_warp_specialized.cu: TMA producer
// warpgroup + 2 wgmma consumer warpgroups, 128x256 tiles, persistent grid in the order of ws_tile_schedule.cuh,
// 2-CTA clusters with B multicast, stream-K tail, staged epilogue with paced drain), and so are its compile
// definitions (WGMMA_WS_*; clusters of 1 or 2 here, no split-K); this file supplies the int8 operands and int
// accumulators (Op::Acc = int). The epilogue moves C's 32-bit elements as bits, so it is the fp32 one unchanged;
// the stream-K tail adds its pieces into C with integer L2 reductions, which are exact and do not depend on the
// order in which the pieces arrive (unlike the fp32 ones).
//
// Operands. wgmma reads 8-bit operands only K-major (no transpose immediates for them), so B comes in transposed,
// as for tf32: the launcher passes a tensor map over Bt = B^T (n x k row-major, i.e. K-major B) in the B slot of
// the ABI and rewrites Bt from B before each launch (kernels/transpose_bytes.cu, timed with the GEMM). A 128-byte
// swizzle row is 128 k-elements: BK = 128 per k step, A 128 x 128 (16 KiB) and Bt 256 x 128 (32 KiB), the same
// 48 KiB stage as the other operands, and twice the multiply-adds of an fp16 stage (2 x 128 x 256 x 128 = 8.4 M
// operations, at the tensor cores' int8 rate, which is twice the fp16 one: a k step takes as long). Each CTA of a
// cluster loads one 128-row half of the Bt tile and multicasts it to both. Per stage 4 wgmma m64n256k32 per
// consumer warpgroup, A and B descriptors both K-major (SBO = 1024 bytes between 8-row swizzle atoms; the next 32
// k are 32 bytes on), exactly the byte layout of the tf32 rung, whose k8 instructions also step 32 bytes.
//
// Measured on an H200 (bench/compare.py, 2026-11-24), against cuBLAS int8 in the same run, both with the same
// timed transpose of B in front (cuBLAS's int8 tensor-core kernel also wants B K-major: launch/launchers.py):
// 4096^3 1302 TOPS, 0.970x cuBLAS; 8192^3 1542 TOPS, 1.09x. The transpose alone took 13.9 us at 4096^2 and 44.7 us at
// 8192^2 (2.4 and 3.0 TB/s), 12 % and 6 % of the time. At 4096^3 the stores of C weigh twice as much as in fp16
// (the same 128 KiB of 32-bit C per tile against half the k-loop time), which the pipeline's epilogue does not hide.
//
// Exactness. |A|, |B| <= 128, so each product is at most 2^14 in size and a sum of k of them fits in int32 for
// k <= 131071 (matmul_study.core.dtypes refuses larger k); the instruction has no saturation, and none is needed.
//
// Host contract: as wgmma_warp_specialized's (block THREADS = 384, dynamic smem SMEM_BYTES, cluster (CLUSTER, 1,
// 1), persistent grid of G <= co-resident CTAs, G a multiple of CLUSTER; programmatic stream serialisation
// allowed). tmap_a over A (int8 as UINT8, dims (k, m), row pitch a multiple of 16 bytes): box (rows 128, cols
// 128), 128B swizzle. tmap_bt over Bt (the same, dims (k, n)): box (rows 128, cols 128), 128B swizzle. Both
// zero-fill out of bounds (the zero byte is the int8 zero).
#pragma once

#include "12_wgmma_warp_specialized.cu"

namespace wgmma_int8 {

using wgmma_ws::CLUSTER;
using wgmma_ws::SMEM_BYTES;
using wgmma_ws::THREADS;
constexpr int BK = 128;
constexpr int BOX_A_ROWS = wgmma_ws::BM, BOX_A_COLS = BK;
constexpr int BOX_BT_ROWS = 128, BOX_BT_COLS = BK;
constexpr int BT_HALF_BYTES = BOX_BT_ROWS * BK;  // 16 KiB

#if HOPPER_SM90A
// 8-bit operands, both K-major in 128-byte swizzled rows: the int8 operands here and the e4m3 ones of
// 16_wgmma_fp8.cu differ only in the instruction, the accumulator type and the scales, which Kind supplies (Acc,
// SCALED where the result is scaled, and mma_k32: one wgmma m64nBNk32 on the warpgroup's BN / 2 accumulators).
template <class Kind>
struct OpBytes {
    using Acc = typename Kind::Acc;  // accumulators and C
    static constexpr bool SCALED = Kind::SCALED;
    static constexpr int BK = wgmma_int8::BK;
    // The tf32 rung's order (groups of cluster-rows), whose operands have the same byte layout; not measured apart.
    static constexpr bool GROUP_ALONG_N = false;
    static_assert(BK == 128 && wgmma_ws::A_BYTES == wgmma_ws::BM * BK &&
                      wgmma_ws::STAGE_BYTES - wgmma_ws::A_BYTES == wgmma_ws::BN * BK,
                  "stage layout: 128-byte rows of 128 one-byte elements");
    static_assert(CLUSTER <= 2,
                  "WGMMA_WS_CLUSTER: 1 or 2 for 8-bit operands (the CTAs of a cluster share the Bt tile's boxes)");
    // BN 256: two Bt boxes of 128 rows, one per CTA of a 2-cluster, multicast. BN 128: the tile is one box (the
    // method's one tensor map serves every build, so its box stays 128 rows and cannot be split in halves): the
    // CTAs of a 2-cluster take turns by k step, each multicasting the whole tile, which reads it from L2 once
    // per cluster as the halves do, and spreads the copies over both producers.
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_bt, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        if constexpr (wgmma_ws::BN == 2 * BOX_BT_ROWS)
            hopper::load_halves<CLUSTER, BT_HALF_BYTES, BOX_BT_ROWS>(sb, tmap_bt, bar, kt * BK, n0, rank);
        else if constexpr (CLUSTER == 1)
            hopper::tma_load_2d(sb, tmap_bt, bar, kt * BK, n0);
        else if (kt % CLUSTER == static_cast<int>(rank))
            hopper::tma_load_2d_multicast(sb, tmap_bt, bar, kt * BK, n0, static_cast<uint16_t>((1u << CLUSTER) - 1));
    }
    // Both operands K-major with 128-byte swizzled rows (SBO 1024 bytes between groups of 8 rows); the next 32
    // k are 32 bytes on in each row, 2 units of the descriptors' 16-byte address field.
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, 16); }
    static __device__ __forceinline__ void mma(Acc (&d)[wgmma_ws::ACCUMULATORS], uint32_t da, uint32_t db,
                                               bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk)
            Kind::mma_k32(d, hopper::desc_join(da + kk * (32 >> 4), 1024), hopper::desc_join(db + kk * (32 >> 4), 1024),
                          kk > 0 || accumulate);
    }
};

// Signed 8-bit integers, exact int32 sums.
struct S8 {
    using Acc = int;
    static constexpr bool SCALED = false;
    template <int ACC>
    static __device__ __forceinline__ void mma_k32(int (&d)[ACC], uint64_t da, uint64_t db, bool accumulate)
    {
        static_assert(ACC == 128, "WGMMA_WS_BN: the int8 operands have 128x256 tiles only (WGMMA_WS_BN=256)");
        hopper::wgmma_m64n256k32_s8(d, da, db, accumulate);
    }
};
using OpInt8 = OpBytes<S8>;
#endif

}  // namespace wgmma_int8

template <typename T>
__device__ __forceinline__ void wgmma_int8_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_bt, int* C, int m,
                                                  int n, int k)
{
    static_assert(sizeof(T) == 1, "int8 operands");
    static_assert(wgmma_ws::SPLIT_K == 1, "WGMMA_WS_SPLIT_K: the split-K workspace holds fp32 partials, not int32");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_int8::OpInt8>(tmap_a, tmap_bt, C, m, n, k, nullptr);
#endif
}
