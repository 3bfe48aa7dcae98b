// Kernel 10's pipeline (mma_async_copy, kernels/10_mma_async_copy.cu): the pre-Hopper tensor-core rung. Warp-level
// mma.sync (fp32 accumulate; int32 for int8) with fragments read from XOR-swizzled shared memory that a multi-stage
// cp.async pipeline fills. No Hopper-only instruction: it builds for sm_80 and newer (FP8 for sm_89 and newer), and is
// the best a pre-Hopper kernel does. On Hopper mma.sync issues at about half of wgmma's rate, so the warp-specialised
// rungs are the ones above it at large shapes; at decode-size M, where B streams from memory with little math per byte,
// it is this kernel's builds that keep HBM busy.
//
// Operands (the Op policy below): fp16 / bf16 (m16n8k16), tf32 (fp32 in memory rounded to tf32 in registers,
// m16n8k8), int8 (m16n8k32, exact int32 sums and output) and FP8 e4m3 (m16n8k32 with per-tensor scales; each mma's
// k-32 sum leaves the tensor cores through a zeroed accumulator and is added into fp32 registers, so the sums are
// promoted every 32 k: cuBLASLt's promoted class, not the tensor cores' own accumulation over all of k). A and B stay
// row-major as the user gave them: nothing is transposed before the launch.
//
// Hierarchy (the registry's configuration: 128 x 256 block tile, k slices of 64 bytes a row, 8 warps of 64 x 64,
// 4 stages). The registry counts the slice BK in 2-byte elements (core/geometry.py): every dtype's slice has the same
// bytes, BK * 2 of a row of A (BK * 2 / sizeof(T) elements of k), so the stages' shared memory is the same for all.
//   block  BM x BN of C; STAGES slices in flight in shared memory, filled by cp.async in 16-byte chunks, so the
//          slice kt + STAGES - 1 is fetched while slice kt is multiplied.
//   warp   WM x WN: MT = WM/16 by NT = WN/8 mma tiles, 64 x 64 -> 32 accumulator tiles of 16 x 8, 128 registers
//          per thread.
//   k step one mma's k: 32 bytes of a row of A (16 fp16, 8 tf32, 32 int8 / e4m3).
//   thread fragments follow the PTX layouts (g = lane / 4, t = lane % 4):
//          A (16 rows x 32 bytes, row): a[v0 + 2*v1] = the 4 bytes at A[g + 8*v0][byte 4*t + 16*v1]
//          C (16 x 8):                  c[v0 + 2*v1] = C[g + 8*v1][2*t + v0]
//          In bytes the A layout is the same in every dtype, so A comes in by ldmatrix.x4 (8 x 8 matrices of 16-bit
//          words), whose lane l gives the address of row l % 8 of matrix l / 8: A's four matrices are rows 0-7 /
//          8-15 (v0) by bytes 0-15 / 16-31 (v1), so lane l points at row l % 16, 16-byte chunk l / 16.
//   B, 16-bit (16 x 8, col): b[v] = B[2*t + 8*v + {0, 1}][g]. B is k x n row-major in shared memory and the mma
//          wants it "col": ldmatrix.trans hands each thread the transposed pair. Its four matrices are k 0-7 / 8-15
//          (v) by two n tiles, so lane l points at k row l % 16, n chunk l / 16, and one x4 loads two n tiles.
//   B, 32- and 8-bit: ldmatrix.trans moves 16-bit elements only, and a register holds one tf32 (k = t + 4v, n = g)
//          or four 8-bit k (k = 4t + 16v + 0..3, n = g). The n of an mma tile is only a label, so the kernel
//          permutes it: in each group of 4 n tiles (32 columns), tile 4q + r's column g is the physical column
//          32q + 4g + r. A thread then reads 4 neighbouring columns at once: tf32, one 16-byte load per k row gives
//          its b[v] of the 4 tiles; 8-bit, four 4-byte loads (k rows 4t + 0..3) are a 4 x 4 byte matrix that 8
//          byte permutes (prmt) transpose into the 4 tiles' b[v]. The epilogue undoes the permutation: a thread's
//          2 x 4 values of a row of a group are the 8 contiguous columns 32q + 8t + 0..7.
// Swizzle: shared memory serves one 128-byte line (eight 16-byte chunk positions) per cycle. Chunk c of row r is
// stored at chunk c ^ f(r), with f chosen so that the rows one fragment load reads together cover all 8 positions:
//   A (rows of 64 or 128 bytes, ldmatrix reads 8 consecutive rows): f = (r / 2) % 4 or r % 8;
//   B 16-bit (ldmatrix.trans, 8 consecutive rows of one chunk): f = r % 8;
//   B tf32 (rows t = 0-3, chunks 8q + {0, 1} in a phase of 8 lanes): f = 2 * (r % 4);
//   B 8-bit (rows 4t + i, t = 0-3, two chunks): f = 2 * ((r / 4) % 4).
// The cp.async writes (consecutive threads fill consecutive chunks of a line) are only permuted within their
// line, so they stay conflict-free too.
// Loads past the edges of A or B are zero-filled by cp.async (source size 0); rows that are not 16-byte aligned go
// through registers, one element at a time. Stores are guarded. Blocks are visited in groups of 8 block-rows for L2
// reuse (swizzle from blockIdx); grid = (ceil(n / BN), ceil(m / BM)).
//
// Decode-size M (the registry's m16 / m32 / m64 builds): a handful of token rows against a weight matrix is a
// stream of B from memory with almost no math per byte, so the tile that wins there is the one that keeps HBM
// busy, not the one that reuses operands. Those builds take BM = 16, 32 or 64 (one row of 4 warps, each BM x 32:
// mma.sync's 16 rows waste nothing at M = 16, where wgmma's 64 would waste three quarters), BN = 128, k slices of
// 128 bytes (16 KiB of B per stage in every dtype), and split K (MMA_ASYNC_COPY_SPLIT_K = S, grid z = S;
// split_k.cuh sums the slices in order, deterministically; int32 partials for int8) until about one block per SM
// streams its own slice of B.
//
// B's L2 policy (`stream_b`, chosen at launch: specs.StreamB). Where a launch reads each element of B once (one row
// of tiles) and B is larger than most of the L2, the L2 cannot keep it for the next launch anyway, and B's lines only
// push out the ones that are read again (A's rows, the split partials). Such a launch copies B's whole chunks under
// an evict_first policy, with 256-byte L2 fetches. Where B fits, the policy would throw out the weights that the next
// launch of a burst finds in L2, so B is copied plainly. The line (B's bytes against 0.84 of the L2, geometry.STREAM_B)
// is fitted: on an H100, in every dtype, the policy cost 7-53 % at 0.64-0.72 of the L2 and saved 3-8 % at 0.88-0.96.
//
// Kernel 20 (20_mma_3xtf32.cu) runs the same pipeline with one more operand policy: fp32 fragments split in registers
// into tf32 parts, three mmas a tile.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "simt_common.cuh"
#include "split_k.cuh"

