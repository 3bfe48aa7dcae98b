// The configuration a warp-specialised build receives (kernels 12-17), its shared-memory layout, and the
// static_asserts that reject incompatible choices.
//
// One source. Every WGMMA_WS_* below is a compile definition that the registry passes: each build of each rung is
// a record (WsConfig in matmul_study/core/warp_specialized.py) from which both its -D definitions and its launch
// (threads, dynamic shared memory, cluster, grid), its tile and its split-K workspace are derived. The kernel has no
// defaults for them, so that no number is stated twice: a definition that is missing stops the build (#error), and
// one that disagrees with what the kernel needs stops it at a static_assert below (or at one of an operand policy,
// operands_*.cuh, for what depends on the operands). WGMMA_WS_SMEM_BYTES in particular is the registry's figure of
// the dynamic shared memory the launch gives; the kernel lays out its stages, staging and barriers and checks that
// they fit in it, with the alignment slack and without more to spare.
//
// The definitions (the registry's variants of a rung move one of them each):
//   WGMMA_WS_THREADS      threads per CTA: a producer warpgroup and WGMMA_WS_K_GROUPS consumer warpgroups per 64
//                         rows (384 at BM 128, 256 at BM 64, 384 at BM 64 with two k groups).
//   WGMMA_WS_LAUNCH_THREADS  the kernel's launch bound, the family's most threads (384) in every build.
//   WGMMA_WS_K_GROUPS     consumer warpgroups per 64 rows of the tile: 1, or 2 that take alternate k steps into
//                         accumulators of their own, summed through shared memory at the end of each item (BM 64).
//   WGMMA_WS_BM           tile rows: 128 (two consumer warpgroups) or 64 (one), 64 per consumer warpgroup.
//   WGMMA_WS_BN           tile width: 256, 192, 128 or 64; 32 for the swapped 16-bit operands (32 of A's rows).
//   WGMMA_WS_BK           k per step: one 128-byte swizzle row of the operands' elements (64 fp16/bf16, 32 tf32,
//                         128 int8 or e4m3); the operand policy checks it.
//   WGMMA_WS_STAGES       pipeline stages: from 2 to what fits in shared memory (the registry's default: the most
//                         that fit, 4 at BN 256, 6 at BN 128, 8 at BN 64).
//   WGMMA_WS_SMEM_BYTES   dynamic shared memory of the launch, in bytes: the layout below, alignment slack included.
//   WGMMA_WS_BT_BOX_ROWS  rows of a box of a K-major Bt (tf32 and 8-bit operands): 128, or BN where it is narrower;
//                         the tensor map the host builds has the same box.
//   WGMMA_WS_BT_BUFFERS   above 0: B comes as it is (row-major, N-major) in 32-column strips, and the producer
//                         warpgroup's other three warps write each k step's K-major Bt tile into a ring of this many
//                         buffers (tf32: wgmma reads 32-bit operands only K-major), instead of the launcher
//                         transposing all of B before the kernel; 0: the operands' own B. Without a cluster.
//   WGMMA_WS_SCALE_SLOTS  above 0: a ring of this many slots of block scales in shared memory, each a k step's
//                         scales of the tile's rows and its B scale, filled by a producer warp (block-scaled
//                         operands, 17_wgmma_fp8_block.cu, need at least 2); 0: none.
//   WGMMA_WS_SWAP_AB      1: the kernel computes C^T = B^T A^T (OpTf32Swapped, OpBytesSwapped: B as it is, read
//                         into registers as wgmma's A; Op16Swapped: read M-major by wgmma; C stored transposed,
//                         a stream-K piece's sums added transposed); 0: C = A B.
//   WGMMA_WS_CLUSTER      CTAs per cluster along M: 1, 2 or 4 (at most BN / 64; the 8-bit and tf32 operands 1 or 2,
//                         the 8-bit ones 2 at BN 192 too; the swapped 16-bit ones any at BN 64: one box in turns).
//   WGMMA_WS_CLUSTER_ALONG_N  1: the cluster's CTAs lie along N instead and share the A slot, which they take turns
//                         by k step to multicast whole, each copying its own B (the swapped 16-bit operands at 32
//                         tokens a tile: the CTAs of one strip of weights, each with its tokens); 0: along M.
//   WGMMA_WS_SPLIT_K      slices per tile along K (1: whole tiles); above 1 the stream-K tail is off.
//   WGMMA_WS_STREAMK      1: split the last wave by k steps where it pays; 0: whole tiles only.
//   WGMMA_WS_STREAMK_MIN_SAVED  k steps the split must save each cluster (tile_schedule.cuh): its fix-up's cost.
//   WGMMA_WS_PROMOTE      0 or 1: tensor-core sums promoted to fp32 every k step (fp32-summed operands: e4m3, and
//                         tf32 for 3xTF32; at BN 256 in quarters of the columns; block-scaled operands,
//                         17_wgmma_fp8_block.cu, need it: the scales weigh each promotion).
//   WGMMA_WS_A_REGS       1: a promoted k step in column parts reads A from shared memory into registers once and
//                         gives every part's wgmmas A from there (e4m3 at BN 256); 0: each part reads A itself.
//   WGMMA_WS_PROMOTE_CHUNK  k steps per chunk of a promoted build in column parts (BN 256): 1, or up to STAGES - 1
//                         steps whose parts run one after another with a single final wait (mainloop).
//   WGMMA_WS_PROMOTE_EVERY  k steps per promoted sum: 1, or a divisor of the chunk, each part's wgmmas then running
//                         over that many stages before the part is added.
//   WGMMA_WS_PROMOTE_SETS   scratch sets of a promoted build's whole k steps (BN up to 192): 2, each step issued
//                         before the previous one's sum is added; 1, each step's sum added before the next is issued.
//   WGMMA_WS_BALANCED     1: unsplit tails go to the fewest clusters that keep the waves; 0: to every cluster.
//   WGMMA_WS_GROUP_ORDER  0: the tile order the operands prefer; 1: groups of rows; 2: of columns.
//   WGMMA_WS_GROUP_M      cluster tiles per group of the tile order.
//   WGMMA_WS_DRAIN_EVERY  paced drain interval in k steps; 0 stores every tile whole at its end.
// The last four change no launch, but come from the same record, so that a build is one list of facts.
//
// Tile width BN. 256: 128x256 tiles, the most math per byte loaded. 128: 128x128 tiles (64 accumulators per
// consumer thread) for problems whose 128x256 tiles leave most SMs idle (512^3: 8 tiles on 132 SMs): twice the
// tiles, half the work per tile. Its stages are 32 KiB, so 6 fit where 4 of 48 KiB do; the default stage count is
// what fits at either width, and since a stage then holds half the math, 6 cover 3/4 of the copy latency (in time)
// that 4 cover at BN 256. At 128 the FP8 and tf32 operands' registers also hold a promoted accumulation
// (WGMMA_WS_PROMOTE, see mainloop.cuh). 64: 128x64 tiles (32 accumulators per
// consumer thread) for an N of 64 or less, where wider tiles multiply columns past N: a 128x128 tile there does twice
// the math for the same bytes of A, and A is what a few columns' problem streams from memory. No cluster (a CTA
// multicasts whole 64-column strips of B), and K split at most 8 ways. 192: 128x192 tiles without a cluster (three
// 64-column strips; a K-major Bt tile is one box of 192 rows), where 128x256 tiles make a wave of most of the SMs and
// 128x128 ones a second wave (1536^3: 72 tiles of 128x256, 144 of 128x128 and 96 of 128x192 on 132 SMs); the 8-bit
// operands' one Bt box a 2-cluster multicasts in turns, and with one scratch set (WGMMA_WS_PROMOTE_SETS=1) these
// tiles hold FP8's promoted sums. 32: the swapped 16-bit operands' tiles of 64 weight columns by 32 tokens (wgmma
// m64n32k16, 16 accumulators per consumer thread), cuBLAS's decode tile: at 64 token rows twice the CTAs of the
// 64-token tiles, each reading its weights over all of K with half the tokens beside them.
//
// Tile rows BM. 128: two consumer warpgroups share every stage of B. 64: one consumer warpgroup, twice the tiles
// again for problems that 128-row tiles still leave short of a wave (1024^3: 32 tiles of 128x256, 64 of 64x256
// or 128x128, 128 of 64x128), at half the math per byte of B loaded; the stages are smaller, so more of them fit.
#pragma once

