// The warp-specialised, persistent wgmma + TMA GEMM for Hopper (sm_90a) that kernels 12-17 share: ws_gemm<Op>, which
// ties the configuration (config.cuh), the tile schedule (tile_schedule.cuh), the mainloop (mainloop.cuh) and the
// epilogue (epilogue.cuh) to an operand policy Op (operands_*.cuh). A rung (kernels/12_*.cu .. 17_*.cu) is its
// policy and a __device__ entry point that calls ws_gemm<Op>.
//
// Warpgroups. A CTA is a producer warpgroup and one consumer warpgroup per 64 rows of its tile (384 threads at BM
// 128, 256 at BM 64) that do different jobs, so that copies, math and stores overlap without any of them waiting
// for a block-wide barrier:
//   producer (warpgroup 0): gives most of its registers away (setmaxnreg 40, or 56 where it writes Bt); one
//     thread issues every TMA copy of A and B into a ring of shared-memory stages, running ahead of the math by up
//     to STAGES k steps, and into the next tile while the consumers store the current one. Where B is N-major and
//     wgmma reads it only K-major (tf32, WGMMA_WS_BT_BUFFERS), the stages hold B's rows as they are, and its other
//     three warps write each k step's K-major Bt into a ring of buffers for the consumers (mainloop.cuh,
//     bt_writer). Where the operands have block scales (WGMMA_WS_SCALE_SLOTS), its second warp copies each k
//     step's scales into a ring of slots for the consumers (mainloop.cuh, scale_loader).
//   consumers (warpgroups 1 and 2, or 1 alone, setmaxnreg 232): each owns 64 rows of the CTA's BMxBN tile of C
//     and issues the policy's wgmmas on the stages (32-bit accumulators: BN / 2 registers per thread), then stores
//     its rows. With two k groups (WGMMA_WS_K_GROUPS, 64-row tiles) warpgroups 1 and 2 share the tile's rows: each
//     takes every other k step, and warpgroup 2 hands its sums to warpgroup 1, which stores the tile.
//
// Clusters. CLUSTER CTAs along M compute vertically adjacent tiles that need the same B slice per k step: each
// CTA loads its own A and 1/CLUSTER of B, the B part multicast into every CTA of the cluster. That cuts the
// L2->SM traffic per CTA and k step from 48 KiB to 32 KiB (cluster 2, BN 256). Clusters of 4 fit only 30 at once
// on 132 SMs (a fifth wave at 4096^3: 0.886x cuBLAS against 0.96x with clusters of 2, on an H200 in the pair ratio
// to cuBLAS in the same run), so the registry's default is 2. The swapped 16-bit operands' tiles of 32 tokens may
// lie along N instead (WGMMA_WS_CLUSTER_ALONG_N): the CTAs of one strip of weights, each with its own tokens, take
// turns by k step to multicast the strip, as cuBLAS's decode kernel shares its weights.
//
// Schedule. The grid is persistent (no more CTAs than are co-resident) and each cluster walks its tiles in the
// order tile_schedule.cuh defines: grouped for L2 reuse, a stream-K tail where that pays, balanced waves
// otherwise. The producer and the consumers walk the same schedule.
//
// Programmatic dependent launch: with programmatic stream serialisation the kernel starts while the previous
// kernel on the stream ends. Barrier set-up, the cluster barrier and the schedule run early, griddepcontrol.wait
// holds back every global access until the previous grid has completed, and griddepcontrol.launch_dependents at
// entry lets the next launch do the same (+3-5 % on small problems, on an H200 in the pair ratio to cuBLAS in the
// same run). Launched without the attribute, both instructions are no-ops.
//
// Operands are pluggable (template parameter Op: tile loads, descriptors, the wgmmas of one stage, its preferred
// tile order, and the 32-bit type Op::Acc of the accumulators and C: float, or int for the int8 operands):
//   Op::Acc, Op::BK (= WGMMA_WS_BK), Op::GROUP_ALONG_N;
//   Op::load_b(sb, tmap_b, bar, n0, kt, rank): this CTA's share of the stage's B (A is the pipeline's own load);
//   Op::desc_a(sa), Op::desc_b(sb): low descriptor words of a warpgroup's A rows and of B in stage 0;
//   Op::mma(d, da, db, accumulate): one stage's wgmmas for one consumer warpgroup;
//   optional: Op::SCALED (per-tensor scales), Op::BLOCK_SCALED and Op::Weights (block scales), Op::ROW_COL_SCALED
//   (a scale per row and per column: 3xFP16), Op::K_BLOCKS_REPEAT
//   with Op::a_step and Op::b_step (operands of fewer blocks of k than the GEMM reads: 3xTF32's and 3xFP16's,
//   config.cuh's ThreeProducts), Op::A_TRANSPOSED
//   with Op::load_a (the kernel computes C^T = B^T A^T: B's rows copied as they are into the A slot, C^T stored
//   transposed), Op::COMMITS_ITSELF (its mma loads wgmma's A into registers and commits its own groups); config.cuh.
// Edges: TMA zero-fills outside the operands; the epilogue guards rows >= m and columns >= n; k = 0 writes C = 0.
//
// Host contract: block WGMMA_WS_THREADS, dynamic shared memory WGMMA_WS_SMEM_BYTES, cluster (CLUSTER, 1, 1),
// programmatic stream serialisation allowed (all three the registry's, from the build's record); grid (G, 1, 1)
// with G a multiple of CLUSTER and no more than the co-resident CTAs (#SMs, or with clusters CLUSTER *
// cuOccupancyMaxActiveClusters): the stream-K tail and split-K slices wait on other CTAs' flags. Fewer CTAs than
// tiles is fine (they loop). Split-K builds take a workspace (epilogue.cuh), the tensor maps are the policy's.
#pragma once

