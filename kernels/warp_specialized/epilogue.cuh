// The epilogue of the warp-specialised pipeline (kernels 12-17): how the consumers' accumulators leave for C, whole
// tiles, stream-K pieces and split-K slices, and the paced drain that k_step (mainloop.cuh) runs between k steps.
//
// While the consumers store C the tensor cores idle (the epilogue cost ~5-7 % of the run time at 4096^3), and C's
// 128 KiB per tile (BN 256) leave the SM through the same path to L2 as the next tile's operands.
//   whole tiles inside C: each consumer warp's 16xBN block goes out through a per-warp 16x64 fp32 staging
//     chunk in shared memory (XOR-swizzled, conflict-free), as 256-byte row segments, 2 rows per instruction;
//   paced drain (DRAIN_EVERY k steps): a whole tile that is not the CTA's last leaves its last 64 columns staged,
//     and each warp stores 2 of the chunk's 16 rows every DRAIN_EVERY k steps of its next item, so the tile change
//     is shorter (+0.2 % at 4096^3, +0.2-0.7 % at 8192^3, every 2 k steps against none, on an H200 in the pair
//     ratio to cuBLAS in the same run);
//   edge tiles (or n not a multiple of 4): guarded stores straight from the accumulators;
//   stream-K pieces: piece 0 stores and raises the tile's flag; the other pieces wait for it and add their sums
//     into C with L2 reductions (red.global.add: the order of the additions, and so the last bits of C, may vary
//     between runs). The flags (module scope, zero at load) count finished pieces and the last finisher resets
//     its flag, so launches on one stream reuse them; two launches of one module at once on two streams would not.
//   split-K slices (WGMMA_WS_SPLIT_K = S > 1, see tile_schedule.cuh): deterministic, unlike the stream-K
//     tail. Each slice stores its partial tile to the workspace in the accumulators' own order (512 contiguous
//     bytes per warp instruction) and counts itself in on the tile's counter; once all S are in, slice j sums
//     its 1/S of the tile over slices 0, 1, .., S-1 (always that order, whichever finished first) and stores it
//     to C. Spreading the sum over the S slices, rather than leaving it to the last one to finish,
//     keeps it off one SM's path to L2: each slice reads one tile's bytes, not S - 1 tiles'. Each slice counts
//     itself out again after its sum, and the last one out resets the counter for the next launch.
// An asynchronous TMA-store epilogue (it needs the smem of one stage: 3 stages lose 5-6 %) and ping-pong
// consumers (one 128x128 tile each, epilogues under the other's wgmmas) measured slower on an H200.
//
// Split-K workspace (host contract; the registry's WsConfig.workspace_bytes sizes it): per CTA tile (CLUSTER of them
// in each cluster tile: cluster_rows(m) x cluster_cols(n) of those) S partial tiles of BMxBN accumulators (4 bytes
// each), then one 32-bit counter per CTA tile; zeroed once when allocated (the kernel leaves the counters at zero).
#pragma once

#include "config.cuh"

