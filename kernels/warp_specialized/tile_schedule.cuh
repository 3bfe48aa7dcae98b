// Persistent tile schedule of the warp-specialised Hopper GEMM (kernels 12-17, kernel.cuh): which output tiles, and
// which k steps of them, each cluster of CTAs computes. The kernel's producer and consumers walk the same schedule,
// so they agree on every stage without talking.
//
// Units. A "cluster tile" is CLUSTER vertically adjacent CTA tiles (CLUSTER*BM x BN of C); the grid has G
// clusters, each walking cluster tiles. The schedule works in these units and k steps (BK columns of A).
//
// Tile order (GROUP, ALONG_N). Consecutive tile indices go to clusters running at the same time, so the order
// decides what they share in L2: GROUP cluster-rows are walked column by column (ALONG_N: GROUP cluster-columns
// row by row), so that concurrent tiles reuse the same A rows and B columns (simt_common::grouped_tile).
//
// Whole tiles first: cluster c takes tiles c, c + G, c + 2G, ... of the ones the grid does whole.
//
// Stream-K tail (STREAMK). When the tiles do not divide evenly among the clusters, the last, partial wave
// (tail = tiles % G) can be spread over all clusters by k steps instead of by tiles: the tail's tail*ktiles k
// steps are cut into G contiguous shares, so every cluster ends at the same time. A cluster's share touches at
// most two tiles (the tail has fewer tiles than there are clusters), and each cluster does the start of the later
// tile (a piece 0) before the end of the earlier one, so every piece that waits for a piece 0 waits on work
// another cluster did first: no chains, no deadlock with all CTAs resident. The kernel sums a split tile in C
// (piece 0 stores, the others add with L2 reductions; see epilogue.cuh). That fix-up costs ~15 us per launch at
// 4096^3 (H200), so the split is taken only where it saves each cluster more than MIN_SAVED_STEPS k steps: not at
// 4096^3 (58 of 66 cluster tiles in the last wave, 64 k steps: it would save ~4 us), but at 8192^3 (34 of 66, 128
// k steps: ~35 us saved, +0.3..2.8 % measured on an H200 in the pair ratio to cuBLAS in the same run). Where the
// launch gives every SM a CTA though the tiles are fewer (the registry's full_grid: the decode twins' *_streamk
// builds, with MIN_SAVED_STEPS 0), every tile is the tail, and the clusters share all of the k steps.
//
// Balanced waves (BALANCED). Where the tail is not split, the tiles go to the fewest clusters that keep the
// number of waves (4096^3: 64 of 66 clusters doing 4 tiles each, instead of 58 doing a fourth); the others have
// no work. The same time in an ideal world, but two SMs less of power draw throughout the first waves: measured
// +0.4..2.3 % at 4096^3 (on an H200, in the pair ratio to cuBLAS in the same run, three A/B runs).
//
// Split-K (SPLIT > 1). Where the tiles are too few for the grid (512^3: 4 cluster tiles for 66 clusters) or
// too deep for their number (256 x 256 x 8192: one cluster tile of 128 k steps), every tile's k steps are cut
// into `splits` contiguous slices (split(): slice j does [j*ktiles/splits, (j+1)*ktiles/splits)), and the
// tiles x splits slices are the work items, dealt to the clusters like whole tiles. The kernel sums a tile's
// slices in slice order through a workspace, each slice adding up 1/splits of the tile once every slice has
// written its part (see epilogue.cuh), so a slice waits for the other slices of its tile. That is
// safe because they run at the same time: the grid takes a multiple of `splits` clusters, so item i of every
// cluster belongs to one wave and the slices of a tile are item i of `splits` different clusters; all of them
// reach item i once every item i - 1 is done. `splits` is SPLIT cut to the k steps (no empty slice) and to
// the clusters; the stream-K tail and balanced waves are off (the waves are whole tiles' slices).
#pragma once

#include "../simt_common.cuh"

namespace ws_schedule {

// One unit of a cluster's work: tile t of the order, at cluster-tile row tm and column tn; its k steps [k0, k1);
// for a stream-K piece its index in k order among the tile's `pieces` and the tail tile's index u (which selects
// its flag). Whole tiles have piece -1, pieces 1 and u -1. A split-K slice: piece = its slice, pieces = splits,
// u = its tile.
struct Work {
    int t, k0, k1, piece, pieces, u, tm, tn;
};

template <int CLUSTER, int GROUP, bool ALONG_N, bool STREAMK, bool BALANCED, int MIN_SAVED_STEPS, int MAX_FLAGS,
          int SPLIT = 1>
struct PersistentSchedule {
    static_assert(GROUP >= 1, "tile groups of at least one cluster tile");
    static_assert(MIN_SAVED_STEPS >= 0 && MAX_FLAGS >= CLUSTER, "stream-K limits");
    static_assert(SPLIT >= 1 && !(STREAMK && SPLIT > 1), "split-K and the stream-K tail exclude each other");

