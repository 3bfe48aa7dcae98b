// Methods warptiled and warptiled_mbarrier: warp-tiled SIMT GEMM with a multi-stage cp.async pipeline (float32,
// float64; plain FMA, no tensor cores).
//
// Hierarchy (float32, method warptiled: 128 x 256 block tile, BK = 32 (16 on targets whose blocks get only 99 KB of
// shared memory), 3 stages, 8 warps of 64 x 64, lanes 4 x 8; the registry's configuration, below):
//   block  BM x BN of C, stepping through k in slices of BK; STAGES slices are in flight in shared memory,
//          filled by cp.async (global -> shared without passing through registers), so the loads for slice
//          t + STAGES - 1 are issued while slice t is multiplied.
//   warp   WM x WN of the block tile. Its 32 lanes form a LANES_M x LANES_N grid; each lane owns MI x NI
//          chunks of 4 x 4 elements: rows  i*4*LANES_M + lane_r*4 + (0..3), i < MI = WM / (4*LANES_M),
//                                    cols  j*4*LANES_N + lane_c*4 + (0..3), j < NI = WN / (4*LANES_N).
//          Float32 default, 64 x 64 with 4 x 8 lanes: 16 x 8 accumulators per thread, and per k step
//          4 + 2 LDS.128 feed 128 FFMAs. (8 x 4 lanes, 8 x 16 per thread, ran 3 % slower on the H200.)
//   thread register fragments of A and B are double-buffered: step kk+1's are read from shared memory
//          while step kk's outer product is computed.
// A is stored transposed in shared memory (k-major, As[kk][row]) so that a thread's 4 consecutive rows are
// one 16-byte load, like B's 4 consecutive columns. cp.async cannot transpose 16-byte chunks, so each A
// element is copied on its own (4 or 8 bytes); consecutive lanes take consecutive k of one row, so a warp
// still reads whole 32-byte sectors, and the row padding (one 16-byte vector) spreads a warp's scattered
// shared-memory writes (8 k x 4 rows) over distinct banks. B is copied in 16-byte chunks when n and the pointer allow,
// element by element otherwise. Out-of-range elements are zero-filled by cp.async (source size 0), so any
// m, n, k works; stores of C are guarded.
// Blocks are visited in groups of 8 block-rows (a swizzle computed from blockIdx) so that concurrently
// running blocks share A and B panels in L2. Grid: (ceil(n / BN), ceil(m / BM)).
//
// Split-K (method warptiled, WARPTILED_SPLIT_K = S > 1; the registry's variants splitk<S>): grid z = S, block z
// computes slice z of its tile's k steps and the last slice to finish sums the S partials in slice order
// (split_k.cuh; the workspace is the kernel's last argument). For few tiles (1024^3 fp32: 32 on 132 SMs) or deep K.
#pragma once

#include <stdint.h>

#include <type_traits>

#include "simt_common.cuh"
#include "split_k.cuh"

#ifndef WARPTILED_SPLIT_K
#define WARPTILED_SPLIT_K 1
#endif

namespace warptiled {

// ---- tile configuration -------------------------------------------------------------------------------
template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_, int LANES_M_ = 8, int SYNC_ = 0, int GROUP_ = 8>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
    // Synchronisation and block order:
    //   SYNC  0: one __syncthreads per slice, refill distance STAGES - 1 (method warptiled).
    //         1: no __syncthreads in the loop: per stage a "full" mbarrier (cp.async.mbarrier.arrive.noinc
    //         by every thread) and an "empty" mbarrier (every thread arrives after its last fragment read);
    //         refill distance STAGES - 2, so warps may drift apart by one slice.
    //   GROUP block-rows per group of the block order.
    static constexpr int SYNC = SYNC_, GROUP = GROUP_;
    static_assert(SYNC == 0 || SYNC == 1, "SYNC: 0 (block barrier) or 1 (mbarrier ring)");
    static_assert(SYNC == 0 || STAGES_ >= 3, "mbarrier ring refills STAGES - 2 slices ahead");
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    // A warp's lanes form LANES_M x LANES_N; each lane owns MI x NI chunks of 4 x 4 elements.
    static constexpr int LANES_M = LANES_M_, LANES_N = 32 / LANES_M_;
    static constexpr int MI = WM / (4 * LANES_M), NI = WN / (4 * LANES_N);
    static_assert(BM % WM == 0 && BN % WN == 0, "warps tile the block");
    static_assert(LANES_M * LANES_N == 32 && WM % (4 * LANES_M) == 0 && WN % (4 * LANES_N) == 0, "lane tiling");
    static_assert(BK % 8 == 0, "the A loader walks k in groups of 8");
    static_assert(STAGES >= 2, "");