#include "../hopper.cuh"
#include "tile_schedule.cuh"

#ifndef WGMMA_WS_THREADS
#error "WGMMA_WS_THREADS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_LAUNCH_THREADS
#error "WGMMA_WS_LAUNCH_THREADS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_K_GROUPS
#error "WGMMA_WS_K_GROUPS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BM
#error "WGMMA_WS_BM is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BN
#error "WGMMA_WS_BN is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BK
#error "WGMMA_WS_BK is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_STAGES
#error "WGMMA_WS_STAGES is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_SMEM_BYTES
#error "WGMMA_WS_SMEM_BYTES is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_CLUSTER
#error "WGMMA_WS_CLUSTER is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_CLUSTER_ALONG_N
#error "WGMMA_WS_CLUSTER_ALONG_N is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_SPLIT_K
#error "WGMMA_WS_SPLIT_K is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_STREAMK
#error "WGMMA_WS_STREAMK is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_PROMOTE
#error "WGMMA_WS_PROMOTE is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_A_REGS
#error "WGMMA_WS_A_REGS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_PROMOTE_CHUNK
#error "WGMMA_WS_PROMOTE_CHUNK is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_PROMOTE_EVERY
#error "WGMMA_WS_PROMOTE_EVERY is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_PROMOTE_SETS
#error "WGMMA_WS_PROMOTE_SETS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BALANCED
#error "WGMMA_WS_BALANCED is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_GROUP_ORDER
#error "WGMMA_WS_GROUP_ORDER is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_GROUP_M
#error "WGMMA_WS_GROUP_M is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BT_BUFFERS
#error "WGMMA_WS_BT_BUFFERS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_BT_BOX_ROWS
#error "WGMMA_WS_BT_BOX_ROWS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_SCALE_SLOTS
#error "WGMMA_WS_SCALE_SLOTS is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_SWAP_AB
#error "WGMMA_WS_SWAP_AB is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_STREAMK_MIN_SAVED
#error "WGMMA_WS_STREAMK_MIN_SAVED is set by the registry (matmul_study/core/warp_specialized.py)"
#endif
#ifndef WGMMA_WS_DRAIN_EVERY
#error "WGMMA_WS_DRAIN_EVERY is set by the registry (matmul_study/core/warp_specialized.py)"
#endif