namespace wgmma_ws {

#if HOPPER_SM90A
__device__ unsigned int sk_flags[MAX_SK_FLAGS];  // stream-K partial-sum order; zero between launches

// Consumer warp `warp` of warpgroup c: its staging chunk (generic pointer, for ordinary loads and stores).
__device__ __forceinline__ unsigned char* staging_chunk(unsigned char* smem_raw, uint32_t raw, const Smem& sm, int c,
                                                        int warp)
{
    return smem_raw + (sm.epi - raw) + (c * 4 + warp) * EPI_CHUNK_BYTES;
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

// A stream-K piece's flag: piece 0 of the tile raises it once its sums are in C, the other pieces wait for that
// before they add theirs; every piece counts itself in, and the tile's last resets the flag for the next launch.
// One thread (the first consumer's first, tid 128) waits and counts for the consumers that store the tile.
__device__ __forceinline__ void piece_wait(const unsigned int* flag, int tid)
{
    if (tid == 128) hopper::flag_wait_ge(flag, 1u);
    hopper::named_barrier(1, 128 * ROW_GROUPS);
}

__device__ __forceinline__ void piece_done(unsigned int* flag, int pieces, int tid)
{
    hopper::named_barrier(1, 128 * ROW_GROUPS);
    if (tid == 128 && atomicAdd(flag, 1u) == static_cast<unsigned int>(pieces - 1)) atomicExch(flag, 0u);
}

// Stream-K piece > 0 of a tail tile: once the tile's piece 0 is in C (its flag), add this piece's sums into it
// with L2 reductions.
template <typename V>
__device__ __forceinline__ void add_piece(const V (&d)[ACCUMULATORS], unsigned int* flag, int pieces, V* C, int m,
                                          int n, int row0, int col0, int tid)
{
    piece_wait(flag, tid);
    hopper::red_add_acc_guarded<BN / 8>(d, C, m, n, row0, col0);
    piece_done(flag, pieces, tid);
}

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

// A pair of a tile of C^T (WGMMA_WS_SWAP_AB: the kernel's m x n is the problem's n x m), guarded: (row, col) and
// (row, col + 1) of the kernel's go to C[col][row] and C[col + 1][row], C's rows being m long.
template <typename V>
__device__ __forceinline__ void store_pair_transposed_guarded(V* C, int m, int n, int row, int col, V v0, V v1)
{
    if (row >= m) return;
    if (col < n) C[static_cast<size_t>(col) * m + row] = v0;
    if (col + 1 < n) C[static_cast<size_t>(col + 1) * m + row] = v1;
}

// A thread's accumulators of a tile of C^T into C, pair by pair; its second row PAIR below its first (ROW_PAIR). The
// eight rows of a warp's store are 32 contiguous bytes of one of C's rows (PAIR 8; 64 bytes at PAIR 1, both rows),
// and its four column pairs four of C's rows.
template <int NJ, int PAIR = 8, typename V>
__device__ __forceinline__ void store_acc_transposed(const V* d, V* C, int m, int n, int row0, int col0)
{
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        if constexpr (PAIR == 1) {  // rows row0 and row0 + 1: a pair in C's row col (C: the kernel's n rows of m)
            store_pair_guarded(C, n, m, col0 + 8 * j, row0, d[4 * j], d[4 * j + 2]);
            store_pair_guarded(C, n, m, col0 + 8 * j + 1, row0, d[4 * j + 1], d[4 * j + 3]);
        } else {
#pragma unroll
            for (int h = 0; h < 2; ++h)
                store_pair_transposed_guarded(C, m, n, row0 + PAIR * h, col0 + 8 * j, d[4 * j + 2 * h],
                                              d[4 * j + 2 * h + 1]);
        }
    }
}

// The same with L2 reductions (C += the tile's elements): a stream-K piece > 0 of a tile of C^T, once piece 0's
// sums are in C. Element d[4j + 2h + b], at the kernel's (row0 + PAIR h, col0 + 8j + b), adds into C[col][row]
// (C's rows m long), one reduction an element.
template <int NJ, int PAIR, typename V>
__device__ __forceinline__ void red_add_acc_transposed(const V* d, V* C, int m, int n, int row0, int col0)
{
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const int row = row0 + PAIR * h, col = col0 + 8 * j + b;
                if (row < m && col < n) hopper::red_add(C + static_cast<size_t>(col) * m + row, d[4 * j + 2 * h + b]);
            }
        }
    }
}