    // Row strides in elements. A's rows (one per k) are padded by one 16-byte vector: with float the
    // stride is 4 mod 32 words, with double 2 mod 16 doubles, which spreads the transposed writes of
    // a warp (8 k x 4 rows) over distinct banks.
    template <typename T> __host__ __device__ static constexpr int a_ld() { return BM + 16 / static_cast<int>(sizeof(T)); }
    template <typename T> __host__ __device__ static constexpr int b_ld() { return BN; }
    template <typename T> __host__ __device__ static constexpr int stage_elems() { return BK * a_ld<T>() + BK * b_ld<T>(); }
    template <typename T> __host__ __device__ static constexpr int smem_bytes() { return STAGES * stage_elems<T>() * static_cast<int>(sizeof(T)); }
};

// The configuration of each entry is the registry's (core/geometry.py: WARPTILED, WARPTILED_MBARRIER), passed as
// -D definitions per element type: <PREFIX>_BM, _BN, _BK (block tile and k slice), _STAGES, _THREADS and
// _SMEM_BYTES (the launch's dynamic shared memory). Where a dtype has two configurations the registry picks, for the
// target being compiled, the first whose shared memory every GPU of the target lets a block opt in to, and the
// launch gives the same one for the device: BK 32 where the target allows it, else BK 16 (sm_86/89/120/121: 99 KB).
// Compiling both behind a run-time branch cost ~0.5 % at 4096^3 on the H200. The warp layout (warp tile, lanes) and
// the synchronisation are the kernel's own; Contract checks that the registry's numbers fit them.
template <class Cfg, typename T, int THREADS, int SMEM_BYTES>
struct Contract {
    static_assert(THREADS == Cfg::THREADS, "the registry's thread count is not the warp layout's");
    static_assert(Cfg::template smem_bytes<T>() <= SMEM_BYTES,
                  "the registry gives a block less shared memory than this configuration's stages take");
    using type = Cfg;
};

