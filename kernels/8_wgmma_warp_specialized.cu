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
// (GROUP_M cluster-columns of tiles per group here, cluster-rows in kernel 12) so that CTAs running at the same
// time share A rows and B columns in L2. The producer runs ahead into the next tile while the consumers store the
// current one.
//
// CLUSTER = 2 (default): a cluster of 2 CTAs computes two vertically adjacent 128x256 tiles that need the
// same 64x256 slice of B per k step. Each CTA loads its own A (128x64) and half of B (two 64-column strips),
// the B half multicast into both CTAs' shared memory; a stage is free again only when the consumers of
// BOTH CTAs have released it, so consumer warps arrive on the empty barrier of each CTA in the cluster.
// This cuts the L2->SM traffic per CTA and k step from 48 KiB to 32 KiB.
//
// Stream-K tail (WGMMA_WS_STREAMK, default on, used only where it pays): when the cluster tiles do not
// divide evenly among the clusters, the last, partial wave can be spread evenly over all clusters by k
// steps instead of by tiles. A tile split between CTAs is summed in C itself: the CTA holding its first k
// steps stores its partial sum and raises the tile's flag; each other piece's CTA waits for that flag and
// adds its partial sum into C with L2 reductions (red.global.add; the order of those additions, and so the
// last bits of C, may vary from run to run). Each cluster does the start of a later tile (a piece 0)
// before the end of an earlier one, so every wait is on work another cluster did first: no chains, no
// deadlock with all CTAs resident. The flags (module scope, zero at load) count the finished pieces; the
// tile's last finisher resets its flag to zero, so launches on one stream reuse them (two launches of one
// module running at the same time on two streams would not).
// The fix-up (partial stores, reductions, flags) costs ~15 us per launch measured at 4096^3, so the split
// is used only when it saves more than SK_MIN_SAVED_STEPS k steps per cluster: at 4096^3 (58 of 66
// cluster tiles in the last wave, 64 k steps) it would save ~4 us and cost more (measured 0.94x vs 0.965x
// cuBLAS), at 8192^3 (34 of 66, 128 k steps) it saves ~35 us (measured +0.3..2.8 % in the pair ratio).
// A first version summed in k order (each piece waited for the previous one, read C back and stored):
// 0.81x cuBLAS at 4096^3 instead of 0.965x, the read-back epilogues chained.
//
// Balanced waves (WGMMA_WS_BALANCED, default on): where the tail is not split, the tiles go to the fewest
// clusters that keep the number of waves (4096^3: 64 of 66 clusters, 4 tiles each, instead of 58 clusters
// doing a fourth tile); the others exit at once. Same time in an ideal world, but two SMs less of power at
// every moment of the first waves; measured +0.4..2.3 % in the pair ratio at 4096^3 (notes).
//
// Epilogue (all CTAs reach it at about the same time and the tensor cores idle meanwhile; measured cost
// ~5-7 % of the run time): for whole tiles, each consumer warp's 16x256 block goes out through a per-warp
// 16x64 fp32 staging chunk in shared memory (XOR-swizzled, conflict-free), as 256-byte row segments.
// Edge tiles (or n not a multiple of 4) are stored directly from the accumulators with per-element guards.
// The last 64 columns of a whole tile stay staged and leave, 2 rows per warp every 2 k steps, during the CTA's
// next item (paced drain, below).
// Timing diagnostic: WGMMA_WS_DIAG_NO_EPILOGUE skips the stores of whole tiles (wrong results).
// What the epilogue costs, by clock stamps (WGMMA_WS_TRACE, tc_bench 8trace; 4096^3, H200): a tile's 64 k steps
// take 64.7k cycles (at the tensor cores' rate), the change to the next tile 6.8k more: the 128 KiB of C leave
// the SM at ~21 bytes per cycle and the next tile's first stages, requested 2k cycles before, arrive only after
// them (copy to data 8.8k cycles; 3.2k without the stores, 15k with C stored twice). See the notes.
// (Earlier experiments, removed after measuring no gain: parking half of the block in spare registers and
// storing it during the next tile's first k steps; storing whole tiles straight from the accumulators.)
// Variant WGMMA_WS_TMA_STORE=1 (not the default; entry wgmma_ws_matmul_tmastore, one more tensor map): whole
// tiles leave through TMA stores from a ring of 64x32 fp32 staging boxes (8 KiB), one thread per consumer
// warpgroup issuing them, so the warpgroup goes on to its next tile while the copy engine drains. The ring
// takes the smem of a pipeline stage: WGMMA_WS_STAGES defaults to 3 there (5 boxes per warpgroup); with 4
// stages 2 boxes fit. WGMMA_WS_TMA_PARK=1 also parks the boxes that do not fit the ring (3 with 3 stages, 48
// registers) and stores them WGMMA_WS_PARK_AT (4) k steps into the next item. Stream-K pieces, and every tile
// when n % 4 != 0, use direct guarded stores. Host contract of that variant: see wgmma_ws_matmul_tmastore.
//
// Variant WGMMA_WS_PINGPONG=1 (not the default; same entry, tensor maps, 384 threads and cluster): ping-pong
// consumers. Each consumer warpgroup owns a whole 128x128 tile (BN = 128; 2 x m64n128k16 per 16 k into two
// 64-register halves), warpgroup c takes the CTA's items c, c+2, ...; the producer loads the items' k steps in
// item order into 32 KiB stages (A 128x64 + B 64x128; B half multicast with CLUSTER 2), and named barriers 4/5
// make the mainloops take turns, so one warpgroup's epilogue runs under the other's wgmmas. The turn-taking is
// also what keeps a warpgroup from waiting on a full barrier two phases ahead. No stream-K (forced off), no TMA
// store. Dynamic smem 164,928 with 4 stages (WGMMA_WS_STAGES=6: 230,496).
//
// Programmatic dependent launch: the host may launch with programmatic stream serialisation. The kernel then
// starts while the previous kernel on the stream ends: barrier set-up, the cluster barrier and the schedule run
// early, and griddepcontrol.wait holds back every global access until the previous grid has completed. It calls
// griddepcontrol.launch_dependents at entry, so a next launch of it does the same. Measured in held batches of
// back-to-back launches (tc_bench --batch 10, H200): +0.3 % at 4096^3, +3 % at 4096x4096x1024 and +4-5 % at
// 2048^3, none at 8192^3 (notes). Launched without the attribute, both instructions are no-ops.
//
// Operands are pluggable (template parameter Op): the fp16/bf16 operands here (A K-major, B N-major); the
// tf32 rung 12_wgmma_tf32.cu reuses this pipeline with both operands K-major.
//
// Layouts. A is row-major m x k = K-major for wgmma: 128-byte rows (64 halves), 1024-byte swizzle atoms;
// the next 16 columns of K are 32 bytes on. B is row-major k x n = N-major (imm-trans-b = 1): stored as
// 64-column strips of 64 k-rows x 128 bytes; descriptor LBO = distance between 64-column strips, SBO =
// 1024 bytes between groups of 8 k-rows; the next 16 k-rows are 2048 bytes on.
// Edges: TMA zero-fills outside (k, m) and (n, k); the epilogue guards rows >= m, columns >= n; k = 0 writes C = 0.
//
// Host contract: block THREADS (384), dynamic smem SMEM_BYTES (230,464, both dtypes), cluster (CLUSTER, 1, 1),
// programmatic stream serialisation allowed (optional: see above),
// grid (G, 1, 1) with G a multiple of CLUSTER and no larger than the number of co-resident CTAs: #SMs (132
// on H100/H200), or with clusters 2 * cuOccupancyMaxActiveClusters (66 on the H200 -> 132); launching fewer
// CTAs than output tiles is fine (they loop); more than co-resident is not allowed (the stream-K tail waits
// on other CTAs' flags, which needs all of them resident).
// tmap_a: dims (k, m), box (rows BM = 128, cols BK = 64), 128B swizzle. tmap_b: dims (n, k), box (rows BK =
// 64, cols 64), 128B swizzle. Zero OOB fill.
#pragma once

