// The mainloop of the warp-specialised pipeline (kernels 12-17): the producer's k loop, which fills the ring of
// shared-memory stages by TMA, and the consumers' k loop, which runs the operand policy's wgmmas on them (Op::mma)
// and, for operands summed in fp32 (FP8, tf32) where the build asks, promotes each k step's sum into fp32 accumulators.
//
// Pipeline. Each stage (A 128x64 + B 64xBN for 16-bit operands, the same 128-byte rows for the others: 48 KiB, or
// 32 KiB at BN 128) has a "full" mbarrier (the copy engine completes it on the stage's transaction byte count) and an
// "empty" one (one arrival per consumer warp of every CTA of the cluster). The consumers keep one wgmma group in
// flight: a k step's stage is released as soon as the group that read it has retired, so the producer refills it
// while the next group runs. The producer runs ahead of the math by up to STAGES k steps, and into the next tile
// while the consumers store the current one.
#pragma once

#include "config.cuh"
#include "epilogue.cuh"  // PacedDrain: the previous tile's staged rows leave between k steps

namespace wgmma_ws {

#if HOPPER_SM90A
// ------------------------------------------------------------------------------------------- Bt in shared memory
// (WGMMA_WS_BT_BUFFERS) wgmma reads 32-bit operands only K-major, and B is row-major (N-major). Instead of a transpose
// of all of B before the kernel (twice B's bytes through HBM, timed with it), B comes as it is, and the producer
// warpgroup's three idle warps write each k step's K-major Bt tile for the consumers:
//   the producer thread copies the k step's BK rows of B (BN columns, as 32-column strips of 32 rows x 128 bytes,
//   128B-swizzled: the tensor map's box) into the stage where Bt would be (load_b_rows), with A, so that B's copies
//   run as far ahead as the ring's stages;
//   the writers (bt_writer) wait for the stage and for a free buffer of the Bt ring (WGMMA_WS_BT_BUFFERS buffers,
//   which the consumers release as the group that read one retires), move the tile in 4x4 blocks (four 16-byte
//   loads down four k-rows, four 16-byte stores along four Bt rows), make their stores visible to the tensor cores
//   (fence.proxy.async), mark the buffer full and release the stage's B rows (the stage is free once the consumers
//   are done with its A and the writers with its B).
// A 4x4 block (kb, nb) holds k 4kb..4kb+3 and columns 4nb..4nb+3. Both layouts swizzle 16-byte chunks by the row's
// index mod 8: element (k, column c) of the stage's B rows is at strip c/32, row k, chunk ((c/4) mod 8) ^ (k mod
// 8), and element (column c, k) of Bt at row c, chunk (k/4) ^ (c mod 8). Block u of the loop takes kb = (j + R) mod
// 8 and nb = 8Q + j for j = u mod 8, R = (u / 8) mod 8, Q = u / 64: the eight threads of each quarter-warp (one
// 16-byte access each per cycle) then touch eight different chunks both when they load and when they store, so
// neither has bank conflicts.
__device__ __forceinline__ void load_b_rows(uint32_t sb, const CUtensorMap* tmap_b, uint32_t bar, int n0, int kt)
{
#pragma unroll
    for (int q = 0; q < BN / 32; ++q) hopper::tma_load_2d(sb + q * B_STRIP_BYTES_32, tmap_b, bar, n0 + 32 * q, kt * BK);
}

// ------------------------------------------------------------------------------------------- producer
// Item i of the schedule as the producer warpgroup's walkers see it: its k steps [k0, k1) and the first row and
// column of this CTA's tile (rank: the CTA's place in its cluster).
template <class Sched>
__device__ __forceinline__ void item_tile(const Sched& sched, int i, uint32_t rank, int& k0, int& k1, int& m0, int& n0)
{
    int t, piece, pieces, u, tm, tn;
    sched.split(i, t, k0, k1, piece, pieces, u);
    sched.coords(t, tm, tn);
    m0 = tile_m0(tm, rank);
    n0 = tile_n0(tn, rank);
}

// One thread walks the schedule and fills the ring: wait until the consumers of every CTA of the cluster have
// released the stage, announce its bytes, copy this CTA's A and its share of B (multicast). A CTA whose rows all
// lie at or past m (the last cluster row of an odd number of row tiles) copies no A: its products are never
// stored (the epilogue guards rows >= m), and its share of B still reaches its peer.
template <class Op>
__device__ __forceinline__ void producer(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, const Smem& sm,
                                         const Schedule<Op>& sched, uint32_t rank, int m)
{
    using namespace hopper;
    int it = 0;
    for (int i = 0; i < sched.n_items; ++i) {
        int k0, k1, m0, n0;
        item_tile(sched, i, rank, k0, k1, m0, n0);
        for (int kt = k0; kt < k1; ++kt, ++it) {
            const int s = it % STAGES;
            const uint32_t round = static_cast<uint32_t>(it / STAGES);
            mbar_wait(sm.empty_bar + 8 * s, (round & 1u) ^ 1u);
            const uint32_t fb = sm.full_bar + 8 * s;
            const uint32_t sa = sm.tiles + s * STAGE_BYTES;
            const bool rows = m0 < m;
            int ka = kt, kb = kt;  // the k steps of A's and B's columns that this one multiplies
            if constexpr (K_BLOCKS_REPEAT<Op>) {
                ka = Op::a_step(kt, sched.ktiles);
                kb = Op::b_step(kt, sched.ktiles);
            }
            mbar_arrive_expect_tx(fb, rows ? STAGE_BYTES : STAGE_BYTES - A_BYTES);
            if constexpr (CLUSTER_ALONG_N) {  // the cluster's A slot, multicast by one CTA a k step
                if (rows) Op::load_a_shared(sa, tmap_a, fb, m0, ka, rank);
            } else if constexpr (A_TRANSPOSED<Op>) {
                if (rows) Op::load_a(sa, tmap_a, fb, m0, ka);  // B's rows m0.. as the A slot's boxes
            } else if (rows) {
                tma_load_2d(sa, tmap_a, fb, ka * Op::BK, m0);
            }
            if constexpr (BT_SMEM) load_b_rows(sa + A_BYTES, tmap_b, fb, n0, kb);  // B's rows; bt_writer makes Bt
            else Op::load_b(sa + A_BYTES, tmap_b, fb, n0, kb, rank);
        }
    }
}

// The writers of Bt (WGMMA_WS_BT_BUFFERS, see above): the producer warpgroup's warps 1-3, thread t of 96, walking the
// schedule's k steps as the producer does.
template <class Op>
__device__ __forceinline__ void bt_writer(const Smem& sm, const Schedule<Op>& sched, int t)
{
    using namespace hopper;
    static_assert(BK == 32, "a k step of 32 32-bit elements: eight 4x4 blocks down a 128-byte Bt row");
    constexpr int BLOCKS = (BK / 4) * (BN / 4);
    constexpr int WRITERS = 32 * BT_SMEM_WARPS;
    static_assert(WRITERS % 8 == 0, "whole quarter-warps");
    const int lane = t % 32;
    int it = 0;
    for (int i = 0; i < sched.n_items; ++i) {
        int tile, k0, k1, piece, pieces, u;
        sched.split(i, tile, k0, k1, piece, pieces, u);
        for (int kt = k0; kt < k1; ++kt, ++it) {
            const int s = it % STAGES, j = it % BT_SMEM_BUFFERS;
            mbar_wait(sm.full_bar + 8 * s, static_cast<uint32_t>(it / STAGES) & 1u);
            mbar_wait(sm.bt_empty_bar + 8 * j, (static_cast<uint32_t>(it / BT_SMEM_BUFFERS) & 1u) ^ 1u);
            const uint32_t src = sm.tiles + s * STAGE_BYTES + A_BYTES;
            const uint32_t dst = sm.bt + j * B_ROWS_BYTES;
            for (int b = t; b < BLOCKS; b += WRITERS) {
                const int jj = b % 8, kb = (jj + (b / 8) % 8) % 8, nb = 8 * (b / 64) + jj;
                float4 v[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int k = 4 * kb + r;
                    const uint32_t at = src + (nb / 8) * B_STRIP_BYTES_32 + k * 128 + (((nb % 8) ^ (k % 8)) << 4);
                    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                                 : "=f"(v[r].x), "=f"(v[r].y), "=f"(v[r].z), "=f"(v[r].w)
                                 : "r"(at));
                }
#pragma unroll
                for (int r = 0; r < 4; ++r) {  // Bt row 4nb + r: column r of the block's four k-rows
                    const int c = 4 * nb + r;
                    const uint32_t at = dst + c * 128 + ((kb ^ (c % 8)) << 4);
                    const float4 w = r == 0 ? make_float4(v[0].x, v[1].x, v[2].x, v[3].x)
                                   : r == 1 ? make_float4(v[0].y, v[1].y, v[2].y, v[3].y)
                                   : r == 2 ? make_float4(v[0].z, v[1].z, v[2].z, v[3].z)
                                            : make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
                    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(at), "f"(w.x), "f"(w.y), "f"(w.z),
                                 "f"(w.w)
                                 : "memory");
                }
            }
            // The stores reach the tensor cores (the async proxy) before the buffer counts as full; the loads are
            // done before the stage is refilled.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (lane == 0) {
                mbar_arrive_local(sm.bt_full_bar + 8 * j);
                mbar_arrive_local(sm.empty_bar + 8 * s);
            }
        }
    }
}