// Method warptiled: a block barrier per k slice, 8 warps. float: 64 x 64 warp tiles of 4 x 8 lanes; BK 32 (fewer
// barriers per k, +1.4-1.8 % over BK 16 in an H200 sweep) or BK 16, 3 stages. double: 64 x 32 warp tiles, BK 8,
// 4 stages.
//
// Decode tiles (the registry's builds m8, m16 and m32, with their splits): a block of fewer than 64 rows, for a
// few token rows against a weight matrix. A 128-row tile would multiply rows of zeros (at M = 16, 7 of every 8 FMAs),
// so the block's 4 warps sit side by side along N, each BM x 32: lanes BM / 4 x 128 / BM, one 4 x 4 (m16) or 4 x 8
// (m32) chunk each. A lane's A and B fragments are then one 16-byte shared load each that the warp's lanes share 4
// or 8 ways (one wavefront), so the block streams B with the FMA units, not shared memory, as its limit. The narrow
// builds (m32_n64, for 64 columns or fewer) lay out the same way over BM x 64: 2 warps side by side. A tile of 256
// columns (m8, and fp32's m16_n256) gives each warp BN / 4 = 64 of them: of 8 rows (fp32, for M of a few rows: a
// 16-row tile at M = 1 multiplies 15 rows of zeros, and its FMAs, not B's bytes, set the pace) lanes 2 x 16, the
// same 4 x 4 chunk; of 16 rows lanes 4 x 8, two 4 x 4 chunks, each A fragment used twice.
//
// Small tiles (the registry's m64_n64 and m64_n128 builds, with their splits): 64 rows, for mid-sized problems whose
// wide tiles leave most SMs idle. Their 4 warps sit side by side along N too, each 64 x BN / 4: 64 x 16 (lanes
// 16 x 2, a 4 x 8 chunk each, cuBLAS's SIMT layout at such shapes: 64 x 64 tiles of 1 x 4 warps) or 64 x 32 (lanes
// 8 x 4, 8 x 8). Their few registers and shared memory let several blocks share an SM, whose warps hide each other's
// latency.
template <int BM, int BN, int WIDE_WM, int WIDE_WN, int WIDE_LANES_M>
struct WarpLayout {
    static constexpr bool decode = BM < 64, small = BM == 64;
    static constexpr int WM = decode || small ? BM : WIDE_WM;
    static constexpr int WN = decode ? (BN / 4 > 32 ? BN / 4 : 32) : small ? BN / 4 : WIDE_WN;
    static constexpr int LANES_M = decode ? BM / 4 : small ? (BN / 4 >= 32 ? 8 : 16) : WIDE_LANES_M;
    static_assert(!decode || BM == 8 || BM == 16 || BM == 32, "decode tiles: 8, 16 or 32 rows");
    static_assert(!small || BN == 64 || BN == 128, "small tiles: 64 x 64 or 64 x 128");
};
template <int BM, int BN, int BK, int STAGES, class W>
using LaidOut = Config<BM, BN, BK, W::WM, W::WN, STAGES, W::LANES_M>;

template <typename T> struct Barrier {
    static_assert(sizeof(T) == 0, "no WARPTILED_* configuration for this element type: build with the registry's "
                                  "definitions for the target (kernels.compile_options(method, variant, arch))");
};
#ifdef WARPTILED_F32_BK
template <> struct Barrier<float>
    : Contract<LaidOut<WARPTILED_F32_BM, WARPTILED_F32_BN, WARPTILED_F32_BK, WARPTILED_F32_STAGES,
                       WarpLayout<WARPTILED_F32_BM, WARPTILED_F32_BN, 64, 64, 4>>,
               float, WARPTILED_F32_THREADS, WARPTILED_F32_SMEM_BYTES> {};
#endif
#ifdef WARPTILED_F64_BK
template <> struct Barrier<double>
    : Contract<LaidOut<WARPTILED_F64_BM, WARPTILED_F64_BN, WARPTILED_F64_BK, WARPTILED_F64_STAGES,
                       WarpLayout<WARPTILED_F64_BM, WARPTILED_F64_BN, 64, 32, 8>>,
               double, WARPTILED_F64_THREADS, WARPTILED_F64_SMEM_BYTES> {};
#endif

// Method warptiled_mbarrier (float): the mbarrier ring (SYNC 1), the float warp layout, 4 stages of BK 32 or 16.
// H200 pipeline: 0.985x cuBLAS at 8192^3 (warptiled 0.965x), 0.940x at 4096^3 (0.955x), so a study may run both;
// its answer takes the faster per shape.
template <typename T> struct Mbarrier {
    static_assert(sizeof(T) == 0, "no WARPTILED_MBARRIER_* configuration for this element type: build with the "
                                  "registry's definitions for the target "
                                  "(kernels.compile_options(method, variant, arch))");
};
#ifdef WARPTILED_MBARRIER_F32_BK
template <> struct Mbarrier<float>
    : Contract<Config<WARPTILED_MBARRIER_F32_BM, WARPTILED_MBARRIER_F32_BN, WARPTILED_MBARRIER_F32_BK, 64, 64,
                      WARPTILED_MBARRIER_F32_STAGES, 4, 1>,
               float, WARPTILED_MBARRIER_F32_THREADS, WARPTILED_MBARRIER_F32_SMEM_BYTES> {};
