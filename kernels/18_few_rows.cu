// Method few_rows: a few token rows (M of 1 to 16) against a weight matrix on the CUDA cores, B streamed from global
// memory straight into registers (fp16, bf16, tf32's fp32 storage and fp32 with fp32 arithmetic and C, fp64 with
// fp64's).
//
// Why a kernel of its own. At a decode step of one token every weight is read once and used once: the time is B's
// stream from memory and nothing else, and a tile of 8 or 16 rows (kernel 7's and kernel 10's decode builds)
// multiplies 7 or 15 rows of zeros and stages B in shared memory on its way to the arithmetic. Here no tile is
// staged: each thread loads 16-byte vectors of B's rows and multiplies them into the few rows of A at once, as
// TensorRT-LLM's CUDA-core path does for M of 1 to 4 (and cuBLAS's GEMV).
//
// Layout (the registry's record, core/geometry.py: FEW_ROWS_*; each element size has its own BN):
//   block  BM (1, 2, 4, 8 or 16) rows of C x BN columns, THREADS = 256: 8 warps side by side along N.
//   warp   8 lanes along N x 4 along k. The 8 lanes of one k read 8 consecutive 16-byte vectors of a row of B: one
//          128-byte line, so a warp load is four whole lines (four rows). A warp's columns: 8 x VEC (VEC = 16 bytes
//          of the element: 8 halves, 4 floats, 2 doubles), so BN = 64 x VEC.
//   thread its k lane takes every 4th row of the block's k; UNROLL = 4 rows of B are loaded (16-byte vectors, cache
//          streaming: each is read once) before any is used, so 64 bytes a thread are in flight; A's BM elements of
//          each row are read through the read-only cache (the 8 lanes of a k share them: one broadcast), and both
//          are multiplied in Acc (fp16 and bf16 widened to fp32) into BM x VEC accumulators.
//   end    the 4 k lanes sum by shuffles (a butterfly, so all four hold the sums), and lane 0 of the four stores.
// Runs of k (FEW_ROWS_A_VECTORS = 1, the registry's 16-row builds, fp32 and fp64): 16 rows of A make a step's math 16
// times its B, and a load of A for every row of B (above) would fill the issue slots, each of 16 rows holding a 64-bit
// address. So each k lane takes runs of UNROLL consecutive rows of the block's k instead of every 4th row; the block
// stages its tile's rows of A in shared memory 256 rows of k at a time, any alignment, so that a row's elements of a
// run are one 16-byte shared load (two in fp64) at an immediate offset; and the next step's vectors of B are loaded
// before this step's math, 2 x 64 bytes a thread in flight. Slices are whole steps of 16 rows (the last the rest).
// Split K (FEW_ROWS_SPLIT_K = S > 1, the registry's *_splitk<S> builds): grid z cuts k into S slices; each block's
// lanes of k lane 0 store its partial tile, and the tile's last block sums the slices through split_k.cuh, each of
// the 4 k lanes every 4th slice in order, then the butterfly again (the same bits every launch).
//
// Edges: a row of A past m reads row m - 1 (its sums are never stored); columns past n are neither read nor
// stored. Where n is not a multiple of VEC (B's rows not 16-byte aligned) or a thread's vector runs past n, it loads
// B element by element, guarded.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "simt_common.cuh"
#include "split_k.cuh"

#ifndef FEW_ROWS_SPLIT_K
#define FEW_ROWS_SPLIT_K 1  // k in this many slices (grid z); 1: whole
#endif
#ifndef FEW_ROWS_A_VECTORS
#define FEW_ROWS_A_VECTORS 0  // 1: each k lane takes runs of UNROLL rows, A staged in shared memory (above)
#endif

