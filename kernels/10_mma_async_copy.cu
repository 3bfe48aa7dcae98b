// Kernel 10 (mma_async_copy): the pre-Hopper tensor-core rung. fp16 / bf16 GEMM with Ampere's warp-level mma.sync (m16n8k16,
// fp32 accumulate), fragments read by ldmatrix from XOR-swizzled shared memory that a multi-stage cp.async
// pipeline fills. No Hopper-only instruction: it builds for sm_80 and newer, and is the best a pre-Hopper kernel
// does. On Hopper mma.sync issues at about half of wgmma's rate, so kernels 11 and 12 are the rungs above it.
//
// Hierarchy (the registry's configuration: 128 x 256 block tile, BK = 32, 8 warps of 64 x 64, 4 stages):
//   block  BM x BN of C; STAGES slices of BK are in flight in shared memory, filled by cp.async in 16-byte
//          chunks (eight elements), so the slice kt + STAGES - 1 is fetched while slice kt is multiplied.
//   warp   WM x WN: MT = WM/16 by NT = WN/8 mma tiles, 64 x 64 -> 32 accumulator tiles of 16 x 8, 128 floats
//          per thread.
//   thread fragments follow the PTX layouts (g = lane / 4, t = lane % 4; a register holds two elements):
//          A (16 x 16, row):  a[v0 + 2*v1] = A[g + 8*v0][2*t + 8*v1 + {0, 1}]
//          B (16 x 8, col):   b[v]         = B[2*t + 8*v + {0, 1}][g]
//          C (16 x 8):        c[v0 + 2*v1] = C[g + 8*v1][2*t + v0]
//          Each register is one 8 x 8 matrix of an ldmatrix.x4, whose lane l gives the address of row l % 8 of
//          matrix l / 8. A's four matrices are rows 0-7 / 8-15 (v0) by k 0-7 / 8-15 (v1), so lane l points at
//          row l % 16, k chunk l / 16. B is k x n row-major in shared memory and the mma wants it "col":
//          ldmatrix.trans hands each thread the transposed pair. Its four matrices are k 0-7 / 8-15 (v) by two
//          n tiles, so lane l points at k row l % 16, n chunk l / 16, and one x4 loads two n tiles.
// Swizzle: shared memory serves one 128-byte line (eight 16-byte chunk positions) per cycle, and an ldmatrix
// phase reads one chunk from each of 8 consecutive rows. Rows of A are 64 bytes (two to a line) and rows of B
// 512 bytes, so unswizzled those 8 chunks sit at 2 (A) or 1 (B) of the 8 positions: 4- and 8-way conflicts.
// Chunk c of row r is stored at chunk c ^ f(r): f = r % 8 for B; f = (r / 2) % 4 for A, where the row's half
// of the line gives the eighth position. Any 8 consecutive rows then cover all 8 positions, and the cp.async
// writes (8 threads fill the 8 chunks of one line: 2 rows of A, or 8 chunks of a row of B) are only permuted
// within their line, so they stay conflict-free too.
// Loads past the edges of A or B are zero-filled by cp.async (source size 0); rows that are not 16-byte aligned
// (k or n not a multiple of 8) go through registers, one element at a time. Stores are guarded. Blocks are
// visited in groups of 8 block-rows for L2 reuse (swizzle from blockIdx); grid = (ceil(n / BN), ceil(m / BM)).
//
// Decode-size M (the registry's m16 / m32 / m64 builds): a handful of token rows against a weight matrix is a
// stream of B from memory with almost no math per byte, so the tile that wins there is the one that keeps HBM
// busy, not the one that reuses operands. Those builds take BM = 16, 32 or 64 (one row of 4 warps, each BM x 32:
// mma.sync's 16 rows waste nothing at M = 16, where wgmma's 64 would waste three quarters), BN = 128, BK = 64
// (a 16 KiB slice of B per stage), and split K (MMA_ASYNC_COPY_SPLIT_K = S, grid z = S; split_k.cuh sums the
// slices in order, deterministically) until about two blocks per SM stream their own slice of B.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "simt_common.cuh"
#include "split_k.cuh"

#ifndef MMA_ASYNC_COPY_SPLIT_K
#define MMA_ASYNC_COPY_SPLIT_K 1
#endif

