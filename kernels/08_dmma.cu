// Kernel 08 (dmma): float64 GEMM on the tensor cores (DMMA) through mma.sync, with a multi-stage cp.async pipeline.
//
// wgmma has no f64 form, so Hopper's double-precision tensor cores are reached with warp-level mma.sync:
// m16n8k4 / m16n8k8 / m16n8k16 .f64 on sm_90 (MMA_K = 4, 8, 16), and on sm_80 the same tile computed as
// m8n8k4 pairs (the only f64 shape there), so the file compiles and runs on both.
//
// Hierarchy (the registry's default configuration: 128 x 128 block tile, BK = 16, 8 warps of 64 x 32, 4 stages;
// m16n8k4):
//   block  BM x BN of C; STAGES slices of BK are in flight in shared memory, filled by cp.async in 16-byte
//          chunks (two doubles), so the slice kt + STAGES - 1 is fetched while slice kt is multiplied.
//   warp   WM x WN: MT = WM/16 by NT = WN/8 mma tiles, 64 x 32 -> 16 accumulator tiles of 16 x 8, 64
//          doubles (128 registers) per thread.
//   thread fragments follow the PTX layouts (g = lane / 4, t = lane % 4):
//          A (16 x MMA_K, row):  a[v0 + 2*v1] = A[g + 8*v0][t + 4*v1]
//          B (MMA_K x 8, col):   b[v]         = B[t + 4*v][g]
//          C (16 x 8):           c[v0 + 2*v1] = C[g + 8*v1][2*t + v0]
//          They are read with 8-byte loads from padded shared memory: A rows are BK + 4 doubles, B rows
//          BN + 4, so a half-warp's 16 loads (4 rows x 4 consecutive k, or 4 k rows x 4 consecutive n) hit 16
//          distinct double-width banks. Fragments for the next k step are loaded while the current step's
//          mma instructions run (register double buffering), except with MMA_K = 16 whose fragments are too
//          large to hold twice next to 64 accumulators.
// Loads past the edges of A or B are zero-filled by cp.async (source size 0); rows that are not 16-byte
// aligned (odd k or n) are copied one double at a time. Stores are guarded. Blocks are visited in groups of 8
// block-rows for L2 reuse (swizzle from blockIdx); grid = (ceil(n / BN), ceil(m / BM)).
//
// Split-K (DMMA_SPLIT_K = S > 1; the registry's variants splitk<S>): grid z = S, block z computes slice z of its
// tile's k steps and the last slice to finish sums the S fp64 partials in slice order (split_k.cuh; the workspace
// is the kernel's last argument). 1024^3 is 64 tiles on 132 SMs; 256 x 256 x 8192 is 4 tiles of 512 k steps.
#pragma once

#include <stdint.h>

#include "simt_common.cuh"
#include "split_k.cuh"

#ifndef DMMA_SPLIT_K
#define DMMA_SPLIT_K 1
#endif

namespace dmma {

template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, int MMA_K_>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_, MMA_K = MMA_K_;
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int MT = WM / 16, NT = WN / 8, KV = MMA_K / 4;
    static constexpr bool DBUF = MMA_K <= 8;  // register double buffering of fragments
    static constexpr int A_LD = BK + 4, B_LD = BN + 4;  // padded row strides (doubles)
    static constexpr int STAGE = BM * A_LD + BK * B_LD;
    static constexpr int SMEM_BYTES = STAGES * STAGE * 8;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tiling");
    static_assert(MMA_K == 4 || MMA_K == 8 || MMA_K == 16, "f64 mma shapes");
    static_assert(BK % MMA_K == 0 && BK % 4 == 0, "");
    static_assert(A_LD % 16 == 4 && B_LD % 16 == 4, "conflict-free fragment loads need stride = 4 mod 16");
    static_assert(STAGES >= 2, "");
};