namespace few_rows {

constexpr int LANES_N = 8, LANES_K = 4, UNROLL = 4;

// The kernel's layout for the registry's numbers; Contract<bytes> checks them against it.
template <int BM_, int BN_, int BK_, int THREADS_, int BYTES>
struct Layout {
    static constexpr int BM = BM_, BN = BN_, THREADS = THREADS_, VEC = 16 / BYTES, WARPS = THREADS / 32;
    static constexpr int HOLDERS = WARPS * LANES_N;  // the threads of k lane 0, which hold the block's partial tile
    static_assert(BM == 1 || BM == 2 || BM == 4 || BM == 8 || BM == 16, "FEW_ROWS_*_BM: 1, 2, 4, 8 or 16 rows");
    static_assert(THREADS % 32 == 0 && BN == WARPS * LANES_N * VEC,
                  "the registry's thread count is not the layout's: warps side by side along FEW_ROWS_*_BN, 8 lanes of "
                  "one 16-byte vector each");
    static_assert(BK_ == LANES_K * UNROLL, "FEW_ROWS_*_BK: the rows of B one unrolled step reads (4 lanes x 4)");
};

template <int BYTES> struct Contract {
    static_assert(BYTES == 0, "no FEW_ROWS_B<bytes> configuration for this element type: build with the registry's "
                              "definitions (kernels.compile_options(method, variant))");
};
#ifdef FEW_ROWS_B2_BM
template <> struct Contract<2> {
    using type = Layout<FEW_ROWS_B2_BM, FEW_ROWS_B2_BN, FEW_ROWS_B2_BK, FEW_ROWS_B2_THREADS, 2>;
};
static_assert(sizeof(Contract<2>::type) > 0, "");  // the record's numbers checked where they are given
#endif
#ifdef FEW_ROWS_B4_BM
template <> struct Contract<4> {
    using type = Layout<FEW_ROWS_B4_BM, FEW_ROWS_B4_BN, FEW_ROWS_B4_BK, FEW_ROWS_B4_THREADS, 4>;
};
static_assert(sizeof(Contract<4>::type) > 0, "");  // the record's numbers checked where they are given
#endif
#ifdef FEW_ROWS_B8_BM
template <> struct Contract<8> {
    using type = Layout<FEW_ROWS_B8_BM, FEW_ROWS_B8_BN, FEW_ROWS_B8_BK, FEW_ROWS_B8_THREADS, 8>;
};
static_assert(sizeof(Contract<8>::type) > 0, "");  // the record's numbers checked where they are given
#endif

template <typename Acc, typename T> __device__ __forceinline__ Acc widen(T x) { return static_cast<Acc>(x); }
template <> __device__ __forceinline__ float widen<float, __half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float widen<float, __nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

// One 16-byte vector of B's elements as Acc.
template <typename Acc, typename T, int VEC>
__device__ __forceinline__ void widen_vector(const uint4& raw, Acc (&b)[VEC])
{
    static_assert(VEC * sizeof(T) == 16, "a 16-byte vector");
    union {
        uint4 raw;
        T e[VEC];
    } v{raw};
#pragma unroll
    for (int e = 0; e < VEC; ++e) b[e] = widen<Acc>(v.e[e]);
}

// The 4 k lanes' sums (lanes ln, ln + 8, ln + 16, ln + 24), by a butterfly: each lane ends with (x0 + x1) + (x2 +
// x3), the same bits in all four (a sum's two terms commute exactly).
template <typename Acc, int BM, int VEC>
__device__ __forceinline__ void sum_k_lanes(Acc (&acc)[BM][VEC])
{
#pragma unroll
    for (int r = 0; r < BM; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            acc[r][e] += __shfl_xor_sync(0xffffffffu, acc[r][e], LANES_N);
            acc[r][e] += __shfl_xor_sync(0xffffffffu, acc[r][e], 2 * LANES_N);
        }
}

template <typename T, typename Acc>
__device__ __forceinline__ void few_rows_matmul(const T* __restrict__ A, const T* __restrict__ B, Acc* __restrict__ C,
                                                int m, int n, int k, Acc* __restrict__ workspace = nullptr)
{
    using L = typename Contract<sizeof(T)>::type;
    constexpr int BM = L::BM, BN = L::BN, VEC = L::VEC, SPLIT = FEW_ROWS_SPLIT_K;
    static_assert(SPLIT >= 1, "FEW_ROWS_SPLIT_K: 1 (whole) or more slices");
    static_assert(sizeof(Acc[BM][VEC]) * L::HOLDERS == BM * BN * sizeof(Acc),
                  "a partial is the block tile's accumulators (the registry sizes the workspace so)");
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int ln = lane % LANES_N, kl = lane / LANES_N;
    const int col = blockIdx.x * BN + (warp * LANES_N + ln) * VEC;
    const int m0 = blockIdx.y * BM;
    constexpr bool RUNS = FEW_ROWS_A_VECTORS != 0;
    constexpr int STEP = LANES_K * UNROLL;  // the rows of k one unrolled step of the block reads
    static_assert(!RUNS || UNROLL * sizeof(T) % 16 == 0, "FEW_ROWS_A_VECTORS: fp32 or fp64 elements (a run of A "
                                                         "is one or two 16-byte shared loads)");
    int k0 = 0, k1 = k;
    if constexpr (SPLIT > 1) {  // this block's rows of k
        if constexpr (RUNS) {  // whole steps a slice: only the last slice ends in a partial step
            split_k::slice((k + STEP - 1) / STEP, k0, k1);
            k0 = min(k0 * STEP, k);
            k1 = min(k1 * STEP, k);
        } else {
            split_k::slice(k, k0, k1);
        }
    }

    // Row r of the tile is row min(m0 + r, m - 1) of A: k elements on from a_tile (rows past m repeat the last).
    const T* const a_tile = A + static_cast<size_t>(m0) * k;
    const int a_rows = min(BM, m - m0);
    Acc acc[BM][VEC];
#pragma unroll
    for (int r = 0; r < BM; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[r][e] = Acc(0);

    // FEW_ROWS_A_VECTORS: acc += A[rows, kr..kr+UNROLL) x B[kr..kr+UNROLL, col..col+VEC) for this lane's runs kr =
    // k0 + STEP j + UNROLL kl, the slice's last step guarded (rows past k1 are zeros). A goes through shared memory
    // A_CHUNK rows of k at a time (staged by the whole block, zeros past k1): a row of the tile's run is one or two
    // 16-byte shared loads at an immediate offset, where 16 global rows would each hold a 64-bit address. The next
    // step's B is loaded before this step's math. Every thread runs every step (those past n load zeros), so that
    // the block's barriers are reached by all.
    auto runs = [&](auto) {  // generic: instantiated by the RUNS builds alone
        // The tile's rows of A of the chunk of k being streamed: A_CHUNK rows of k make 16 steps of the block, between
        // whose barriers a block streams 256 KiB of fp32 B.
        constexpr int A_CHUNK = 16 * STEP;
        __shared__ alignas(16) T a_chunk[BM][A_CHUNK];
        const bool whole = n % VEC == 0 && col + VEC <= n;
        auto load_step = [&](int kr, uint4 (&raw)[UNROLL]) {  // rows kr..kr+UNROLL of B; past k1 and n zeros
            const T* p = B + static_cast<size_t>(kr) * n + col;
            if (whole && kr + UNROLL <= k1) {
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) raw[u] = __ldcs(reinterpret_cast<const uint4*>(p + u * n));
                return;
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                union {
                    uint4 raw;
                    T e[VEC];
                } v;
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    v.e[e] = kr + u < k1 && col + e < n ? p[u * static_cast<size_t>(n) + e] : T(0);
                raw[u] = v.raw;
            }
        };
        auto multiply_step = [&](int kk, const uint4 (&raw)[UNROLL]) {  // kk: the run's first row in the chunk
            Acc b[UNROLL][VEC];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) widen_vector<Acc, T, VEC>(raw[u], b[u]);
#pragma unroll
            for (int r = 0; r < BM; ++r) {
                union {
                    uint4 raw[UNROLL * sizeof(T) / 16];
                    T e[UNROLL];
                } a;
#pragma unroll
                for (int i = 0; i < UNROLL * static_cast<int>(sizeof(T)) / 16; ++i)
                    a.raw[i] = reinterpret_cast<const uint4*>(&a_chunk[r][kk])[i];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) acc[r][e] = fma(widen<Acc>(a.e[u]), b[u][e], acc[r][e]);
            }
        };
        uint4 now[UNROLL], next[UNROLL];
        if (k0 < k1) load_step(k0 + UNROLL * kl, now);
        int c0 = k0;  // the staged chunk's first row of k
        for (int s0 = k0; s0 < k1; s0 += STEP) {
            if ((s0 - k0) % A_CHUNK == 0) {  // the block stages A's rows [s0, s0 + A_CHUNK) of the tile
                c0 = s0;
                __syncthreads();  // the previous chunk's reads are done
                for (int i = threadIdx.x; i < BM * A_CHUNK; i += L::THREADS) {
                    const int r = i / A_CHUNK, kk = i % A_CHUNK;
                    a_chunk[r][kk] = c0 + kk < k1 ? a_tile[static_cast<size_t>(min(r, a_rows - 1)) * k + c0 + kk]
                                                  : T(0);
                }
                __syncthreads();
            }
            const bool more = s0 + STEP < k1;
            if (more) load_step(s0 + STEP + UNROLL * kl, next);  // in flight during this step's math
            multiply_step(s0 - c0 + UNROLL * kl, now);
            if (more)
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) now[u] = next[u];
        }
    };

    // acc += A[rows, kr] x B[kr, col..col+VEC) for the rows kr of this thread's k lane, UNROLL of them a step: every
    // step's vectors of B are loaded (16-byte loads, WHOLE) before any is used, and widened as they are used; at the
    // N edge, or where B's rows are not 16-byte aligned, element by element instead.
    auto stream = [&](auto whole) {
        constexpr bool WHOLE = decltype(whole)::value;
        using Raw = std::conditional_t<WHOLE, uint4, Acc[VEC]>;
        auto load = [&](int kr, Raw& raw) {
            const T* p = B + static_cast<size_t>(kr) * n + col;
            if constexpr (WHOLE) {
                raw = __ldcs(reinterpret_cast<const uint4*>(p));
            } else {
#pragma unroll
                for (int e = 0; e < VEC; ++e) raw[e] = col + e < n ? widen<Acc>(p[e]) : Acc(0);
            }
        };
        auto multiply = [&](int kr, const Raw& raw) {
            Acc b[VEC];
            if constexpr (WHOLE)
                widen_vector<Acc, T, VEC>(raw, b);
            else
#pragma unroll
                for (int e = 0; e < VEC; ++e) b[e] = raw[e];
#pragma unroll
            for (int r = 0; r < BM; ++r) {
                const Acc a = widen<Acc>(__ldg(a_tile + static_cast<size_t>(min(r, a_rows - 1)) * k + kr));
#pragma unroll
                for (int e = 0; e < VEC; ++e) acc[r][e] = fma(a, b[e], acc[r][e]);
            }
        };
        int kr = k0 + kl;
        for (; kr + LANES_K * (UNROLL - 1) < k1; kr += LANES_K * UNROLL) {
            Raw raw[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) load(kr + LANES_K * u, raw[u]);  // every load in flight before a use
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) multiply(kr + LANES_K * u, raw[u]);
        }
        for (; kr < k1; kr += LANES_K) {
            Raw raw;
            load(kr, raw);
            multiply(kr, raw);
        }
    };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent (Launch.dependent), this block may start while the previous kernel on the
    // stream still runs: it waits for that grid's end (and its writes) before its first global access.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    if constexpr (RUNS)
        runs(0);
    else if (n % VEC == 0 && col + VEC <= n)
        stream(std::true_type{});
    else if (col < n)
        stream(std::false_type{});
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the next grid may start its blocks now
#endif

    sum_k_lanes(acc);
    if constexpr (SPLIT > 1) {
        // Lane 0 of the four stores the partial; in the tile's last block each of the four sums every 4th slice,
        // and the butterfly adds their sums (in a fixed order: every launch the same bits).
        if (!split_k::sum_shared_slices<SPLIT, L::HOLDERS, LANES_K>(acc, workspace, warp * LANES_N + ln, kl))
            return;  // not the tile's last slice
        sum_k_lanes(acc);
    }
    if (kl != 0) return;
#pragma unroll
    for (int r = 0; r < BM; ++r)
        if (m0 + r < m) {
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                if (col + e < n) C[static_cast<size_t>(m0 + r) * n + col + e] = acc[r][e];
        }
}

}  // namespace few_rows

using few_rows::few_rows_matmul;
