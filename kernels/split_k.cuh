// Split-K for kernels that launch one block per output tile (07_warptiled.cu, 08_dmma.cu): the grid's z axis cuts
// every tile's k steps into gridDim.z contiguous slices, one block each, so that a few tiles (1024^3 in fp32 is 32
// tiles of 128x256 on 132 SMs) or a deep K still fill the GPU.
//
// Deterministic reduction, no atomics on C. Each slice stores its partial tile (the accumulator type) to a
// workspace and counts itself in on the tile's counter (its stores fenced first); the block that counts last sums
// the SPLIT partials in slice order 0, 1, .., SPLIT-1, whichever finished first, so two launches give the same
// bits, and stores C with the kernel's own guarded stores. Its count resets the counter (atomicInc wraps at
// SPLIT), so the workspace is zeroed once, when allocated, and every launch on the stream reuses it. No block
// waits for another, so a grid larger than what is resident at once is safe, unlike the persistent rung's split
// (warp_specialized/tile_schedule.cuh), which spreads the sum over the slices but needs them all running.
//
// Host contract: grid (tiles along n, tiles along m, SPLIT) exactly (the kernel traps on another z); workspace,
// the kernel's last argument: per tile (blockIdx.y * gridDim.x + blockIdx.x) SPLIT partial tiles of THREADS (or
// the holders, sum_shared_slices) x (accumulators per thread) elements, then one 32-bit counter per tile, zeroed
// once. The registry's split-K builds (core/geometry.py, tile_split_k_variants) size it from the kernel's record as
// BM x BN accumulators per partial tile, which each kernel static_asserts is its holders' accumulators.
#pragma once

#include <type_traits>

#include "simt_common.cuh"

#ifndef SPLIT_K_PASS
#define SPLIT_K_PASS 0  // the partials sum_slices loads a pass; 0: as many as its staging registers hold
#endif