#include "hopper.cuh"
#include "simt_common.cuh"

#ifndef WGMMA_WS_CLUSTER
#define WGMMA_WS_CLUSTER 2
#endif
#ifndef WGMMA_WS_GROUP_M  // cluster tiles per group of the tile order, across its grouped dimension
#define WGMMA_WS_GROUP_M 8
#endif
#ifndef WGMMA_WS_GROUP_ORDER  // 0: the order the operands name (Op::GROUP_ALONG_N); 1: groups of rows; 2: of columns
#define WGMMA_WS_GROUP_ORDER 0
#endif
#ifndef WGMMA_WS_PINGPONG  // 1: ping-pong consumers, one 128x128 tile each (variant, see below)
#define WGMMA_WS_PINGPONG 0
#endif
#ifndef WGMMA_WS_STREAMK
#if WGMMA_WS_PINGPONG
#define WGMMA_WS_STREAMK 0
#else
#define WGMMA_WS_STREAMK 1
#endif
#endif
#ifndef WGMMA_WS_BALANCED  // 1: where the tail is not split, the fewest clusters that keep the waves
#define WGMMA_WS_BALANCED 1
#endif
#ifndef WGMMA_WS_TMA_STORE  // 1: asynchronous TMA-store epilogue (variant; needs a C tensor map, see below)
#define WGMMA_WS_TMA_STORE 0
#endif
#ifndef WGMMA_WS_STAGES
#if WGMMA_WS_TMA_STORE == 1
#define WGMMA_WS_STAGES 3
#else
#define WGMMA_WS_STAGES 4
#endif
#endif
#ifndef WGMMA_WS_EPI_BOXES  // TMA-store staging boxes (8 KiB) per consumer warpgroup; 0 = as many as fit
#define WGMMA_WS_EPI_BOXES 0
#endif
#ifndef WGMMA_WS_TMA_PARK  // with TMA_STORE: park the boxes that do not fit the ring in registers (see below)
#define WGMMA_WS_TMA_PARK 0
#endif
#ifndef WGMMA_WS_PARK_AT  // ... and store them after this many k steps of the next item
#define WGMMA_WS_PARK_AT 4
#endif
#ifndef WGMMA_WS_STAGGER  // timing diagnostic: the producer of cluster c starts (c % 2) * WGMMA_WS_STAGGER cycles late
#define WGMMA_WS_STAGGER 0
#endif
#ifndef WGMMA_WS_DRAIN_EVERY  // > 0: each warp's last 64 columns of a whole tile leave during the next item (0: off)
#if WGMMA_WS_PINGPONG || WGMMA_WS_TMA_STORE
#define WGMMA_WS_DRAIN_EVERY 0
#else
#define WGMMA_WS_DRAIN_EVERY 2
#endif
#endif
#ifndef WGMMA_WS_C_STORE  // whole tiles' C stores: 0 plain, 1 st.global.cs (streaming), 2 L2 evict_first (variants)
#define WGMMA_WS_C_STORE 0
#endif