#ifndef MMA_ASYNC_COPY_SPLIT_K
#define MMA_ASYNC_COPY_SPLIT_K 1
#endif

namespace mma_async_copy {

// ---- operand policies: element size, accumulator, the mma, how B's fragments are read ----------------------------

// d (16 x 8) += a * b over one k step; `Promote`: d += (a * b + 0), the product sum leaving the tensor cores on its
// own before it is added in fp32.
#define MMA_ASYNC_COPY_MMA(SHAPE_TYPES, ACC_C)                                                                        \
    asm("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"            \
        : "=" ACC_C(d[0]), "=" ACC_C(d[1]), "=" ACC_C(d[2]), "=" ACC_C(d[3])                                      \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), ACC_C(c[0]), ACC_C(c[1]), ACC_C(c[2]), \
          ACC_C(c[3]))

template <typename T>
struct Op;

// Every policy below multiplies its fragments once an mma (THREE_PRODUCTS false); kernel 20's 3xTF32 policy
// (kernels/20_mma_3xtf32.cu) splits fp32 fragments into big and small tf32 parts and runs three mmas a tile.

// fp16 / bf16: B through ldmatrix.trans, columns in place.
template <typename T>
struct Op16 {
    using Acc = float;
    static constexpr bool THREE_PRODUCTS = false;
    static constexpr int BYTES = 2;
    static constexpr bool PERMUTED_B = false;
    static constexpr bool PROMOTE = false;
    __device__ static int b_phase(int r) { return r % 8; }
    static constexpr int B_PERIOD = 8;
    __device__ static void convert(uint32_t&) {}
    __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4])
    {
        if constexpr (__is_same(T, __half))
            MMA_ASYNC_COPY_MMA("m16n8k16.row.col.f32.f16.f16.f32", "f");
        else
            MMA_ASYNC_COPY_MMA("m16n8k16.row.col.f32.bf16.bf16.f32", "f");
    }
};
template <> struct Op<__half> : Op16<__half> {};
template <> struct Op<__nv_bfloat16> : Op16<__nv_bfloat16> {};

