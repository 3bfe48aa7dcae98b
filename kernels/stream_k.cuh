// Stream-K for kernels that launch one block per output tile (10_mma_async_copy.cu's decode builds): the grid is a
// fixed count of blocks G (one or two an SM) whatever the count of tiles. The tiles' k steps, laid end to end tile
// by tile (W = tiles x KT units of one k step), are cut into G contiguous spans, block b taking [b W / G,
// (b + 1) W / G). So every SM streams the same share of B where a whole number of slices per tile leaves some SMs a
// block more than others (48 column tiles split 4 ways on 132 SMs: 60 SMs stream two blocks' bytes, 72 one, and
// the launch lasts as long as the two).
//
// A span crosses tile boundaries: the block runs each piece of it (a tile's k steps inside the span) as a tile of
// its own, in order. A piece that is its whole tile stores C directly; the others are summed as split_k.cuh sums
// slices: each stores its partial to the workspace and counts in on the tile's counter, and the block that counts
// last sums the tile's pieces in piece order (the order of their blocks), whichever finished first, then stores C.
// Which blocks hold which pieces depends on W and G alone, so two launches of one problem on one grid give the same
// bits. No block waits for another: any grid size is safe.
//
// Host contract: grid (G, 1, 1) with 1 <= G <= W (every span holds a unit, so a tile's pieces are exactly the
// blocks whose spans meet it; the kernel traps on another grid); the workspace, the kernel's last argument: 2 G
// partial tiles of THREADS x (accumulators per thread) elements (a block stores at most two partial pieces, the
// first and the last of its span: those between are whole tiles), then one 32-bit counter per tile, zeroed once.
// The registry's stream-K builds (core/geometry.py, stream_k_variant) size it so.
#pragma once

#include <type_traits>

#include "simt_common.cuh"

namespace stream_k {

// The cut of W units into G spans.
struct Spans {
    long long w, g;
    __device__ __forceinline__ long long start(long long b) const { return b * w / g; }
    // The block whose span holds unit u: the last b with start(b) <= u.
    __device__ __forceinline__ int owner(long long u) const { return static_cast<int>(((u + 1) * g - 1) / w); }
};

// One piece of this block's span: k steps [kt0, kt1) of `tile`; piece -1 for a whole tile, else its index among the
// tile's `pieces` (piece 0 holds the tile's first k steps).
struct Piece {
    int tile, kt0, kt1, piece, pieces;
};

// Calls run(Piece) for each piece of this block's span, in order. `tiles` x `KT` units.
template <class Run>
__device__ __forceinline__ void for_each_piece(int tiles, int KT, Run run)
{
    const Spans s{static_cast<long long>(tiles) * KT, static_cast<long long>(gridDim.x)};
    if (s.g > s.w || gridDim.y != 1 || gridDim.z != 1) __trap();  // an empty span would leave its tile unsummed
    const long long b = blockIdx.x, end = s.start(b + 1);
    for (long long u = s.start(b); u < end;) {
        const int tile = static_cast<int>(u / KT);
        const long long t0 = static_cast<long long>(tile) * KT, t1 = t0 + KT, e = end < t1 ? end : t1;
        const int first = s.owner(t0), last = s.owner(t1 - 1);
        run(Piece{tile, static_cast<int>(u - t0), static_cast<int>(e - t0),
                  first == last ? -1 : static_cast<int>(b) - first, last - first + 1});
        u = e;
    }
}

// The epilogue of a partial piece (p.piece >= 0) before the kernel stores C from `acc` (the thread's accumulators:
// any array of float, double or int, in the kernel's own order). Stores the piece's partial, counts in, and returns
// true in the block that counts last with acc holding the sum over the tile's pieces in piece order; false in the
// others. Every thread of the block calls it. A partial is split_k.cuh's: THREADS x N elements in 16-byte vectors,
// vector v of thread t at v * THREADS + t.
template <int THREADS, class Tile>
__device__ __forceinline__ bool sum_pieces(Tile& acc, void* workspace, const Piece& p, int tiles, int KT)
{
    using Acc = std::remove_all_extents_t<Tile>;
    using V = typename simt_common::Vec<Acc>::type;
    constexpr int N = sizeof(Tile) / sizeof(Acc), VE = 16 / sizeof(Acc), NV = N / VE;
    static_assert(N % VE == 0, "whole 16-byte vectors");
    constexpr size_t PART = static_cast<size_t>(THREADS) * NV;  // vectors per partial tile

    const Spans s{static_cast<long long>(tiles) * KT, static_cast<long long>(gridDim.x)};
    const int b = blockIdx.x, first = b - p.piece;
    // A block's partial pieces: slot 0 its span's first piece, slot 1 its last.
    auto slot = [&](int blk) { return 2 * blk + (s.start(blk) / KT == p.tile ? 0 : 1); };
    Acc* const a = reinterpret_cast<Acc*>(&acc);
    V* const parts = static_cast<V*>(workspace) + threadIdx.x;
    unsigned int* const counter = reinterpret_cast<unsigned int*>(static_cast<V*>(workspace) + 2 * s.g * PART) + p.tile;

    V* const mine = parts + slot(b) * PART;
#pragma unroll
    for (int v = 0; v < NV; ++v) __stcg(mine + v * THREADS, simt_common::Vec<Acc>::make(a + v * VE));
    // The fences and counts of split_k::sum_slices (its comments say why one thread fences for the block).
    __syncthreads();
    int last = 0;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicInc(counter, p.pieces - 1) == static_cast<unsigned int>(p.pieces - 1);  // wraps to 0
        if (last) __threadfence();
    }
    if (!__syncthreads_or(last)) return false;

    // The pieces in order, U at a time with their loads in flight together (as many as 64 staging registers hold),
    // then added in piece order: the bits of one piece at a time.
    constexpr int WORDS = N * static_cast<int>(sizeof(Acc) / 4), U = WORDS >= 64 ? 1 : 64 / WORDS;
#pragma unroll 1
    for (int q0 = 0; q0 < p.pieces; q0 += U) {
        Acc part[U][N];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (q0 + u >= p.pieces) break;
            const V* const src = parts + slot(first + q0 + u) * PART;
#pragma unroll
            for (int v = 0; v < NV; ++v) simt_common::Vec<Acc>::get(__ldcg(src + v * THREADS), part[u] + v * VE);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (q0 + u >= p.pieces) break;
#pragma unroll
            for (int e = 0; e < N; ++e) a[e] = q0 + u == 0 ? part[u][e] : a[e] + part[u][e];
        }
    }
    return true;
}

}  // namespace stream_k
