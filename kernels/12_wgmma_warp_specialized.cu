// Warp-specialised, persistent wgmma + TMA GEMM for Hopper (sm_90a): method wgmma_warp_specialized (fp16 and
// bf16 in, fp32 accumulate and out). The tf32 and int8 rungs (13_wgmma_tf32.cu, 15_wgmma_int8.cu) run the same
// pipeline with other operands.
//
// Warpgroups. A CTA is 3 warpgroups (384 threads) that do different jobs, so that copies, math and stores
// overlap without any of them waiting for a block-wide barrier:
//   producer (warpgroup 0): gives most of its registers away (setmaxnreg 40); one thread issues every TMA copy
//     of A and B into a ring of shared-memory stages, running ahead of the math by up to STAGES k steps, and
//     into the next tile while the consumers store the current one.
//   consumers (warpgroups 1 and 2, setmaxnreg 232): each owns 64 rows of the CTA's 128xBN tile of C and issues
//     wgmma m64nBNk16 on the stages (fp32 accumulators: BN / 2 registers per thread), then stores its rows.
//
// Tile width BN (WGMMA_WS_BN). 256 (default): 128x256 tiles, the most math per byte loaded. 128: 128x128 tiles
// (64 accumulators per consumer thread) for problems whose 128x256 tiles leave most SMs idle (512^3: 8 tiles on
// 132 SMs): twice the tiles, half the work per tile. Its stages are 32 KiB, so 6 fit where 4 of 48 KiB do; the
// default stage count is what fits at either width, and since a stage then holds half the math, 6 cover 3/4 of
// the copy latency (in time) that 4 cover at BN 256. The tf32 and int8 operands are built at BN 256 only; the FP8
// ones also at 128, where the registers hold a promoted accumulation (WGMMA_WS_PROMOTE, see mainloop).
//
// Pipeline. Each stage (A 128x64 + B 64xBN: 48 KiB, or 32 KiB at BN 128) has a "full" mbarrier (the copy engine
// completes it on the stage's transaction byte count) and an "empty" one (one arrival per consumer warp of every CTA
// of the cluster). The consumers keep one wgmma group in flight: a k step's stage is released as soon as the group
// that read it has retired, so the producer refills it while the next group runs.
//
// Clusters. CLUSTER (default 2) CTAs along M compute vertically adjacent tiles that need the same B slice per k
// step: each CTA loads its own A and 1/CLUSTER of B, the B part multicast into every CTA of the cluster. That
// cuts the L2->SM traffic per CTA and k step from 48 KiB to 32 KiB (cluster 2, BN 256). Clusters of 4 fit only 30 at
// once on 132 SMs (a fifth wave at 4096^3: 0.886x cuBLAS against 0.96x, b929e7e), so 2 is the default.
//
// Schedule. The grid is persistent (no more CTAs than are co-resident) and each cluster walks its tiles in the
// order ws_tile_schedule.cuh defines: grouped for L2 reuse, a stream-K tail where that pays, balanced waves
// otherwise. The producer and the consumers walk the same schedule.
//
// Epilogue. While the consumers store C the tensor cores idle (the epilogue cost ~5-7 % of the run time at
// 4096^3), and C's 128 KiB per tile (BN 256) leave the SM through the same path to L2 as the next tile's operands.
//   whole tiles inside C: each consumer warp's 16xBN block goes out through a per-warp 16x64 fp32 staging
//     chunk in shared memory (XOR-swizzled, conflict-free), as 256-byte row segments, 2 rows per instruction;
//   paced drain (DRAIN_EVERY k steps, default 2): a whole tile that is not the CTA's last leaves its last 64
//     columns staged, and each warp stores 2 of the chunk's 16 rows every DRAIN_EVERY k steps of its next item,
//     so the tile change is shorter (+0.2 % at 4096^3, +0.2-0.7 % at 8192^3, 1a57bef);
//   edge tiles (or n not a multiple of 4): guarded stores straight from the accumulators;
//   stream-K pieces: piece 0 stores and raises the tile's flag; the other pieces wait for it and add their sums
//     into C with L2 reductions (red.global.add: the order of the additions, and so the last bits of C, may vary
//     between runs). The flags (module scope, zero at load) count finished pieces and the last finisher resets
//     its flag, so launches on one stream reuse them; two launches of one module at once on two streams would not.
//   split-K slices (WGMMA_WS_SPLIT_K = S > 1, see ws_tile_schedule.cuh): deterministic, unlike the stream-K
//     tail. Each slice stores its partial tile to the workspace in the accumulators' own order (512 contiguous
//     bytes per warp instruction) and counts itself in on the tile's counter; once all S are in, slice j sums
//     its 1/S of the tile over slices 0, 1, .., S-1 (always that order, whichever finished first) and stores it
//     to C. Spreading the sum over the S slices, rather than leaving it to the last one to finish,
//     keeps it off one SM's path to L2: each slice reads one tile's bytes, not S - 1 tiles'. Each slice counts
//     itself out again after its sum, and the last one out resets the counter for the next launch.
// An asynchronous TMA-store epilogue (it needs the smem of one stage: 3 stages lose 5-6 %, b575698) and
// ping-pong consumers (one 128x128 tile each, epilogues under the other's wgmmas: 3a96bf5) measured slower.
//
// Programmatic dependent launch: with programmatic stream serialisation the kernel starts while the previous
// kernel on the stream ends. Barrier set-up, the cluster barrier and the schedule run early, griddepcontrol.wait
// holds back every global access until the previous grid has completed, and griddepcontrol.launch_dependents at
// entry lets the next launch do the same (+3-5 % on small problems, f9521cc). Launched without the attribute,
// both instructions are no-ops.
//
// Operands are pluggable (template parameter Op: tile loads, descriptors, the wgmmas of one stage, its preferred
// tile order, and the 32-bit type Op::Acc of the accumulators and C: float, or int for 15_wgmma_int8.cu). Op16
// here: A row-major m x k = K-major for wgmma, 128-byte rows (64 halves) in 1024-byte swizzle atoms, the next 16
// columns of K 32 bytes on; B row-major k x n = N-major (imm-trans-b = 1), as 64-column strips
// of 64 k-rows x 128 bytes: descriptor LBO = distance between strips, SBO = 1024 bytes between groups of 8 k-rows,
// the next 16 k-rows 2048 bytes on. Edges: TMA zero-fills outside (k, m) and (n, k); the epilogue guards rows >= m
// and columns >= n; k = 0 writes C = 0.
//
// Host contract: block THREADS (384), dynamic smem SMEM_BYTES (230,464 with 4 stages at BN 256, 230,496 with 6 at
// BN 128; both dtypes), cluster (CLUSTER, 1, 1), programmatic stream serialisation allowed; grid (G, 1, 1) with G a
// multiple of CLUSTER and no more than the co-resident CTAs (#SMs, or with clusters CLUSTER *
// cuOccupancyMaxActiveClusters): the stream-K tail and split-K slices wait on other CTAs' flags. Fewer CTAs than
// tiles is fine (they loop).
// Split-K builds take a workspace (last kernel argument): per CTA tile (ceil(m / (128 CLUSTER)) * CLUSTER rows of
// tiles, ceil(n / BN) columns) S partial tiles of 128xBN accumulators (4 bytes each), then one 32-bit counter
// per CTA tile; zeroed once when allocated (the kernel leaves the counters at zero).
// tmap_a: dims (k, m), box (rows BM = 128, cols BK = 64), 128B swizzle. tmap_b: dims (n, k), box (rows BK = 64,
// cols 64), 128B swizzle. Zero OOB fill.
//
// Configuration (compile definitions; the registry's variants of the method name them):
//   WGMMA_WS_BN           tile width: 256 (default) or 128 (fp16/bf16 and e4m3 operands).
//   WGMMA_WS_CLUSTER      CTAs per cluster along M: 1, 2 (default) or 4 (4: BN 256 only).
//   WGMMA_WS_STAGES       pipeline stages: from 2 to what fits in shared memory (the default: 4 at BN 256, 6 at 128).
//   WGMMA_WS_STREAMK      1 (default): split the last wave by k steps where it pays; 0: whole tiles only.
//   WGMMA_WS_BALANCED     1 (default): unsplit tails go to the fewest clusters that keep the waves.
//   WGMMA_WS_GROUP_ORDER  0 (default): the tile order the operands prefer; 1: groups of rows; 2: of columns.
//   WGMMA_WS_GROUP_M      cluster tiles per group of the tile order (default 8).
//   WGMMA_WS_DRAIN_EVERY  paced drain interval in k steps (default 2); 0 stores every tile whole at its end.
//   WGMMA_WS_SPLIT_K      slices per tile along K (default 1: whole tiles); above 1 the stream-K tail is off.
//   WGMMA_WS_PROMOTE      0 (default) or 1: FP8 sums promoted to fp32 every k step (e4m3 operands, BN 128 only;
//                         block-scaled operands, 17_wgmma_fp8_block.cu, need it: the scales weigh each promotion).
#pragma once