namespace mma_async_copy {

// The warp layout follows from the block tile and the thread count: warps of up to 64 rows (all of BM where it is
// less: one row of warps), the warps of a row splitting BN.
template <int BM_, int BN_, int BK_, int THREADS_, int STAGES_>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, THREADS = THREADS_, STAGES = STAGES_;
    static constexpr int WM = BM < 64 ? BM : 64, WARPS_M = BM / WM, WARPS_N = THREADS / 32 / WARPS_M;
    static constexpr int WN = BN / WARPS_N;
    static_assert(THREADS % (32 * WARPS_M) == 0 && BN % WARPS_N == 0, "thread count: whole rows of warps over BN");
    static constexpr int MT = WM / 16, NT = WN / 8;
    static constexpr int A_CHUNKS = BK / 8, B_CHUNKS = BN / 8;  // 16-byte chunks per shared-memory row
    static constexpr int A_BYTES = BM * BK * 2, STAGE_BYTES = A_BYTES + BK * BN * 2;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0, "warp tiling");
    static_assert(WN % 16 == 0, "one ldmatrix.x4.trans loads two n tiles of B");
    static_assert(BK % 16 == 0 && STAGES >= 2, "");
    static_assert((A_CHUNKS & (A_CHUNKS - 1)) == 0 && (B_CHUNKS & (B_CHUNKS - 1)) == 0, "swizzle: power-of-two rows");
};

// The configuration mma_async_copy_matmul compiles: block tile, k slice, threads and stages are the registry's
// (core/geometry.py, MMA_ASYNC_COPY and its decode builds: -DMMA_ASYNC_COPY_BM, _BN, _BK, _THREADS, _STAGES), the
// warp layout the kernel's own. The dynamic shared memory the launch gives (_SMEM_BYTES) is checked against the
// stages, and the thread count against the warp tile (64 x 64 at BM 128: 8 warps).
using DefaultConfig = Config<MMA_ASYNC_COPY_BM, MMA_ASYNC_COPY_BN, MMA_ASYNC_COPY_BK, MMA_ASYNC_COPY_THREADS,
                             MMA_ASYNC_COPY_STAGES>;
static_assert(DefaultConfig::WN == 64 || DefaultConfig::BM <= 64,
              "the registry's thread count is not the warp layout's (64 x 64 warp tiles at BM 128)");
static_assert(DefaultConfig::SMEM_BYTES <= MMA_ASYNC_COPY_SMEM_BYTES,
              "the registry gives a block less shared memory than the stages take");

using simt_common::aligned16;
using simt_common::cp_async;
using simt_common::cp_async_commit;
using simt_common::cp_async_wait;
using simt_common::smem_addr;

// Where chunk `chunk` of row `row` is stored, for rows of CHUNKS chunks (header comment).
template <int CHUNKS>
__device__ __forceinline__ int swizzle(int row, int chunk)
{
    const unsigned r = static_cast<unsigned>(row);
    if constexpr (CHUNKS >= 8)
        return chunk ^ static_cast<int>(r % 8);
    else
        return chunk ^ static_cast<int>(r / (8 / CHUNKS) % CHUNKS);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&d)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&d)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(addr));
}