namespace wgmma_ws {

constexpr bool PINGPONG = WGMMA_WS_PINGPONG != 0;
constexpr int BM = 128, BN = PINGPONG ? 128 : 256;  // ping-pong: the tile of ONE consumer warpgroup
constexpr int CONSUMERS = 2;                   // consumer warpgroups, 64 rows each (ping-pong: a tile each)
constexpr int THREADS = 128 * (CONSUMERS + 1);  // + one producer warpgroup
constexpr int STAGES = WGMMA_WS_STAGES;
constexpr int CLUSTER = WGMMA_WS_CLUSTER;  // CTAs per cluster along M (1, 2 or 4: each loads 4/CLUSTER B strips)
constexpr int GROUP_M = WGMMA_WS_GROUP_M;  // cluster-rows (or columns) of tiles per group in the tile order
constexpr bool STREAMK = WGMMA_WS_STREAMK != 0;
constexpr bool BALANCED = WGMMA_WS_BALANCED != 0;
constexpr int STAGE_BYTES = BM * 128 + BN * 128;  // A 128 x 128 bytes (16 KiB) + B 256 x 128 bytes (32 KiB); pp: 32 KiB
constexpr int A_BYTES = BM * 128;
// Epilogue staging: per consumer warp one 16x64 fp32 chunk (4 KiB), used to turn the accumulator layout
// (8 rows x 32 bytes per store instruction) into whole-row 256-byte stores.
constexpr int EPI_CHUNK_BYTES = 16 * 64 * 4;
// TMA-store epilogue (WGMMA_WS_TMA_STORE): C leaves through boxes of 64 rows x 32 fp32 columns (128-byte
// rows, 128B swizzle, 8 KiB), a ring of EPI_BOXES boxes per consumer warpgroup in the staging area.
constexpr bool TMA_STORE = WGMMA_WS_TMA_STORE != 0;
// WGMMA_WS_TMA_STORE=2: per-warp boxes of 8 rows x 32 columns (1 KiB), a ring of WARP_BOXES per warp in the
// default's 32 KiB of staging, 4 stages; no warpgroup barrier (the shape of cuBLAS's epilogue at 4096^3).
constexpr bool TMA_STORE_WARP = WGMMA_WS_TMA_STORE == 2;
constexpr int WARP_BOX_BYTES = 8 * 32 * 4, WARP_BOXES = 4;
constexpr int C_BOX_ROWS = 64, C_BOX_COLS = 32, C_BOX_BYTES = C_BOX_ROWS * C_BOX_COLS * 4;
static_assert(C_BOX_COLS == 32, "boxes of 128-byte rows (write_box_row)");
constexpr int EPI_BOXES_FIT = (227 * 1024 - 1024 - STAGES * STAGE_BYTES - 2 * STAGES * 8) / (CONSUMERS * C_BOX_BYTES);
constexpr int EPI_BOXES = WGMMA_WS_EPI_BOXES > 0 ? WGMMA_WS_EPI_BOXES : (EPI_BOXES_FIT < 8 ? EPI_BOXES_FIT : 8);
constexpr int EPI_BYTES = (TMA_STORE && !TMA_STORE_WARP) ? CONSUMERS * EPI_BOXES * C_BOX_BYTES : CONSUMERS * 4 * EPI_CHUNK_BYTES;  // 32 KiB
static_assert(!TMA_STORE || TMA_STORE_WARP || (EPI_BOXES >= 2 && EPI_BYTES >= CONSUMERS * 4 * EPI_CHUNK_BYTES),
              "TMA-store staging");
static_assert(!TMA_STORE_WARP || CONSUMERS * 4 * WARP_BOXES * WARP_BOX_BYTES <= EPI_BYTES, "per-warp rings fit");
// Parking (WGMMA_WS_TMA_PARK): the last PARK boxes of a warpgroup's block (16 accumulators per thread each)
// wait in registers instead of in the ring, and go out during the next item's k steps.
constexpr int PARK = (TMA_STORE && WGMMA_WS_TMA_PARK) ? BN / C_BOX_COLS - EPI_BOXES : 0;
constexpr int PARK_AT = WGMMA_WS_PARK_AT;
static_assert(PARK >= 0 && PARK * 16 <= 48, "parked accumulators fit the consumers' spare registers");
constexpr uint32_t STAGE_DESC = STAGE_BYTES >> 4;  // one stage further, in a wgmma descriptor's address units
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8;  // 230,464
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int MAX_SK_FLAGS = 1024;  // stream-K flags: (tail tile, CTA rank in the cluster)
constexpr int SK_MIN_SAVED_STEPS = 32;  // split the tail only if that saves each cluster more k steps than this

// fp16 / bf16 operands: A row-major m x k (K-major), B row-major k x n (N-major, imm-trans-b = 1), BK = 64.
constexpr int BK = 64;
constexpr int BOX_A_ROWS = BM, BOX_A_COLS = BK;  // tensor map boxes, 128-byte swizzle
constexpr int BOX_B_ROWS = BK, BOX_B_COLS = 64;
constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB

static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "cluster of 1, 2 or 4 CTAs");
static_assert(!PINGPONG || (!STREAMK && !TMA_STORE), "ping-pong: no stream-K, no TMA-store epilogue");
// Arrivals that free a stage: every consumer warp of every CTA in the cluster (ping-pong: only the warpgroup
// whose tile the stage belongs to).
constexpr int EMPTY_ARRIVALS = (PINGPONG ? 1 : CONSUMERS) * 4 * CLUSTER;
// Paced drain (WGMMA_WS_DRAIN_EVERY = E > 0): a whole tile (not a stream-K piece, whose flag says it is stored)
// that is not the CTA's last leaves its last 64 columns staged (32 KiB per CTA); each consumer warp stores 2 of
// its chunk's 16 rows every E k steps of the next item, and what is left before that item's epilogue. The tile
// change is then 1.2k cycles shorter and the next mainloop ~1k longer (the SM's operand copies and C stores
// share its path to L2): +0.2 % at 4096^3, +0.2-0.7 % at 8192^3 (tc_bench --batch 10, notes).
constexpr int DRAIN_EVERY = WGMMA_WS_DRAIN_EVERY;
constexpr int DRAIN_PERIOD = DRAIN_EVERY > 0 ? DRAIN_EVERY : 1;  // (no % 0 where the drain is off)
static_assert(DRAIN_EVERY == 0 || (!PINGPONG && !WGMMA_WS_TMA_STORE), "paced drain: default epilogue only");
constexpr int PP_BAR = 4;  // ping-pong order barriers: named barriers PP_BAR + c (c = consumer warpgroup)
static_assert(SMEM_BYTES <= 227 * 1024, "fits the opt-in shared memory of one SM");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "register file");

#if HOPPER_SM90A
__device__ unsigned int sk_flags[MAX_SK_FLAGS];  // stream-K partial-sum order; zero between launches

#ifdef WGMMA_WS_TRACE
// Timing diagnostic (tc_bench variants 8trace, 8tmatrace): per CTA, SM clock stamps (clock64) at entry (slot 0),
// barriers initialised (60), cluster synchronised (61), previous grid complete (7; globaltimer in 56), producer
// ready (62), its first empty stage passed (2) and first copy issued (1); then, by thread 128 (consumer warpgroup
// 0, warp 0), each item i's first full stage (8 + 3i), last wgmma retired (9 + 3i) and epilogue issued (10 + 3i),
// and the end (3, before the final cluster barrier). globaltimer at entry (4) and end (5) lines the SMs up; the SM
// id is slot 6.
constexpr int TRACE_SLOTS = 128;  // 64 + i: the producer's first copy of item i issued
constexpr int TRACE_ITEMS = 16;   // items with stamps: slots 8 .. 55, clear of the start-up slots 60-62
// Slot of phase p (0: first full stage, 1: last wgmma retired, 2: epilogue issued) of item i; later items are
// not stamped (TRACE_SLOTS is out of range).
__device__ __forceinline__ int item_slot(int i, int p) { return i < TRACE_ITEMS ? 8 + 3 * i + p : TRACE_SLOTS; }
__device__ unsigned long long ws_trace[160 * TRACE_SLOTS];
__device__ __forceinline__ void trace(int slot, bool global_timer = false)
{
    unsigned long long t;
    if (global_timer) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    else t = clock64();
    if (slot < TRACE_SLOTS) ws_trace[blockIdx.x * TRACE_SLOTS + slot] = t;
}
#define WS_TRACE(cond, ...)           \
    do {                              \
        if (cond) trace(__VA_ARGS__); \
    } while (0)