#include "config.cuh"
#include "epilogue.cuh"
#include "mainloop.cuh"

namespace wgmma_ws {

#if HOPPER_SM90A
// Consumer warpgroup c (64 rows of each tile): every item of the schedule, mainloop then epilogue. A scaled Op's
// accumulators are multiplied by scale_a * scale_b (scales[0], scales[1]) before they leave: a stream-K piece or a
// split-K slice is scaled before it is summed, which the sum's linearity allows. A block-scaled Op's are weighted
// in the mainloop, step by step (`scales` is then its block scales); the same linearity lets stream-K pieces and
// split-K slices, which are whole k steps, be weighted apart.
// Two k groups (WGMMA_WS_K_GROUPS = 2) meet at the end of item i of `steps` k steps: the second (part 1) writes its
// sums into the staging chunks (quad q of thread t at q * 128 + t: 512 contiguous bytes per warp instruction) once
// the first has stored the previous item, and returns true (it is done with the item); the first waits for them,
// adds them into d and returns false (it stores the tile, then frees the chunks: consumer). Part 1 had no k step
// where the item has one: it hands over zeros.
constexpr uint32_t K_GROUPS_FULL = 2, K_GROUPS_FREE = 3;  // named barriers (1: the epilogue's)
template <typename V>
__device__ __forceinline__ bool k_groups_meet(V (&d)[ACCUMULATORS], unsigned char* chunks, int part, int i, int steps,
                                              int tid)
{
    using V4 = quad_t<V>;
    V4* const x = reinterpret_cast<V4*>(chunks);
    const int t = tid % 128;
    if (part > 0) {
        if (i > 0) hopper::named_barrier(K_GROUPS_FREE, 128 * K_GROUPS);
        const bool any = steps > part;
#pragma unroll
        for (int q = 0; q < ACCUMULATORS / 4; ++q)
            x[q * 128 + t] = any ? V4{d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]} : V4{};
        hopper::named_barrier_arrive(K_GROUPS_FULL, 128 * K_GROUPS);
        return true;
    }
    hopper::named_barrier(K_GROUPS_FULL, 128 * K_GROUPS);
#pragma unroll
    for (int q = 0; q < ACCUMULATORS / 4; ++q) {
        const V4 v = x[q * 128 + t];
        d[4 * q] += v.x;
        d[4 * q + 1] += v.y;
        d[4 * q + 2] += v.z;
        d[4 * q + 3] += v.w;
    }
    hopper::named_barrier(1, 128);  // every warp has read its sums before the epilogue stages into the chunks
    return false;
}