// The loader of block scales (WGMMA_WS_SCALE_SLOTS, block-scaled operands): the producer warpgroup's second warp,
// lane `lane`, walking the schedule's k steps as the producer does. For each it waits until every consumer warp has
// read the slot's step before (its empty barrier), copies the step's scales of the tile's rows and its B scale into
// the slot (Op::ScaleCopies: cp.async through L2, each lane its share) and arrives on the slot's full barrier as its
// own copies land (the barrier counts the 32 lanes). The consumers then read a step's scales from shared memory,
// copied up to SCALE_SLOTS steps ahead, instead of waiting in their k steps for loads from L2. The warp has the
// producer warpgroup's 40 registers (config.cuh): its k loop is not unrolled, which at 40 spilled.
template <class Op>
__device__ __forceinline__ void scale_loader(const Smem& sm, const Schedule<Op>& sched, const float* scales,
                                             uint32_t rank, int m, int lane)
{
    using namespace hopper;
    RingPos<SCALE_SLOTS> pos(0);
    for (int i = 0; i < sched.n_items; ++i) {
        int k0, k1, m0, n0;
        item_tile(sched, i, rank, k0, k1, m0, n0);
        typename Op::ScaleCopies copies(scales, m, m0, n0, k0, sched.ktiles, sched.cols, lane);
#pragma unroll 1
        for (int kt = k0; kt < k1; ++kt, pos.advance()) {
            mbar_wait(sm.scale_empty_bar + 8 * pos.slot, pos.phase ^ 1u);
            copies.copy(sm.scales + pos.slot * SCALE_SLOT_BYTES);
            cp_async_arrive(sm.scale_full_bar + 8 * pos.slot);
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

// Free what ring step `step` read, once its group has retired: its stage, and with Bt written in shared memory
// (WGMMA_WS_BT_BUFFERS) its buffer of the Bt ring (one arrival per consumer warp; no cluster there).
__device__ __forceinline__ void release_step(const Smem& sm, uint32_t step, int lane)
{
    release_stage(sm.empty_bar, step % STAGES, lane);
    if constexpr (BT_SMEM) {
        if (lane == 0) hopper::mbar_arrive_local(sm.bt_empty_bar + 8 * (step % BT_SMEM_BUFFERS));
    }
}

// The weights of k steps' partials in the promoted mainloop for an Op without block scales: none (Step is empty,
// next loads nothing), the partials are added as they are. A block-scaled Op brings its own (Op::Weights: next()
// gives the thread's two weights of the item's next k step as Step, a float2, from the scale ring's slot).
struct Unweighted {
    struct Step {};
    __device__ __forceinline__ Step next() { return {}; }
};

// Where a consumer thread's block-scaled weights of an item come from (Op::Weights: the scale ring from ring step
// `step`, the item's first, and the thread's first row in the tile), or Unweighted for every other Op.
template <class Op>
__device__ __forceinline__ auto step_weights(const Smem& sm, int row, uint32_t step)
{
    if constexpr (BLOCK_SCALED<Op>) return typename Op::Weights(sm, row, step);
    else return Unweighted{};
}

struct NoWork {  // k_step's `issued` where there is nothing to run between the issue and the wait
    __device__ __forceinline__ void operator()() const {}
};

// k step kt of an item that began at k0, into acc: wait for the stage, issue its wgmmas (`accumulate` false:
// scale-d = 0), run `issued` (the promoted mainloop's fetch of the step's block-scale weights, whose slot wait and
// loads then lie behind wgmmas already issued: +1 % against fetching them before the stage wait), then, where an
// earlier step's group is in flight (`previous`), wait for it (one stays in flight) and release the stage it read;
// the paced drain stores its rows between steps. `it` is kt's ring step, and moves on by K_GROUPS: with two k
// groups each consumer warpgroup takes every other step, and its previous is two back.
template <class Op, typename V, class F = NoWork>
__device__ __forceinline__ void k_step(V (&acc)[ACCUMULATORS], uint32_t& it, int kt, int k0, bool accumulate,
                                       bool previous, uint32_t desc_a0, uint32_t desc_b0, const Smem& sm,
                                       PacedDrain<V>& drain, int n, int lane, F&& issued = {})
{
    using namespace hopper;
    const uint32_t s = it % STAGES;
    mbar_wait(sm.full_bar + 8 * s, (it / STAGES) & 1u);
    uint32_t db = desc_b0 + s * STAGE_DESC;
    if constexpr (BT_SMEM) {  // Bt from the writers' ring (desc_b0: its first buffer)
        const uint32_t j = it % BT_SMEM_BUFFERS;
        mbar_wait(sm.bt_full_bar + 8 * j, (it / BT_SMEM_BUFFERS) & 1u);
        db = desc_b0 + j * (B_ROWS_BYTES >> 4);
    }
    wgmma_fence();
    Op::mma(acc, desc_a0 + s * STAGE_DESC, db, accumulate);
    // (an Op with A from registers commits its groups itself, and has waited for the previous step's: COMMITS_ITSELF)
    if constexpr (!COMMITS_ITSELF<Op>) wgmma_commit();
    issued();
    if (previous) {
        if constexpr (!COMMITS_ITSELF<Op>) wgmma_wait<1>();
        release_step(sm, it - K_GROUPS, lane);
    }
    if constexpr (DRAIN_EVERY > 0) {
        if (drain.left > 0 && (kt - k0) % DRAIN_PERIOD == DRAIN_PERIOD - 1) drain.step(n, lane);
    }
    it += K_GROUPS;
}

// The k steps [k0, k1) of one item into d. Each k step: wait for the stage, issue its wgmmas, keep one group in
// flight, release the stage that the previous group read. The first k step overwrites the accumulators (scale-d
// = 0): zeroing them with ordinary moves makes ptxas serialise the wgmmas (warning C7515). `it` counts the ring's
// k steps over the CTA's items (unsigned: % and / by a power-of-two STAGES are a mask and a shift); desc_a0 /
// desc_b0 are the stage-0 descriptors' low words, so a stage's descriptors are an add. Between k steps, the
// previous tile's staged columns leave at the drain's pace; what is left goes before the chunk is reused.
//
// Promotion (WGMMA_WS_PROMOTE, fp32-summed operands): the tensor cores add into their accumulators with fewer bits
// than fp32 (FP8: operands_bytes.cuh, E4M3) or truncating towards zero (tf32: operands_3xtf32.cuh), so no
// tensor-core sum runs longer than one k step (128 k of FP8, DeepGEMM's interval; 32 of tf32): each step
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
// WGMMA_WS_PROMOTE_SETS = 1 keeps one scratch set, as DeepGEMM does and cuBLASLt's promoted line does in its
// 128x144 tiles (168 registers): each step is issued, waited for and added before the next is issued, so the
// warpgroup's tensor-core work stops for the wait and the adds while the other consumer warpgroup's runs. It frees
// a set's registers for wider tiles: at BN 192 the fp32 set and one scratch set are 2 x 96 registers, where two
// sets would need 3 x 96. A 128x192 tile reads 1/192 + 1/64 bytes of shared memory per multiply-add in its
// wgmmas and takes (128 + 192) x 128 bytes a k step into its stages, against 1/128 + 1/64 and 256 x 128 at BN 128:
// 13 % fewer bytes through shared memory per multiply-add.
//
// At BN 256 the two scratch sets of the tile's full width do not fit beside d (3 x 128 registers), so a promoted k
// step runs in quarters of the columns (PROMOTE_PARTS; Op::mma_columns): two scratch sets of 32, the quarters
// alternating between them, each added into its quarter of d while the next quarter's wgmmas run. The step ends
// with nothing in flight (no chains: the wait sits inside the step), so its last quarter's adds and the next
// step's barrier wait follow a wait; the other consumer warpgroup's wgmmas fill the tensor cores meanwhile. Each
// quarter's wgmmas read the warpgroup's A from shared memory again: four times the A bytes of an unpromoted step,
// 2 KiB per 64x64x32 wgmma beside 2 KiB of B. WGMMA_WS_A_REGS=1 reads A into registers once at the start of the
// step (Op::a_fragments, 16 registers) and gives the quarters A from there (Op::mma_columns_rs): the step then reads
// the shared-memory bytes of an unpromoted one. The fence before each quarter orders the loads before the wgmmas
// that read their registers, and the next step's loads come after this step's last wait.
// WGMMA_WS_PROMOTE_CHUNK = C > 1 takes k steps in chunks of C with nothing in flight between chunks, not between
// steps: the parts of a chunk's steps follow one another, each waited for and added while the next one runs, so
// the final wait, whose bubble the other consumer warpgroup alone fills, comes once per C steps. A chunk holds its C
// stages until its last part retires, so the producer keeps STAGES - C ahead; an item's last steps short of a chunk
// run one at a time. WGMMA_WS_PROMOTE_EVERY = E (a divisor of C) lets each tensor-core sum run E steps (E x BK k)
// before it is promoted: each part's wgmmas run over E steps' stages into one scratch set, so the parts' waits and
// the adds come once per E steps too. With E = 1 every sum, and so every bit of C, is as at C = 1.
//
// Block scales (BLOCK_SCALED<Op>, operands_fp8_block.cuh): a k step is one scale block (128 k), so each partial is
// added times its weight, sa[row, kt] * sb[kt, tile column block], one FFMA where the plain promotion has an FADD.
// `weights` (Op::Weights) gives a step's two weights of this thread (its rows l/4 and l/4 + 8 of its warp's 16) from
// the scale ring in shared memory, which the producer warpgroup's loader fills ahead (scale_loader), asked for
// once the step's wgmmas are issued (k_step's `issued`; the item's steps in order, from its first ring step) and
// used after the next step's are issued. For every other Op `weights` is Unweighted: no loads, the FADD, the same
// build.
template <int N>
struct Steps {  // a chunk's k steps, as a type: the promoted parts' loop unrolls over them
    static constexpr int value = N;
};

template <class Op, typename V = typename Op::Acc, class Weights = Unweighted>
__device__ __forceinline__ void mainloop(V (&d)[ACCUMULATORS], uint32_t& it, int k0, int k1, uint32_t desc_a0,
                                         uint32_t desc_b0, const Smem& sm, PacedDrain<V>& drain, int n, int lane,
                                         Weights weights = {}, int part = 0)
{
    using namespace hopper;
    static_assert(!PROMOTE || PROMOTABLE<Op>,
                  "WGMMA_WS_PROMOTE: for the FP8 and tf32 operands only (their tensor-core sums lose bits; the 16-bit "
                  "operands' match cuBLAS's error, int8's are exact)");
    static_assert(!BT_SMEM || !PROMOTE, "WGMMA_WS_BT_BUFFERS: unpromoted builds (the plain k loop reads the Bt ring)");
    static_assert(!BLOCK_SCALED<Op> || PROMOTE, "block scales (wgmma_fp8_block) need WGMMA_WS_PROMOTE=1: each k "
                                                "step's partial is weighted by its scales as it is promoted");
    static_assert(!BLOCK_SCALED<Op> || (BN == 128 && Op::BK == 128),
                  "block scales (wgmma_fp8_block) need WGMMA_WS_BN=128 and k steps of 128: a tile's columns and a k "
                  "step then lie in one 128x128 scale block of B, and a step's rows each in one 1x128 block of A");
    if constexpr (PROMOTE && PROMOTE_PARTS > 1) {
        // In column parts (BN 256): each chunk of PROMOTE_CHUNK k steps as PROMOTE_PARTS wgmma groups of
        // BN / PROMOTE_PARTS columns from zero for each sum of PROMOTE_EVERY of its steps, alternating between two
        // scratch sets of that width, each part added into d while the next one runs.
        constexpr int COLS = BN / PROMOTE_PARTS, PART = ACCUMULATORS / PROMOTE_PARTS;
        static_assert(!BLOCK_SCALED<Op>, "block scales: 128x128 tiles only");
        static_assert(!A_REGS || A_IN_REGISTERS<Op>, "WGMMA_WS_A_REGS: for the e4m3 operands only");
        V p0[PART], p1[PART];
        uint32_t a[A_REGS ? Op::BK / 32 : 1][4];  // A_REGS: this step's A fragments
        uint32_t a_offset = 0;                   // and where this lane reads them in a stage, with the CTA's window
        if constexpr (A_REGS) a_offset = Op::a_lane_offset(lane) + shared_window(sm.tiles);  // see desc_address
        auto add = [&](const V (&partial)[PART], int part) {
#pragma unroll
            for (int j = 0; j < PART; ++j) d[part * PART + j] += partial[j];
        };
        // The chunk of `steps` k steps from kt (steps: Steps<N>, N known at compile time): wait for each step's
        // stage, run the parts of each sum, then release the stages together once the last part's group has
        // retired.
        auto chunk = [&](int kt, auto steps) {
            constexpr int N = decltype(steps)::value, E = N < PROMOTE_EVERY ? N : PROMOTE_EVERY;
            uint32_t da[N], db[N];
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const uint32_t s = (it + j) % STAGES;
                mbar_wait(sm.full_bar + 8 * s, ((it + j) / STAGES) & 1u);
                da[j] = desc_a0 + s * STAGE_DESC;
                db[j] = desc_b0 + s * STAGE_DESC;
            }
            if constexpr (A_REGS) Op::a_fragments(a, da[0], a_offset);
            auto issue = [&](V (&partial)[PART], int g, int q) {  // part q's wgmmas over the steps of sum g
#pragma unroll
                for (int j = 0; j < E; ++j) {
                    const int t = g * E + j;
                    if constexpr (A_REGS) Op::template mma_columns_rs<COLS>(partial, a, db[t], q * COLS);
                    else Op::template mma_columns<COLS>(partial, da[t], db[t], q * COLS, j > 0);
                }
            };
#pragma unroll
            for (int g = 0; g < N / E; ++g) {
#pragma unroll
                for (int q = 0; q < PROMOTE_PARTS; q += 2) {
                    wgmma_fence();
                    issue(p0, g, q);
                    wgmma_commit();
                    if (g > 0 || q > 0) {
                        wgmma_wait<1>();
                        add(p1, q > 0 ? q - 1 : PROMOTE_PARTS - 1);  // the part before, of this sum or the last
                    }
                    wgmma_fence();
                    issue(p1, g, q + 1);
                    wgmma_commit();
                    wgmma_wait<1>();
                    add(p0, q);
                }
            }
            wgmma_wait<0>();
#pragma unroll
            for (int j = 0; j < N; ++j) release_stage(sm.empty_bar, (it + j) % STAGES, lane);
            add(p1, PROMOTE_PARTS - 1);
            if constexpr (DRAIN_EVERY > 0) {
#pragma unroll
                for (int j = 0; j < N; ++j)
                    if (drain.left > 0 && (kt + j - k0) % DRAIN_PERIOD == DRAIN_PERIOD - 1) drain.step(n, lane);
            }
            it += N;
        };
#pragma unroll
        for (int j = 0; j < ACCUMULATORS; ++j) d[j] = V(0);
        int kt = k0;
        for (; kt + PROMOTE_CHUNK <= k1; kt += PROMOTE_CHUNK) chunk(kt, Steps<PROMOTE_CHUNK>{});
        if constexpr (PROMOTE_CHUNK > 1) {
            for (; kt < k1; ++kt) chunk(kt, Steps<1>{});  // the item's last steps, short of a chunk
        }
    } else if constexpr (PROMOTE) {
        using Step = typename Weights::Step;
        auto add = [&](const V (&partial)[ACCUMULATORS], const Step& w) {
#pragma unroll
            for (int j = 0; j < ACCUMULATORS; ++j) {
                if constexpr (BLOCK_SCALED<Op>) d[j] = fmaf(partial[j], (j & 2) ? w.y : w.x, d[j]);  // rows +8: j & 2
                else d[j] += partial[j];
            }
        };
        // With two k groups each consumer warpgroup promotes its own steps, k0 + part, k0 + part + K_GROUPS, ...
        // (ring steps it + part on; k_step strides by K_GROUPS) into its own d: the groups' sums meet afterwards.
        uint32_t own_step = it + part;
        uint32_t& step = K_GROUPS > 1 ? own_step : it;  // (one group: the ring's step itself)
        auto finish = [&](const V (&partial)[ACCUMULATORS], const Step& w) {  // the last group: retire, release, add
            wgmma_wait<0>();
            release_stage(sm.empty_bar, (step - K_GROUPS) % STAGES, lane);
            add(partial, w);
        };
        V p0[ACCUMULATORS], p1[ACCUMULATORS];  // (one set: p1 unused)
        Step w0{}, w1{};  // the weights of the steps in p0 and p1
#pragma unroll
        for (int j = 0; j < ACCUMULATORS; ++j) d[j] = V(0);
        constexpr int CHAIN_SPAN = K_GROUPS * (PROMOTE_CHAIN - 1) + 1;  // a chain's first step to past its last
        int kt = k0 + (K_GROUPS > 1 ? part : 0);
        if constexpr (PROMOTE_SETS == 2) {
            for (; kt + CHAIN_SPAN <= k1; kt += K_GROUPS * PROMOTE_CHAIN) {
#pragma unroll
                for (int u = 0; u < PROMOTE_CHAIN; u += 2) {
                    k_step<Op>(p0, step, kt + K_GROUPS * u, k0, false, u > 0, desc_a0, desc_b0, sm, drain, n, lane,
                               [&] { w0 = weights.next(); });
                    if (u > 0) add(p1, w1);  // step u - 1's, retired by the wait in step u
                    k_step<Op>(p1, step, kt + K_GROUPS * (u + 1), k0, false, true, desc_a0, desc_b0, sm, drain, n,
                               lane, [&] { w1 = weights.next(); });
                    add(p0, w0);
                }
                finish(p1, w1);
            }
        }
        for (; kt < k1; kt += K_GROUPS) {  // one set: every step so (the remainder of two sets' chains too)
            k_step<Op>(p0, step, kt, k0, false, false, desc_a0, desc_b0, sm, drain, n, lane,
                       [&] { w0 = weights.next(); });
            finish(p0, w0);
        }
        if constexpr (K_GROUPS > 1) it += k1 - k0;
    } else if constexpr (K_GROUPS > 1) {
        // k group `part` of K_GROUPS: the item's k steps k0 + part, k0 + part + K_GROUPS, ..., ring steps it + part
        // on (k_step strides by K_GROUPS); no drain here.
        uint32_t step = it + part;
        for (int kt = k0 + part; kt < k1; kt += K_GROUPS)
            k_step<Op>(d, step, kt, k0, kt > k0 + part, kt > k0 + part, desc_a0, desc_b0, sm, drain, n, lane);
        wgmma_wait<0>();
        if (k1 > k0 + part) release_step(sm, step - K_GROUPS, lane);
        it += k1 - k0;
    } else {
        for (int kt = k0; kt < k1; ++kt)
            k_step<Op>(d, it, kt, k0, kt > k0, kt > k0, desc_a0, desc_b0, sm, drain, n, lane);
        wgmma_wait<0>();
        if (k1 > k0) release_step(sm, it - 1, lane);
    }
    if constexpr (DRAIN_EVERY > 0) {
        while (drain.left > 0) drain.step(n, lane);
        __syncwarp();
    }
}

#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