#else
#define WS_TRACE(cond, ...) \
    do {                    \
    } while (0)
#endif

template <typename T>
struct Op16 {
    static constexpr int BK = wgmma_ws::BK;
    // Tile groups of cluster-columns: +0.3-0.4 % at 4096^3 against groups of rows, the same at 6144^3 and 8192^3
    // (tc_bench --batch 10, notes); groups of 2, 4 or 16 columns were slower.
    static constexpr bool GROUP_ALONG_N = true;
    static_assert(BK * sizeof(T) == 128 && A_BYTES == BM * BK * sizeof(T) && STAGE_BYTES - A_BYTES == BK * BN * 2,
                  "stage layout");
    // This CTA's share of the stage's B (k rows kt*BK.., columns n0..n0+255): the 64-column strips
    // rank*4/CLUSTER .. , multicast to every CTA of the cluster.
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
    // Low descriptor words of a warpgroup's A rows and of B in stage 0; stage s is s * STAGE_DESC on (ws_gemm
    // adds it). A: SBO = 1024 bytes between groups of 8 rows. B: LBO = distance between 64-column strips,
    // SBO = 1024 bytes between groups of 8 k-rows.
    static __device__ __forceinline__ uint32_t desc_a(uint32_t sa) { return hopper::desc_lo(sa, 16); }
    static __device__ __forceinline__ uint32_t desc_b(uint32_t sb) { return hopper::desc_lo(sb, B_STRIP_BYTES); }
    // One stage for one consumer warpgroup. The next 16 columns of K are 32 bytes on in each swizzled 128-byte
    // row of A, and 16 k-rows (2048 bytes) on in B: the address field counts 16-byte units.
    static __device__ __forceinline__ void mma(float (&d)[128], uint32_t da, uint32_t db, bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            hopper::wgmma_m64k16<BN, T>(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                        hopper::desc_join(db + kk * (2048 >> 4), 1024), kk > 0 || accumulate);
    }
#if WGMMA_WS_PINGPONG
    // Ping-pong: one stage for one warpgroup's whole 128x128 tile: rows 0-63 into d0, rows 64-127 into d1
    // (two m64n128k16 per 16 k, same B: two 64-column strips, LBO = strip distance).
    static __device__ __forceinline__ void mma_pp(float (&d0)[64], float (&d1)[64], uint32_t sa, uint32_t sb,
                                                  bool accumulate)
    {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            const uint64_t db = hopper::make_desc(sb + kk * 2048, B_STRIP_BYTES, 1024);
            hopper::wgmma_m64k16<BN, T>(d0, hopper::make_desc(sa + kk * 32, 16, 1024), db, kk > 0 || accumulate);
            hopper::wgmma_m64k16<BN, T>(d1, hopper::make_desc(sa + 64 * 128 + kk * 32, 16, 1024), db,
                                        kk > 0 || accumulate);
        }
    }
#endif
};

// Grouped tile order over "cluster tiles" of (CLUSTER*BM) x BN: GROUP_M cluster-rows are walked column by column
// (ALONG_N: GROUP_M cluster-columns row by row), so consecutive indices (CTAs running at the same time) reuse A
// rows and B columns. Which of the two is faster depends on the operands' layouts (Op::GROUP_ALONG_N).
template <bool ALONG_N>
__device__ __forceinline__ void tile_coords(int t, int rows, int cols, int& tm, int& tn)
{
    if constexpr (ALONG_N) simt_common::grouped_tile<GROUP_M>(t, cols, rows, tn, tm);
    else simt_common::grouped_tile<GROUP_M>(t, rows, cols, tm, tn);
}
template <class Op>
constexpr bool GROUP_ALONG_N = WGMMA_WS_GROUP_ORDER == 0 ? Op::GROUP_ALONG_N : WGMMA_WS_GROUP_ORDER == 2;

// One 16-byte store of C. The variants mark C as the first to leave L2, so that it does not evict operand
// lines other CTAs still need (C is written once and never read back here).
__device__ __forceinline__ void store_c(float4* p, float4 v)
{
#if WGMMA_WS_C_STORE == 1
    __stcs(p, v);
#elif WGMMA_WS_C_STORE == 2
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z),
                 "f"(v.w), "l"(policy) : "memory");
#else
    *p = v;
#endif
}

// Row r of a box with 128-byte rows (32 fp32 columns) in the TMA's 128B swizzle (16-byte unit u of row r at
// u ^ (r % 8), so the float2 writes are conflict-free): this lane's 8 columns, from its 16 accumulators v of
// those 32 columns, row half h (rows l/4 or l/4 + 8 of the warp's 16).
__device__ __forceinline__ void write_box_row(unsigned char* box, int r, const float* v, int h, int lane)
{
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
        const int uu = 2 * jj + (lane % 4) / 2;
        *reinterpret_cast<float2*>(box + r * 128 + ((uu ^ (r & 7)) * 16) + (lane & 1) * 8) =
            make_float2(v[4 * jj + 2 * h], v[4 * jj + 2 * h + 1]);
    }
}

// Rows 2q and 2q + 1 of a staged 16x64 chunk (as store_warp_rows_staged leaves it) to C at crow (the chunk's
// first row and column): one 16-byte read and store per lane, 2 rows x 256 contiguous bytes per instruction.
__device__ __forceinline__ void store_chunk_rows(const unsigned char* chunk, float* crow, int n, int lane, int q)
{
    const int r = 2 * q + lane / 16;
    const int uu = lane % 16;
    const float4 v = *reinterpret_cast<const float4*>(chunk + r * 256 + ((uu ^ (r & 7)) * 16));
    store_c(reinterpret_cast<float4*>(crow + static_cast<size_t>(r) * n + 4 * uu), v);
}

