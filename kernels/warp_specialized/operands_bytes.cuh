// Operand policy of the 8-bit rungs (kernels/15_wgmma_int8.cu and 16_wgmma_fp8.cu; 17_wgmma_fp8_block.cu adds block
// scales on top, operands_fp8_block.cuh): one-byte A and B, both K-major in 128-byte swizzled rows, for the
// warp-specialised pipeline (kernel.cuh). The int8 and e4m3 operands differ only in the instruction, the accumulator
// type and the scales, which a Kind supplies (Acc, SCALED where the result is scaled, and mma_k32: one wgmma
// m64nBNk32 on the warpgroup's BN / 2 accumulators): S8 and E4M3 below, OpInt8 and OpFp8 their policies.
//
// Operands. wgmma reads 8-bit operands only K-major (no transpose immediates for them), so B comes in transposed,
// as for tf32: the launcher passes a tensor map over Bt = B^T (n x k row-major, i.e. K-major B) in the B slot of
// the ABI and rewrites Bt from B before each launch (kernels/transpose_bytes.cu, timed with the GEMM). A 128-byte
// swizzle row is 128 k-elements: BK = 128 per k step, A 128 x 128 (16 KiB) and Bt 256 x 128 (32 KiB), the same
// 48 KiB stage as the other operands, and twice the multiply-adds of an fp16 stage (2 x 128 x 256 x 128 = 8.4 M
// operations, at the tensor cores' 8-bit rate, which is twice the fp16 one: a k step takes as long). Each CTA of a
// cluster loads one 128-row half of the Bt tile and multicasts it to both. Per stage 4 wgmma m64n256k32 per
// consumer warpgroup, A and B descriptors both K-major (SBO = 1024 bytes between 8-row swizzle atoms; the next 32
// k are 32 bytes on), exactly the byte layout of the tf32 operands, whose k8 instructions also step 32 bytes.
//
// int8 (S8): exact int32 accumulation and int32 C (Op::Acc = int); 128x256 tiles (m64n256k32), 128x128 (WGMMA_WS_BN=128:
// m64n128k32) or 128x64 (m64n64k32). The epilogue moves C's 32-bit elements as bits, so it is the fp32 one
// unchanged; the stream-K tail adds its pieces into C with integer L2 reductions, and split-K slices meet in an int32
// workspace (epilogue.cuh's sum, on int4 quads): integer sums are exact, so neither depends on the order in which
// the pieces arrive.
// |A|, |B| <= 128, so each product is at most 2^14 in size and a sum of k of them fits in int32 for k <= 131071
// (matmul_study.core.dtypes refuses larger k); the instruction has no saturation, and none is needed.
//
// e4m3 (E4M3): per-tensor fp32 scales. Each consumer multiplies its accumulators by scale_a * scale_b (read once
// from the device, where the host wrote them, as cuBLASLt's A/B scale pointers are read) before they leave for C,
// the stream-K tail's reductions or a split-K workspace: one multiply per accumulator and tile, nothing in the k
// loop. 128x256 tiles (m64n256k32) or 128x128 (WGMMA_WS_BN=128: m64n128k32).
// Accumulation. The FP8 wgmma adds its k products into the fp32 accumulators with fewer bits than an fp32 add
// keeps (DeepSeek-V3's report measured about 14 bits on H800), so the error grows with k: at 128x256 tiles 1.2e-3
// at 4096^3 and 1.9e-3 at 8192^3 against cuBLASLt's 1.1e-4 (H200), as cuBLASLt's own FAST_ACCUM. The remedy that
// cuBLASLt's default and DeepGEMM use, promotion, is WGMMA_WS_PROMOTE=1: every k step (128 k) the wgmmas start
// from zero in a scratch set of accumulators, and the partial is added into a second, true fp32 set with ordinary
// adds (mainloop.cuh). With two scratch sets, so that the adds overlap the next step's wgmmas, that is three sets
// per consumer thread: 384 registers for a 64x256 warpgroup tile, more than the 232 that setmaxnreg gives, but 192
// at 128x128 tiles (64x128 per warpgroup: bn128_promote). The 128x256 build (promote) runs each k step in quarters
// of the columns instead, with two scratch sets of a quarter; each quarter's wgmmas read the warpgroup's A from
// shared memory again, four times a step where the unpromoted build reads it once. Its promote_rs build
// (WGMMA_WS_A_REGS=1) reads A once a step into registers (a_fragments: 16 per thread) and gives the quarters' wgmmas
// A from there, so that a promoted step reads as many shared-memory bytes as an unpromoted one. Split-K builds
// (WGMMA_WS_SPLIT_K) bound each tensor-core sum another way, by slices that meet in an fp32 workspace.
// docs/tensor-cores.md has the measured errors beside cuBLASLt's.
//
// Tensor maps: tmap_a over A (bytes as UINT8, dims (k, m), row pitch a multiple of 16 bytes): box (rows 128, cols
// 128), 128B swizzle. tmap_bt over Bt (the same, dims (k, n)): box (rows 128, cols 128), 128B swizzle. Both
// zero-fill out of bounds (the zero byte is the int8 zero, and +0.0 in e4m3, so the fill past the edges adds
// nothing).
#pragma once

