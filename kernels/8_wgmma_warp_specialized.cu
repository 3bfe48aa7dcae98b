// Kernel 8: warp-specialised, persistent wgmma + TMA GEMM for Hopper (sm_90a).
//
// CTA = 3 warpgroups (384 threads). Warpgroup 0 is the producer: after giving most of its registers away
// (setmaxnreg 40) one thread issues all TMA copies. Warpgroups 1 and 2 are consumers (setmaxnreg 232):
// each owns 64 rows of the CTA's 128x256 output tile and issues wgmma m64n256k16 (fp32 accumulators,
// 128 registers per thread). Operands flow through a STAGES-deep ring of shared-memory stages, each
// guarded by a "full" mbarrier (copy engine -> consumers, completes on the transaction byte count) and an
// "empty" mbarrier (consumers -> producer, one arrival per consumer warp). The consumers keep one wgmma
// group in flight: a stage is released as soon as the wgmma group that read it has retired.
//
// Persistent grid: every CTA walks output tiles blockIdx-strided (in cluster units), in a grouped order
// (GROUP_M cluster-rows of tiles per group) so that CTAs running at the same time share A rows and B
// columns in L2. The producer runs ahead into the next tile while the consumers store the current one.
//
// CLUSTER = 2 (default): a cluster of 2 CTAs computes two vertically adjacent 128x256 tiles that need the
// same 64x256 slice of B per k step. Each CTA loads its own A (128x64) and half of B (two 64-column strips),
// the B half multicast into both CTAs' shared memory; a stage is free again only when the consumers of
// BOTH CTAs have released it, so consumer warps arrive on the empty barrier of each CTA in the cluster.
// This cuts the L2->SM traffic per CTA and k step from 48 KiB to 32 KiB.
//
// Epilogue (all CTAs reach it at about the same time and the tensor cores idle meanwhile; measured cost
// ~5-7 % of the run time): for whole tiles, each consumer warp's 16x256 block goes out through a per-warp
// 16x64 fp32 staging chunk in shared memory (XOR-swizzled, conflict-free), as 256-byte row segments.
// Edge tiles (or n not a multiple of 4) are stored directly from the accumulators with per-element guards.
// Compile-time experiments kept for the notes (defaults off): WGMMA_WS_STASH=1 parks the right half of the
// block in 64 spare registers and stores it during the first k steps of the next tile (no measurable gain);
// WGMMA_WS_EPILOGUE_DIRECT stores whole tiles straight from the accumulators (8 rows x 32 B per store,
// ~1 % slower); WGMMA_WS_DIAG_NO_EPILOGUE skips the stores (wrong results; timing diagnostic only).
//
// Layouts. A is row-major m x k = K-major for wgmma: 128-byte rows (64 halves), 1024-byte swizzle atoms;
// the next 16 columns of K are 32 bytes on. B is row-major k x n = N-major (imm-trans-b = 1): stored as
// 64-column strips of 64 k-rows x 128 bytes; descriptor LBO = distance between 64-column strips, SBO =
// 1024 bytes between groups of 8 k-rows; the next 16 k-rows are 2048 bytes on.
// Edges: TMA zero-fills outside (k, m) and (n, k); the epilogue guards rows >= m, columns >= n.
//
// Host contract: block THREADS (384), dynamic smem SMEM_BYTES (230,464, both dtypes), cluster (CLUSTER, 1, 1),
// grid (G, 1, 1) with G a multiple of CLUSTER and no larger than the number of co-resident CTAs: #SMs (132
// on H100/H200), or with clusters 2 * cuOccupancyMaxActiveClusters (66 on the H200 -> 132); launching fewer
// CTAs than output tiles is fine (they loop), more than co-resident would serialise clusters.
// tmap_a: dims (k, m), box (rows BM = 128, cols BK = 64), 128B swizzle. tmap_b: dims (n, k), box (rows BK =
// 64, cols 64), 128B swizzle. Zero OOB fill.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#ifndef WGMMA_WS_CLUSTER
#define WGMMA_WS_CLUSTER 2
#endif
#ifndef WGMMA_WS_GROUP_M
#define WGMMA_WS_GROUP_M 8
#endif
#ifndef WGMMA_WS_STASH  // experiment, off: measured no gain (see notes/tensor-core-ladder.md)
#define WGMMA_WS_STASH 0
#endif
#ifndef WGMMA_WS_STASH_STEPS
#define WGMMA_WS_STASH_STEPS 8
#endif