// d (16 x 8, fp32) += a (16 x 16) * b (16 x 8), fp16 or bf16 operands, fragments as in the header comment.
template <typename T>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    if constexpr (__is_same(T, __half))
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// SPLIT > 1: this block's slice of the k steps (gridDim.z = SPLIT), summed through `workspace` (split_k.cuh).
template <class Cfg, typename T, int SPLIT>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, int m,
                                     int n, int k, void* workspace)
{
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, WM = Cfg::WM, WN = Cfg::WN, S = Cfg::STAGES;
    constexpr int THREADS = Cfg::THREADS, MT = Cfg::MT, NT = Cfg::NT;
    constexpr int A_CH = Cfg::A_CHUNKS, B_CH = Cfg::B_CHUNKS, A_BYTES = Cfg::A_BYTES, STAGE = Cfg::STAGE_BYTES;
    constexpr int KSTEPS = BK / 16;

    extern __shared__ __align__(128) unsigned char mma_async_copy_smem[];
    unsigned char* smem = mma_async_copy_smem;
    const uint32_t smem_base = smem_addr(smem);

    const int tid = threadIdx.x;
    int tm, tn;
    simt_common::grouped_block_tile<8>(tm, tn);
    const int bm = tm * BM, bn = tn * BN;

    // ---- loader mapping: 16-byte chunks, consecutive threads along a row ----
    constexpr int A_RPP = THREADS / A_CH, A_PER = BM / A_RPP;
    constexpr int B_RPP = THREADS / B_CH, B_PER = BK / B_RPP;
    static_assert(THREADS % B_CH == 0 && BM % A_RPP == 0 && BK % B_RPP == 0, "loaders cover the slice");
    static_assert(A_RPP % 8 == 0 && B_RPP % 8 == 0, "a pass moves whole swizzle periods (8 rows)");
    const int a_r0 = tid / A_CH, a_c0 = tid % A_CH;
    const int b_r0 = tid / B_CH, b_c0 = tid % B_CH;
    // Byte offsets in a stage; pass i adds i * A_RPP (B_RPP) rows, which leaves f(r) unchanged.
    const int a_soff0 = (a_r0 * A_CH + swizzle<A_CH>(a_r0, a_c0)) * 16;
    const int b_soff0 = A_BYTES + (b_r0 * B_CH + swizzle<B_CH>(b_r0, b_c0)) * 16;
    const bool a_vec = (k % 8 == 0) && aligned16(A);
    const bool b_vec = (n % 8 == 0) && aligned16(B);
    // A block whose rows of A (columns of B) are all inside the matrix and 16-byte aligned takes the fast path for
    // that operand: a pointer that steps a slice at a time. Apart, since a decode block's few rows of A are never
    // a whole tile, and its stream of B must not pay the edge checks for that.
    const bool a_inside = (bm + BM <= m) && a_vec, b_inside = (bn + BN <= n) && b_vec;
    // Split-K: this block's slice [kt0, kt1) of the tile's k steps (split_k.cuh); whole tiles start at step 0.
    int kt0 = 0, kt1 = (k + BK - 1) / BK;
    if constexpr (SPLIT > 1) split_k::slice(kt1, kt0, kt1);
    const T* a_cur = A + static_cast<size_t>(a_inside ? bm + a_r0 : 0) * k + a_c0 * 8 + kt0 * BK;  // += BK a slice
    const T* b_cur = B + (static_cast<size_t>(b_inside ? b_r0 : 0) + static_cast<size_t>(kt0) * BK) * n + bn
                     + b_c0 * 8;  // += BK * n
    const int a_rstep = A_RPP * k, b_rstep = B_RPP * n;

    // One chunk of eight elements at (r, c) of a row-major matrix with `cols` columns; zero-filled outside.
    auto chunk = [&](unsigned char* dst, const T* base, int r, int rows, int c, int cols, bool vec) {
        const T* src = base + static_cast<size_t>(r) * cols + c;
        if (vec) {
            const bool ok = r < rows && c < cols;  // cols % 8 == 0: c < cols implies c + 7 < cols
            cp_async<16>(dst, ok ? src : base, ok ? 16 : 0);
        } else {
            // cp.async copies 4 bytes at least and these rows are not 16-byte aligned: through registers.
            const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
            uint32_t h[8];
#pragma unroll
            for (int v = 0; v < 8; ++v) h[v] = r < rows && c + v < cols ? s[v] : 0u;
            *reinterpret_cast<uint4*>(dst) = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16,
                                                        h[6] | h[7] << 16);
        }
    };

    auto load_slice = [&](int stage, int kt) {  // kt counts from the slice's first step
        unsigned char* st = smem + stage * STAGE;
        const int k0 = (kt0 + kt) * BK;
        const bool k_inside = k0 + BK <= k;
        if (a_inside && k_inside) {
#pragma unroll
            for (int i = 0; i < A_PER; ++i) cp_async<16>(st + a_soff0 + i * A_RPP * BK * 2, a_cur + i * a_rstep, 16);
        } else {
#pragma unroll
            for (int i = 0; i < A_PER; ++i)
                chunk(st + a_soff0 + i * A_RPP * BK * 2, A, bm + a_r0 + i * A_RPP, m, k0 + a_c0 * 8, k, a_vec);
        }
        if (b_inside && k_inside) {
#pragma unroll
            for (int i = 0; i < B_PER; ++i) cp_async<16>(st + b_soff0 + i * B_RPP * BN * 2, b_cur + i * b_rstep, 16);
        } else {
#pragma unroll
            for (int i = 0; i < B_PER; ++i)
                chunk(st + b_soff0 + i * B_RPP * BN * 2, B, k0 + b_r0 + i * B_RPP, k, bn + b_c0 * 8, n, b_vec);
        }
        a_cur += BK;
        b_cur += static_cast<size_t>(BK) * n;
    };

    // ---- fragments (ldmatrix addresses, header comment) ----
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
    // A: row l % 16 of tile i (+ i * 16 rows: f unchanged), chunk 2 * ks + l / 16; one offset per k step.
    const int a_row = warp_m * WM + lane % 16;
    int a_off[KSTEPS];
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) a_off[ks] = (a_row * A_CH + swizzle<A_CH>(a_row, 2 * ks + lane / 16)) * 16;
    // B: k row l % 16 (+ ks * 16 rows: f unchanged), chunk of n tiles 2j, 2j + 1; one offset per pair of tiles.
    const int b_row = lane % 16;
    int b_off[NT / 2];
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)
        b_off[j] = A_BYTES + (b_row * B_CH + swizzle<B_CH>(b_row, warp_n * WN / 8 + 2 * j + lane / 16)) * 16;

    uint32_t fa[2][MT][4], fb[2][NT][2];
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.0f;

    auto load_frags = [&](int buf, int stage, int ks) {
        const uint32_t st = smem_base + stage * STAGE;
#pragma unroll
        for (int i = 0; i < MT; ++i) ldmatrix_x4(fa[buf][i], st + a_off[ks] + i * 16 * BK * 2);
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
            uint32_t r[4];
            ldmatrix_x4_trans(r, st + b_off[j] + ks * 16 * BN * 2);
            fb[buf][2 * j][0] = r[0], fb[buf][2 * j][1] = r[1];
            fb[buf][2 * j + 1][0] = r[2], fb[buf][2 * j + 1][1] = r[3];
        }
    };
    auto compute = [&](int buf) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma<T>(acc[i][j], fa[buf][i], fb[buf][j]);
    };

    const int KT = kt1 - kt0;
    simt_common::mma_pipeline_prologue<S>(KT, load_slice);
    simt_common::mma_pipeline_double_buffered<S, KSTEPS>(KT, load_slice, load_frags, compute);
    cp_async_wait<0>();
    if constexpr (SPLIT > 1) {
        static_assert(sizeof(acc) / sizeof(float) * THREADS == BM * BN,
                      "a partial is the block tile's accumulators (the registry sizes the workspace so)");
        if (!split_k::sum_slices<SPLIT, THREADS>(acc, workspace)) return;  // not the tile's last slice
    }

    simt_common::store_mma_tiles(C, acc, m, n, bm + warp_m * WM, bn + warp_n * WN, lane / 4, lane % 4);
}

}  // namespace mma_async_copy