// A warp's 16 x COLS accumulator block (rows l/4 and l/4 + 8, columns 8j + 2(l%4)) stored to C (crow: its first
// row and column) through a 16x64 fp32 staging chunk in shared memory, 64 columns at a time. 16-byte units are
// XOR-swizzled by (row % 8), so both the float2 writes and the float4 row reads are free of bank conflicts; each
// read/store instruction then covers 2 rows x 256 contiguous bytes of C. KEEP_LAST: the last 64 columns are only
// staged; the caller stores them later (store_chunk_rows, q = 0..7, columns COLS - 64 on).
template <int COLS, bool KEEP_LAST = false>
__device__ __forceinline__ void store_warp_rows_staged(const float* d, unsigned char* chunk, float* crow, int n,
                                                       int lane)
{
#pragma unroll
    for (int ch = 0; ch < COLS / 64; ++ch) {
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = lane / 4 + 8 * h;
                const int uu = 2 * jj + (lane % 4) / 2;  // 16-byte unit within the 256-byte row
                const int j = 8 * ch + jj;
                *reinterpret_cast<float2*>(chunk + r * 256 + ((uu ^ (r & 7)) * 16) + (lane & 1) * 8) =
                    make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        }
        __syncwarp();
        if (KEEP_LAST && ch == COLS / 64 - 1) break;
#pragma unroll
        for (int q = 0; q < 8; ++q) store_chunk_rows(chunk, crow + 64 * ch, n, lane, q);
        __syncwarp();
    }
}

// The work of one cluster: first whole tiles (cluster_id, + nclusters, ...) of the tiles that divide evenly,
// then (stream-K) its contiguous share of the tail's k steps, at most two pieces since the tail has fewer
// tiles than there are clusters: the start of the later tile first, then the end of the earlier one.
struct Schedule {
    int ktiles, nclusters, cluster_id;
    int n_whole;        // whole tiles of this cluster
    int dp;             // tiles done whole by the grid; tail tiles dp.. are split by k steps
    long long w;        // tail k steps
    int s, e;           // this cluster's tail k steps [s, e)
    int n_items;

    __device__ __forceinline__ Schedule(int ntiles, int ktiles_, int nclusters_, int cluster_id_)
        : ktiles(ktiles_), nclusters(nclusters_), cluster_id(cluster_id_)
    {
        const int tail = ntiles % nclusters;
        // The split saves each cluster (1 - tail/G) * ktiles k steps; it needs every share non-empty.
        const bool sk = STREAMK && tail > 0 && ktiles > 0 &&
                        static_cast<long long>(nclusters - tail) * ktiles >=
                            static_cast<long long>(SK_MIN_SAVED_STEPS) * nclusters &&
                        static_cast<long long>(tail) * ktiles >= nclusters && tail * CLUSTER <= MAX_SK_FLAGS;
        dp = sk ? ntiles - tail : ntiles;
        if (BALANCED && !sk && ntiles > 0) {  // as many waves with fewer clusters; the rest have no items
            const int waves = (ntiles + nclusters - 1) / nclusters;
            nclusters = (ntiles + waves - 1) / waves;
        }
        n_whole = cluster_id < nclusters ? (dp - cluster_id + nclusters - 1) / nclusters : 0;
        if (n_whole < 0) n_whole = 0;
        n_items = n_whole;
        w = 0;
        s = e = 0;
        if (sk) {
            w = static_cast<long long>(tail) * ktiles;
            s = static_cast<int>(cluster_id * w / nclusters);
            e = static_cast<int>((cluster_id + 1) * w / nclusters);
            n_items += (s / ktiles != (e - 1) / ktiles) ? 2 : 1;
        }
    }

    // The first cluster whose share contains tail k step x: the largest c with c*w/G <= x.
    __device__ __forceinline__ int owner(long long x) const
    {
        return static_cast<int>(((x + 1) * nclusters + w - 1) / w) - 1;
    }

    // Item i: tile t, k steps [k0, k1), piece (-1: whole tile; else its index in k order), pieces (how many
    // the tile is split into), u (tail tile index, for the flag).
    __device__ __forceinline__ void item(int i, int& t, int& k0, int& k1, int& piece, int& pieces, int& u) const
    {
        if (i < n_whole) {
            t = cluster_id + i * nclusters;
            k0 = 0;
            k1 = ktiles;
            piece = -1;
            pieces = 1;
            u = -1;
            return;
        }
        const int lo = s / ktiles, hi = (e - 1) / ktiles;
        u = (i == n_whole && hi != lo) ? hi : lo;
        const int base = u * ktiles;
        k0 = max(s, base) - base;
        k1 = min(e, base + ktiles) - base;
        t = dp + u;
        const int first = owner(base);
        piece = cluster_id - first;
        pieces = owner(static_cast<long long>(base) + ktiles - 1) - first + 1;
    }
};
#endif  // HOPPER_SM90A

template <class Op>
__device__ __forceinline__ void ws_gemm(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C, int m, int n,
                                        int k, const CUtensorMap* tmap_c = nullptr)
{
#if HOPPER_SM90A
    using namespace hopper;
    constexpr int OBK = Op::BK;

    // Programmatic dependent launch: launched with programmatic stream serialisation, this grid may start while
    // the previous kernel on the stream is still running. Let the next grid start early too (its CTAs become
    // resident only as ours exit), and touch no global memory before the previous grid has completed and its
    // writes are visible (griddepcontrol.wait). Without the launch attribute both are no-ops.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (k <= 0) {  // empty sum: C = 0 (every item below has at least one k step)
        asm volatile("griddepcontrol.wait;" ::: "memory");
        for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(m) * n;
             i += static_cast<size_t>(gridDim.x) * blockDim.x)
            C[i] = 0.f;
        return;
    }

    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t tiles = (raw + 1023u) & ~1023u;  // stage s: A at tiles + s*STAGE_BYTES, B after it
    const uint32_t epi = tiles + STAGES * STAGE_BYTES;
    const uint32_t full_bar = epi + EPI_BYTES;
    const uint32_t empty_bar = full_bar + STAGES * 8;

    const int tid = threadIdx.x;
    WS_TRACE(tid == 0, 0);
    WS_TRACE(tid == 0, 4, true);
#ifdef WGMMA_WS_TRACE
    if (tid == 0) {
        uint32_t smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        ws_trace[blockIdx.x * TRACE_SLOTS + 6] = smid;  // which SM (pairs of a cluster / TPC)
    }