// The configuration dmma_matmul compiles: block tile, k slice, stages, threads and the mma shape are the registry's
// (core/geometry.py, DMMA: -DDMMA_BM, _BN, _BK, _STAGES, _THREADS, _MMA_K: m16n8k4 in the 128-row tiles, whose
// warps' 64 accumulators leave no room for larger fragments held twice, m16n8k8 in the 64- and 32-row ones). The
// warps are laid out from the thread count: BN / 32 of them side by side along N, each 32 columns wide, and the rest
// stacked along M, so a warp is WARP_M = BM / (warps / (BN / 32)) rows high: 64 x 32 in the 128 x 128 tiles of 8
// warps and the 128 x 64 ones of 4; BM x 32 in the decode tiles (16 or 32 token rows, 4 warps side by side, so no
// warp multiplies rows past the tile's); 32 x 32 in the 64-row tiles (64 x 128 of 8 warps, 64 x 64 of 4), whose
// 32 accumulators a thread leave room for more warps to an SM. The registry's dynamic shared memory
// (-DDMMA_SMEM_BYTES) is what the launch gives: checked against the stages.
constexpr int WARPS_N = DMMA_BN / 32;
static_assert(DMMA_BN % 32 == 0 && DMMA_THREADS % (32 * WARPS_N) == 0,
              "the registry's thread count lays no whole warps over the tile's 32-column strips");
constexpr int WARP_M = DMMA_BM / (DMMA_THREADS / (32 * WARPS_N));
using DefaultConfig = Config<DMMA_BM, DMMA_BN, DMMA_BK, WARP_M, 32, DMMA_STAGES, DMMA_MMA_K>;
static_assert(DMMA_THREADS == DefaultConfig::THREADS, "the registry's thread count is not the warp layout's");
static_assert(DefaultConfig::SMEM_BYTES <= DMMA_SMEM_BYTES,
              "the registry gives a block less shared memory than the stages take");

using simt_common::aligned16;
using simt_common::cp_async;
using simt_common::cp_async_commit;
using simt_common::cp_async_wait;
using simt_common::smem_addr;

// d (16 x 8) += a (16 x 4*KV) * b (4*KV x 8), fragments as in the header comment.
template <int KV>
__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[2 * KV], const double (&b)[KV])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (KV == 1)
        asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
            : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
            : "d"(a[0]), "d"(a[1]), "d"(b[0]));
    else if constexpr (KV == 2)
        asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
            "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
            : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
              "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
    // sm_80: m8n8k4 has A[g][t], B[t][g], C[g][2t + v]; rows g (a[2v]) and g + 8 (a[2v + 1]) are two of them.
#pragma unroll
    for (int v = 0; v < KV; ++v) {
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
            : "+d"(d[0]), "+d"(d[1])
            : "d"(a[2 * v]), "d"(b[v]));
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
            : "+d"(d[2]), "+d"(d[3])
            : "d"(a[2 * v + 1]), "d"(b[v]));
    }
#endif
}

// Grouped block order for L2 reuse (simt_common.cuh).
__device__ __forceinline__ void block_tile(int& tm, int& tn) { simt_common::grouped_block_tile<8>(tm, tn); }