#include "config.cuh"

namespace wgmma_ws {

#if HOPPER_SM90A
template <class Kind>
struct OpBytes {
    using Acc = typename Kind::Acc;  // accumulators and C
    static constexpr bool SCALED = Kind::SCALED;
    static constexpr bool PROMOTABLE = __is_same(Acc, float);  // e4m3's fp32 sums lose bits; int8's are exact
    static constexpr bool A_IN_REGISTERS = PROMOTABLE;          // mma_columns_rs (promoted parts only)
    static constexpr int BK = wgmma_ws::BK;
    static constexpr int BOX_BT_ROWS = BT_BOX_ROWS;        // Bt's box: 128 rows of BK bytes (BN 64: 64)
    static constexpr int BT_BOX_BYTES = BOX_BT_ROWS * BK;  // 16 KiB (8 at BN 64)
    // The tf32 operands' order (groups of cluster-rows), whose operands have the same byte layout; not measured apart.
    static constexpr bool GROUP_ALONG_N = false;
    static_assert(BK == 128 && A_BYTES == BM * BK && STAGE_BYTES - A_BYTES == BN * BK,
                  "WGMMA_WS_BK: 128 for 8-bit operands (stage layout: 128-byte rows of one-byte elements)");
    // BN 256: two Bt boxes of 128 rows, one per CTA of a 2-cluster; BN 128: one box, the CTAs taking turns (load_bt).
    static __device__ __forceinline__ void load_b(uint32_t sb, const CUtensorMap* tmap_bt, uint32_t bar, int n0, int kt,
                                                  uint32_t rank)
    {
        load_bt<BOX_BT_ROWS, BT_BOX_BYTES>(sb, tmap_bt, bar, n0, kt, rank);
    }
    // Both operands K-major with 128-byte swizzled rows (SBO 1024 bytes between groups of 8 rows); the next 32
    // k are 32 bytes on in each row, 2 units of the descriptors' 16-byte address field.
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, 16); }
    static __device__ __forceinline__ void mma(Acc (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk)
            Kind::mma_k32(d, hopper::desc_join(da + kk * (32 >> 4), 1024), hopper::desc_join(db + kk * (32 >> 4), 1024),
                          kk > 0 || accumulate);
    }
    // One k step on COLS of the tile's columns from col0, from zero or (`accumulate`) onto d (the promoted mainloop's
    // column parts): rows col0.. of the Bt tile, 128 bytes each.
    template <int COLS>
    static __device__ __forceinline__ void mma_columns(Acc (&d)[COLS / 2], uint32_t da, uint32_t db, int col0,
                                                       bool accumulate = false)
    {
        const uint32_t dbc = db + ((col0 * 128) >> 4);
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk)
            Kind::mma_k32(d, hopper::desc_join(da + kk * (32 >> 4), 1024), hopper::desc_join(dbc + kk * (32 >> 4), 1024),
                          kk > 0 || accumulate);
    }
    // A from registers (WGMMA_WS_A_REGS): the warpgroup's 64 rows x BK of the stage that the A descriptor word da
    // starts at, as wgmma's A fragments of its four k32 slices, read by ldmatrix. Row r of the warpgroup's rows lies
    // at r * 128 bytes and its 16-byte chunk c at chunk c ^ (r % 8) (the 128-byte swizzle; a warpgroup's rows start
    // on a 1024-byte boundary, so r % 8 is the row's phase). Warp w reads rows 16w..16w+15; lanes 8j..8j+7 address
    // matrix j: rows 0-7 (j even) or 8-15 (j odd) of the warp's, chunk 2kk + j / 2 of slice kk. That chunk, swizzled,
    // is (kk ^ phase / 2) * 2 + (j / 2 ^ phase) % 2: the lane's address for slice 0, with bits 5-6 xor 32 * kk, so
    // that one register of the lane's offset serves every slice and stage.
    static __device__ __forceinline__ uint32_t a_lane_offset(int lane)
    {
        const int warp = (threadIdx.x % 128) / 32, j = lane / 8, phase = lane % 8;
        return (warp * 16 + (j & 1) * 8 + phase) * 128 + (phase >> 1) * 32 + (((j >> 1) ^ phase) & 1) * 16;
    }
    static __device__ __forceinline__ void a_fragments(uint32_t (&a)[BK / 32][4], uint32_t da, uint32_t lane_offset)
    {
        const uint32_t slice0 = hopper::desc_address(da) + lane_offset;
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) simt_common::ldmatrix_x4(a[kk], slice0 ^ (kk * 32));
    }
    // One k step on COLS columns from col0, from zero, with A from a_fragments.
    template <int COLS>
    static __device__ __forceinline__ void mma_columns_rs(Acc (&d)[COLS / 2], const uint32_t (&a)[BK / 32][4],
                                                          uint32_t db, int col0)
    {
        static_assert(A_IN_REGISTERS, "WGMMA_WS_A_REGS: e4m3 operands only");
        const uint32_t dbc = db + ((col0 * 128) >> 4);
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk)
            Kind::mma_k32_rs(d, a[kk], hopper::desc_join(dbc + kk * (32 >> 4), 1024), kk > 0);
    }
};