#include "hopper.cuh"
#include "simt_common.cuh"
#include "ws_tile_schedule.cuh"

#ifndef WGMMA_WS_BN
#define WGMMA_WS_BN 256
#endif
#ifndef WGMMA_WS_CLUSTER
#define WGMMA_WS_CLUSTER 2
#endif
#ifndef WGMMA_WS_STAGES
#define WGMMA_WS_STAGES (WGMMA_WS_BN == 128 ? 6 : 4)
#endif
#ifndef WGMMA_WS_STREAMK
#define WGMMA_WS_STREAMK 1
#endif
#ifndef WGMMA_WS_BALANCED
#define WGMMA_WS_BALANCED 1
#endif
#ifndef WGMMA_WS_GROUP_ORDER
#define WGMMA_WS_GROUP_ORDER 0
#endif
#ifndef WGMMA_WS_GROUP_M
#define WGMMA_WS_GROUP_M 8
#endif
#ifndef WGMMA_WS_DRAIN_EVERY
#define WGMMA_WS_DRAIN_EVERY 2
#endif
#ifndef WGMMA_WS_SPLIT_K
#define WGMMA_WS_SPLIT_K 1
#endif
#ifndef WGMMA_WS_PROMOTE
#define WGMMA_WS_PROMOTE 0
#endif