// tf32: fp32 in memory, rounded to tf32 (to nearest, as cuBLAS's tf32 mode) in registers; one 16-byte load per k
// row gives 4 permuted tiles' b.
template <>
struct Op<float> {
    using Acc = float;
    static constexpr bool THREE_PRODUCTS = false;
    static constexpr int BYTES = 4;
    static constexpr bool PERMUTED_B = true;
    static constexpr bool PROMOTE = false;
    __device__ static int b_phase(int r) { return 2 * (r % 4); }
    static constexpr int B_PERIOD = 4;
    __device__ static void convert(uint32_t& x) { asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(x)); }
    __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4])
    {
        MMA_ASYNC_COPY_MMA("m16n8k8.row.col.f32.tf32.tf32.f32", "f");
    }
};

// 8-bit: four 4-byte loads and a byte transpose give 4 permuted tiles' b.
struct OpBytes {
    static constexpr bool THREE_PRODUCTS = false;
    static constexpr int BYTES = 1;
    static constexpr bool PERMUTED_B = true;
    __device__ static int b_phase(int r) { return 2 * ((r / 4) % 4); }
    static constexpr int B_PERIOD = 16;
    __device__ static void convert(uint32_t&) {}
};
template <>
struct Op<int8_t> : OpBytes {
    using Acc = int;
    static constexpr bool PROMOTE = false;  // exact
    __device__ static void mma(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const int (&c)[4])
    {
        MMA_ASYNC_COPY_MMA("m16n8k32.row.col.s32.s8.s8.s32", "r");
    }
};
template <>
struct Op<__nv_fp8_e4m3> : OpBytes {
    using Acc = float;
    static constexpr bool PROMOTE = true;
    __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4])
    {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
        MMA_ASYNC_COPY_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32", "f");
#else
        __trap();  // FP8 mma.sync needs sm_89 (the registry prunes FP8 below it)
#endif
    }
};
#undef MMA_ASYNC_COPY_MMA

// ---- configuration --------------------------------------------------------------------------------------------

// The warp layout follows from the block tile and the thread count: warps of up to 64 rows (all of BM where it is
// less: one row of warps), the warps of a row splitting BN. BK counts 2-byte units of a row of A (header comment).
template <int BM_, int BN_, int BK_, int THREADS_, int STAGES_>
struct Config {
    static constexpr int BM = BM_, BN = BN_, THREADS = THREADS_, STAGES = STAGES_;
    static constexpr int BK_BYTES = BK_ * 2;
    static constexpr int WM = BM < 64 ? BM : 64, WARPS_M = BM / WM, WARPS_N = THREADS / 32 / WARPS_M;
    static constexpr int WN = BN / WARPS_N;
    static_assert(THREADS % (32 * WARPS_M) == 0 && BN % WARPS_N == 0, "thread count: whole rows of warps over BN");
    static constexpr int MT = WM / 16, NT = WN / 8;
    static constexpr int A_CHUNKS = BK_BYTES / 16;  // 16-byte chunks per shared-memory row of A
    // A stage: BM rows of BK_BYTES; B: BK_BYTES / sizeof(T) k rows of BN elements, BK_BYTES * BN bytes in every dtype.
    static constexpr int A_BYTES = BM * BK_BYTES, STAGE_BYTES = A_BYTES + BK_BYTES * BN;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0, "warp tiling");
    static_assert(WN % 32 == 0, "B fragments come in groups of 4 n tiles (ldmatrix.x4.trans: 2, permuted: 4)");
    static_assert(BK_BYTES % 32 == 0 && STAGES >= 2, "whole k steps of 32 bytes");
    static_assert((A_CHUNKS & (A_CHUNKS - 1)) == 0 && ((BN / 8) & (BN / 8 - 1)) == 0, "swizzle: power-of-two rows");
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
using simt_common::ldmatrix_x4;
using simt_common::ldmatrix_x4_trans;
using simt_common::smem_addr;