#endif
    // The warpgroup index through a shuffle: the compiler then knows it is the same in every lane, and keeps the
    // consumers' wgmma descriptors (which depend on it) on the uniform datapath instead of moving them into uniform
    // registers before every wgmma (static R2UR 374 -> 314). Measured +0.4 % at 4096^3 (tc_bench --batch 10, notes).
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
    const uint32_t rank = (CLUSTER > 1) ? cluster_rank() : 0;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_bar + 8 * s, 1);
            mbar_init(empty_bar + 8 * s, EMPTY_ARRIVALS);
        }
        fence_mbar_init();
    }
    WS_TRACE(tid == 0, 60);
    if constexpr (CLUSTER > 1) cluster_sync();  // peers' barriers exist before any multicast or remote arrive
    else __syncthreads();
    WS_TRACE(tid == 0, 61);

    const int rows_c = (m + CLUSTER * BM - 1) / (CLUSTER * BM);  // cluster-tile rows
    const int cols = (n + BN - 1) / BN;
    const int ktiles = (k + OBK - 1) / OBK;
    const Schedule sched(rows_c * cols, ktiles, static_cast<int>(gridDim.x) / CLUSTER,
                         static_cast<int>(blockIdx.x) / CLUSTER);
    // Everything above (barriers, cluster barrier, schedule) overlaps the end of the previous grid.
    asm volatile("griddepcontrol.wait;" ::: "memory");  // its writes (A, B, C, the stream-K flags) are visible
    WS_TRACE(tid == 0, 7);
    WS_TRACE(tid == 0, 56, true);

    if (wg == 0) {
        // ---------------- producer ----------------
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            WS_TRACE(true, 62);
            if constexpr (WGMMA_WS_STAGGER > 0) {  // timing diagnostic: odd clusters start late
                const long long t0 = clock64();
                while (clock64() - t0 < (sched.cluster_id % 2) * WGMMA_WS_STAGGER) {
                }
            }
            int it = 0;
            for (int i = 0; i < sched.n_items; ++i) {
                int t, k0, k1, piece, pieces, u, tm, tn;
                sched.item(i, t, k0, k1, piece, pieces, u);
                tile_coords<GROUP_ALONG_N<Op>>(t, rows_c, cols, tm, tn);
                const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
                const int n0 = tn * BN;
                for (int kt = k0; kt < k1; ++kt, ++it) {
                    const int s = it % STAGES;
                    const uint32_t round = static_cast<uint32_t>(it / STAGES);
                    mbar_wait(empty_bar + 8 * s, (round & 1u) ^ 1u);
                    const uint32_t fb = full_bar + 8 * s;
                    const uint32_t sa = tiles + s * STAGE_BYTES;
                    WS_TRACE(it == 0, 2);
#ifdef WGMMA_WS_DIAG_NO_B  // timing diagnostic (wrong results): B is never loaded, half the operand traffic
                    mbar_arrive_expect_tx(fb, A_BYTES);
                    tma_load_2d(sa, tmap_a, fb, kt * OBK, m0);
#else
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);
                    tma_load_2d(sa, tmap_a, fb, kt * OBK, m0);
                    Op::load_b(sa + A_BYTES, tmap_b, fb, n0, kt, rank);
#endif
                    WS_TRACE(it == 0, 1);
                    WS_TRACE(kt == k0, 64 + i);
                }
            }
        }
    } else {
        // ---------------- consumers ----------------
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        const int ltid = tid % 128;
        const int warp = ltid / 32, lane = ltid % 32;
#if WGMMA_WS_PINGPONG
        // Ping-pong: consumer warpgroup c takes this CTA's items c, c + 2, ... (whole 128x128 tiles; no stream-K),
        // the producer loads every item's k steps in item order, so item i's stages are ring positions
        // i*ktiles .. (i+1)*ktiles - 1. The two warpgroups' mainloops take turns (order barriers PP_BAR + c:
        // item i's mainloop is issued only after item i-1's was): one warpgroup's epilogue runs while the other's
        // wgmmas keep the tensor cores busy. A warpgroup never waits on a full barrier more than one phase ahead:
        // the position it waits for was last used by an item whose mainloop it has already seen issued.
        float d0[64], d1[64];  // rows 0-63 and 64-127 of the warpgroup's tile
        auto release = [&](int stage) {
            if (lane == 0) {
                if constexpr (CLUSTER == 1) mbar_arrive_local(empty_bar + 8 * stage);
                else
                    for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar + 8 * stage, r);
            }
        };
        for (int i = c; i < sched.n_items; i += CONSUMERS) {
            int t, k0, k1, piece, pieces, u, tm, tn;
            sched.item(i, t, k0, k1, piece, pieces, u);  // whole tiles: k0 = 0, k1 = ktiles
            tile_coords<GROUP_ALONG_N<Op>>(t, rows_c, cols, tm, tn);
            const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
            const int n0 = tn * BN;
            if (i > 0) named_barrier(PP_BAR + c, 256);  // the other warpgroup has issued item i-1's mainloop
            int it = i * ktiles;
            for (int kt = 0; kt < ktiles; ++kt, ++it) {
                const int s = it % STAGES;
                mbar_wait(full_bar + 8 * s, static_cast<uint32_t>(it / STAGES) & 1u);
                const uint32_t sa = tiles + s * STAGE_BYTES;
                wgmma_fence();
                Op::mma_pp(d0, d1, sa, sa + A_BYTES, kt > 0);
                wgmma_commit();
                if (kt > 0) {
                    wgmma_wait<1>();
                    release((it - 1) % STAGES);
                }
            }
            if (i + 1 < sched.n_items) named_barrier_arrive(PP_BAR + (c ^ 1), 256);  // item i+1 may start
            wgmma_wait<0>();
            release((it - 1) % STAGES);

            // Epilogue, per 64-row half: as the default's (per-warp 16x64 staging chunks, 256-byte row
            // segments) where the half lies inside C, else guarded stores from the accumulators.
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float* dh = h ? d1 : d0;
                const int rw = m0 + 64 * h + warp * 16;  // this warp's first row
                if (m0 + 64 * h + 64 <= m && n0 + BN <= n && (n % 4) == 0) {
                    store_warp_rows_staged<BN>(dh, smem_raw + (epi - raw) + (c * 4 + warp) * EPI_CHUNK_BYTES,
                                               C + static_cast<size_t>(rw) * n + n0, n, lane);
                } else if (m0 + 64 * h < m) {
                    store_acc_guarded<BN / 8>(dh, C, m, n, rw + lane / 4, n0 + 2 * (lane % 4));
                }
            }
        }