namespace split_k {

// This block's k steps [kt0, kt1) of a tile's KT: slice blockIdx.z's [z*KT/S, (z+1)*KT/S), S = gridDim.z. Slices
// differ by at most one step; where KT < S some are empty, and they still store their (zero) partial and count.
__device__ __forceinline__ void slice(int KT, int& kt0, int& kt1)
{
    const long long s = gridDim.z, z = blockIdx.z;
    kt0 = static_cast<int>(z * KT / s);
    kt1 = static_cast<int>((z + 1) * KT / s);
}

// The split-K epilogue before the kernel stores C from `acc` (the thread's accumulators: any array of float or
// double, in the kernel's own order). Stores this slice's partial, counts in, and returns true in the last block
// of the tile with acc holding the sum over slices in slice order; false in the others (they are done). Every
// thread of the block calls it. A partial is HOLDERS x N elements in 16-byte vectors, vector v of holder h at
// v * HOLDERS + h: a warp stores and loads 512 contiguous bytes per instruction. Where every thread holds a share
// of the tile (sum_slices), holder h is thread h. Where SHARERS threads hold the same share (18_few_rows.cu: its
// four lanes along k end with the same sums), `share` numbers them 0..SHARERS-1: sharer 0 stores, and in the last
// block sharer j sums the slices j, j + SHARERS, j + 2 SHARERS, .. in order (zero where it has none), so that the
// sum's round trips to L2 are SHARERS times fewer; the kernel then adds the sharers' sums in an order of its own,
// fixed, so the bits are still the same every launch.
template <int SPLIT, int HOLDERS, int SHARERS, class Tile>
__device__ __forceinline__ bool sum_shared_slices(Tile& acc, void* workspace, int holder, int share)
{
    using Acc = std::remove_all_extents_t<Tile>;
    using V = typename simt_common::Vec<Acc>::type;
    constexpr int N = sizeof(Tile) / sizeof(Acc), VE = 16 / sizeof(Acc), NV = N / VE;
    static_assert(SPLIT >= 2 && N % VE == 0, "2 or more slices of whole 16-byte vectors");
    static_assert(SHARERS >= 1, "one thread or more a share of the tile");
    constexpr size_t PART = static_cast<size_t>(HOLDERS) * NV;  // vectors per partial tile
    if (gridDim.z != SPLIT) __trap();  // a launch for another split would overrun the workspace

    Acc* const a = reinterpret_cast<Acc*>(&acc);
    const int tid = threadIdx.x, z = blockIdx.z;
    const size_t tile = blockIdx.y * gridDim.x + blockIdx.x, tiles = gridDim.y * gridDim.x;
    V* const parts = static_cast<V*>(workspace) + tile * SPLIT * PART + holder;
    unsigned int* const counter = reinterpret_cast<unsigned int*>(static_cast<V*>(workspace) + tiles * SPLIT * PART)
                                  + tile;

    // L2 stores and loads (.cg): the other slices' partials come from other SMs.
    if (SHARERS == 1 || share == 0) {
#pragma unroll
        for (int v = 0; v < NV; ++v) __stcg(parts + z * PART + v * HOLDERS, simt_common::Vec<Acc>::make(a + v * VE));
    }
    // One thread fences for the block (CUTLASS's split-K barrier does the same): the barrier orders every thread's
    // stores before thread 0's fence, which, cumulative, publishes them all before its count; the last count's
    // fence orders the others' partials, seen through their counts, before the block's loads past the second
    // barrier. A fence in every thread cost 9 % of the int8 decode's warp samples (Nsight Compute).
    __syncthreads();
    int last = 0;
    if (tid == 0) {
        __threadfence();
        last = atomicInc(counter, SPLIT - 1) == SPLIT - 1;  // the last count wraps the counter to 0
        if (last) __threadfence();
    }
    if (!__syncthreads_or(last)) return false;

    // The sharer's slices share + j SHARERS, j = 0..J-1, in order, each read whole (its own too: it is in L2 already,
    // and the running sum leaves no registers to keep it). The sum is one block's, so its time is L2 round trips: U
    // slices' loads are in flight together (as many as 128 staging registers hold; the mainloop's are free by now),
    // then added in order, so the bits are those of one slice at a time. A tile of 128 registers or more (the SIMT
    // rungs' 64 doubles or 128 floats) leaves none to stage into: up to 4 slices are summed in one straight pass,
    // whose loads ptxas interleaves with the adds, and more two at a time. Two passes of 2 or of 4 slices there
    // spilled 0.7-2 KB a thread (-Xptxas -v), and took a 512^3 fp64 DMMA launch from 23 to 39 us.
    // A build bound to more blocks an SM than that staging leaves room for sets SPLIT_K_PASS, the slices a pass
    // loads (the registry's, core/geometry.py): kernel 7's 64x128 tiles split 3 or more ways, at one a pass, take 165
    // registers, three blocks an SM, where the staging of two took 206-212 and two blocks.
    constexpr int J = (SPLIT + SHARERS - 1) / SHARERS;  // the most slices one sharer sums
    constexpr int WORDS = N * static_cast<int>(sizeof(Acc) / 4), STAGED = 128 / WORDS;
    constexpr int U = SPLIT_K_PASS > 0 ? (SPLIT_K_PASS < J ? SPLIT_K_PASS : J)
                      : STAGED >= 2 ? (STAGED > J ? J : STAGED) : (J <= 4 ? J : 2);
    if (SHARERS > 1 && share >= SPLIT) {  // no slice of its own (SPLIT < SHARERS)
#pragma unroll
        for (int e = 0; e < N; ++e) a[e] = Acc(0);
        return true;
    }
#pragma unroll 1
    for (int j0 = 0; j0 < J; j0 += U) {
        Acc part[U][N];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (j0 + u >= J || share + (j0 + u) * SHARERS >= SPLIT) break;
#pragma unroll
            for (int v = 0; v < NV; ++v)
                simt_common::Vec<Acc>::get(__ldcg(parts + (share + (j0 + u) * SHARERS) * PART + v * HOLDERS),
                                           part[u] + v * VE);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (j0 + u >= J || share + (j0 + u) * SHARERS >= SPLIT) break;
#pragma unroll
            for (int e = 0; e < N; ++e) a[e] = j0 + u == 0 ? part[u][e] : a[e] + part[u][e];
        }
    }
    return true;
}

// Every thread of the block holds THREADS x N of the tile: thread t is holder t, summing every slice itself.
template <int SPLIT, int THREADS, class Tile>
__device__ __forceinline__ bool sum_slices(Tile& acc, void* workspace)
{
    return sum_shared_slices<SPLIT, THREADS, 1>(acc, workspace, static_cast<int>(threadIdx.x), 0);
}

}  // namespace split_k