// Where chunk `chunk` of row `row` of A is stored, for rows of CHUNKS chunks (header comment).
template <int CHUNKS>
__device__ __forceinline__ int swizzle(int row, int chunk)
{
    const unsigned r = static_cast<unsigned>(row);
    if constexpr (CHUNKS >= 8)
        return chunk ^ static_cast<int>(r % 8);
    else
        return chunk ^ static_cast<int>(r / (8 / CHUNKS) % CHUNKS);
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}

__device__ __forceinline__ void lds128(uint32_t (&v)[4], uint32_t addr)
{
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(addr));
}

// w[i] holds 4 bytes (columns 0-3) of k row i; out[j] the 4 k rows of column j.
__device__ __forceinline__ void transpose_bytes(uint32_t (&out)[4], const uint32_t (&w)[4])
{
    const uint32_t lo01 = __byte_perm(w[0], w[1], 0x5140), lo23 = __byte_perm(w[2], w[3], 0x5140);
    const uint32_t hi01 = __byte_perm(w[0], w[1], 0x7362), hi23 = __byte_perm(w[2], w[3], 0x7362);
    out[0] = __byte_perm(lo01, lo23, 0x5410), out[1] = __byte_perm(lo01, lo23, 0x7632);
    out[2] = __byte_perm(hi01, hi23, 0x5410), out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// Stores the accumulators of a warp whose B columns are permuted (header comment), times `scale` where the Op is
// scaled: per row and group of 4 tiles, the thread's 8 contiguous columns col0 + 32q + 8t + 0..7.
template <typename Acc, int MT, int NT>
__device__ __forceinline__ void store_permuted(Acc* C, const Acc (&acc)[MT][NT][4], int m, int n, int row0, int col0,
                                               int g, int t, float scale, bool scaled)
{
    const bool vec = (n % 4 == 0) && reinterpret_cast<uintptr_t>(C) % 16 == 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + i * 16 + g + 8 * h;
            if (row >= m) continue;
            Acc* c_row = C + static_cast<size_t>(row) * n;
#pragma unroll
            for (int q = 0; q < NT / 4; ++q) {
                const int col = col0 + 32 * q + 8 * t;
                Acc v[8];
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    v[e] = acc[i][4 * q + e % 4][e / 4 + 2 * h];
                    if constexpr (!__is_same(Acc, int))
                        if (scaled) v[e] *= scale;
                }
                if (vec && col + 8 <= n) {
                    using V = typename simt_common::Vec<Acc>::type;
                    *reinterpret_cast<V*>(c_row + col) = simt_common::Vec<Acc>::make(v);
                    *reinterpret_cast<V*>(c_row + col + 4) = simt_common::Vec<Acc>::make(v + 4);
                } else {
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        if (col + e < n) c_row[col + e] = v[e];
                }
            }
        }
}