#endif

// ---- shared helpers (simt_common.cuh): 16-byte vectors, cp.async with zero fill, grouped block order ---
using simt_common::aligned16;
using simt_common::cp_async;
using simt_common::cp_async_commit;
using simt_common::cp_async_wait;
using simt_common::smem_addr;
using simt_common::Vec;

template <int GROUP = 8>
__device__ __forceinline__ void block_tile(int& tm, int& tn) { simt_common::grouped_block_tile<GROUP>(tm, tn); }

// mbarrier helpers for SYNC = 1 (sm_80+; try_wait on sm_90, a test_wait spin before).
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar)
{
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
}
// Arrives on bar once every cp.async this thread issued so far has landed (pending count not incremented:
// the barrier's expected count includes this arrival).
__device__ __forceinline__ void mbar_cp_async_arrive(uint64_t* bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity)
{
    const uint32_t a = smem_addr(bar);
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n"
                 " @!p bra WAIT_%=;\n}\n" ::"r"(a), "r"(parity) : "memory");
#else
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.test_wait.parity.shared.b64 p, [%0], %1;\n"
                 " @!p bra WAIT_%=;\n}\n" ::"r"(a), "r"(parity) : "memory");
#endif
}

// ---- epilogue: guarded stores, 16-byte vectors where the row allows ----------------------------------------
// The thread's MI x NI chunks of 4 x 4 accumulators to C: chunk (i, j) starts at row warp_row + i*RSTEP + lane_row,
// column warp_col + j*CSTEP + lane_col.
template <class Cfg, typename Acc>
__device__ __forceinline__ void store_tile(const Acc (&acc)[Cfg::MI * 4][Cfg::NI * 4], Acc* __restrict__ C, int m,
                                           int n, int warp_row, int lane_row, int warp_col, int lane_col)
{
    constexpr int MI = Cfg::MI, NI = Cfg::NI;
    constexpr int RSTEP = 4 * Cfg::LANES_M, CSTEP = 4 * Cfg::LANES_N;
    constexpr int VC = 16 / static_cast<int>(sizeof(Acc));
    using VecC = typename Vec<Acc>::type;
    const bool c_vec = (n % VC == 0) && aligned16(C);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = warp_row + i * RSTEP + lane_row + r;
            if (row >= m) continue;
            Acc* c_row = C + static_cast<size_t>(row) * n;
#pragma unroll
            for (int j = 0; j < NI; ++j) {
                const int col = warp_col + j * CSTEP + lane_col;
                if (c_vec && col + 4 <= n) {
#pragma unroll
                    for (int v = 0; v < 4; v += VC)
                        *reinterpret_cast<VecC*>(c_row + col + v) = Vec<Acc>::make(&acc[i * 4 + r][j * 4 + v]);
                } else {
#pragma unroll
                    for (int v = 0; v < 4; ++v)
                        if (col + v < n) c_row[col + v] = acc[i * 4 + r][j * 4 + v];
                }
            }
        }
}