// A row-and-column-scaled Op's accumulators (ROW_COL_SCALED): element (i, j) times scales[i] * scales[m + j]. A
// thread's accumulator 4 g + 2 h + b lies in row `row` + 8 h and column `col` + 8 g + b of C (wgmma's fragment);
// rows and columns past C's take 0. Two multiplies, not one by scales[i] * scales[m + j]: each scale is a power of
// two and exact, but their product is not where it falls below fp32's least subnormal (a row of largest 1e-30,
// scale 2^-114, against a column of largest 1e-8, scale 2^-41), while the element itself (about 1e-38 times k) is
// still within range; the row's scale first keeps every step exact.
template <typename V>
__device__ __forceinline__ void scale_rows_columns(V (&d)[ACCUMULATORS], const float* scales, int row, int col,
                                                   int m, int n)
{
    const float r0 = row < m ? scales[row] : 0.f, r1 = row + 8 < m ? scales[row + 8] : 0.f;
#pragma unroll
    for (int g = 0; g < ACCUMULATORS / 4; ++g) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            const int c = col + 8 * g + b;
            const float s = c < n ? scales[m + c] : 0.f;
            d[4 * g + b] = d[4 * g + b] * r0 * s;
            d[4 * g + 2 + b] = d[4 * g + 2 + b] * r1 * s;
        }
    }
}