namespace wgmma_ws {

constexpr int BM = WGMMA_WS_BM, BN = WGMMA_WS_BN, BK = WGMMA_WS_BK;  // CTA tile; BK: Op::BK (checked in ws_gemm)
constexpr int ACCUMULATORS = BN / 2;  // per consumer thread: its warpgroup's 64 x BN over 128 threads
constexpr int ROW_GROUPS = BM / 64;   // consumer warpgroups that own 64 rows of the tile each (and store them)
// Consumer warpgroups per 64 rows. 2: they take alternate k steps of every item, each into its own accumulators, and
// the second adds its sums into the first's through shared memory at the item's end (kernel.cuh, consumer). A 64-row
// tile's single warpgroup keeps one wgmma group in flight, and each waits for the one before it on the same
// accumulators; two groups on separate accumulators keep the tensor cores busy meanwhile, as a 128-row tile's two
// warpgroups do.
constexpr int K_GROUPS = WGMMA_WS_K_GROUPS;
constexpr int CONSUMERS = ROW_GROUPS * K_GROUPS;  // consumer warpgroups
constexpr int THREADS = WGMMA_WS_THREADS;
constexpr int STAGES = WGMMA_WS_STAGES;
constexpr int CLUSTER = WGMMA_WS_CLUSTER;
constexpr bool CLUSTER_ALONG_N = WGMMA_WS_CLUSTER_ALONG_N != 0;  // the cluster's CTAs share A, not B
constexpr int GROUP_M = WGMMA_WS_GROUP_M;
constexpr int GROUP_ORDER = WGMMA_WS_GROUP_ORDER;
constexpr int SPLIT_K = WGMMA_WS_SPLIT_K;
constexpr bool STREAMK = WGMMA_WS_STREAMK != 0 && SPLIT_K == 1;  // split-K builds sum their own way
constexpr bool BALANCED = WGMMA_WS_BALANCED != 0;
constexpr int DRAIN_EVERY = WGMMA_WS_DRAIN_EVERY;
constexpr int DRAIN_PERIOD = DRAIN_EVERY > 0 ? DRAIN_EVERY : 1;  // (no % 0 where the drain is off)
constexpr bool PROMOTE = WGMMA_WS_PROMOTE != 0;
constexpr bool SWAP_AB = WGMMA_WS_SWAP_AB != 0;  // C^T = B^T A^T (Op::A_TRANSPOSED)
constexpr int PROMOTE_CHAIN = 8;  // k steps per chain of the promoted mainloop (see mainloop; even: two sets)
// Column parts of a promoted k step: at BN 256 the scratch sets are a quarter of the tile's columns each (mainloop).
constexpr int PROMOTE_PARTS = BN == 256 ? 4 : 1;
constexpr bool A_REGS = WGMMA_WS_A_REGS != 0;  // the parts' A from registers (mainloop, Op::a_fragments)
constexpr int PROMOTE_CHUNK = WGMMA_WS_PROMOTE_CHUNK;  // k steps per chunk in column parts (mainloop)
constexpr int PROMOTE_EVERY = WGMMA_WS_PROMOTE_EVERY;  // k steps per promoted sum in column parts (mainloop)
constexpr int PROMOTE_SETS = WGMMA_WS_PROMOTE_SETS;  // scratch sets of whole promoted k steps (mainloop)

// ------------------------------------------------------------------------------------------- shared memory
// From the first 1024-byte boundary of the dynamic window (128-byte swizzle atoms need it; the launch gives up to
// ALIGN_SLACK bytes more for it): STAGES stages of A then B, the consumers' staging chunks, then the full and the
// empty barrier of each stage (ws_gemm computes the same addresses into Smem).
constexpr int ALIGN_SLACK = 1024;
constexpr int A_BYTES = BM * 128;                 // BM rows of 128 bytes (16 KiB at BM 128)
constexpr int STAGE_BYTES = A_BYTES + BN * 128;   // + B, BN columns of 128 bytes (32 or 16 KiB)
constexpr uint32_t STAGE_DESC = STAGE_BYTES >> 4;  // one stage further, in a wgmma descriptor's address units
// Epilogue staging: per consumer warp one 16x64 fp32 chunk (4 KiB), turning the accumulator layout (8 rows x 32
// bytes per store instruction) into whole-row 256-byte stores.
constexpr int EPI_CHUNK_BYTES = 16 * 64 * 4;
constexpr int EPI_BYTES = CONSUMERS * 4 * EPI_CHUNK_BYTES;  // 16 KiB per consumer warpgroup
// Bt written in shared memory (WGMMA_WS_BT_BUFFERS): a k step's BK rows of B land in the stage (BN 32-bit columns
// as 32-column strips of 128-byte rows, 128B-swizzled, where Bt would be), and the producer warpgroup's
// BT_SMEM_WARPS other warps write its K-major Bt into a ring of BT_SMEM_BUFFERS buffers, each with a full and an
// empty barrier.
constexpr bool BT_SMEM = WGMMA_WS_BT_BUFFERS > 0;
constexpr int BT_BUFFERS_HELD = WGMMA_WS_BT_BUFFERS;          // in the layout
constexpr int BT_SMEM_BUFFERS = BT_SMEM ? BT_BUFFERS_HELD : 1;  // the ring's modulus (1 where there is none)
constexpr int BT_SMEM_WARPS = 3;
constexpr int B_ROWS_BYTES = BN * 128;  // a Bt buffer: BN rows of BK 32-bit elements (BK = 32)
constexpr int B_STRIP_BYTES_32 = 32 * 128;  // one 32-column strip of B's rows in a stage: the tensor map's box
// Block scales in shared memory (WGMMA_WS_SCALE_SLOTS, block-scaled operands): a ring of SCALE_SLOTS slots, each one
// k step's scales of the tile's BM rows of A then its B scale (padded to 16 bytes), with a full and an empty barrier
// each; a producer warp fills it (mainloop.cuh, scale_loader), ahead of the consumers by up to SCALE_SLOTS steps.
constexpr int SCALE_SLOTS = WGMMA_WS_SCALE_SLOTS;
constexpr int SCALE_SLOT_BYTES = (BM + 4) * 4;

// A position in a ring of N slots with a barrier each: the slot and the parity of the barrier phase its next use
// waits for, moved on one step at a time. Where N is no power of two (three scale slots), `step % N` and
// `step / N` in every k step are a multiply-high, shifts and a multiply; moving on is a compare and two selects.
template <int N>
struct RingPos {
    uint32_t slot, phase;
    __device__ __forceinline__ explicit RingPos(uint32_t step) : slot(step % N), phase((step / N) & 1u) {}
    __device__ __forceinline__ void advance()
    {
        if (++slot == N) {
            slot = 0;
            phase ^= 1u;
        }
    }
};
constexpr int LAYOUT_BYTES = STAGES * STAGE_BYTES + BT_BUFFERS_HELD * B_ROWS_BYTES + EPI_BYTES + 2 * STAGES * 8 +
                             2 * BT_BUFFERS_HELD * 8 + SCALE_SLOTS * (SCALE_SLOT_BYTES + 2 * 8);
constexpr int SMEM_BYTES = WGMMA_WS_SMEM_BYTES;  // the launch's (the registry's WsConfig.shared_bytes)
// Registers per thread after setmaxnreg: the producer warpgroup gives most away, or where its warps write Bt
// (WGMMA_WS_BT_BUFFERS: a 4x4 block of floats, its addresses and the schedule) keeps 56, which at 40 spilled the
// writers' loop to local memory (ncu: 60 % of their stalls on local loads); the consumers take the rest.
// setmaxnreg moves registers within the CTA's allocation at entry (ENTRY_REGS per thread, from the launch bound,
// WGMMA_WS_LAUNCH_THREADS): what the producer gives away must cover what the consumers take, or their
// setmaxnreg.inc waits for ever.
constexpr int PRODUCER_REGS = BT_SMEM ? 56 : 40;
constexpr int CONSUMER_REGS = BT_SMEM && CONSUMERS == 2 ? 224 : 232;
// Arrivals that free a stage: every warp of the consumers that read it (one k group per 64 rows) in every CTA of the
// cluster, and with Bt written in shared memory every warp that writes it (they read the stage's B rows).
constexpr int EMPTY_ARRIVALS = ROW_GROUPS * 4 * CLUSTER + (BT_SMEM ? BT_SMEM_WARPS : 0);
// The cluster tiles along M and N of an m x n problem, and the first row and column of the CTA tile of rank `rank` in
// cluster tile (tm, tn): CLUSTER tiles down M (they share B), or along N where CLUSTER_ALONG_N (they share A).
constexpr int CLUSTER_M = CLUSTER_ALONG_N ? 1 : CLUSTER, CLUSTER_N = CLUSTER_ALONG_N ? CLUSTER : 1;
__host__ __device__ constexpr int cluster_rows(int m) { return (m + CLUSTER_M * BM - 1) / (CLUSTER_M * BM); }
__host__ __device__ constexpr int cluster_cols(int n) { return (n + CLUSTER_N * BN - 1) / (CLUSTER_N * BN); }
__device__ __forceinline__ int tile_m0(int tm, uint32_t rank)
{
    return (tm * CLUSTER_M + (CLUSTER_ALONG_N ? 0 : static_cast<int>(rank))) * BM;
}
__device__ __forceinline__ int tile_n0(int tn, uint32_t rank)
{
    return (tn * CLUSTER_N + (CLUSTER_ALONG_N ? static_cast<int>(rank) : 0)) * BN;
}
constexpr int MAX_SK_FLAGS = 1024;     // stream-K flags: (tail tile, CTA rank in the cluster)
constexpr int SK_MIN_SAVED_STEPS = WGMMA_WS_STREAMK_MIN_SAVED;  // split the tail only where it saves more k steps
// Split-K workspace: 16-byte units (4 accumulators) per partial tile (128xBN 32-bit).
constexpr int PART_QUADS = BM * BN / 4;

// Addresses in the shared window: stage s's A at tiles + s*STAGE_BYTES and its B after it, the Bt ring (Bt written
// in shared memory), the consumers' staging chunks at epi, the full and the empty barrier of each stage and of
// each Bt buffer, then the scale ring's slots and the full and the empty barrier of each slot.
struct Smem {
    uint32_t tiles, bt, epi, full_bar, empty_bar, bt_full_bar, bt_empty_bar, scales, scale_full_bar, scale_empty_bar;
};

static_assert(BM == 128 || BM == 64, "WGMMA_WS_BM: 128 rows (two consumer warpgroups) or 64 (one)");
static_assert(THREADS == 128 * (CONSUMERS + 1),
              "WGMMA_WS_THREADS: one producer warpgroup and WGMMA_WS_K_GROUPS consumer warpgroups per 64 rows (384 at "
              "BM 128, 256 at BM 64, 384 at BM 64 with two k groups)");
static_assert(K_GROUPS == 1 || K_GROUPS == 2, "WGMMA_WS_K_GROUPS: 1 or 2 consumer warpgroups per 64 rows");
// (the second k group's sums pass through the staging chunks, 64 x BN fp32; the paced drain would hold them)
static_assert(K_GROUPS == 1 || (BM == 64 && BN <= 128 && DRAIN_EVERY == 0),
              "WGMMA_WS_K_GROUPS=2: 64-row tiles (WGMMA_WS_BM=64) of at most 128 columns, with no paced drain "
              "(WGMMA_WS_DRAIN_EVERY=0): the sums meet in the staging chunks");
static_assert(BN == 256 || BN == 192 || BN == 128 || BN == 64 || (BN == 32 && SWAP_AB && BK == 64),
              "WGMMA_WS_BN: 256, 192, 128 or 64 columns per tile, or 32 for the swapped 16-bit operands (32 of A's "
              "rows: WGMMA_WS_SWAP_AB=1, WGMMA_WS_BK=64)");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "WGMMA_WS_CLUSTER: 1, 2 or 4 CTAs");