// Item w's accumulators of a tile of C^T into C (WGMMA_WS_SWAP_AB; row0, col0: the thread's first in the kernel's
// m x n): a stream-K piece > 0 adds its sums once piece 0's are in; whole tiles, split-K sums and pieces 0 store,
// and a piece 0 then raises its flag.
template <int PAIR, typename V>
__device__ __forceinline__ void epilogue_transposed(const V (&d)[ACCUMULATORS], const ws_schedule::Work& w, int row0,
                                                    int col0, V* C, int m, int n, uint32_t rank, int tid)
{
    unsigned int* flag = (w.piece >= 0) ? &sk_flags[w.u * CLUSTER + static_cast<int>(rank)] : nullptr;
    if (STREAMK && w.piece > 0) {
        piece_wait(flag, tid);
        red_add_acc_transposed<BN / 8, PAIR>(d, C, m, n, row0, col0);
        piece_done(flag, w.pieces, tid);
        return;
    }
    store_acc_transposed<BN / 8, PAIR>(d, C, m, n, row0, col0);
    if (STREAMK && w.piece == 0) {
        __threadfence();
        piece_done(flag, w.pieces, tid);
    }
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
        piece_done(flag, w.pieces, tid);
    }
}

// ------------------------------------------------------------------------------------------- split-K
// Four accumulators of one thread (d[4q..4q+3]), the unit of a partial tile in the workspace.
template <typename V> struct quad_of;
template <> struct quad_of<float> { using type = float4; };
template <> struct quad_of<int> { using type = int4; };
template <typename V> using quad_t = typename quad_of<V>::type;

// Quads of a partial tile at column n0 that hold any of C's n columns: quad q of every thread covers the tile's
// columns 8q..8q+7 (sum_slices), so the quads from q = ceil((n - n0) / 8) on are padding, neither written nor read.
// Likewise the quads of a warp whose 16 rows all lie past C's m (live_rows). A partial tile at a few token rows or
// columns is mostly padding: 7/8 of a 128x128 tile at 16 rows, 3/4 of a twin's 128x64 tile at 16 tokens (Cᵀ's n).
// A partial's quads in their common order: quad q * QUAD_STRIDE + t is consumer thread t's d[4q..4q+3].
constexpr int QUAD_STRIDE = 128 * ROW_GROUPS;
__device__ __forceinline__ int live_quads(int n, int n0)
{
    const int q = (n - n0 + 7) / 8;
    return (q < ACCUMULATORS / 4 ? q : ACCUMULATORS / 4) * QUAD_STRIDE;
}
// Whether consumer thread t's warp holds any of C's m rows: its 16 rows of the tile at m0, 16 (t / 32) on (the
// partials' quads of thread t, sum_slices).
__device__ __forceinline__ bool live_rows(int m0, int t, int m) { return m0 + 16 * (t / 32) < m; }