namespace wgmma_ws {

constexpr int BM = 128, BN = WGMMA_WS_BN, BK = 64;  // CTA tile; BK of the fp16/bf16 operands (Op::BK in general)
constexpr int ACCUMULATORS = BN / 2;  // per consumer thread: its warpgroup's 64 x BN over 128 threads
constexpr int CONSUMERS = 2;          // consumer warpgroups, 64 rows each
constexpr int THREADS = 128 * (CONSUMERS + 1);  // + one producer warpgroup
constexpr int STAGES = WGMMA_WS_STAGES;
constexpr int CLUSTER = WGMMA_WS_CLUSTER;
constexpr int GROUP_M = WGMMA_WS_GROUP_M;
constexpr int GROUP_ORDER = WGMMA_WS_GROUP_ORDER;
constexpr int SPLIT_K = WGMMA_WS_SPLIT_K;
constexpr bool STREAMK = WGMMA_WS_STREAMK != 0 && SPLIT_K == 1;  // split-K builds sum their own way
constexpr bool BALANCED = WGMMA_WS_BALANCED != 0;
constexpr int DRAIN_EVERY = WGMMA_WS_DRAIN_EVERY;
constexpr int DRAIN_PERIOD = DRAIN_EVERY > 0 ? DRAIN_EVERY : 1;  // (no % 0 where the drain is off)
constexpr bool PROMOTE = WGMMA_WS_PROMOTE != 0;
constexpr int PROMOTE_CHAIN = 8;  // k steps per chain of the promoted mainloop (see mainloop; even: two sets)

constexpr int A_BYTES = BM * 128;                 // 128 rows of 128 bytes (16 KiB)
constexpr int STAGE_BYTES = A_BYTES + BN * 128;   // + B, BN columns of 128 bytes (32 or 16 KiB)
constexpr uint32_t STAGE_DESC = STAGE_BYTES >> 4;  // one stage further, in a wgmma descriptor's address units
// Epilogue staging: per consumer warp one 16x64 fp32 chunk (4 KiB), turning the accumulator layout (8 rows x 32
// bytes per store instruction) into whole-row 256-byte stores.
constexpr int EPI_CHUNK_BYTES = 16 * 64 * 4;
constexpr int EPI_BYTES = CONSUMERS * 4 * EPI_CHUNK_BYTES;  // 32 KiB
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
// Arrivals that free a stage: every consumer warp of every CTA in the cluster.
constexpr int EMPTY_ARRIVALS = CONSUMERS * 4 * CLUSTER;
constexpr int MAX_SK_FLAGS = 1024;     // stream-K flags: (tail tile, CTA rank in the cluster)
constexpr int SK_MIN_SAVED_STEPS = 32;  // split the tail only if that saves each cluster more k steps than this

// fp16 / bf16 operands: tensor map boxes (128-byte swizzle) and B's 64-column strips.
constexpr int BOX_A_ROWS = BM, BOX_A_COLS = BK;
constexpr int BOX_B_ROWS = BK, BOX_B_COLS = 64;
constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB

static_assert(BN == 256 || BN == 128, "WGMMA_WS_BN: 256 or 128 columns per tile");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "WGMMA_WS_CLUSTER: 1, 2 or 4 CTAs");
static_assert(BN / 64 % CLUSTER == 0, "WGMMA_WS_CLUSTER: at most BN / 64 CTAs (each multicasts whole 64-column strips "
                                      "of B): 4 with WGMMA_WS_BN=256, 2 with 128");
static_assert(STAGES >= 2, "WGMMA_WS_STAGES: at least 2 (one stage is read while the next fills)");
static_assert(SMEM_BYTES <= 227 * 1024, "WGMMA_WS_STAGES: the stages fit the opt-in shared memory of one SM");
static_assert(GROUP_ORDER >= 0 && GROUP_ORDER <= 2, "WGMMA_WS_GROUP_ORDER: 0 (operands'), 1 (rows) or 2 (columns)");
static_assert(GROUP_M >= 1, "WGMMA_WS_GROUP_M: at least 1");
static_assert(DRAIN_EVERY >= 0, "WGMMA_WS_DRAIN_EVERY: 0 (off) or a number of k steps");
// (the split-K sum loads a quad of every slice into the accumulators at once: BN / 8 quads per thread)
static_assert(SPLIT_K >= 1 && SPLIT_K <= ACCUMULATORS / 4,
              "WGMMA_WS_SPLIT_K: 1 (whole tiles) to 32 slices per tile, 16 with WGMMA_WS_BN=128");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "register file");
static_assert(WGMMA_WS_PROMOTE == 0 || WGMMA_WS_PROMOTE == 1, "WGMMA_WS_PROMOTE: 0 (off) or 1 (on)");
// (the fp32 set and two scratch sets: 3 x 64 accumulators per thread; 3 x 128 at BN 256 exceed a thread's 255)
static_assert(!PROMOTE || BN == 128, "WGMMA_WS_PROMOTE: needs WGMMA_WS_BN=128 (the accumulator sets of 128x256 "
                                     "tiles do not fit in a consumer's registers)");

// The tile order: the one the operands prefer (Op::GROUP_ALONG_N) unless WGMMA_WS_GROUP_ORDER names one.
template <class Op>
constexpr bool GROUP_ALONG_N = GROUP_ORDER == 0 ? Op::GROUP_ALONG_N : GROUP_ORDER == 2;
// Whether an Op's result is multiplied by per-tensor scales (Op::SCALED: the FP8 operands of 16_wgmma_fp8.cu; an
// Op without the member is not scaled, and its build has no trace of the scales).
template <class Op, class = void>
constexpr bool SCALED = false;
template <class Op>
constexpr bool SCALED<Op, decltype(void(Op::SCALED))> = Op::SCALED;
// Whether an Op's k steps are weighted by block scales (Op::BLOCK_SCALED: the FP8 operands of
// 17_wgmma_fp8_block.cu, A scaled per row and 128 k, B per 128x128 block): the promoted mainloop adds each step's
// partial into the fp32 accumulators times its rows' weights (Op::Weights, see mainloop), and no per-tensor factor
// applies. Like SCALED, absent from every other Op and without a trace in its build.
template <class Op, class = void>
constexpr bool BLOCK_SCALED = false;
template <class Op>
constexpr bool BLOCK_SCALED<Op, decltype(void(Op::BLOCK_SCALED))> = Op::BLOCK_SCALED;
template <class Op>
using Schedule = ws_schedule::PersistentSchedule<CLUSTER, GROUP_M, GROUP_ALONG_N<Op>, STREAMK, BALANCED,
                                                 SK_MIN_SAVED_STEPS, MAX_SK_FLAGS, SPLIT_K>;
// Split-K workspace: 16-byte units (4 accumulators) per partial tile (128xBN 32-bit).
constexpr int PART_QUADS = BM * BN / 4;

#if HOPPER_SM90A
__device__ unsigned int sk_flags[MAX_SK_FLAGS];  // stream-K partial-sum order; zero between launches