// (a K-major B tile of one box is multicast whole by a cluster's CTAs in turns, one k step each: load_bt. So the
// 8-bit operands' Bt of 192 rows in a 2-cluster, and the swapped 16-bit operands' 64 rows of A in any cluster)
constexpr bool B_BOX_IN_TURNS = WGMMA_WS_BT_BOX_ROWS == BN &&
                                ((BK == 128 && BN == 192 && CLUSTER == 2) || (BK == 64 && SWAP_AB && BN == 64));
static_assert(CLUSTER == 1 || CLUSTER_ALONG_N || (BN >= 64 && BN / 64 % CLUSTER == 0) || B_BOX_IN_TURNS,
              "WGMMA_WS_CLUSTER: at most BN / 64 CTAs, a divisor of it (each multicasts whole 64-column strips of B): "
              "4 with WGMMA_WS_BN=256, 2 with 128, 1 with 192, 64 or 32 (2 with 192 for the 8-bit operands' Bt box, "
              "any with 64 for the swapped 16-bit operands' box of A's rows: taken in turns; along N, "
              "WGMMA_WS_CLUSTER_ALONG_N=1, sharing A instead)");
static_assert(WGMMA_WS_CLUSTER_ALONG_N == 0 || WGMMA_WS_CLUSTER_ALONG_N == 1, "WGMMA_WS_CLUSTER_ALONG_N: 0 or 1");
// (the A slot of the swapped 16-bit operands at 64 rows is one box of B's strips, which a CTA can multicast whole)
static_assert(!CLUSTER_ALONG_N || (CLUSTER > 1 && SWAP_AB && BK == 64 && BM == 64),
              "WGMMA_WS_CLUSTER_ALONG_N=1: a cluster (WGMMA_WS_CLUSTER > 1) of the swapped 16-bit operands "
              "(WGMMA_WS_SWAP_AB=1, WGMMA_WS_BK=64) at 64-row tiles (WGMMA_WS_BM=64), whose A slot is one box");