namespace wgmma_ws {

constexpr int BM = 128, BN = 256, BK = 64;
constexpr int CONSUMERS = 2;                   // consumer warpgroups, 64 rows each
constexpr int THREADS = 128 * (CONSUMERS + 1);  // + one producer warpgroup
constexpr int STAGES = 4;
constexpr int CLUSTER = WGMMA_WS_CLUSTER;  // CTAs per cluster along M (1 or 2)
constexpr int GROUP_M = WGMMA_WS_GROUP_M;  // cluster-rows of tiles per group in the tile order
constexpr int BOX_A_ROWS = BM, BOX_A_COLS = BK;  // tensor map boxes, 128-byte swizzle
constexpr int BOX_B_ROWS = BK, BOX_B_COLS = 64;
constexpr int A_BYTES = BM * BK * 2;        // 16 KiB
constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB
constexpr int B_BYTES = BK * BN * 2;        // 32 KiB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
// Epilogue staging: per consumer warp one 16x64 fp32 chunk (4 KiB), used to turn the accumulator layout
// (8 rows x 32 bytes per store instruction) into whole-row 512-byte stores.
constexpr int EPI_CHUNK_BYTES = 16 * 64 * 4;
constexpr int EPI_BYTES = CONSUMERS * 4 * EPI_CHUNK_BYTES;  // 32 KiB
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8;  // 230,464
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
// Deferred epilogue (experiment, off by default): the right half (columns 128..255) of a consumer's 64x256 result is parked in 64 spare
// registers and stored during the first STASH_STEPS k steps of the next tile, 16 / STASH_STEPS column
// groups (of 8 columns) per step.
constexpr bool STASH = WGMMA_WS_STASH != 0;
constexpr int STASH_STEPS = WGMMA_WS_STASH_STEPS;
static_assert(16 % STASH_STEPS == 0, "the 16 parked column groups split evenly over the steps");

static_assert(CLUSTER == 1 || CLUSTER == 2, "cluster of 1 or 2 CTAs");
static_assert((BN / 64) % CLUSTER == 0, "B strips split evenly across the cluster");
static_assert(SMEM_BYTES <= 227 * 1024, "fits the opt-in shared memory of one SM");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "register file");

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
namespace detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_LOOP:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_LOOP;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// Arrive on the barrier at the same shared offset in CTA `rank` of this cluster (possibly this CTA).
// Default (.release.cta) semantics on purpose: ".release.cluster" compiles to MEMBAR.ALL.GPU before every
// arrive, which waits for this thread's outstanding global stores (the epilogue) and cost ~40 % of the
// throughput (measured: 413 vs 711 TF/s). The only ordering needed here is "this warpgroup's wgmma reads
// of the stage have retired" (wgmma.wait_group) before the peer's copy engine overwrites it.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(bar),
        "r"(rank)
        : "memory");
}

__device__ __forceinline__ void mbar_arrive_local(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}

// Same copy, written to the same shared offsets (and signalling the same barrier offset) in every CTA of
// the cluster named in `mask`.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0,
                                                      int c1, uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
           (static_cast<uint64_t>(sbo >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// D(64x256, fp32) += A(64x16, K-major) * B(16x256, N-major); scale-d = 1, trans-a = 0, trans-b = 1.
#define WGMMA_WS_N256(TYPE)                                                                       \
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " "                  \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "                                                                       \
                 "%128, %129, 1, 1, 1, 0, 1;\n"                                                    \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])                                                                      \
                 : "l"(desc_a), "l"(desc_b))

template <typename T>
__device__ __forceinline__ void wgmma_n256(float (&d)[128], uint64_t desc_a, uint64_t desc_b);

template <>
__device__ __forceinline__ void wgmma_n256<__half>(float (&d)[128], uint64_t desc_a, uint64_t desc_b)
{
    WGMMA_WS_N256("f16");
}

template <>
__device__ __forceinline__ void wgmma_n256<__nv_bfloat16>(float (&d)[128], uint64_t desc_a, uint64_t desc_b)
{
    WGMMA_WS_N256("bf16");
}
#undef WGMMA_WS_N256

// Grouped tile order over "cluster tiles" of (CLUSTER*BM) x BN: GROUP_M cluster-rows are walked
// column by column, so consecutive indices (CTAs running at the same time) reuse A rows and B columns.
__device__ __forceinline__ void tile_coords(int t, int rows, int cols, int& tm, int& tn)
{
    const int per_group = GROUP_M * cols;
    const int g = t / per_group;
    const int first = g * GROUP_M;
    const int size = min(rows - first, GROUP_M);
    const int r = t - g * per_group;
    tm = first + r % size;
    tn = r / size;
}

}  // namespace detail
#endif

}  // namespace wgmma_ws