// The 8-bit operands with A and B swapped (WGMMA_WS_SWAP_AB=1, the registry's swap* builds): the kernel computes
// C^T = B^T A^T, so B needs no transpose before it (the byte transpose that the other builds, and the vendor's 8-bit
// GEMMs, run on every launch). As OpTf32Swapped: the kernel's rows are the problem's columns (the launcher passes (n,
// m, k)), wgmma's A is B^T from registers, wgmma's B is A's own K-major rows (the B slot, as OpBytes's Bt).
//   A slot: the stage holds B's k step as it is, BK = 128 rows of k by the tile's BM = 128 problem columns, 128 bytes
//     a row (one box of the tensor map over B, dims (n, k), box (128, 128), 128B-swizzled): element (k, column c) at
//     row k, 16-byte chunk (c / 16) ^ (k % 8), byte c % 16. Consumer warpgroup r's 64 columns are chunks 4r..4r+3,
//     warp w's 16 columns chunk 4r + w.
//   mma: per k32 slice, one ldmatrix.x4.trans of 8x8 matrices of 16-bit elements (pairs of columns): lanes 8j..8j+7
//     address matrix j's rows, the k rows 4i + (i' % 2) + 2 (j % 2) + 16 (j / 2) for row i' = 2i + (0 or 1) (k
//     rows 4t and 4t + 1 of the slice in matrix 0, 4t + 2 and 4t + 3 in matrix 1, the same 16 below in matrices 2 and
//     3), so that lane l, t = l % 4, g = l / 4, receives from each matrix the bytes (k, column 2g), (k, 2g + 1), (k +
//     1, 2g), (k + 1, 2g + 1) of its two k rows; two byte permutes (prmt) per pair of matrices turn them into wgmma's
//     A fragment, 4 k of column 2g in one register and 4 k of column 2g + 1 in the other. So the fragment's rows g and
//     g + 8 are the warp's columns 2g and 2g + 1 (ROW_PAIR = 1), which the epilogue and the split-K sum store
//     accordingly. A matrix's eight rows lie at only four swizzle phases (k and k + 8 share one): two-way bank
//     conflicts, 4 ldmatrix.x4 a step beside the step's 4 x 64 x BN x 32 products. As OpTf32Swapped, each slice's
//     registers wait for the previous step's same slice, and each slice is a wgmma group of its own.
//   epilogue: the accumulators hold C^T; each element goes to C[col][row] (store_acc_transposed).
//   promotion (e4m3, WGMMA_WS_PROMOTE=1): the promoted mainloop's whole k steps, each into a scratch set from zero
//     (accumulate false) and added into the fp32 set once the next step's slices have waited for it (the wait before
//     each slice retires the previous step's same slice, so after the last one the whole previous step has retired);
//     not in column parts (config.cuh: BN <= 128), whose wgmmas would each load the step's A into registers again.
// Tiles of 128 rows only (the A slot's box is one 128-byte swizzle row of 128 columns: config.cuh refuses others).
template <class Kind>
struct OpBytesSwapped : OpBytes<Kind> {
    using Acc = typename Kind::Acc;
    static constexpr bool A_TRANSPOSED = true;
    static constexpr bool COMMITS_ITSELF = true;  // each slice's group, after the wait for its registers (mma)
    static constexpr bool A_IN_REGISTERS = false;
    static constexpr int ROW_PAIR = 1;
    // The A slot's box of k step kt, columns m0.. of B (the kernel's rows).
    static __device__ __forceinline__ void load_a(uint32_t sa, const CUtensorMap* tmap_b, uint32_t bar, int m0, int kt)
    {
        hopper::tma_load_2d(sa, tmap_b, bar, m0, kt * BK);
    }
    static __device__ __forceinline__ void mma(Acc (&d)[ACCUMULATORS], uint32_t da, uint32_t db, bool accumulate)
    {
        extern __shared__ __align__(1024) unsigned char smem_raw[];
        const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32, r = threadIdx.x / 128 - 1;
        const int j = lane / 8, i = lane % 8;
        // The stage (da is warpgroup r's A descriptor: its 64 rows of a K-major A tile, r x 8 KiB on) and this
        // lane's row of the matrices of slice 0; the slices are 32 rows apart, which keeps each row's swizzle phase.
        const uint32_t stage =
            hopper::desc_address(da) - r * (64 * 128) + hopper::shared_window(hopper::smem_addr(smem_raw));
        const int k = 4 * (i / 2) + i % 2 + 2 * (j % 2) + 16 * (j / 2);
        const uint32_t row = stage + k * 128 + (((4 * r + warp) ^ (k & 7)) << 4);
        uint32_t a[BK / 32][4];
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) {
            hopper::wgmma_wait<BK / 32 - 1>();  // slice kk's registers: the previous step's slice kk has retired
            uint32_t x[4];
            simt_common::ldmatrix_x4_trans(x, row + kk * (32 * 128));
            a[kk][0] = __byte_perm(x[0], x[1], 0x6420);  // column 2g: k 4t, 4t + 1 (matrix 0), 4t + 2, 4t + 3 (1)
            a[kk][1] = __byte_perm(x[0], x[1], 0x7531);  // column 2g + 1
            a[kk][2] = __byte_perm(x[2], x[3], 0x6420);  // the same at k + 16
            a[kk][3] = __byte_perm(x[2], x[3], 0x7531);
            hopper::wgmma_fence();  // the fragment's registers are written before the wgmma reads them
            Kind::mma_k32_rs(d, a[kk], hopper::desc_join(db + kk * (32 >> 4), 1024), kk > 0 || accumulate);
            hopper::wgmma_commit();
        }
    }
};