// ---- SYNC 1: the mbarrier ring --------------------------------------------------------------------------------
// full[s] completes when every thread's copies into stage s have landed; empty[s] when every thread has issued its
// last fragment read of stage s. Use j of stage s (slice j*S + s) is phase j. Slices are refilled S - 2 ahead, so
// a warp may run up to one slice ahead of the slowest. load_slice(stage, t), load_frags(buf, stage pointer, kk)
// and outer(buf) are gemm's.
template <class Cfg, typename T, class LoadSlice, class LoadFrags, class Outer>
__device__ __forceinline__ void mbarrier_mainloop(int KT, T* smem, LoadSlice load_slice, LoadFrags load_frags,
                                                  Outer outer)
{
    constexpr int BK = Cfg::BK, S = Cfg::STAGES, THREADS = Cfg::THREADS;
    constexpr int STAGE = Cfg::template stage_elems<T>();
    constexpr int PD = S - 2;  // slices in flight ahead of the one being read
    __shared__ __align__(8) uint64_t full_bar[S], empty_bar[S];
    const int tid = threadIdx.x;
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
            mbar_init(&full_bar[s], THREADS);
            mbar_init(&empty_bar[s], THREADS);
        }
    }
    __syncthreads();
    // Issue slice t (if it exists) into stage t % S, once every thread has read the slice t - S there.
    auto produce = [&](int t) {
        const int stage = t % S;
        if (t < KT) {
            if (t >= S) mbar_wait(&empty_bar[stage], ((t / S) - 1) & 1);
            load_slice(stage, t);
            mbar_cp_async_arrive(&full_bar[stage]);
        }
    };
#pragma unroll
    for (int s = 0; s < PD; ++s) produce(s);
    if (KT > 0) mbar_wait(&full_bar[0], 0);  // k = 0: nothing was issued, nothing to wait for
    load_frags(0, smem, 0);
    // Keeps NVVM from merging this load with the loop's last one into a loop-header load with per-element address
    // phis, which it then scalarizes (24 LDS.32 per slice instead of 6 LDS.128, seen with rolled slice loops).
    asm volatile("" ::: "memory");

    int rs = 0;  // stage of slice kt (= kt % S)
    for (int kt = 0; kt < KT; ++kt) {
        produce(kt + PD);  // the stage of slice kt-2, once everyone has arrived on its empty barrier
        const T* st = smem + rs * STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk == BK - 1) {
                // Next slice's first fragments: it must have landed (all threads' copies).
                const int ns = rs + 1 == S ? 0 : rs + 1;
                mbar_arrive(&empty_bar[rs]);
                if (kt + 1 < KT) mbar_wait(&full_bar[ns], ((kt + 1) / S) & 1);
                st = smem + ns * STAGE;
                rs = ns;
            }
            load_frags((kk + 1) % 2, st, (kk + 1) % BK);
            outer(kk % 2);
        }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// ---- the kernel body -----------------------------------------------------------------------------------