// SPLIT > 1: this block's slice of the k steps (gridDim.z = SPLIT), summed through `workspace` (split_k.cuh).
template <class Cfg, int SPLIT = 1>
__device__ __forceinline__ void gemm(const double* __restrict__ A, const double* __restrict__ B, double* __restrict__ C,
                                     int m, int n, int k, void* workspace)
{
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, WM = Cfg::WM, WN = Cfg::WN, S = Cfg::STAGES;
    constexpr int THREADS = Cfg::THREADS, MT = Cfg::MT, NT = Cfg::NT, KV = Cfg::KV, MK = Cfg::MMA_K;
    constexpr int A_LD = Cfg::A_LD, B_LD = Cfg::B_LD, STAGE = Cfg::STAGE;
    constexpr int KSTEPS = BK / MK;
    constexpr bool DBUF = Cfg::DBUF;

    extern __shared__ __align__(16) unsigned char dmma_smem[];
    double* smem = reinterpret_cast<double*>(dmma_smem);

    const int tid = threadIdx.x;
    int tm, tn;
    block_tile(tm, tn);
    const int bm = tm * BM, bn = tn * BN;
    // Split-K: this block's slice [kt0, kt1) of the tile's k steps (split_k.cuh); whole tiles start at step 0.
    int kt0 = 0, kt1 = 0;
    if constexpr (SPLIT > 1) split_k::slice((k + BK - 1) / BK, kt0, kt1);

    // ---- loader mapping: 16-byte chunks, consecutive threads along a row ----
    constexpr int A_CPR = BK / 2, A_RPP = THREADS / A_CPR, A_PER = BM / A_RPP;
    constexpr int B_CPR = BN / 2, B_RPP = THREADS / B_CPR, B_PER = BK / B_RPP;
    static_assert(THREADS % A_CPR == 0 && BM % A_RPP == 0, "A loader covers the slice");
    static_assert(THREADS % B_CPR == 0 && BK % B_RPP == 0, "B loader covers the slice");
    const int a_r0 = tid / A_CPR, a_c0 = (tid % A_CPR) * 2;
    const int b_r0 = tid / B_CPR, b_c0 = (tid % B_CPR) * 2;
    const int a_soff0 = a_r0 * A_LD + a_c0;               // + i * A_RPP * A_LD
    const int b_soff0 = BM * A_LD + b_r0 * B_LD + b_c0;   // + i * B_RPP * B_LD
    const bool a_vec = (k % 2 == 0) && aligned16(A);
    const bool b_vec = (n % 2 == 0) && aligned16(B);
    const bool interior = (bm + BM <= m) && (bn + BN <= n) && a_vec && b_vec;
    const double* a_cur = A + static_cast<size_t>(interior ? bm + a_r0 : 0) * k + a_c0 + kt0 * BK;  // += BK per slice
    const double* b_cur = B + static_cast<size_t>(interior ? b_r0 + kt0 * BK : 0) * n + bn + b_c0;  // += BK * n
    const int a_rstep = A_RPP * k, b_rstep = B_RPP * n;

    // One chunk of two doubles at (r, c) of a row-major matrix with `cols` columns; zero-filled outside.
    auto chunk = [&](double* dst, const double* base, int r, int rows, int c, int cols, bool vec) {
        const double* src = base + static_cast<size_t>(r) * cols + c;
        if (vec) {
            const bool ok = r < rows && c < cols;  // cols even: c < cols implies c + 1 < cols
            cp_async<16>(dst, ok ? src : base, ok ? 16 : 0);
        } else {
#pragma unroll
            for (int v = 0; v < 2; ++v) {
                const bool ok = r < rows && c + v < cols;
                cp_async<8>(dst + v, ok ? src + v : base, ok ? 8 : 0);
            }
        }
    };

    auto load_slice = [&](int stage, int kt) {
        double* st = smem + stage * STAGE;
        const int k0 = (kt0 + kt) * BK;
        if (interior && k0 + BK <= k) {
#pragma unroll
            for (int i = 0; i < A_PER; ++i) cp_async<16>(st + a_soff0 + i * A_RPP * A_LD, a_cur + i * a_rstep, 16);
#pragma unroll
            for (int i = 0; i < B_PER; ++i) cp_async<16>(st + b_soff0 + i * B_RPP * B_LD, b_cur + i * b_rstep, 16);
        } else {
#pragma unroll
            for (int i = 0; i < A_PER; ++i)
                chunk(st + a_soff0 + i * A_RPP * A_LD, A, bm + a_r0 + i * A_RPP, m, k0 + a_c0, k, a_vec);
#pragma unroll
            for (int i = 0; i < B_PER; ++i)
                chunk(st + b_soff0 + i * B_RPP * B_LD, B, k0 + b_r0 + i * B_RPP, k, bn + b_c0, n, b_vec);
        }
        a_cur += BK;
        b_cur += static_cast<size_t>(BK) * n;
    };

    // ---- fragments ----
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
    const int g = lane / 4, t = lane % 4;
    const int a_frag0 = (warp_m * WM + g) * A_LD + t;          // + (i*16 + 8*v0) * A_LD + ks + 4*v1
    const int b_frag0 = BM * A_LD + t * B_LD + warp_n * WN + g;  // + (ks + 4*v) * B_LD + j*8

    constexpr int NB = DBUF ? 2 : 1;
    double fa[NB][MT][2 * KV], fb[NB][NT][KV];
    double acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.0;

    // k step `step` of a stage: fragments at k offset ks = step * MK.
    auto load_frags = [&](int buf, int stage, int step) {
        const double* st = smem + stage * STAGE;
        const int ks = step * MK;
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int v1 = 0; v1 < KV; ++v1)
#pragma unroll
                for (int v0 = 0; v0 < 2; ++v0)
                    fa[buf][i][v0 + 2 * v1] = st[a_frag0 + (i * 16 + 8 * v0) * A_LD + ks + 4 * v1];
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int v = 0; v < KV; ++v) fb[buf][j][v] = st[b_frag0 + (ks + 4 * v) * B_LD + j * 8];
    };
    auto compute = [&](int buf) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma<KV>(acc[i][j], fa[buf][i], fb[buf][j]);
    };

    const int KT = (SPLIT > 1 ? kt1 : (k + BK - 1) / BK) - kt0;  // this block's k steps
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent (Launch.dependent: every build but the decode tiles), this block may
    // start while the previous kernel on the stream still runs: it waits for that grid's end (and its writes) before
    // its first global access. Launched plainly, a no-op.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    simt_common::mma_pipeline_prologue<S>(KT, load_slice);
    if constexpr (DBUF) {
        simt_common::mma_pipeline_double_buffered<S, KSTEPS>(KT, load_slice, load_frags, compute);
    } else {
        int read_stage = 0, write_stage = S - 1;
        for (int kt = 0; kt < KT; ++kt) {
            cp_async_wait<S - 2>();
            __syncthreads();  // slice kt visible; slice kt-1's stage is free
            if (kt + S - 1 < KT) load_slice(write_stage, kt + S - 1);
            cp_async_commit();
            write_stage = write_stage + 1 == S ? 0 : write_stage + 1;
#pragma unroll
            for (int s = 0; s < KSTEPS; ++s) {
                load_frags(0, read_stage, s);
                compute(0);
            }
            read_stage = read_stage + 1 == S ? 0 : read_stage + 1;
        }
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the next grid may start its blocks now
#endif
    cp_async_wait<0>();

    if constexpr (SPLIT > 1) {
        static_assert(sizeof(acc) * THREADS == BM * BN * sizeof(double),
                      "a partial is the block tile's accumulators (the registry sizes the workspace so)");
        if (!split_k::sum_slices<SPLIT, THREADS>(acc, workspace)) return;  // not the tile's last slice
    }
    simt_common::store_mma_tiles(C, acc, m, n, bm + warp_m * WM, bn + warp_n * WN, g, t);
}

}  // namespace dmma

// Pipeline entry point (T = Acc = double): DMMA_THREADS threads, dynamic shared memory DMMA_SMEM_BYTES, grid
// (ceil(n / DMMA_BN), ceil(m / DMMA_BM)). DMMA_SPLIT_K = S > 1: grid z = S and a workspace (split_k.cuh's host
// contract: S partial tiles of DMMA_BM x DMMA_BN doubles per tile, then a 32-bit counter per tile).
template <typename T, typename Acc>
__device__ __forceinline__ void dmma_matmul(const T* A, const T* B, Acc* C, int m, int n, int k,
                                            Acc* workspace = nullptr)
{
    static_assert(sizeof(T) == 8 && sizeof(Acc) == 8, "dmma_matmul is float64 only");
    static_assert(DMMA_SPLIT_K >= 1 && DMMA_SPLIT_K <= 64, "DMMA_SPLIT_K: 1 (whole tiles) to 64 slices");
    dmma::gemm<dmma::DefaultConfig, DMMA_SPLIT_K>(A, B, C, m, n, k, workspace);
}