// SPLIT > 1: this block's slice of the k steps (gridDim.z = SPLIT), summed through `workspace` (split_k.cuh).
// `scales` (FP8): scale_a, scale_b, applied to the sums as they leave. O: the operand policy (T's own by default).
// `stream_b` (non-zero): B's whole chunks are copied under an L2 evict_first policy (header comment, "B's L2
// policy").
template <class Cfg, typename T, int SPLIT, class O = Op<T>>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B, typename O::Acc* __restrict__ C,
                                     int m, int n, int k, void* workspace, const float* scales, int stream_b)
{
    using Acc = typename O::Acc;
    constexpr int BM = Cfg::BM, BN = Cfg::BN, WM = Cfg::WM, WN = Cfg::WN, S = Cfg::STAGES;
    constexpr int THREADS = Cfg::THREADS, MT = Cfg::MT, NT = Cfg::NT;
    constexpr int E = O::BYTES, EPC = 16 / E;            // element bytes, elements per 16-byte chunk
    constexpr int BK = Cfg::BK_BYTES / E;                 // k per slice
    constexpr int KSTEPS = Cfg::BK_BYTES / 32, KPS = 32 / E;  // k steps per slice, k per step
    constexpr int A_CH = Cfg::A_CHUNKS, B_CH = BN * E / 16, ROW_B = BN * E;
    constexpr int A_BYTES = Cfg::A_BYTES, STAGE = Cfg::STAGE_BYTES;

    extern __shared__ __align__(128) unsigned char mma_async_copy_smem[];
    unsigned char* smem = mma_async_copy_smem;
    const uint32_t smem_base = smem_addr(smem);

    const int tid = threadIdx.x;
    int tm, tn;
    simt_common::grouped_block_tile<8>(tm, tn);
    const int bm = tm * BM, bn = tn * BN;

    // Where chunk c of k row r of B is stored (header comment).
    auto b_chunk = [](int r, int c) { return c ^ O::b_phase(r); };

    // ---- loader mapping: 16-byte chunks, consecutive threads along a row ----
    constexpr int A_RPP = THREADS / A_CH, A_PER = BM / A_RPP;
    constexpr int B_RPP = THREADS / B_CH, B_PER = BK / B_RPP;
    static_assert(THREADS % B_CH == 0 && BM % A_RPP == 0 && BK % B_RPP == 0, "loaders cover the slice");
    static_assert(A_RPP % 8 == 0 && B_RPP % O::B_PERIOD == 0, "a pass moves whole swizzle periods");
    // (the swizzle XORs a chunk's index with up to 7: B's rows need 8 chunks, 128 bytes, or a chunk lands in the next
    // row; 8-bit tiles of 64 columns wrote past the stage and faulted)
    static_assert(B_CH >= 8, "tile width: B's rows of BN elements must hold 128 bytes (BN >= 128 for 8-bit operands, "
                             ">= 64 for 16-bit, >= 32 for tf32) for the B swizzle");
    const int a_r0 = tid / A_CH, a_c0 = tid % A_CH;
    const int b_r0 = tid / B_CH, b_c0 = tid % B_CH;
    // Byte offsets in a stage; pass i adds i * A_RPP (B_RPP) rows, which leaves the swizzle unchanged.
    const int a_soff0 = (a_r0 * A_CH + swizzle<A_CH>(a_r0, a_c0)) * 16;
    const int b_soff0 = A_BYTES + (b_r0 * B_CH + b_chunk(b_r0, b_c0)) * 16;
    const bool a_vec = (k % EPC == 0) && aligned16(A);
    const bool b_vec = (n % EPC == 0) && aligned16(B);
    // A block whose rows of A (columns of B) are all inside the matrix and 16-byte aligned takes the fast path for
    // that operand: a pointer that steps a slice at a time. Apart, since a decode block's few rows of A are never
    // a whole tile, and its stream of B must not pay the edge checks for that.
    const bool a_inside = (bm + BM <= m) && a_vec, b_inside = (bn + BN <= n) && b_vec;
    // Split-K: this block's slice [kt0, kt1) of the tile's k steps (split_k.cuh); whole tiles start at step 0.
    int kt0 = 0, kt1 = (k + BK - 1) / BK;
    if constexpr (SPLIT > 1) split_k::slice(kt1, kt0, kt1);
    const T* a_cur = A + static_cast<size_t>(a_inside ? bm + a_r0 : 0) * k + a_c0 * EPC + kt0 * BK;  // += BK a slice
    const T* b_cur = B + (static_cast<size_t>(b_inside ? b_r0 : 0) + static_cast<size_t>(kt0) * BK) * n + bn
                     + b_c0 * EPC;  // += BK * n
    const int a_rstep = A_RPP * k, b_rstep = B_RPP * n;

    // One chunk of EPC elements at (r, c) of a row-major matrix with `cols` columns; zero-filled outside.
    auto chunk = [&](unsigned char* dst, const T* base, int r, int rows, int c, int cols, bool vec) {
        const T* src = base + static_cast<size_t>(r) * cols + c;
        if (vec) {
            const bool ok = r < rows && c < cols;  // cols % EPC == 0: c < cols implies c + EPC - 1 < cols
            cp_async<16>(dst, ok ? src : base, ok ? 16 : 0);
        } else {
            // cp.async copies 4 bytes at least, in aligned pieces, and these rows are not 16-byte aligned: through
            // registers, one element at a time.
            using Bits = std::conditional_t<E == 1, uint8_t, std::conditional_t<E == 2, uint16_t, uint32_t>>;
            const Bits* s = reinterpret_cast<const Bits*>(src);
            uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int v = 0; v < EPC; ++v)
                if (r < rows && c + v < cols) w[v * E / 4] |= static_cast<uint32_t>(s[v]) << (8 * (v * E % 4));
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    };

    auto load_slice = [&](int stage, int kt) {  // kt counts from the slice's first step
        unsigned char* st = smem + stage * STAGE;
        const int k0 = (kt0 + kt) * BK;
        const bool k_inside = k0 + BK <= k;
        if (a_inside && k_inside) {
#pragma unroll
            for (int i = 0; i < A_PER; ++i)
                cp_async<16>(st + a_soff0 + i * A_RPP * Cfg::BK_BYTES, a_cur + i * a_rstep, 16);
        } else {
#pragma unroll
            for (int i = 0; i < A_PER; ++i)
                chunk(st + a_soff0 + i * A_RPP * Cfg::BK_BYTES, A, bm + a_r0 + i * A_RPP, m, k0 + a_c0 * EPC, k, a_vec);
        }
        if (b_inside && k_inside && stream_b) {
            // ptxas (CUDA 13.0) mis-encodes a cache-hinted cp.async whose shared address it splits into a register
            // and a uniform one (the ring's stage, a runtime index in the main loop): the copy faults as an
            // illegal instruction. XOR-ing the stage's address with a zero that ptxas cannot prove zero (the
            // thread's index masked by the flag's high bits) keeps that address in a per-thread register.
            const uint32_t opaque_zero = threadIdx.x & (static_cast<uint32_t>(stream_b) >> 16);
            const uint32_t b_dst = (smem_addr(st) ^ opaque_zero) + b_soff0;
#pragma unroll
            for (int i = 0; i < B_PER; ++i)
                simt_common::cp_async_16_evict_first(b_dst + i * B_RPP * ROW_B, b_cur + i * b_rstep);
        } else if (b_inside && k_inside) {
#pragma unroll
            for (int i = 0; i < B_PER; ++i) cp_async<16>(st + b_soff0 + i * B_RPP * ROW_B, b_cur + i * b_rstep, 16);
        } else {
#pragma unroll
            for (int i = 0; i < B_PER; ++i)
                chunk(st + b_soff0 + i * B_RPP * ROW_B, B, k0 + b_r0 + i * B_RPP, k, bn + b_c0 * EPC, n, b_vec);
        }
        a_cur += BK;
        b_cur += static_cast<size_t>(BK) * n;
    };

    // ---- fragments (header comment) ----
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int warp_m = warp % Cfg::WARPS_M, warp_n = warp / Cfg::WARPS_M;
    // A: row l % 16 of tile i (+ i * 16 rows: swizzle unchanged), chunk 2 * ks + l / 16; one offset per k step.
    const int a_row = warp_m * WM + lane % 16;
    int a_off[KSTEPS];
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) a_off[ks] = (a_row * A_CH + swizzle<A_CH>(a_row, 2 * ks + lane / 16)) * 16;
    // B, 16-bit: k row l % 16 (+ ks * 16 rows: swizzle unchanged), chunk of n tiles 2j, 2j + 1; one offset per pair.
    // B, permuted: the byte column 32q + 4g (in elements) of the warp's columns, in k row r (+ multiples of the
    // swizzle's period); its chunk and the byte within it.
    constexpr int B_GROUPS = O::PERMUTED_B ? NT / 4 : NT / 2;
    int b_off[B_GROUPS];
    if constexpr (!O::PERMUTED_B) {
        const int b_row = lane % 16;
#pragma unroll
        for (int j = 0; j < B_GROUPS; ++j)
            b_off[j] = A_BYTES + (b_row * B_CH + b_chunk(b_row, warp_n * WN / 8 + 2 * j + lane / 16)) * 16;
    } else {
        // tf32: row t; 8-bit: row 4t. Rows that differ by a multiple of the period share the offset.
        const int b_row = E == 4 ? t : 4 * t;
#pragma unroll
        for (int q = 0; q < B_GROUPS; ++q) {
            const int byte = (warp_n * WN + 32 * q + 4 * g) * E;
            b_off[q] = A_BYTES + b_row * ROW_B + b_chunk(b_row, byte / 16) * 16 + byte % 16;
        }
    }

    uint32_t fa[2][MT][4], fb[2][NT][2];
    Acc acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = Acc(0);

    auto load_frags = [&](int buf, int stage, int ks) {
        const uint32_t st = smem_base + stage * STAGE;
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            ldmatrix_x4(fa[buf][i], st + a_off[ks] + i * 16 * Cfg::BK_BYTES);
#pragma unroll
            for (int v = 0; v < 4; ++v) O::convert(fa[buf][i][v]);
        }
        if constexpr (!O::PERMUTED_B) {
#pragma unroll
            for (int j = 0; j < B_GROUPS; ++j) {
                uint32_t r[4];
                ldmatrix_x4_trans(r, st + b_off[j] + ks * 16 * ROW_B);
                fb[buf][2 * j][0] = r[0], fb[buf][2 * j][1] = r[1];
                fb[buf][2 * j + 1][0] = r[2], fb[buf][2 * j + 1][1] = r[3];
            }
        } else {
#pragma unroll
            for (int q = 0; q < B_GROUPS; ++q)
#pragma unroll
                for (int v = 0; v < 2; ++v) {
                    // k rows of b[v]: tf32 ks * 8 + t + 4v; 8-bit ks * 32 + 4t + 16v + 0..3. The added rows are
                    // multiples of the swizzle's period, so the row offset is a plain add.
                    const uint32_t base = st + b_off[q] + (ks * KPS + v * KPS / 2) * ROW_B;
                    uint32_t r[4];
                    if constexpr (E == 4) {
                        lds128(r, base);
                    } else {
                        uint32_t w[4];
#pragma unroll
                        for (int i = 0; i < 4; ++i) w[i] = lds32(base + i * ROW_B);
                        transpose_bytes(r, w);
                    }
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        O::convert(r[j]);
                        fb[buf][4 * q + j][v] = r[j];
                    }
                }
        }
    };
    auto compute = [&](int buf) {
        if constexpr (O::THREE_PRODUCTS) {
            // Each row tile's A fragment split once a k step, each B fragment again for every row tile (an H100
            // SM partition has about 7 issue slots an mma.sync of tf32: the split's 3 instructions an element are
            // cheaper than the registers that would keep B's parts), then per tile the three products from zero,
            // the small terms first, and their sum added into fp32 (promoted every k step).
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                uint32_t a_big[4], a_small[4];
#pragma unroll
                for (int v = 0; v < 4; ++v) O::split(fa[buf][i][v], a_big[v], a_small[v]);
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    uint32_t b_big[2], b_small[2];
#pragma unroll
                    for (int v = 0; v < 2; ++v) O::split(fb[buf][j][v], b_big[v], b_small[v]);
                    const float zero[4] = {0.f, 0.f, 0.f, 0.f};
                    float part[4];
                    O::mma(part, a_big, b_small, zero);
                    O::mma(part, a_small, b_big, part);
                    O::mma(part, a_big, b_big, part);
#pragma unroll
                    for (int v = 0; v < 4; ++v) acc[i][j][v] += part[v];
                }
            }
        } else {
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    if constexpr (O::PROMOTE) {
                        const float zero[4] = {0.f, 0.f, 0.f, 0.f};
                        float part[4];
                        O::mma(part, fa[buf][i], fb[buf][j], zero);
#pragma unroll
                        for (int v = 0; v < 4; ++v) acc[i][j][v] += part[v];
                    } else {
                        O::mma(acc[i][j], fa[buf][i], fb[buf][j], acc[i][j]);
                    }
                }
        }
    };

    const int KT = kt1 - kt0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent (Launch.dependent: PDL), this block may start while the previous kernel
    // on the stream still runs: it waits for that grid's end (and its writes) before its first global access.
    // Launched plainly, a no-op.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    simt_common::mma_pipeline_prologue<S>(KT, load_slice);
    simt_common::mma_pipeline_double_buffered<S, KSTEPS>(KT, load_slice, load_frags, compute);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the next grid may start its blocks now
#endif
    cp_async_wait<0>();
    if constexpr (SPLIT > 1) {
        static_assert(sizeof(acc) / sizeof(Acc) * THREADS == BM * BN,
                      "a partial is the block tile's accumulators (the registry sizes the workspace so)");
        if (!split_k::sum_slices<SPLIT, THREADS>(acc, workspace)) return;  // not the tile's last slice
    }

    const int row0 = bm + warp_m * WM, col0 = bn + warp_n * WN;
    if constexpr (O::PERMUTED_B)
        store_permuted(C, acc, m, n, row0, col0, g, t, scales ? scales[0] * scales[1] : 1.0f, scales != nullptr);
    else
        simt_common::store_mma_tiles(C, acc, m, n, row0, col0, g, t);
}

}  // namespace mma_async_copy