static_assert(STAGES >= 2, "WGMMA_WS_STAGES: at least 2 (one stage is read while the next fills)");
static_assert(LAYOUT_BYTES + ALIGN_SLACK <= SMEM_BYTES,
              "WGMMA_WS_SMEM_BYTES: fewer bytes than the stages, the staging, the barriers and the alignment slack "
              "take (the registry's shared_bytes and this layout disagree)");
static_assert(SMEM_BYTES <= LAYOUT_BYTES + ALIGN_SLACK,
              "WGMMA_WS_SMEM_BYTES: more bytes than the layout and its alignment slack take (the registry's "
              "shared_bytes and this layout disagree)");
static_assert(SMEM_BYTES <= 227 * 1024, "WGMMA_WS_STAGES: the stages fit the opt-in shared memory of one SM");
static_assert(GROUP_ORDER >= 0 && GROUP_ORDER <= 2, "WGMMA_WS_GROUP_ORDER: 0 (operands'), 1 (rows) or 2 (columns)");
static_assert(GROUP_M >= 1, "WGMMA_WS_GROUP_M: at least 1");
static_assert(DRAIN_EVERY >= 0, "WGMMA_WS_DRAIN_EVERY: 0 (off) or a number of k steps");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 64, "WGMMA_WS_SPLIT_K: 1 (whole tiles) to 64 slices per tile");
static_assert(WGMMA_WS_STREAMK == 0 || WGMMA_WS_STREAMK == 1, "WGMMA_WS_STREAMK: 0 (off) or 1 (on)");
static_assert(WGMMA_WS_BT_BUFFERS == 0 || WGMMA_WS_BT_BUFFERS >= 2,
              "WGMMA_WS_BT_BUFFERS: 0 (off), or a ring of at least 2 (one read while the next is written)");