template <typename T>
__device__ __forceinline__ void wgmma_ws_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using namespace wgmma_ws;
    using namespace wgmma_ws::detail;
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");

    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t tiles = (raw + 1023u) & ~1023u;  // stage s: A at tiles + s*STAGE_BYTES, B after it
    const uint32_t epi = tiles + STAGES * STAGE_BYTES;
    const uint32_t full_bar = epi + EPI_BYTES;
    const uint32_t empty_bar = full_bar + STAGES * 8;

    const int tid = threadIdx.x;
    const int wg = tid / 128;
    const uint32_t rank = (CLUSTER > 1) ? cluster_rank() : 0;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_bar + 8 * s, 1);
            mbar_init(empty_bar + 8 * s, CONSUMERS * 4 * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (CLUSTER > 1) cluster_sync();  // peers' barriers exist before any multicast or remote arrive
    else __syncthreads();

    const int rows_c = (m + CLUSTER * BM - 1) / (CLUSTER * BM);  // cluster-tile rows
    const int cols = (n + BN - 1) / BN;
    const int ntiles = rows_c * cols;
    const int ktiles = (k + BK - 1) / BK;
    const int cluster_id = blockIdx.x / CLUSTER;
    const int nclusters = gridDim.x / CLUSTER;

    if (wg == 0) {
        // ---------------- producer ----------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (tid == 0) {
            int it = 0;
            for (int t = cluster_id; t < ntiles; t += nclusters) {
                int tm, tn;
                tile_coords(t, rows_c, cols, tm, tn);
                const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
                const int n0 = tn * BN;
                for (int kt = 0; kt < ktiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    const uint32_t round = static_cast<uint32_t>(it / STAGES);
                    mbar_wait(empty_bar + 8 * s, (round & 1u) ^ 1u);
                    const uint32_t fb = full_bar + 8 * s;
                    const uint32_t sa = tiles + s * STAGE_BYTES;
                    const uint32_t sb = sa + A_BYTES;
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);
                    tma_load_2d(sa, tmap_a, fb, kt * BK, m0);
                    if constexpr (CLUSTER == 1) {
#pragma unroll
                        for (int j = 0; j < BN / 64; ++j)
                            tma_load_2d(sb + j * B_STRIP_BYTES, tmap_b, fb, n0 + 64 * j, kt * BK);
                    } else {
                        constexpr int per = BN / 64 / CLUSTER;
#pragma unroll
                        for (int jj = 0; jj < per; ++jj) {
                            const int j = static_cast<int>(rank) * per + jj;
                            tma_load_2d_multicast(sb + j * B_STRIP_BYTES, tmap_b, fb, n0 + 64 * j, kt * BK,
                                                  static_cast<uint16_t>((1u << CLUSTER) - 1));
                        }
                    }
                }
            }
        }
    } else {
        // ---------------- consumers ----------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int c = wg - 1;
        const int ltid = tid % 128;
        const int warp = ltid / 32, lane = ltid % 32;
        float d[128];
        float stash[STASH ? 64 : 1];
        float* stash_dst = nullptr;  // C at (this thread's first row, first stashed column); null: nothing parked
        int it = 0;

        // One k step: wait for the stage, issue 4 wgmmas, keep one group in flight, release the stage
        // that the previous group read.
        auto kstep = [&](int kt) {
            const int s = it % STAGES;
            mbar_wait(full_bar + 8 * s, static_cast<uint32_t>(it / STAGES) & 1u);
            const uint32_t sa = tiles + s * STAGE_BYTES + c * (64 * 128);  // this warpgroup's 64 rows
            const uint32_t sb = tiles + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                wgmma_n256<T>(d, make_desc(sa + kk * 32, 16, 1024), make_desc(sb + kk * 2048, B_STRIP_BYTES, 1024));
            wgmma_commit();
            if (kt > 0) {
                wgmma_wait<1>();
                const int ps = (it - 1) % STAGES;
                if (lane == 0) {
                    if constexpr (CLUSTER == 1) mbar_arrive_local(empty_bar + 8 * ps);
                    else
                        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar + 8 * ps, r);
                }
            }
            ++it;
        };
        // Store part p of the parked half: column groups 16 + G p ... 16 + G p + G - 1, G = 16 / STASH_STEPS
        // (rows l/4 and l/4 + 8).
        auto store_stash = [&](int p) {
            constexpr int G = 16 / STASH_STEPS;
#pragma unroll
            for (int e = 0; e < G; ++e) {
                const int js = G * p + e;
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    *reinterpret_cast<float2*>(stash_dst + static_cast<size_t>(8 * h) * n + 8 * js) =
                        make_float2(stash[(4 * js + 2 * h) % (STASH ? 64 : 1)], stash[(4 * js + 2 * h + 1) % (STASH ? 64 : 1)]);
            }
        };

        for (int t = cluster_id; t < ntiles; t += nclusters) {
            int tm, tn;
            tile_coords(t, rows_c, cols, tm, tn);
            const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
            const int n0 = tn * BN;
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.f;

            if constexpr (STASH) {
                // The first k steps are unrolled so that the parked registers are indexed by constants.
#pragma unroll
                for (int p = 0; p < STASH_STEPS; ++p) {
                    if (p < ktiles) kstep(p);
                    if (stash_dst != nullptr) store_stash(p);
                }
                stash_dst = nullptr;
                for (int kt = STASH_STEPS; kt < ktiles; ++kt) kstep(kt);
            } else {
                for (int kt = 0; kt < ktiles; ++kt) kstep(kt);
            }
            wgmma_wait<0>();
            if (ktiles > 0 && lane == 0) {
                const int ps = (it - 1) % STAGES;
                if constexpr (CLUSTER == 1) mbar_arrive_local(empty_bar + 8 * ps);
                else
                    for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar + 8 * ps, r);
            }