    int ktiles;         // k steps per tile
    int nclusters;      // clusters of the grid that take tiles
    int cluster_id;     // this CTA's cluster
    int n_whole;        // whole tiles of this cluster
    int dp;             // tiles done whole by the grid; tail tiles dp.. are split by k steps
    int n_items;        // whole tiles plus tail pieces of this cluster
    long long w;        // tail k steps
    int e, s;           // this cluster's tail k steps [s, e)
    int rows, cols;     // cluster tiles along M and N
    int splits;         // split-K: slices per tile (1: whole tiles)

    // A schedule of rows x cols cluster tiles of ktiles k steps each, for this CTA's cluster of the grid.
    __device__ __forceinline__ PersistentSchedule(int rows_, int cols_, int ktiles_)
        : ktiles(ktiles_), rows(rows_), cols(cols_)
    {
        const int ntiles = rows_ * cols_;
        nclusters = static_cast<int>(gridDim.x) / CLUSTER;
        cluster_id = static_cast<int>(blockIdx.x) / CLUSTER;
        splits = 1;
        if constexpr (SPLIT > 1) {
            split_k_items(ntiles);
            return;
        }
        const int tail = ntiles % nclusters;
        // The split saves each cluster (1 - tail/G) * ktiles k steps; it needs every share non-empty.
        const bool sk = STREAMK && tail > 0 && ktiles > 0 &&
                        static_cast<long long>(nclusters - tail) * ktiles >=
                            static_cast<long long>(MIN_SAVED_STEPS) * nclusters &&
                        static_cast<long long>(tail) * ktiles >= nclusters && tail * CLUSTER <= MAX_FLAGS;
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

    // Split-K: ntiles x splits items (slice j of tile t is item t*splits + j), cluster c taking c, c + G, ...
    // over G clusters, G a multiple of splits (see the header).
    __device__ __forceinline__ void split_k_items(int ntiles)
    {
        splits = min(min(SPLIT, ktiles), nclusters);
        if (splits < 1) splits = 1;
        const int items = ntiles * splits;
        nclusters = max(1, min(nclusters / splits * splits, items));
        dp = ntiles;
        n_whole = cluster_id < nclusters ? max(0, (items - cluster_id + nclusters - 1) / nclusters) : 0;
        n_items = n_whole;
        w = 0;
        s = e = 0;
    }

    // The first cluster whose share contains tail k step x: the largest c with c*w/G <= x.
    __device__ __forceinline__ int owner(long long x) const
    {
        return static_cast<int>(((x + 1) * nclusters + w - 1) / w) - 1;
    }

    // Tile t of the order as (cluster-tile row, column).
    __device__ __forceinline__ void coords(int t, int& tm, int& tn) const
    {
        if constexpr (ALONG_N) simt_common::grouped_tile<GROUP>(t, cols, rows, tn, tm);
        else simt_common::grouped_tile<GROUP>(t, rows, cols, tm, tn);
    }

    // This cluster's item i (0 <= i < n_items).
    __device__ __forceinline__ Work item(int i) const
    {
        Work wk;
        split(i, wk.t, wk.k0, wk.k1, wk.piece, wk.pieces, wk.u);
        coords(wk.t, wk.tm, wk.tn);
        return wk;
    }

    // Item i's tile t and k steps [k0, k1); piece, pieces and u as in Work.
    __device__ __forceinline__ void split(int i, int& t, int& k0, int& k1, int& piece, int& pieces, int& u) const
    {
        if constexpr (SPLIT > 1) {  // slice j of tile t; whole tiles (splits 1) look like any whole tile
            const int q = cluster_id + i * nclusters;
            t = q / splits;
            const int j = q - t * splits;
            k0 = j * ktiles / splits;
            k1 = (j + 1) * ktiles / splits;
            piece = splits > 1 ? j : -1;
            pieces = splits;
            u = splits > 1 ? t : -1;
            return;
        }
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

}  // namespace ws_schedule