static_assert(!BT_SMEM || (CLUSTER == 1 && BK == 32),
              "WGMMA_WS_BT_BUFFERS: 32-bit operands (WGMMA_WS_BK=32) without a cluster (each CTA writes its own Bt)");
static_assert(SCALE_SLOTS == 0 || SCALE_SLOTS >= 2,
              "WGMMA_WS_SCALE_SLOTS: 0 (none), or a ring of at least 2 (one read while the next is filled)");
static_assert(SCALE_SLOTS == 0 || (!BT_SMEM && K_GROUPS == 1),
              "WGMMA_WS_SCALE_SLOTS: without a Bt ring (its warps are the producer warpgroup's other three) and with "
              "one k group");
static_assert(WGMMA_WS_SWAP_AB == 0 || WGMMA_WS_SWAP_AB == 1, "WGMMA_WS_SWAP_AB: 0 (off) or 1 (on)");
// (its epilogue stores each element by itself, transposed: no staging, so no paced drain; split-K slices sum their
// share of a tile as ever and store it transposed, and stream-K pieces add theirs transposed, one L2 reduction an
// element (epilogue_transposed); a promoted step runs whole, not in column parts, whose wgmmas would each load A into
// registers again; two k groups meet in the staging chunks, which the layout keeps)
static_assert(!SWAP_AB || (DRAIN_EVERY == 0 && !BT_SMEM && (!PROMOTE || PROMOTE_PARTS == 1)),
              "WGMMA_WS_SWAP_AB=1: no paced drain (WGMMA_WS_DRAIN_EVERY=0), without a Bt ring, and promoted "
              "(WGMMA_WS_PROMOTE=1) only at tiles of at most 128 columns (WGMMA_WS_BN <= 128: whole k steps)");
// (8-bit operands swapped read their A slot as one box of 128 k rows x 128 of B's columns: OpBytesSwapped)
static_assert(!SWAP_AB || BK != 128 || BM == 128,
              "WGMMA_WS_SWAP_AB=1 with 8-bit operands (WGMMA_WS_BK=128): tiles of 128 rows (WGMMA_WS_BM=128)");
static_assert(WGMMA_WS_BALANCED == 0 || WGMMA_WS_BALANCED == 1, "WGMMA_WS_BALANCED: 0 (off) or 1 (on)");
constexpr int ENTRY_REGS = 65536 / WGMMA_WS_LAUNCH_THREADS / 8 * 8;  // 168 at 384 threads
static_assert(THREADS <= WGMMA_WS_LAUNCH_THREADS, "WGMMA_WS_LAUNCH_THREADS: the launch bound, at least THREADS");
static_assert(PRODUCER_REGS + CONSUMERS * CONSUMER_REGS <= (CONSUMERS + 1) * ENTRY_REGS,
              "setmaxnreg: the consumers' registers past the entry budget exceed what the producer gives away");
static_assert(WGMMA_WS_PROMOTE == 0 || WGMMA_WS_PROMOTE == 1, "WGMMA_WS_PROMOTE: 0 (off) or 1 (on)");
// (the fp32 set and two scratch sets: 3 x 64 accumulators per thread at BN 128; at BN 256, 128 and two sets of a
// quarter of the columns, 2 x 32: three full sets of 128 would exceed a thread's 255 registers)
static_assert(ACCUMULATORS % (2 * PROMOTE_PARTS) == 0, "promoted column parts: whole pairs of 8-column groups");
static_assert(PROMOTE_SETS == 1 || PROMOTE_SETS == 2, "WGMMA_WS_PROMOTE_SETS: 1 or 2 scratch sets");
static_assert(PROMOTE_SETS == 2 || (PROMOTE && PROMOTE_PARTS == 1 && K_GROUPS == 1),
              "WGMMA_WS_PROMOTE_SETS=1: for promoted builds of whole k steps (WGMMA_WS_PROMOTE=1, WGMMA_WS_BN up to "
              "192) with one k group; 2 otherwise");
// (the fp32 set beside the scratch sets: 3 x 64 at BN 128 with two sets, 2 x 96 at BN 192 with one)
static_assert(!PROMOTE || PROMOTE_PARTS > 1 || (1 + PROMOTE_SETS) * ACCUMULATORS <= 192,
              "WGMMA_WS_PROMOTE=1 in whole k steps: the fp32 accumulators and the scratch sets must fit in 192 "
              "registers a thread (WGMMA_WS_BN=128 with two sets, WGMMA_WS_BN=192 with WGMMA_WS_PROMOTE_SETS=1)");