template <typename T>
struct Op16 {
    using Acc = float;  // accumulators and C
    static constexpr int BK = wgmma_ws::BK;
    // Tile groups of cluster-columns: +0.3-0.4 % at 4096^3 against groups of rows, the same at 6144^3 and 8192^3
    // (d0e69b1); groups of 2, 4 or 16 columns were slower.
    static constexpr bool GROUP_ALONG_N = true;
    static_assert(BK * sizeof(T) == 128 && A_BYTES == BM * BK * sizeof(T) && STAGE_BYTES - A_BYTES == BK * BN * 2,
                  "stage layout");
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

// ------------------------------------------------------------------------------------------- shared memory
// Addresses in the shared window: stage s's A at tiles + s*STAGE_BYTES and its B after it, the consumers'
// staging chunks at epi, then the full and the empty barrier of each stage.
struct Smem {
    uint32_t tiles, epi, full_bar, empty_bar;
};

// Consumer warp `warp` of warpgroup c: its staging chunk (generic pointer, for ordinary loads and stores).
__device__ __forceinline__ unsigned char* staging_chunk(unsigned char* smem_raw, uint32_t raw, const Smem& sm, int c,
                                                        int warp)
{
    return smem_raw + (sm.epi - raw) + (c * 4 + warp) * EPI_CHUNK_BYTES;
}

// ------------------------------------------------------------------------------------------- producer
// One thread walks the schedule and fills the ring: wait until the consumers of every CTA of the cluster have
// released the stage, announce its bytes, copy this CTA's A and its share of B (multicast).
template <class Op>
__device__ __forceinline__ void producer(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, const Smem& sm,
                                         const Schedule<Op>& sched, uint32_t rank)
{
    using namespace hopper;
    int it = 0;
    for (int i = 0; i < sched.n_items; ++i) {
        int t, k0, k1, piece, pieces, u, tm, tn;  // of these the producer needs the tile and its k steps
        sched.split(i, t, k0, k1, piece, pieces, u);
        sched.coords(t, tm, tn);
        const int m0 = (tm * CLUSTER + static_cast<int>(rank)) * BM;
        const int n0 = tn * BN;
        for (int kt = k0; kt < k1; ++kt, ++it) {
            const int s = it % STAGES;
            const uint32_t round = static_cast<uint32_t>(it / STAGES);
            mbar_wait(sm.empty_bar + 8 * s, (round & 1u) ^ 1u);
            const uint32_t fb = sm.full_bar + 8 * s;
            const uint32_t sa = sm.tiles + s * STAGE_BYTES;
            mbar_arrive_expect_tx(fb, STAGE_BYTES);
            tma_load_2d(sa, tmap_a, fb, kt * Op::BK, m0);
            Op::load_b(sa + A_BYTES, tmap_b, fb, n0, kt, rank);
        }
    }
}

// ------------------------------------------------------------------------------------------- consumers
// Free stage `stage` for the producers: one arrival per consumer warp on the stage's empty barrier in every CTA of
// the cluster (the peers' copy engines write into this CTA's stage too).
__device__ __forceinline__ void release_stage(uint32_t empty_bar, int stage, int lane)
{
    using namespace hopper;
    if (lane == 0) {
        if constexpr (CLUSTER == 1) mbar_arrive_local(empty_bar + 8 * stage);
        else
            for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar + 8 * stage, r);
    }
}

// The epilogue moves C's 32-bit elements (V: float, or int for int8 operands) as bits: staging and stores are
// the same for either type; only the stream-K reductions add (hopper::red_add_acc_guarded, one per type).

// Rows 2q and 2q + 1 of a staged 16x64 chunk (as store_warp_rows_staged leaves it) to C at crow (the chunk's
// first row and column): one 16-byte read and store per lane, 2 rows x 256 contiguous bytes per instruction.
template <typename V>
__device__ __forceinline__ void store_chunk_rows(const unsigned char* chunk, V* crow, int n, int lane, int q)
{
    static_assert(sizeof(V) == 4, "32-bit elements of C");
    const int r = 2 * q + lane / 16;
    const int uu = lane % 16;
    const uint4 v = *reinterpret_cast<const uint4*>(chunk + r * 256 + ((uu ^ (r & 7)) * 16));
    *reinterpret_cast<uint4*>(crow + static_cast<size_t>(r) * n + 4 * uu) = v;
}

// A warp's 16 x COLS accumulator block (rows l/4 and l/4 + 8, columns 8j + 2(l%4)) stored to C (crow: its first
// row and column) through a 16x64 fp32 staging chunk in shared memory, 64 columns at a time. 16-byte units are
// XOR-swizzled by (row % 8), so both the float2 writes and the float4 row reads are free of bank conflicts; each
// read/store instruction then covers 2 rows x 256 contiguous bytes of C. KEEP_LAST: the last 64 columns are only
// staged; the caller stores them later (store_chunk_rows, q = 0..7, columns COLS - 64 on).
template <int COLS, bool KEEP_LAST = false, typename V>
__device__ __forceinline__ void store_warp_rows_staged(const V* d, unsigned char* chunk, V* crow, int n, int lane)
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
                using V2 = hopper::pair_t<V>;
                *reinterpret_cast<V2*>(chunk + r * 256 + ((uu ^ (r & 7)) * 16) + (lane & 1) * 8) =
                    V2{d[4 * j + 2 * h], d[4 * j + 2 * h + 1]};
            }
        }
        __syncwarp();
        if (KEEP_LAST && ch == COLS / 64 - 1) break;
#pragma unroll
        for (int q = 0; q < 8; ++q) store_chunk_rows(chunk, crow + 64 * ch, n, lane, q);
        __syncwarp();
    }
}

// Paced drain: the staged last 64 columns of this warp's previous whole tile not stored yet (`left` of its 8 row
// pairs), and where they go.
template <typename V>
struct PacedDrain {
    unsigned char* chunk;
    int left;
    V* dst;
    __device__ __forceinline__ void step(int n, int lane)
    {
        store_chunk_rows(chunk, dst, n, lane, 8 - left);
        --left;
    }
};