#ifdef WGMMA_WS_DIAG_NO_EPILOGUE  // timing diagnostic only (results are wrong): what the stores cost
            if (d[0] != 12345.f) continue;
#endif
            // Epilogue. Fast path (whole tile inside C, rows 16-byte aligned): each warp passes its 16x256
            // block through a 16x64 fp32 staging chunk in shared memory, 64 columns at a time. Writes follow
            // the accumulator layout (row l/4 (+8), columns 8j + 2(l%4)); 16-byte units are XOR-swizzled by
            // (row % 8) so both the float2 writes and the float4 row reads are free of bank conflicts. Each
            // read/store instruction then covers 2 rows x 256 contiguous bytes of C.
            const int row0 = m0 + c * 64 + warp * 16 + lane / 4;
            const int col0 = n0 + 2 * (lane % 4);
            if (m0 + c * 64 + 64 <= m && n0 + BN <= n && (n % 4) == 0) {
#ifndef WGMMA_WS_EPILOGUE_DIRECT
                unsigned char* chunk = smem_raw + (epi - raw) + (c * 4 + warp) * EPI_CHUNK_BYTES;
                float* crow = C + static_cast<size_t>(m0 + c * 64 + warp * 16) * n + n0;
#pragma unroll
                for (int ch = 0; ch < (STASH ? 2 : BN / 64); ++ch) {
#pragma unroll
                    for (int jj = 0; jj < 8; ++jj) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int r = lane / 4 + 8 * h;
                            const int u = 2 * jj + (lane % 4) / 2;  // 16-byte unit within the 256-byte row
                            const int j = 8 * ch + jj;
                            *reinterpret_cast<float2*>(chunk + r * 256 + ((u ^ (r & 7)) * 16) + (lane & 1) * 8) =
                                make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                        }
                    }
                    __syncwarp();
#pragma unroll
                    for (int i = 0; i < 8; ++i) {
                        const int r = 2 * i + lane / 16;
                        const int u = lane % 16;
                        const float4 v = *reinterpret_cast<const float4*>(chunk + r * 256 + ((u ^ (r & 7)) * 16));
                        *reinterpret_cast<float4*>(crow + static_cast<size_t>(r) * n + 64 * ch + 4 * u) = v;
                    }
                    __syncwarp();
                }
                if constexpr (STASH) {
#pragma unroll
                    for (int i = 0; i < 64; ++i) stash[i % (STASH ? 64 : 1)] = d[64 + i];
                    stash_dst = C + static_cast<size_t>(row0) * n + col0 + 128;
                }
#else
#pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        float* dst = C + static_cast<size_t>(row0 + 8 * h) * n + col0 + 8 * j;
                        *reinterpret_cast<float2*>(dst) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                    }
                }
#endif
            } else {
                const bool pairs = (n % 2) == 0;
#pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
                    const int col = col0 + 8 * j;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = row0 + 8 * h;
                        if (row >= m) continue;
                        float* dst = C + static_cast<size_t>(row) * n + col;
                        const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
                        if (pairs && col + 1 < n) {
                            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
                        } else {
                            if (col < n) dst[0] = v0;
                            if (col + 1 < n) dst[1] = v1;
                        }
                    }
                }
            }
        }
        if constexpr (STASH) {  // the last tile's parked half
            if (stash_dst != nullptr) {
#pragma unroll
                for (int p = 0; p < STASH_STEPS; ++p) store_stash(p);
            }
        }
    }

    // No CTA of a cluster may exit while its peer can still multicast into it or arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        __syncwarp();
        cluster_sync();
    }
#endif
}