// Pipeline entry point (T = __half or __nv_bfloat16, fp32 C): MMA_ASYNC_COPY_THREADS threads, dynamic shared memory
// MMA_ASYNC_COPY_SMEM_BYTES, grid (ceil(n / MMA_ASYNC_COPY_BN), ceil(m / MMA_ASYNC_COPY_BM)). MMA_ASYNC_COPY_SPLIT_K
// = S > 1: grid z = S and a workspace (split_k.cuh's host contract: S partial tiles of BM x BN floats per tile,
// then a 32-bit counter per tile).
template <typename T>
__device__ __forceinline__ void mma_async_copy_matmul(const T* A, const T* B, float* C, int m, int n, int k,
                                                      float* workspace = nullptr)
{
    static_assert(__is_same(T, __half) || __is_same(T, __nv_bfloat16), "fp16 or bf16 operands");
    static_assert(MMA_ASYNC_COPY_SPLIT_K >= 1 && MMA_ASYNC_COPY_SPLIT_K <= 32,
                  "MMA_ASYNC_COPY_SPLIT_K: 1 (whole tiles) to 32 slices");
    mma_async_copy::gemm<mma_async_copy::DefaultConfig, T, MMA_ASYNC_COPY_SPLIT_K>(A, B, C, m, n, k, workspace);
}