// The weights of k steps' partials in the promoted mainloop for an Op without block scales: none (Step is empty, at
// loads nothing), the partials are added as they are. A block-scaled Op brings its own (Op::Weights: at(kt) gives
// the thread's two weights of step kt as Step, a float2).
struct Unweighted {
    struct Step {};
    __device__ __forceinline__ Step at(int) const { return {}; }
};

// Where a consumer thread's block-scaled weights come from (Op::Weights, built per item from the kernel's scales
// argument, the thread's first row and the tile's first column), or Unweighted for every other Op.
template <class Op>
__device__ __forceinline__ auto step_weights(const float* scales, int m, int row0, int n0, int ktiles, int cols)
{
    if constexpr (BLOCK_SCALED<Op>) return typename Op::Weights(scales, m, row0, n0, ktiles, cols);
    else return Unweighted{};
}

// k step kt of an item that began at k0, into acc: wait for the stage, issue its wgmmas (`accumulate` false:
// scale-d = 0), then, where an earlier step's group is in flight (`previous`), wait for it (one stays in flight)
// and release the stage it read; the paced drain stores its rows between steps.
template <class Op, typename V>
__device__ __forceinline__ void k_step(V (&acc)[ACCUMULATORS], uint32_t& it, int kt, int k0, bool accumulate,
                                       bool previous, uint32_t desc_a0, uint32_t desc_b0, const Smem& sm,
                                       PacedDrain<V>& drain, int n, int lane)
{
    using namespace hopper;
    const uint32_t s = it % STAGES;
    mbar_wait(sm.full_bar + 8 * s, (it / STAGES) & 1u);
    wgmma_fence();
    Op::mma(acc, desc_a0 + s * STAGE_DESC, desc_b0 + s * STAGE_DESC, accumulate);
    wgmma_commit();
    if (previous) {
        wgmma_wait<1>();
        release_stage(sm.empty_bar, (it - 1) % STAGES, lane);
    }
    if constexpr (DRAIN_EVERY > 0) {
        if (drain.left > 0 && (kt - k0) % DRAIN_PERIOD == DRAIN_PERIOD - 1) drain.step(n, lane);
    }
    ++it;
}

// The k steps [k0, k1) of one item into d. Each k step: wait for the stage, issue its wgmmas, keep one group in
// flight, release the stage that the previous group read. The first k step overwrites the accumulators (scale-d
// = 0): zeroing them with ordinary moves makes ptxas serialise the wgmmas (warning C7515). `it` counts the ring's
// k steps over the CTA's items (unsigned: % and / by a power-of-two STAGES are a mask and a shift); desc_a0 /
// desc_b0 are the stage-0 descriptors' low words, so a stage's descriptors are an add. Between k steps, the
// previous tile's staged columns leave at the drain's pace; what is left goes before the chunk is reused.
//
// Promotion (WGMMA_WS_PROMOTE, FP8 operands): the FP8 wgmma adds into its accumulators with fewer bits than fp32
// (16_wgmma_fp8.cu), so no tensor-core sum runs longer than one k step (128 k, DeepGEMM's interval): each step
// starts from zero (scale-d = 0) in a scratch set, and its finished partial is added into d with fp32 adds (d is
// no wgmma operand here, so zeroing it with moves costs nothing). Two scratch sets alternate, so that step kt is
// issued before step kt - 1's partial is added: the adds run while the tensor cores work on step kt, and the
// wgmma that overwrites a set comes after its adds. The steps go in chains of PROMOTE_CHAIN with nothing in
// flight from one chain to the next: where a group is in flight across a loop's back edge while other
// accumulators are read, ptxas serialises every wgmma (C7514), so a loop of single steps alternating between the
// sets cannot do this. The adds of a chain's last two steps follow its final wait (ptxas moves that wait above
// the second-to-last step's adds), and so do those of a remainder step, which runs alone; the other consumer
// warpgroup's wgmmas keep the tensor cores busy meanwhile. Chains of 8 leave a quarter of the adds after a wait
// (chains of 2: all of them), for a kernel of 4,784 SASS instructions instead of 3,976 (nvcc 13.0).
//
// Block scales (BLOCK_SCALED<Op>, 17_wgmma_fp8_block.cu): a k step is one scale block (128 k), so each partial is
// added times its weight, sa[row, kt] * sb[kt, tile column block], one FFMA where the plain promotion has an FADD.
// `weights` (Op::Weights) gives a step's two weights of this thread (its rows l/4 and l/4 + 8 of its warp's 16),
// asked for before the step's wgmmas and used after the next step's are issued, so the loads' latency runs under
// the tensor cores' work. (ptxas 13.0 issues the loads just after the next step's first wgmma, wherever they stand
// in the source: they then overlap the wait for the step's own group.) For every other Op `weights` is Unweighted:
// no loads, the FADD, the same build.
template <class Op, typename V = typename Op::Acc, class Weights = Unweighted>
__device__ __forceinline__ void mainloop(V (&d)[ACCUMULATORS], uint32_t& it, int k0, int k1, uint32_t desc_a0,
                                         uint32_t desc_b0, const Smem& sm, PacedDrain<V>& drain, int n, int lane,
                                         const Weights& weights = {})
{
    using namespace hopper;
    static_assert(!PROMOTE || SCALED<Op> || BLOCK_SCALED<Op>,
                  "WGMMA_WS_PROMOTE: for the FP8 operands only (wgmma_fp8, wgmma_fp8_block); the other operands' "
                  "wgmmas accumulate in full fp32 (int8: exactly)");
    static_assert(!BLOCK_SCALED<Op> || PROMOTE, "block scales (wgmma_fp8_block) need WGMMA_WS_PROMOTE=1: each k "
                                                "step's partial is weighted by its scales as it is promoted");
    static_assert(!BLOCK_SCALED<Op> || (BN == 128 && Op::BK == 128),
                  "block scales (wgmma_fp8_block) need WGMMA_WS_BN=128 and k steps of 128: a tile's columns and a k "
                  "step then lie in one 128x128 scale block of B, and a step's rows each in one 1x128 block of A");
    if constexpr (PROMOTE) {
        using Step = typename Weights::Step;
        auto add = [&](const V (&partial)[ACCUMULATORS], const Step& w) {
#pragma unroll
            for (int j = 0; j < ACCUMULATORS; ++j) {
                if constexpr (BLOCK_SCALED<Op>) d[j] = fmaf(partial[j], (j & 2) ? w.y : w.x, d[j]);  // rows +8: j & 2
                else d[j] += partial[j];
            }
        };
        auto finish = [&](const V (&partial)[ACCUMULATORS], const Step& w) {  // the last group: retire, release, add
            wgmma_wait<0>();
            release_stage(sm.empty_bar, (it - 1) % STAGES, lane);
            add(partial, w);
        };
        V p0[ACCUMULATORS], p1[ACCUMULATORS];
        Step w0{}, w1{};  // the weights of the steps in p0 and p1
#pragma unroll
        for (int j = 0; j < ACCUMULATORS; ++j) d[j] = V(0);
        int kt = k0;
        for (; kt + PROMOTE_CHAIN <= k1; kt += PROMOTE_CHAIN) {
#pragma unroll
            for (int u = 0; u < PROMOTE_CHAIN; u += 2) {
                w0 = weights.at(kt + u);
                k_step<Op>(p0, it, kt + u, k0, false, u > 0, desc_a0, desc_b0, sm, drain, n, lane);
                if (u > 0) add(p1, w1);  // step u - 1's, retired by the wait in step u
                w1 = weights.at(kt + u + 1);
                k_step<Op>(p1, it, kt + u + 1, k0, false, true, desc_a0, desc_b0, sm, drain, n, lane);
                add(p0, w0);
            }
            finish(p1, w1);
        }
        for (; kt < k1; ++kt) {
            w0 = weights.at(kt);
            k_step<Op>(p0, it, kt, k0, false, false, desc_a0, desc_b0, sm, drain, n, lane);
            finish(p0, w0);
        }
    } else {
        for (int kt = k0; kt < k1; ++kt)
            k_step<Op>(d, it, kt, k0, kt > k0, kt > k0, desc_a0, desc_b0, sm, drain, n, lane);
        wgmma_wait<0>();
        if (k1 > k0) release_stage(sm.empty_bar, (it - 1) % STAGES, lane);
    }
    if constexpr (DRAIN_EVERY > 0) {
        while (drain.left > 0) drain.step(n, lane);
        __syncwarp();
    }
}