static_assert(WGMMA_WS_A_REGS == 0 || WGMMA_WS_A_REGS == 1, "WGMMA_WS_A_REGS: 0 (off) or 1 (on)");
static_assert(!A_REGS || (PROMOTE && PROMOTE_PARTS > 1),
              "WGMMA_WS_A_REGS: for promoted builds in column parts only (WGMMA_WS_PROMOTE=1, WGMMA_WS_BN=256), whose "
              "parts would each read A again");
// (a chunk of steps holds its stages until its last part retires: the producer must keep at least one stage ahead)
static_assert(PROMOTE_CHUNK == 1 || (PROMOTE && PROMOTE_PARTS > 1 && !A_REGS && PROMOTE_CHUNK < STAGES),
              "WGMMA_WS_PROMOTE_CHUNK: 1, or more for promoted builds in column parts (WGMMA_WS_PROMOTE=1, "
              "WGMMA_WS_BN=256) with A from shared memory (WGMMA_WS_A_REGS=0), below WGMMA_WS_STAGES");
static_assert(PROMOTE_CHUNK >= 1, "WGMMA_WS_PROMOTE_CHUNK: k steps per chunk, at least 1");
static_assert(PROMOTE_EVERY >= 1 && PROMOTE_CHUNK % PROMOTE_EVERY == 0,
              "WGMMA_WS_PROMOTE_EVERY: k steps per promoted sum, a divisor of WGMMA_WS_PROMOTE_CHUNK");

// ------------------------------------------------------------------------------------------- operand traits
// The tile order: the one the operands prefer (Op::GROUP_ALONG_N) unless WGMMA_WS_GROUP_ORDER names one.
template <class Op>
constexpr bool GROUP_ALONG_N = GROUP_ORDER == 0 ? Op::GROUP_ALONG_N : GROUP_ORDER == 2;
// Whether an Op's result is multiplied by per-tensor scales (Op::SCALED: the e4m3 operands of operands_bytes.cuh;
// an Op without the member is not scaled, and its build has no trace of the scales).
template <class Op, class = void>
constexpr bool SCALED = false;
template <class Op>
constexpr bool SCALED<Op, decltype(void(Op::SCALED))> = Op::SCALED;
// Whether an Op's result is multiplied per row and per column (Op::ROW_COL_SCALED: the 3xFP16 operands of
// operands_3xfp16.cuh, whose pre-pass scales each row of A and column of B by a power of two): element (i, j) of C
// by scales[i] * scales[m + j]. Absent from every other Op and without a trace in its build.
template <class Op, class = void>
constexpr bool ROW_COL_SCALED = false;
template <class Op>
constexpr bool ROW_COL_SCALED<Op, decltype(void(Op::ROW_COL_SCALED))> = Op::ROW_COL_SCALED;
// Whether an Op's k steps are weighted by block scales (Op::BLOCK_SCALED: the FP8 operands of
// operands_fp8_block.cuh, A scaled per row and 128 k, B per 128x128 block): the promoted mainloop adds each step's
// partial into the fp32 accumulators times its rows' weights (Op::Weights, see mainloop), and no per-tensor factor
// applies. Like SCALED, absent from every other Op and without a trace in its build.
template <class Op, class = void>
constexpr bool BLOCK_SCALED = false;
template <class Op>
constexpr bool BLOCK_SCALED<Op, decltype(void(Op::BLOCK_SCALED))> = Op::BLOCK_SCALED;
// Whether an Op's operands hold fewer blocks of k than its GEMM reads (Op::K_BLOCKS_REPEAT: the 3xTF32 operands of
// operands_3xtf32.cuh, whose third block of k steps reads A's first block and B's second again): the producer then
// copies k step kt of `ktiles` from A's step Op::a_step(kt, ktiles) and B's Op::b_step(kt, ktiles). Absent from
// every other Op, whose k step kt is both operands' own.
template <class Op, class = void>
constexpr bool K_BLOCKS_REPEAT = false;
template <class Op>
constexpr bool K_BLOCKS_REPEAT<Op, decltype(void(Op::K_BLOCKS_REPEAT))> = Op::K_BLOCKS_REPEAT;
// The repeated blocks of the three-product operands (3xTF32, 3xFP16: A = [A_big | A_small], B = [B_small, B_big]
// along k), for an Op to inherit: of the GEMM's ktiles k steps, three blocks of ktiles / 3, the third reading A's
// first block (A_big) and B's second (B_big) again, so that the blocks give big·small, small·big and big·big.
struct ThreeProducts {
    static constexpr bool K_BLOCKS_REPEAT = true;
    static __device__ __forceinline__ int a_step(int kt, int ktiles) { return third_back(kt, ktiles, 2); }
    static __device__ __forceinline__ int b_step(int kt, int ktiles) { return third_back(kt, ktiles, 1); }

private:
    // Step kt, or in the third block the same step `blocks` blocks back.
    static __device__ __forceinline__ int third_back(int kt, int ktiles, int blocks)
    {
        const int block = ktiles / 3;
        return kt >= 2 * block ? kt - blocks * block : kt;
    }
};
// Whether an Op's k steps may be promoted (WGMMA_WS_PROMOTE, mainloop.cuh): Op::PROMOTABLE, declared by the operands
// whose tensor-core sums lose bits (FP8, tf32), which also give the column parts of a step (Op::mma_columns).
template <class Op, class = void>
constexpr bool PROMOTABLE = false;
template <class Op>
constexpr bool PROMOTABLE<Op, decltype(void(Op::PROMOTABLE))> = Op::PROMOTABLE;
// Whether an Op can take A from registers in a promoted step's column parts (Op::A_IN_REGISTERS: a_fragments and
// mma_columns_rs; the e4m3 operands).
template <class Op, class = void>
constexpr bool A_IN_REGISTERS = false;
template <class Op>
constexpr bool A_IN_REGISTERS<Op, decltype(void(Op::A_IN_REGISTERS))> = Op::A_IN_REGISTERS;
// Whether an Op's A is the problem's B^T, read from B's N-major rows (Op::A_TRANSPOSED: OpTf32Swapped,
// OpBytesSwapped, Op16Swapped): the kernel
// then computes C^T = B^T A^T in its own (m, n), the producer copies the A slot with Op::load_a, and the epilogue
// stores C^T's elements transposed, into C. Absent from every other Op (WGMMA_WS_SWAP_AB=0).
template <class Op, class = void>
constexpr bool A_TRANSPOSED = false;
template <class Op>
constexpr bool A_TRANSPOSED<Op, decltype(void(Op::A_TRANSPOSED))> = Op::A_TRANSPOSED;
// Whether an Op's mma commits its wgmma groups itself, having waited for the previous step's before it overwrote the
// registers of A those read (Op::COMMITS_ITSELF: OpTf32Swapped, OpBytesSwapped, whose A comes through registers);
// then k_step neither commits a step's group nor waits for the previous one. Absent: k_step does both (every Op
// whose wgmmas read both operands from shared memory, Op16Swapped among them).
template <class Op, class = void>
constexpr bool COMMITS_ITSELF = false;
template <class Op>
constexpr bool COMMITS_ITSELF<Op, decltype(void(Op::COMMITS_ITSELF))> = Op::COMMITS_ITSELF;
// Where a thread's two accumulator rows lie, below its first: 8 (hopper.cuh's layout: rows l / 4 and l / 4 + 8 of its
// warp's 16), or Op::ROW_PAIR = 1 for operands whose fragment rows the kernel takes in adjacent pairs (OpBytesSwapped:
// rows 2 (l / 4) and the next); pair_row gives the first.
template <class Op, class = void>
constexpr int ROW_PAIR = 8;
template <class Op>
constexpr int ROW_PAIR<Op, decltype(void(Op::ROW_PAIR))> = Op::ROW_PAIR;
template <int PAIR>
__device__ __forceinline__ int pair_row(int lane)
{
    static_assert(PAIR == 8 || PAIR == 1, "a thread's rows 8 apart, or adjacent");
    return PAIR == 8 ? lane / 4 : 2 * (lane / 4);
}
template <class Op>
using Schedule = ws_schedule::PersistentSchedule<CLUSTER, GROUP_M, GROUP_ALONG_N<Op>, STREAMK, BALANCED,
                                                 SK_MIN_SAVED_STEPS, MAX_SK_FLAGS, SPLIT_K>;