template <class Op, typename V = typename Op::Acc>
__device__ __forceinline__ void consumer(const Schedule<Op>& sched, unsigned char* smem_raw, uint32_t raw,
                                         const Smem& sm, V* C, int m, int n, uint32_t rank, int tid, int c,
                                         void* workspace, const float* scales)
{
    static_assert(SCALED<Op> + BLOCK_SCALED<Op> + ROW_COL_SCALED<Op> <= 1,
                  "an Op's result is scaled per tensor, per block or per row and column, not two of them");
    const int warp = (tid % 128) / 32, lane = (tid % 128) % 32;
    float factor = 1.0f;
    if constexpr (SCALED<Op>) factor = scales[0] * scales[1];
    V d[ACCUMULATORS];
    uint32_t it = 0;
    const int r = c / K_GROUPS, part = c % K_GROUPS;  // its 64 rows of the tile, and its k group
    const uint32_t desc_a0 = Op::desc_a(sm.tiles + r * (64 * 128));
    const uint32_t desc_b0 = Op::desc_b(BT_SMEM ? sm.bt : sm.tiles + A_BYTES);  // Bt: the writers' ring
    unsigned char* const chunk = staging_chunk(smem_raw, raw, sm, c, warp);
    PacedDrain<V> drain{chunk, 0, nullptr};
    for (int i = 0; i < sched.n_items; ++i) {
        const ws_schedule::Work w = sched.item(i);
        const int m0 = tile_m0(w.tm, rank), n0 = tile_n0(w.tn, rank);
        mainloop<Op>(d, it, w.k0, w.k1, desc_a0, desc_b0, sm, drain, n, lane,
                     step_weights<Op>(sm, r * 64 + warp * 16 + lane / 4, it), part);
        if constexpr (K_GROUPS > 1) {
            if (k_groups_meet(d, smem_raw + (sm.epi - raw), part, i, w.k1 - w.k0, tid)) continue;
        }
        if constexpr (SCALED<Op>) {
#pragma unroll
            for (int j = 0; j < ACCUMULATORS; ++j) d[j] *= factor;
        }
        if constexpr (ROW_COL_SCALED<Op>)
            scale_rows_columns(d, scales, m0 + r * 64 + warp * 16 + lane / 4, n0 + 2 * (lane % 4), m, n);
        if constexpr (SPLIT_K > 1) {
            if (w.pieces > 1) {
                const int cta_tiles = sched.rows * sched.cols * CLUSTER;
                split_k_epilogue<ROW_PAIR<Op>>(d, w, w.u * CLUSTER + static_cast<int>(rank), cta_tiles, m0, n0, C, m,
                                               n, tid, workspace);
                if constexpr (K_GROUPS > 1) hopper::named_barrier_arrive(K_GROUPS_FREE, 128 * K_GROUPS);
                continue;
            }
        }
        if constexpr (A_TRANSPOSED<Op>) {  // C^T's tile: row i, column j of the kernel's go to C[j][i]
            constexpr int PAIR = ROW_PAIR<Op>;
            epilogue_transposed<PAIR>(d, w, m0 + r * 64 + warp * 16 + pair_row<PAIR>(lane), n0 + 2 * (lane % 4), C,
                                      m, n, rank, tid);
        } else {
            epilogue(d, w, i, sched.n_items, m0, n0, C, m, n, rank, tid, r, warp, lane, chunk, drain);
        }
        if constexpr (K_GROUPS > 1) hopper::named_barrier_arrive(K_GROUPS_FREE, 128 * K_GROUPS);
    }
    if constexpr (K_GROUPS > 1) {  // the last hand-over's chunks were read (k_groups_meet)
        if (part > 0 && sched.n_items > 0) hopper::named_barrier(K_GROUPS_FREE, 128 * K_GROUPS);
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
    static_assert(Op::BK == BK, "WGMMA_WS_BK: the operands' k step (Op::BK, one 128-byte row of their elements)");
    static_assert(SWAP_AB == A_TRANSPOSED<Op>,
                  "WGMMA_WS_SWAP_AB: 1 exactly for operands that read B's rows as wgmma's A (OpTf32Swapped, "
                  "OpBytesSwapped, Op16Swapped)");
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
    sm.tiles = (raw + 1023u) & ~1023u;  // 128-byte swizzle atoms need 1024-byte alignment (ALIGN_SLACK)
    sm.bt = sm.tiles + STAGES * STAGE_BYTES;  // 1024-aligned too: the stages are multiples of 1024 bytes
    sm.epi = sm.bt + BT_BUFFERS_HELD * B_ROWS_BYTES;
    sm.full_bar = sm.epi + EPI_BYTES;
    sm.empty_bar = sm.full_bar + STAGES * 8;
    sm.bt_full_bar = sm.empty_bar + STAGES * 8;
    sm.bt_empty_bar = sm.bt_full_bar + BT_BUFFERS_HELD * 8;
    sm.scales = sm.bt_empty_bar + BT_BUFFERS_HELD * 8;  // slots of whole floats, then their barriers (8-aligned)
    sm.scale_full_bar = sm.scales + SCALE_SLOTS * SCALE_SLOT_BYTES;
    sm.scale_empty_bar = sm.scale_full_bar + SCALE_SLOTS * 8;

    const int tid = threadIdx.x;
    // The warpgroup index through a shuffle: the compiler then knows it is the same in every lane, and keeps the
    // consumers' wgmma descriptors (which depend on it) on the uniform datapath instead of moving them into uniform
    // registers before every wgmma (static R2UR 374 -> 314; +0.4 % at 4096^3, on an H200 in the pair ratio to
    // cuBLAS in the same run).
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0);
    const uint32_t rank = (CLUSTER > 1) ? cluster_rank() : 0;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(sm.full_bar + 8 * s, 1);
            mbar_init(sm.empty_bar + 8 * s, EMPTY_ARRIVALS);
        }
        for (int j = 0; j < BT_BUFFERS_HELD; ++j) {
            mbar_init(sm.bt_full_bar + 8 * j, BT_SMEM_WARPS);
            mbar_init(sm.bt_empty_bar + 8 * j, ROW_GROUPS * 4);  // the warps of the warpgroup that read it
        }
        for (int j = 0; j < SCALE_SLOTS; ++j) {
            mbar_init(sm.scale_full_bar + 8 * j, 32);              // each lane of the loader, as its copies land
            mbar_init(sm.scale_empty_bar + 8 * j, CONSUMERS * 4);  // every consumer warp, once it has read it
        }
        fence_mbar_init();
    }
    if constexpr (CLUSTER > 1) cluster_sync();  // peers' barriers exist before any multicast or remote arrive
    else __syncthreads();

    const int rows = cluster_rows(m), cols = cluster_cols(n);  // cluster tiles along M and N
    const int ktiles = (k + Op::BK - 1) / Op::BK;
    const Schedule<Op> sched(rows, cols, ktiles);
    // Everything above (barriers, cluster barrier, schedule) overlaps the end of the previous grid.
    asm volatile("griddepcontrol.wait;" ::: "memory");  // its writes (A, B, C, the stream-K flags) are visible

    if (wg == 0) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) producer<Op>(tmap_a, tmap_b, sm, sched, rank, m);
        if constexpr (BT_SMEM) {
            if (tid >= 32) bt_writer<Op>(sm, sched, tid - 32);
        }
        if constexpr (SCALE_SLOTS > 0) {
            if (tid >= 32 && tid < 64) scale_loader<Op>(sm, sched, scales, rank, m, tid - 32);
        }
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