// Stream-K piece > 0 of a tail tile: once the tile's piece 0 is in C (its flag), add this piece's sums into it
// with L2 reductions; the tile's last piece resets the flag for the next launch.
template <typename V>
__device__ __forceinline__ void add_piece(const V (&d)[ACCUMULATORS], unsigned int* flag, int pieces, V* C, int m,
                                          int n, int row0, int col0, int tid)
{
    using namespace hopper;
    if (tid == 128) flag_wait_ge(flag, 1u);
    named_barrier(1, 128 * CONSUMERS);
    red_add_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
    named_barrier(1, 128 * CONSUMERS);
    if (tid == 128 && atomicAdd(flag, 1u) == static_cast<unsigned int>(pieces - 1)) atomicExch(flag, 0u);
}

// Item i's (of n_items) accumulators to C: stream-K pieces > 0 add into C; whole tiles and pieces 0 store,
// through the staging chunk where the warpgroup's 64 rows lie inside C (rows 16-byte aligned), else guarded. A
// whole tile that is not the CTA's last item leaves its last 64 columns to the paced drain. Piece 0 then raises its
// flag.
template <typename V>
__device__ __forceinline__ void epilogue(const V (&d)[ACCUMULATORS], const ws_schedule::Work& w, int i, int n_items,
                                         int m0, int n0, V* C, int m, int n, uint32_t rank, int tid, int c, int warp,
                                         int lane, unsigned char* chunk, PacedDrain<V>& drain)
{
    using namespace hopper;
    const int row0 = m0 + c * 64 + warp * 16 + lane / 4;
    const int col0 = n0 + 2 * (lane % 4);
    unsigned int* flag = (w.piece >= 0) ? &sk_flags[w.u * CLUSTER + static_cast<int>(rank)] : nullptr;
    if (w.piece > 0) {
        add_piece(d, flag, w.pieces, C, m, n, row0, col0, tid);
        return;
    }
    if (m0 + c * 64 + 64 <= m && n0 + BN <= n && (n % 4) == 0) {
        V* const crow = C + static_cast<size_t>(m0 + c * 64 + warp * 16) * n + n0;
        if (DRAIN_EVERY > 0 && w.piece < 0 && i + 1 < n_items) {  // last 64 columns: during the next item
            store_warp_rows_staged<BN, true>(d, chunk, crow, n, lane);
            drain.dst = crow + BN - 64;
            drain.left = 8;
        } else {
            store_warp_rows_staged<BN>(d, chunk, crow, n, lane);
        }
    } else {
        store_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
    }
    if (w.piece == 0) {  // piece 0 stored: the other pieces may add into it now
        __threadfence();
        named_barrier(1, 128 * CONSUMERS);
        if (tid == 128 && atomicAdd(flag, 1u) == static_cast<unsigned int>(w.pieces - 1)) atomicExch(flag, 0u);
    }
}