// SPLIT > 1: this block's slice of the k steps (gridDim.z = SPLIT), summed through `workspace` (split_k.cuh).
template <class Cfg, typename T, typename Acc, int SPLIT = 1>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B, Acc* __restrict__ C, int m, int n,
                                     int k, void* workspace)
{
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, WM = Cfg::WM, WN = Cfg::WN, S = Cfg::STAGES;
    constexpr int THREADS = Cfg::THREADS, MI = Cfg::MI, NI = Cfg::NI;
    constexpr int V = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte vector
    constexpr int A_LD = Cfg::template a_ld<T>(), B_LD = Cfg::template b_ld<T>();
    constexpr int STAGE = Cfg::template stage_elems<T>();
    constexpr int A_PER = BM * BK / THREADS;        // A elements each thread copies per slice
    constexpr int B_PER = BK * BN / V / THREADS;    // B 16-byte chunks each thread copies per slice
    static_assert(BM * BK % THREADS == 0 && (BK * BN / V) % THREADS == 0, "loads divide evenly");
    using VecT = typename Vec<T>::type;

    extern __shared__ __align__(16) unsigned char warptiled_smem[];
    T* smem = reinterpret_cast<T*>(warptiled_smem);

    const int tid = threadIdx.x;
    int tm, tn;
    block_tile<Cfg::GROUP>(tm, tn);
    const int bm = tm * BM, bn = tn * BN;
    // Split-K: this block's slice [kt0, kt1) of the tile's k steps (split_k.cuh); whole tiles start at step 0.
    int kt0 = 0, kt1 = 0;
    if constexpr (SPLIT > 1) split_k::slice((k + BK - 1) / BK, kt0, kt1);

    // ---- loader mapping ----
    // A: a pass of all threads covers A_RPP rows x A_KSTEP k (lane % 8 -> k, so 8 lanes read one row's 32 bytes;
    //    a tile of fewer rows than THREADS / 8 takes A_KSTEP / 8 groups of 8 k a pass);
    //    element i is row a_r0 + (i % A_RP) * A_RPP, k a_c0 + A_KSTEP * (i / A_RP).
    // B: a pass covers B_RPP rows of BN / V 16-byte chunks; chunk i is row b_r0 + i * B_RPP.
    constexpr int A_RPP = BM < THREADS / 8 ? BM : THREADS / 8, A_RP = BM / A_RPP;
    constexpr int A_KGROUPS = THREADS / 8 / A_RPP, A_KSTEP = 8 * A_KGROUPS;
    constexpr int B_CPR = BN / V, B_RPP = THREADS / B_CPR;
    static_assert(BM % A_RPP == 0 && (THREADS / 8) % A_RPP == 0 && BK % A_KSTEP == 0 &&
                  A_PER == A_RP * (BK / A_KSTEP), "A loader covers the slice");
    static_assert(THREADS % B_CPR == 0 && B_PER * B_RPP == BK, "B loader covers the slice");
    const int a_r0 = A_KGROUPS > 1 ? tid / 8 % A_RPP : tid / 8;
    const int a_c0 = tid % 8 + (A_KGROUPS > 1 ? 8 * (tid / 8 / A_RPP) : 0);
    const int b_r0 = tid / B_CPR, b_c0 = (tid % B_CPR) * V;
    const int a_soff0 = a_c0 * A_LD + a_r0;          // + (i / A_RP) * A_KSTEP * A_LD + (i % A_RP) * A_RPP
    const int b_soff0 = BK * A_LD + b_r0 * B_LD + b_c0;  // + i * B_RPP * B_LD
    const bool b_vec = (n % V == 0) && aligned16(B);
    // Fast path: the whole block tile is inside C and B rows allow 16-byte chunks; then only whole slices of k need
    // no guard. A decode tile (fewer than 64 rows) of token rows past M (M = 1 in an 8-row tile) whose columns are
    // inside C guards only its few A copies and streams B unguarded: through the guards, B's copies cost M = 1 a
    // sixth of its time in 16-row tiles (0.64 of cuBLAS at 1x4096x4096 against 0.76), and in the small 64-row tiles
    // at 49 to 63 token rows. The 128 x 256 tiles keep the one fast path as it was (with a second their main loop
    // ran 1.5 % slower at 4096^3: ptxas scheduled it otherwise). Row offsets inside the block (< BM * k) fit an int.
    constexpr bool ROWS_APART = BM <= 64;  // B's copies unguarded where only A's rows run past M
    const bool interior = (bm + BM <= m) && (bn + BN <= n) && b_vec;
    const bool b_whole = ROWS_APART ? (bn + BN <= n) && b_vec : interior;
    const T* a_cur = A + static_cast<size_t>(interior ? bm + a_r0 : 0) * k + a_c0 + kt0 * BK;  // += BK per slice
    const T* b_cur = B + static_cast<size_t>(b_whole ? b_r0 + kt0 * BK : 0) * n + bn + b_c0;  // += BK * n
    const int a_rstep = A_RPP * k, b_rstep = B_RPP * n;

    // All of one slice's copies; `interior` (uniform) selects the unguarded path for whole interior slices, and in a
    // decode tile `b_whole` B's unguarded copies.
    auto load_slice = [&](int stage, int kt) {
        T* st = smem + stage * STAGE;
        const int k0 = (kt0 + kt) * BK;
        if (interior && k0 + BK <= k) {
#pragma unroll
            for (int i = 0; i < A_PER; ++i)
                cp_async<sizeof(T)>(st + a_soff0 + (i / A_RP) * A_KSTEP * A_LD + (i % A_RP) * A_RPP,
                                    a_cur + (i % A_RP) * a_rstep + A_KSTEP * (i / A_RP), sizeof(T));
#pragma unroll
            for (int i = 0; i < B_PER; ++i) cp_async<16>(st + b_soff0 + i * B_RPP * B_LD, b_cur + i * b_rstep, 16);
        } else {
            // Edge tile or ragged k: every element checked, out-of-range ones zero-filled.
#pragma unroll
            for (int i = 0; i < A_PER; ++i) {
                const int r = bm + a_r0 + (i % A_RP) * A_RPP, c = k0 + a_c0 + A_KSTEP * (i / A_RP);
                const bool ok = r < m && c < k;
                cp_async<sizeof(T)>(st + a_soff0 + (i / A_RP) * A_KSTEP * A_LD + (i % A_RP) * A_RPP,
                                    ok ? A + static_cast<size_t>(r) * k + c : A, ok ? static_cast<int>(sizeof(T)) : 0);
            }
            if (ROWS_APART && b_whole && k0 + BK <= k) {
#pragma unroll
                for (int i = 0; i < B_PER; ++i)
                    cp_async<16>(st + b_soff0 + i * B_RPP * B_LD, b_cur + i * b_rstep, 16);
            } else {
#pragma unroll
                for (int i = 0; i < B_PER; ++i) {
                    const int r = k0 + b_r0 + i * B_RPP, c = bn + b_c0;
                    const int left = r < k ? n - c : 0;  // valid columns from c on
                    const T* src = B + static_cast<size_t>(r) * n + c;
                    T* dst = st + b_soff0 + i * B_RPP * B_LD;
                    if (b_vec) {
                        const int valid = max(0, min(V, left));
                        cp_async<16>(dst, valid > 0 ? src : B, valid * static_cast<int>(sizeof(T)));
                    } else {
#pragma unroll
                        for (int v = 0; v < V; ++v) {
                            const bool ok = v < left;
                            cp_async<sizeof(T)>(dst + v, ok ? src + v : B, ok ? static_cast<int>(sizeof(T)) : 0);
                        }
                    }
                }
            }
        }
        a_cur += BK;
        b_cur += static_cast<size_t>(BK) * n;
    };

    // ---- compute mapping ----
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
    constexpr int RSTEP = 4 * Cfg::LANES_M, CSTEP = 4 * Cfg::LANES_N;  // row / column distance of a lane's chunks
    const int lane_r = lane / Cfg::LANES_N, lane_c = lane % Cfg::LANES_N;
    const int a_frag_off = warp_m * WM + lane_r * 4;              // + i*RSTEP, within an As row
    const int b_frag_off = BK * A_LD + warp_n * WN + lane_c * 4;  // + j*CSTEP, within a Bs row

    T fa[2][MI * 4], fb[2][NI * 4];
    Acc acc[MI * 4][NI * 4];
#pragma unroll
    for (int i = 0; i < MI * 4; ++i)
#pragma unroll
        for (int j = 0; j < NI * 4; ++j) acc[i][j] = Acc(0);

    auto load_frags = [&](int buf, const T* st, int kk) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int v = 0; v < 4; v += V)
                Vec<T>::get(*reinterpret_cast<const VecT*>(st + kk * A_LD + a_frag_off + i * RSTEP + v), &fa[buf][i * 4 + v]);
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int v = 0; v < 4; v += V)
                Vec<T>::get(*reinterpret_cast<const VecT*>(st + b_frag_off + kk * B_LD + j * CSTEP + v), &fb[buf][j * 4 + v]);
    };

    // acc += fa[cur] x fb[cur], row by row (a serpentine order, CUTLASS-style, measured neutral or slower).
    auto outer = [&](int cur) {
#pragma unroll
        for (int i = 0; i < MI * 4; ++i)
#pragma unroll
            for (int j = 0; j < NI * 4; ++j)
                acc[i][j] += static_cast<Acc>(fa[cur][i]) * static_cast<Acc>(fb[cur][j]);
    };

    const int KT = (SPLIT > 1 ? kt1 : (k + BK - 1) / BK) - kt0;  // this block's k steps
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent (Launch.dependent: the registry's default tiles), this block may start
    // while the previous kernel on the stream still runs: it waits for that grid's end (and its writes) before its
    // first global access. Launched plainly, a no-op.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    if constexpr (Cfg::SYNC == 0) {
        // The cp.async pipeline shared with dmma and mma_async_copy (simt_common.cuh): slices 0 .. S-2 in flight,
        // then slice kt + S - 1 fetched while slice kt is multiplied, fragments double-buffered in registers.
        simt_common::mma_pipeline_prologue<S>(KT, load_slice);
        simt_common::mma_pipeline_double_buffered<S, BK>(
            KT, load_slice, [&](int buf, int stage, int kk) { load_frags(buf, smem + stage * STAGE, kk); }, outer);
        cp_async_wait<0>();
    } else {
        mbarrier_mainloop<Cfg, T>(KT, smem, load_slice, load_frags, outer);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the next grid may start its blocks now
#endif

    if constexpr (SPLIT > 1) {
        static_assert(sizeof(acc) * THREADS == BM * BN * sizeof(Acc),
                      "a partial is the block tile's accumulators (the registry sizes the workspace so)");
        if (!split_k::sum_slices<SPLIT, THREADS>(acc, workspace)) return;  // not the tile's last slice
    }
    store_tile<Cfg>(acc, C, m, n, bm + warp_m * WM, lane_r * 4, bn + warp_n * WN, lane_c * 4);
}

}  // namespace warptiled