#else
        float d[128];
        // Stage counter (unsigned: % and / by STAGES are a mask and a shift) and the low words of the stage-0
        // descriptors, computed once: in the loop a stage's descriptors are an add.
        uint32_t it = 0;
        const uint32_t desc_a0 = Op::desc_a(tiles + c * (64 * 128)), desc_b0 = Op::desc_b(tiles + A_BYTES);
#if WGMMA_WS_TMA_STORE  // (preprocessor, not only if constexpr: the default build's PTX stays as it was)
        int ebuf = 0;  // TMA-store epilogue: next staging box of this warpgroup's ring
        // One box (64 rows x 32 columns of this warpgroup's block, at C column col, row row; v = its 16
        // accumulators per thread in the accumulator layout) out through the next ring slot.
        auto box_out = [&](const float* v, int col, int row) {
            const uint32_t buf = epi + c * (EPI_BOXES * C_BOX_BYTES) + ebuf * C_BOX_BYTES;
            unsigned char* bp = smem_raw + (buf - raw);
            // The issuing thread waits until the engine has read this ring slot's previous box (at most
            // EPI_BOXES - 1 of its stores pending), then releases the others.
            if (ltid == 0) bulk_wait_read<EPI_BOXES - 1>();
            named_barrier(2 + c, 128);
#pragma unroll
            for (int h = 0; h < 2; ++h) write_box_row(bp, warp * 16 + lane / 4 + 8 * h, v, h, lane);
            fence_proxy_async_smem();
            named_barrier(2 + c, 128);  // the whole box is in shared memory
            if (ltid == 0) {
                tma_store_2d(tmap_c, buf, col, row);
                bulk_commit();
            }
            ebuf = (ebuf + 1 == EPI_BOXES) ? 0 : ebuf + 1;
        };
        int wbuf = 0;  // WGMMA_WS_TMA_STORE=2: next slot of this warp's ring
        // Rows 8h..8h+7 of this warp's 16 and the 32 columns whose 16 accumulators are v, to C (col, row).
        auto warp_box_out = [&](const float* v, int h, int col, int row) {
            const uint32_t buf = epi + ((c * 4 + warp) * WARP_BOXES + wbuf) * WARP_BOX_BYTES;
            unsigned char* bp = smem_raw + (buf - raw);
            if (lane == 0) bulk_wait_read<WARP_BOXES - 1>();  // this slot's previous box has been read
            __syncwarp();
            write_box_row(bp, lane / 4, v, h, lane);
            fence_proxy_async_smem();
            __syncwarp();
            if (lane == 0) {
                tma_store_2d(tmap_c, buf, col, row);
                bulk_commit();
            }
            wbuf = (wbuf + 1 == WARP_BOXES) ? 0 : wbuf + 1;
        };
        float park[PARK > 0 ? 16 * PARK : 1];
        int park_n0 = 0, park_row = 0;
        bool parked = false;
        auto unpark = [&]() {
#pragma unroll
            for (int pb = 0; pb < PARK; ++pb)
                if (park_n0 + C_BOX_COLS * (EPI_BOXES + pb) < n)
                    box_out(park + 16 * pb, park_n0 + C_BOX_COLS * (EPI_BOXES + pb), park_row);
            parked = false;
        };