// ------------------------------------------------------------------------------------------- split-K
// Four accumulators of one thread (d[4q..4q+3]), the unit of a partial tile in the workspace.
template <typename V> struct quad_of;
template <> struct quad_of<float> { using type = float4; };
template <> struct quad_of<int> { using type = int4; };
template <typename V> using quad_t = typename quad_of<V>::type;

// C[row][col, col + 1] = (v0, v1) where inside C (8-byte stores where aligned).
template <typename V>
__device__ __forceinline__ void store_pair_guarded(V* C, int m, int n, int row, int col, V v0, V v1)
{
    if (row >= m) return;
    V* const dst = C + static_cast<size_t>(row) * n + col;
    if ((n % 2) == 0 && col + 1 < n) {
        *reinterpret_cast<hopper::pair_t<V>*>(dst) = hopper::pair_t<V>{v0, v1};
    } else {
        if (col < n) dst[0] = v0;
        if (col + 1 < n) dst[1] = v1;
    }
}

// Slice `slice`'s share of a CTA tile at (m0, n0): quads [slice, slice + 1) * PART_QUADS / splits of the
// partials' common order, summed over slices 0..splits-1 in that order, then stored to C. The accumulators d,
// free once the partial is out, are the load buffer: a thread's whole share (BN / 8 / SPLIT_K quads of each slice)
// is in flight at once, in no registers beyond d's (ptxas budgets the kernel at the launch bound's 168, and d
// stays allocated for the next item's wgmmas; a buffer of its own spilled beyond 4 quads). Against 4 loads at a
// time: +3..5 % at 256x256x8192 and 512x512x16384 with 16 slices (H200, fp16). Quad q*256 + ct is consumer
// thread ct's d[4q..4q+3]: rows 16 (ct / 32) + (ct % 32) / 4 and 8 below it, columns 8q + 2 (ct % 4) and the
// next (hopper.cuh's layout). L2 loads (.cg): the other slices' partials were written by other SMs.
template <typename V>
__device__ __forceinline__ void sum_slices(V (&d)[ACCUMULATORS], const quad_t<V>* parts, int slice, int splits, V* C,
                                           int m, int n, int m0, int n0, int ct)
{
    constexpr int STRIDE = 128 * CONSUMERS;
    constexpr int XB = ACCUMULATORS / 4 / SPLIT_K;  // quads of one slice per thread and batch
    const int lo = slice * PART_QUADS / splits, hi = (slice + 1) * PART_QUADS / splits;
    for (int x0 = lo + ct; x0 < hi; x0 += XB * STRIDE) {
#pragma unroll
        for (int i = 0; i < XB; ++i) {
#pragma unroll
            for (int s = 0; s < SPLIT_K; ++s) {
                if (s < splits && x0 + i * STRIDE < hi) {
                    const quad_t<V> v = __ldcg(parts + static_cast<size_t>(s) * PART_QUADS + x0 + i * STRIDE);
                    V* const slot = d + 4 * (i * SPLIT_K + s);
                    slot[0] = v.x;
                    slot[1] = v.y;
                    slot[2] = v.z;
                    slot[3] = v.w;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < XB; ++i) {
            const int x = x0 + i * STRIDE;
            if (x >= hi) break;
            const V* const slot = d + 4 * i * SPLIT_K;
            V a0 = slot[0], a1 = slot[1], a2 = slot[2], a3 = slot[3];
#pragma unroll
            for (int s = 1; s < SPLIT_K; ++s) {
                if (s < splits) {
                    a0 += slot[4 * s];
                    a1 += slot[4 * s + 1];
                    a2 += slot[4 * s + 2];
                    a3 += slot[4 * s + 3];
                }
            }
            const int q = x / STRIDE, t = x % STRIDE, lane = t % 32;
            const int row = m0 + (t / 32) * 16 + lane / 4, col = n0 + 8 * q + 2 * (lane % 4);
            store_pair_guarded(C, m, n, row, col, a0, a1);
            store_pair_guarded(C, m, n, row + 8, col, a2, a3);
        }
    }
}

// A split-K slice's epilogue (both consumer warpgroups; tid 128 speaks for them): its partial to the workspace,
// count in, wait for the tile's other slices, sum this slice's share of the tile into C (d is the loads' buffer),
// count out; the last slice out resets the counter (2 x splits counts: each counts out after all counted in).
template <typename V>
__device__ __forceinline__ void split_k_epilogue(V (&d)[ACCUMULATORS], const ws_schedule::Work& w, int cta_tile,
                                                 int cta_tiles, int m0, int n0, V* C, int m, int n, int tid,
                                                 void* workspace)
{
    using namespace hopper;
    using V4 = quad_t<V>;
    const int ct = tid - 128;
    V4* const parts = static_cast<V4*>(workspace) + static_cast<size_t>(cta_tile) * SPLIT_K * PART_QUADS;
    unsigned int* const counter =
        reinterpret_cast<unsigned int*>(static_cast<V4*>(workspace) +
                                        static_cast<size_t>(cta_tiles) * SPLIT_K * PART_QUADS) + cta_tile;
    V4* const mine = parts + static_cast<size_t>(w.piece) * PART_QUADS;
#pragma unroll
    for (int q = 0; q < ACCUMULATORS / 4; ++q)
        __stcg(mine + q * (128 * CONSUMERS) + ct, V4{d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]});
    __threadfence();
    named_barrier(1, 128 * CONSUMERS);
    if (tid == 128) {
        atomicAdd(counter, 1u);
        flag_wait_ge(counter, static_cast<unsigned int>(w.pieces));
    }
    named_barrier(1, 128 * CONSUMERS);
    sum_slices(d, parts, w.piece, w.pieces, C, m, n, m0, n0, ct);
    if (tid == 128 && atomicAdd(counter, 1u) == 2u * w.pieces - 1u) atomicExch(counter, 0u);
}

// Consumer warpgroup c (64 rows of each tile): every item of the schedule, mainloop then epilogue. A scaled Op's
// accumulators are multiplied by scale_a * scale_b (scales[0], scales[1]) before they leave: a stream-K piece or a
// split-K slice is scaled before it is summed, which the sum's linearity allows. A block-scaled Op's are weighted
// in the mainloop, step by step (`scales` is then its block scales); the same linearity lets stream-K pieces and
// split-K slices, which are whole k steps, be weighted apart.
template <class Op, typename V = typename Op::Acc>
__device__ __forceinline__ void consumer(const Schedule<Op>& sched, unsigned char* smem_raw, uint32_t raw,
                                         const Smem& sm, V* C, int m, int n, uint32_t rank, int tid, int c,
                                         void* workspace, const float* scales)
{
    static_assert(!(SCALED<Op> && BLOCK_SCALED<Op>), "an Op's result is scaled per tensor or per block, not both");
    const int warp = (tid % 128) / 32, lane = (tid % 128) % 32;
    float factor = 1.0f;
    if constexpr (SCALED<Op>) factor = scales[0] * scales[1];
    V d[ACCUMULATORS];
    uint32_t it = 0;
    const uint32_t desc_a0 = Op::desc_a(sm.tiles + c * (64 * 128)), desc_b0 = Op::desc_b(sm.tiles + A_BYTES);
    unsigned char* const chunk = staging_chunk(smem_raw, raw, sm, c, warp);
    PacedDrain<V> drain{chunk, 0, nullptr};
    for (int i = 0; i < sched.n_items; ++i) {
        const ws_schedule::Work w = sched.item(i);
        const int m0 = (w.tm * CLUSTER + static_cast<int>(rank)) * BM;
        const int n0 = w.tn * BN;
        mainloop<Op>(d, it, w.k0, w.k1, desc_a0, desc_b0, sm, drain, n, lane,
                     step_weights<Op>(scales, m, m0 + c * 64 + warp * 16 + lane / 4, n0, sched.ktiles, sched.cols));
        if constexpr (SCALED<Op>) {
#pragma unroll
            for (int j = 0; j < ACCUMULATORS; ++j) d[j] *= factor;
        }
        if constexpr (SPLIT_K > 1) {
            if (w.pieces > 1) {
                const int cta_tiles = sched.rows * sched.cols * CLUSTER;
                split_k_epilogue(d, w, w.u * CLUSTER + static_cast<int>(rank), cta_tiles, m0, n0, C, m, n, tid,
                                 workspace);
                continue;
            }
        }
        epilogue(d, w, i, sched.n_items, m0, n0, C, m, n, rank, tid, c, warp, lane, chunk, drain);
    }
}

// ------------------------------------------------------------------------------------------- the kernel
// k = 0: C = 0 (every item of the schedule has at least one k step), once the previous grid is done with C.
template <typename V>
__device__ __forceinline__ void zero_c(V* C, int m, int n)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(m) * n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        C[i] = V(0);
}