// Slice `slice`'s share of a CTA tile at (m0, n0): quads [slice, slice + 1) * live / splits of the partials' common
// order (live: those that hold any of C's columns, live_quads), summed over slices 0..splits-1 in that order, then
// stored to C. The accumulators d, free once the partial is out, are the load buffer: a thread's whole share (BN / 8 /
// SPLIT_K quads of each slice) is in flight at once (where SPLIT_K passes d's ACCUMULATORS / 4 quads, one quad of each
// slice, in batches of that many slices, added in slice order as each batch comes), in no registers beyond d's (ptxas
// budgets the kernel at the launch bound's 168, and d stays allocated for the next item's wgmmas; a buffer of its own
// spilled beyond 4 quads). Against 4 loads at a time: +3..5 % at 256x256x8192 and 512x512x16384 with 16 slices (H200,
// fp16). Quad q*256 + ct is consumer thread ct's d[4q..4q+3]: rows 16 (ct / 32) + (ct % 32) / 4 and 8 below it, columns
// 8q + 2 (ct % 4) and the next (hopper.cuh's layout). L2 loads (.cg): the other slices' partials were written by other
// SMs.
template <int PAIR, typename V>
__device__ __forceinline__ void sum_slices(V (&d)[ACCUMULATORS], const quad_t<V>* parts, int slice, int splits, V* C,
                                           int m, int n, int m0, int n0, int ct, int live)
{
    constexpr int SB = SPLIT_K < ACCUMULATORS / 4 ? SPLIT_K : ACCUMULATORS / 4;  // slices per batch of loads
    constexpr int XB = ACCUMULATORS / 4 / SB;  // quads of one slice per thread and batch
    const int lo = slice * live / splits, hi = (slice + 1) * live / splits;
    // Every quad it sums is one thread t's (x0 steps by QUAD_STRIDE): none where t's rows lie past C's.
    if (!live_rows(m0, (lo + ct) % QUAD_STRIDE, m)) return;
    for (int x0 = lo + ct; x0 < hi; x0 += XB * QUAD_STRIDE) {
        V a[XB][4];
#pragma unroll
        for (int b = 0; b < SPLIT_K; b += SB) {  // one batch, but where a quad of every slice outnumbers d's
#pragma unroll
            for (int i = 0; i < XB; ++i) {
#pragma unroll
                for (int s = 0; s < SB; ++s) {
                    if (b + s < splits && x0 + i * QUAD_STRIDE < hi) {
                        const quad_t<V> v =
                            __ldcg(parts + static_cast<size_t>(b + s) * PART_QUADS + x0 + i * QUAD_STRIDE);
                        V* const slot = d + 4 * (i * SB + s);
                        slot[0] = v.x;
                        slot[1] = v.y;
                        slot[2] = v.z;
                        slot[3] = v.w;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < XB; ++i) {
                const int x = x0 + i * QUAD_STRIDE;
                if (x >= hi) break;
                const V* const slot = d + 4 * i * SB;
#pragma unroll
                for (int s = 0; s < SB; ++s) {
                    if (b + s == 0) {
#pragma unroll
                        for (int j = 0; j < 4; ++j) a[i][j] = slot[j];
                    } else if (b + s < splits) {
#pragma unroll
                        for (int j = 0; j < 4; ++j) a[i][j] += slot[4 * s + j];
                    }
                }
                if (b + SB >= SPLIT_K) {
                    const int q = x / QUAD_STRIDE, t = x % QUAD_STRIDE, lane = t % 32;
                    const int row = m0 + (t / 32) * 16 + pair_row<PAIR>(lane), col = n0 + 8 * q + 2 * (lane % 4);
                    if constexpr (SWAP_AB && PAIR == 1) {  // C^T's adjacent rows (store_acc_transposed)
                        store_pair_guarded(C, n, m, col, row, a[i][0], a[i][2]);
                        store_pair_guarded(C, n, m, col + 1, row, a[i][1], a[i][3]);
                    } else if constexpr (SWAP_AB) {  // the tile is C^T's (store_acc_transposed)
                        store_pair_transposed_guarded(C, m, n, row, col, a[i][0], a[i][1]);
                        store_pair_transposed_guarded(C, m, n, row + PAIR, col, a[i][2], a[i][3]);
                    } else {
                        store_pair_guarded(C, m, n, row, col, a[i][0], a[i][1]);
                        store_pair_guarded(C, m, n, row + 8, col, a[i][2], a[i][3]);
                    }
                }
            }
        }
    }
}

// A split-K slice's epilogue (both consumer warpgroups; tid 128 speaks for them): its partial's live quads to the
// workspace, count in, wait for the tile's other slices, sum this slice's share of the tile into C (d is the loads'
// buffer), count out; the last slice out resets the counter (2 x splits counts: each counts out after all counted in).
template <int PAIR = 8, typename V>
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
    const int live = live_quads(n, n0);
    const bool rows = live_rows(m0, ct, m);
#pragma unroll
    for (int q = 0; q < ACCUMULATORS / 4; ++q)
        if (rows && q * QUAD_STRIDE < live)
            __stcg(mine + q * QUAD_STRIDE + ct, V4{d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]});
    __threadfence();
    named_barrier(1, 128 * ROW_GROUPS);
    if (tid == 128) {
        atomicAdd(counter, 1u);
        flag_wait_ge(counter, static_cast<unsigned int>(w.pieces));
    }
    named_barrier(1, 128 * ROW_GROUPS);
    sum_slices<PAIR>(d, parts, w.piece, w.pieces, C, m, n, m0, n0, ct, live);
    if (tid == 128 && atomicAdd(counter, 1u) == 2u * w.pieces - 1u) atomicExch(counter, 0u);
}
#endif  // HOPPER_SM90A

}  // namespace wgmma_ws