#endif

        auto release = [&](int stage) {
            if (lane == 0) {
                if constexpr (CLUSTER == 1) mbar_arrive_local(empty_bar + 8 * stage);
                else
                    for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar + 8 * stage, r);
            }
        };
        unsigned char* const chunk = smem_raw + (epi - raw) + (c * 4 + warp) * EPI_CHUNK_BYTES;
        // Paced drain: the staged rows of the previous whole tile not stored yet (2 per piece), and where they go.
        int drain_left = 0;
        float* drain_c = nullptr;
        auto drain = [&]() {
            store_chunk_rows(chunk, drain_c, n, lane, 8 - drain_left);
            --drain_left;
        };

        for (int i = 0; i < sched.n_items; ++i) {
            int t, k0, k1, piece, pieces, u, tm, tn;
            sched.item(i, t, k0, k1, piece, pieces, u);
            tile_coords<GROUP_ALONG_N<Op>>(t, rows_c, cols, tm, tn);
            const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
            const int n0 = tn * BN;
            // Each k step: wait for the stage, issue its wgmmas, keep one group in flight, release the stage
            // that the previous group read. The first k step overwrites the accumulators (scale-d = 0):
            // zeroing them with ordinary moves makes ptxas serialise the wgmmas (warning C7515).
            for (int kt = k0; kt < k1; ++kt) {
                const uint32_t s = it % STAGES;
                mbar_wait(full_bar + 8 * s, (it / STAGES) & 1u);
                WS_TRACE(tid == 128 && kt == k0, item_slot(i, 0));
                wgmma_fence();
                Op::mma(d, desc_a0 + s * STAGE_DESC, desc_b0 + s * STAGE_DESC, kt > k0);
                wgmma_commit();
                if (kt > k0) {
                    wgmma_wait<1>();
                    release((it - 1) % STAGES);
                }
                if constexpr (DRAIN_EVERY > 0) {
                    if (drain_left > 0 && (kt - k0) % DRAIN_PERIOD == DRAIN_PERIOD - 1) drain();
                }
#if WGMMA_WS_TMA_STORE
                if constexpr (PARK > 0) {  // the previous item's parked boxes, PARK_AT k steps into this one
                    if (parked && (kt == k0 + PARK_AT || kt + 1 == k1)) unpark();
                }
#endif
                ++it;
            }
            wgmma_wait<0>();
            if (k1 > k0) release((it - 1) % STAGES);
            WS_TRACE(tid == 128, item_slot(i, 1));
            if constexpr (DRAIN_EVERY > 0) {  // what the k steps did not drain goes now, before the chunk is reused
                while (drain_left > 0) drain();
                __syncwarp();
            }

            const int row0 = m0 + c * 64 + warp * 16 + lane / 4;
            const int col0 = n0 + 2 * (lane % 4);
            unsigned int* flag = (piece >= 0) ? &sk_flags[u * CLUSTER + static_cast<int>(rank)] : nullptr;
            if (piece > 0) {  // add into the tile's piece 0, once its holder has stored it
                if (tid == 128) flag_wait_ge(flag, 1u);
                named_barrier(1, 128 * CONSUMERS);
                red_add_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
                named_barrier(1, 128 * CONSUMERS);
                if (tid == 128 && atomicAdd(flag, 1u) == static_cast<unsigned int>(pieces - 1)) atomicExch(flag, 0u);
                continue;
            }
#ifdef WGMMA_WS_DIAG_NO_EPILOGUE  // timing diagnostic only (results are wrong): what the stores cost
            if (piece < 0 && d[0] != 12345.f) {
                WS_TRACE(tid == 128, item_slot(i, 2));
                continue;
            }
#endif
#if WGMMA_WS_TMA_STORE
            {
                // Asynchronous epilogue for whole (unsplit) tiles, edge tiles included (the copy engine clips
                // at m and n; needs the C tensor map, i.e. n % 4 == 0). The warpgroup writes its 64x256 block
                // box by box (64 rows x 32 columns) into a ring of EPI_BOXES staging boxes in the TMA's 128B
                // swizzle (16-byte unit u of row r at u ^ (r % 8): the float2 writes are conflict-free), one
                // thread issues a TMA store per box and the warpgroup goes on to the next tile's k steps while
                // the copy engine drains (no wait at the end of a tile: a slot is waited for only when it is
                // about to be rewritten).
                // With PARK, boxes EPI_BOXES.. are copied to registers and stored PARK_AT k steps into the next
                // item (or after the last one), when the ring's slots have long been read.
                if (TMA_STORE_WARP && piece < 0 && (n % 4) == 0) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = m0 + c * 64 + warp * 16 + 8 * h;
                        if (row < m) {
#pragma unroll
                            for (int jb = 0; jb < BN / 32; ++jb)
                                if (n0 + 32 * jb < n) warp_box_out(d + 16 * jb, h, n0 + 32 * jb, row);
                        }
                    }
                    WS_TRACE(tid == 128, item_slot(i, 2));
                    continue;
                }
                if (!TMA_STORE_WARP && piece < 0 && (n % 4) == 0) {
                    if (m0 + c * 64 < m) {
#pragma unroll
                        for (int jb = 0; jb < BN / C_BOX_COLS; ++jb) {
                            if (jb >= BN / C_BOX_COLS - PARK) {
#pragma unroll
                                for (int q = 0; q < 16; ++q)
                                    park[16 * (jb - (BN / C_BOX_COLS - PARK)) + q] = d[16 * jb + q];
                            } else if (n0 + C_BOX_COLS * jb < n) {
                                box_out(d + 16 * jb, n0 + C_BOX_COLS * jb, m0 + c * 64);  // d[16 jb..]: columns 32 jb..
                            }
                        }
                        if constexpr (PARK > 0) {
                            park_n0 = n0;
                            park_row = m0 + c * 64;
                            parked = true;
                        }
                    }
                    WS_TRACE(tid == 128, item_slot(i, 2));
                    continue;
                }
            }
#endif
            // Epilogue. Fast path (whole tile inside C, rows 16-byte aligned): each warp stores its 16x256
            // block through its staging chunk (store_warp_rows_staged); else guarded stores.
            if (!TMA_STORE && m0 + c * 64 + 64 <= m && n0 + BN <= n && (n % 4) == 0) {
                float* const crow = C + static_cast<size_t>(m0 + c * 64 + warp * 16) * n + n0;
                if (DRAIN_EVERY > 0 && piece < 0 && i + 1 < sched.n_items) {  // last 64 columns: during the next item
                    store_warp_rows_staged<BN, true>(d, chunk, crow, n, lane);
                    drain_c = crow + BN - 64;
                    drain_left = 8;
                } else {
                    store_warp_rows_staged<BN>(d, chunk, crow, n, lane);
                }
#ifdef WGMMA_WS_DIAG_EPILOGUE_TWICE  // timing diagnostic: every whole tile's C stored twice (same values)
                store_warp_rows_staged<BN>(d, chunk, crow, n, lane);
#endif
                WS_TRACE(tid == 128, item_slot(i, 2));
            } else {
                store_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
            }
            if (piece == 0) {  // piece 0 stored: the other pieces may add into it now
                __threadfence();
                named_barrier(1, 128 * CONSUMERS);
                if (tid == 128 && atomicAdd(flag, 1u) == static_cast<unsigned int>(pieces - 1)) atomicExch(flag, 0u);
            }
        }
#if WGMMA_WS_TMA_STORE
        if constexpr (PARK > 0)
            if (parked) unpark();
        if (TMA_STORE_WARP ? lane == 0 : ltid == 0) bulk_wait<0>();  // staging stays valid until stores are done
#endif
#endif  // WGMMA_WS_PINGPONG
    }

    WS_TRACE(tid == 128, 3);
    WS_TRACE(tid == 128, 5, true);
    // No CTA of a cluster may exit while its peer can still multicast into it or arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        __syncwarp();
        cluster_sync();
    }
#endif
}

}  // namespace wgmma_ws

template <typename T>
__device__ __forceinline__ void wgmma_ws_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                int m, int n, int k)
{
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::Op16<T>>(tmap_a, tmap_b, C, m, n, k);
#endif
}

#if WGMMA_WS_TMA_STORE
// Variant entry point with the TMA-store epilogue: tmap_c over C (fp32, dims (n, m), row pitch 4n bytes, box
// (rows 64, cols 32), 128B swizzle). Valid only if n % 4 == 0 (TMA needs 16-byte row pitches; C 16-byte
// aligned); for other n the kernel never touches it (direct stores), and the host may pass any map there.
// Launch as the default kernel (384 threads, cluster (CLUSTER, 1, 1), persistent grid) with dynamic smem
// SMEM_BYTES of that build: 230,448 with 3 stages, 230,464 with 4.
template <typename T>
__device__ __forceinline__ void wgmma_ws_matmul_tmastore(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b,
                                                         const CUtensorMap* tmap_c, float* C, int m, int n, int k)
{
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::Op16<T>>(tmap_a, tmap_b, C, m, n, k, tmap_c);
#endif
}
#endif