namespace warptiled {
// Less dynamic shared memory than Cfg uses (a cubin built for another target than the device's) would corrupt
// results silently: trap instead. One uniform special-register read and compare.
template <class Cfg, typename T, typename Acc, int SPLIT = 1>
__device__ __forceinline__ void guarded_gemm(const T* A, const T* B, Acc* C, int m, int n, int k,
                                             void* workspace = nullptr)
{
    unsigned dynamic_smem;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_smem));
    if (dynamic_smem < static_cast<unsigned>(Cfg::template smem_bytes<T>())) __trap();
    gemm<Cfg, T, Acc, SPLIT>(A, B, C, m, n, k, workspace);
}
}  // namespace warptiled

// Pipeline entry point: the registry's configuration Barrier<T>::type, WARPTILED_<F32|F64>_THREADS threads, grid
// (ceil(n / BN), ceil(m / BM)), dynamic shared memory WARPTILED_<F32|F64>_SMEM_BYTES (at least smem_bytes<T>()).
// WARPTILED_SPLIT_K = S > 1: grid z = S and a workspace (split_k.cuh's host contract: S partial tiles of BM x BN
// accumulators per tile, then a 32-bit counter per tile).
template <typename T, typename Acc>
__device__ __forceinline__ void warptiled_matmul(const T* A, const T* B, Acc* C, int m, int n, int k,
                                                 Acc* workspace = nullptr)
{
    static_assert(WARPTILED_SPLIT_K >= 1 && WARPTILED_SPLIT_K <= 32, "WARPTILED_SPLIT_K: 1 (whole tiles) to 32 slices");
    warptiled::guarded_gemm<typename warptiled::Barrier<T>::type, T, Acc, WARPTILED_SPLIT_K>(A, B, C, m, n, k,
                                                                                            workspace);
}

// Entry of method warptiled_mbarrier (float only): the registry's configuration Mbarrier<T>::type,
// WARPTILED_MBARRIER_F32_THREADS threads, the same grid, dynamic shared memory WARPTILED_MBARRIER_F32_SMEM_BYTES
// (plus 64 B of static mbarriers).
template <typename T, typename Acc>
__device__ __forceinline__ void warptiled_mbarrier_matmul(const T* A, const T* B, Acc* C, int m, int n, int k)
{
    warptiled::guarded_gemm<typename warptiled::Mbarrier<T>::type, T, Acc>(A, B, C, m, n, k);
}
