// Kernel 11 (wgmma_tma): the first Hopper rung. One warpgroup (128 threads) per CTA computes a 64x128 tile of C with
// wgmma.mma_async m64n128k16 (fp16 or bf16 in, fp32 accumulate). Each BK = 64 slice of A (64x64) and B
// (64x128) arrives through the bulk tensor copy engine (TMA, 128-byte swizzle) and completes on one
// mbarrier. Single stage, no overlap of copy and math: this is the simplest correct wgmma + TMA kernel,
// the reference point for the warp-specialised kernel 12.
//
// Layouts. A is row-major m x k, i.e. K-major for wgmma: smem rows of 64 halves (128 bytes), 8-row
// swizzle atoms of 1024 bytes. B is row-major k x n, i.e. N-major ("transposed" B, imm-trans-b = 1): it is
// loaded as BN/64 strips of 64 k-rows x 64 n-columns; within a strip each k-row is 128 bytes, swizzled in
// groups of 8 k-rows. The descriptor's leading byte offset is then the distance between strips (the next
// 64 columns of N) and its stride byte offset the distance between groups of 8 k-rows (1024 bytes).
// Edges: the tensor maps zero-fill everything outside (m, k) and (k, n), so partial tiles need no special
// case in the main loop; the epilogue guards rows >= m and columns >= n.
//
// Host contract, the registry's (core/geometry.py, WGMMA_TMA), passed as -DWGMMA_TMA_BM, _BN, _BK, _THREADS,
// _STAGES, _SMEM_BYTES: grid (ceil(n/BN), ceil(m/BM)), block THREADS, dynamic smem SMEM_BYTES, no cluster.
// tmap_a: dims (k, m), box (rows BM, cols BK), 128B swizzle. tmap_b: dims (n, k), box (rows BK, cols 64),
// 128B swizzle. Both zero-fill out of bounds.
#pragma once

#include "hopper.cuh"

namespace wgmma_tma {

constexpr int BM = WGMMA_TMA_BM, BN = WGMMA_TMA_BN, BK = WGMMA_TMA_BK;
constexpr int THREADS = WGMMA_TMA_THREADS, STAGES = WGMMA_TMA_STAGES;
constexpr int BOX_A_ROWS = BM, BOX_A_COLS = BK;  // tensor map boxes, 128-byte swizzle
constexpr int BOX_B_ROWS = BK, BOX_B_COLS = 64;
constexpr int A_BYTES = BM * BK * 2;        // 8 KiB
constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB: 64 k-rows x 64 n-columns
constexpr int B_BYTES = BK * BN * 2;        // 16 KiB
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + A_BYTES + B_BYTES + 16 /* mbarrier */;

static_assert(THREADS == 128, "the registry's thread count is not one warpgroup's (the kernel's one wgmma issuer)");
static_assert(BM == 64, "one warpgroup's wgmma (m64) computes the tile's rows");
static_assert(STAGES == 1, "one stage: the copy of slice kt + 1 waits for the math of slice kt");
static_assert(BK * 2 == 128, "one 128-byte swizzle row per K slice");
static_assert(BN % 64 == 0 && BN <= 256, "B is loaded in 64-column strips");
static_assert(SMEM_BYTES <= WGMMA_TMA_SMEM_BYTES, "the registry gives a block less shared memory than the tiles take");

}  // namespace wgmma_tma

template <typename T>
__device__ __forceinline__ void wgmma_tma_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                 int m, int n, int k)
{
#if HOPPER_SM90A
    using namespace wgmma_tma;
    using namespace hopper;
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");

    // 128-byte swizzled tiles must start on a 1024-byte boundary of the shared window.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t sA = (raw + 1023u) & ~1023u;
    const uint32_t sB = sA + A_BYTES;
    const uint32_t bar = sB + B_BYTES;

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    if (tid == 0) {
        mbar_init(bar, 1);
        fence_mbar_init();
    }
    __syncthreads();

    float d[BN / 2];  // the thread's share of the 64 x BN accumulators (128 threads)
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;

    const int ktiles = (k + BK - 1) / BK;
    for (int kt = 0; kt < ktiles; ++kt) {
        if (tid == 0) {
            mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
            tma_load_2d(sA, tmap_a, bar, kt * BK, m0);
#pragma unroll
            for (int j = 0; j < BN / 64; ++j) tma_load_2d(sB + j * B_STRIP_BYTES, tmap_b, bar, n0 + 64 * j, kt * BK);
        }
        mbar_wait(bar, kt & 1);

        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // A: next 16 columns of K are 32 bytes further along each swizzled 128-byte row.
            // B: next 16 rows of K are two 1024-byte swizzle atoms further on.
            const uint64_t da = make_desc(sA + kk * 32, 16, 1024);
            const uint64_t db = make_desc(sB + kk * 2048, B_STRIP_BYTES, 1024);
            wgmma_m64k16<BN, T>(d, da, db);
        }
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();  // every warp is done reading this stage before thread 0 refills it
    }

    // Accumulator layout: see hopper.cuh (warp w holds rows 16w..16w+15).
    const int warp = tid / 32, lane = tid % 32;
    const int row0 = m0 + warp * 16 + lane / 4;
    const int col0 = n0 + 2 * (lane % 4);
    store_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
#endif
}