#if HOPPER_SM90A
// A K-major Bt tile (the tf32 and 8-bit operands) is read in boxes of this many rows: 128, or the whole tile where it
// is narrower (a build of 64 columns has a tensor map of its own: the registry's WsConfig.bt_box_rows).
constexpr int BT_BOX_ROWS = WGMMA_WS_BT_BOX_ROWS;

// The k step kt of a K-major Bt tile (the tf32 and 8-bit operands, which wgmma reads only K-major; the swapped 16-bit
// operands' rows of A) from a tensor map whose box is BOX_ROWS rows of BOX_BYTES bytes. BN = 2 BOX_ROWS: two boxes,
// one per CTA of a 2-cluster, multicast (hopper::load_halves). BN = BOX_ROWS: the tile is one box (the 128-column
// builds share the method's tensor map, so its box cannot be split in halves): the CTAs of a cluster take turns by
// k step, each multicasting the whole tile, which reads it from L2 once per cluster as the halves do and spreads the
// copies over every producer.
template <int BOX_ROWS, int BOX_BYTES>
__device__ __forceinline__ void load_bt(uint32_t sb, const CUtensorMap* tmap_bt, uint32_t bar, int n0, int kt,
                                        uint32_t rank)
{
    static_assert(BN == BOX_ROWS || BN == 2 * BOX_ROWS, "a Bt tile is one box or two");
    static_assert(BN == BOX_ROWS || CLUSTER <= 2,
                  "WGMMA_WS_CLUSTER: 1 or 2 for a K-major Bt of two boxes (a 2-cluster's CTAs take one each)");
    if constexpr (BN == 2 * BOX_ROWS)
        hopper::load_halves<CLUSTER, BOX_BYTES, BOX_ROWS>(sb, tmap_bt, bar, kt * BK, n0, rank);
    else if constexpr (CLUSTER == 1)
        hopper::tma_load_2d(sb, tmap_bt, bar, kt * BK, n0);
    else if (kt % CLUSTER == static_cast<int>(rank))
        hopper::tma_load_2d_multicast(sb, tmap_bt, bar, kt * BK, n0, static_cast<uint16_t>((1u << CLUSTER) - 1));
}
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