// Signed 8-bit integers, exact int32 sums.
struct S8 {
    using Acc = int;
    static constexpr bool SCALED = false;
    template <int ACC>  // m64n256k32 at BN 256 (128 accumulators per thread), m64n128k32 at BN 128, m64n64k32 at 64
    static __device__ __forceinline__ void mma_k32(int (&d)[ACC], uint64_t da, uint64_t db, bool accumulate)
    {
        hopper::wgmma_m64k32_s8<2 * ACC>(d, da, db, accumulate);
    }
    template <int ACC>  // A from registers (OpBytesSwapped)
    static __device__ __forceinline__ void mma_k32_rs(int (&d)[ACC], const uint32_t (&a)[4], uint64_t db,
                                                      bool accumulate)
    {
        hopper::wgmma_m64k32_s8_rs<2 * ACC>(d, a, db, accumulate);
    }
};
using OpInt8 = OpBytes<S8>;
using OpInt8Swapped = OpBytesSwapped<S8>;

// e4m3 with per-tensor scales, fp32 sums.
struct E4M3 {
    using Acc = float;
    static constexpr bool SCALED = true;
    template <int ACC>  // m64n256k32 at BN 256 (128 accumulators per thread), m64n128k32 at BN 128
    static __device__ __forceinline__ void mma_k32(float (&d)[ACC], uint64_t da, uint64_t db, bool accumulate)
    {
        hopper::wgmma_m64k32_e4m3<2 * ACC>(d, da, db, accumulate);
    }
    template <int ACC>  // A from registers: m64n64k32 (a quarter of BN 256) to m64n256k32 (OpBytesSwapped)
    static __device__ __forceinline__ void mma_k32_rs(float (&d)[ACC], const uint32_t (&a)[4], uint64_t db,
                                                      bool accumulate)
    {
        hopper::wgmma_m64k32_e4m3_rs<2 * ACC>(d, a, db, accumulate);
    }
};
using OpFp8 = OpBytes<E4M3>;
using OpFp8Swapped = OpBytesSwapped<E4M3>;
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