template <class Op>
__device__ __forceinline__ void ws_gemm(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, typename Op::Acc* C,
                                        int m, int n, int k, void* workspace = nullptr,
                                        const float* scales = nullptr)
{
    using namespace hopper;
    // Programmatic dependent launch: let the next grid start early too (its CTAs become resident only as ours
    // exit), and touch no global memory before the previous grid has completed (griddepcontrol.wait).
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (k <= 0) {
        zero_c(C, m, n);
        return;
    }

    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    Smem sm;
    sm.tiles = (raw + 1023u) & ~1023u;  // 128-byte swizzle atoms need 1024-byte alignment
    sm.epi = sm.tiles + STAGES * STAGE_BYTES;
    sm.full_bar = sm.epi + EPI_BYTES;
    sm.empty_bar = sm.full_bar + STAGES * 8;

    const int tid = threadIdx.x;
    // The warpgroup index through a shuffle: the compiler then knows it is the same in every lane, and keeps the
    // consumers' wgmma descriptors (which depend on it) on the uniform datapath instead of moving them into uniform
    // registers before every wgmma (static R2UR 374 -> 314; +0.4 % at 4096^3, bec59d8).
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
    const uint32_t rank = (CLUSTER > 1) ? cluster_rank() : 0;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(sm.full_bar + 8 * s, 1);
            mbar_init(sm.empty_bar + 8 * s, EMPTY_ARRIVALS);
        }
        fence_mbar_init();
    }
    if constexpr (CLUSTER > 1) cluster_sync();  // peers' barriers exist before any multicast or remote arrive
    else __syncthreads();

    const int rows = (m + CLUSTER * BM - 1) / (CLUSTER * BM);  // cluster tiles along M
    const int cols = (n + BN - 1) / BN;
    const int ktiles = (k + Op::BK - 1) / Op::BK;
    const Schedule<Op> sched(rows, cols, ktiles);
    // Everything above (barriers, cluster barrier, schedule) overlaps the end of the previous grid.
    asm volatile("griddepcontrol.wait;" ::: "memory");  // its writes (A, B, C, the stream-K flags) are visible

    if (wg == 0) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) producer<Op>(tmap_a, tmap_b, sm, sched, rank);
    } else {
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        consumer<Op>(sched, smem_raw, raw, sm, C, m, n, rank, tid, c, workspace, scales);
    }
    // No CTA of a cluster may exit while its peer can still multicast into it or arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        __syncwarp();
        cluster_sync();
    }
}
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws

// workspace: a split-K build's (see the host contract); the default build takes none.
template <typename T>
__device__ __forceinline__ void wgmma_ws_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                int m, int n, int k, float* workspace = nullptr)
{
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");
#if HOPPER_SM90A
    wgmma_ws::ws_gemm<wgmma_ws::Op16<T>>(tmap_a, tmap_b, C, m, n, k, workspace);
#endif
}
