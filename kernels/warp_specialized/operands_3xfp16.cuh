// The 3xFP16 operands (kernels/19_wgmma_3xfp16.cu, method wgmma_3xfp16): fp32 A and B in, fp32 C out, at fp32's
// accuracy on the fp16 tensor cores, which run twice the tf32 ones' rate. The scheme is 3xTF32's
// (operands_3xtf32.cuh): each fp32 operand x is split into two numbers of 11 significant bits, big = fp16(x) and
// small = fp16(x - big), and
//     A·B ≈ A_big·B_small + A_small·B_big + A_big·B_big
// summed small terms first. fp16 has tf32's 11 bits but five bits of exponent where tf32 has fp32's eight, so each
// row of A and each column of B is first scaled by a power of two (exact) that brings its largest magnitude into
// [2^14, 2^15): big then cannot overflow (fp16's largest is 65504), and the row's or column's elements within 2^17
// of its largest keep 22 significant bits (their `small`, about 2^-11 of them, is a normal fp16 number). Smaller
// elements lose bits of `small` in fp16's subnormals (2^-24 apart), each loss below 2^-38 of the row's or column's
// largest, far under fp32's 2^-24. The epilogue
// multiplies each element of C by its row's and its column's inverse scale (ROW_COL_SCALED, kernel.cuh).
// The tensor cores' fp32 sums truncate here as in tf32 (fp16's error in the study grows with k as 3xTF32's
// unpromoted one does), so every build promotes its sums into fp32 accumulators every k step or few
// (WGMMA_WS_PROMOTE, mainloop.cuh): SGEMM's accuracy class.
//
// Two kernels, one timed launch:
//   pre-pass (wgmma_3xfp16_split): reads each row of A once (its first HELD x row_threads(k) elements stay in
//     registers between its largest magnitude and the split) and B's columns twice, and writes, with kp = k rounded
//     up to 64 (the GEMM's k step), zeros past k:
//         A3 (m x 2 kp halves, K-major)  = [ A_big   | A_small ]  (each row scaled by 2^ea[row])
//         B3 (2 kp x n halves, N-major)  = [ B_small ; B_big   ]  (each column scaled by 2^eb[col])
//         S3 (m + n floats)              = [ 2^-ea  | 2^-eb   ]
//     B keeps its layout (the 16-bit wgmma reads B N-major), so no transpose.
//   GEMM: the warp-specialised pipeline (kernel.cuh) with the 16-bit operands (Op16<__half>) over K' = 3 kp, the
//     third block of k steps reading A3's first block and B3's second again, as 3xTF32's (K_BLOCKS_REPEAT).
//
// Host contract: the pre-pass first, grid (prepass_blocks(m, n, k), 1, 1), block (32, 32, 1), no dynamic shared memory,
// launched as a programmatic dependent of the previous kernel (it waits for it before writing A3, B3 and S3, which
// that kernel may still read); A3's row pitch a3_pitch(k) halves, B3's b3_pitch(n) halves (both the launcher's
// 16-byte padding). Then the GEMM, as the 16-bit rung's (kernel.cuh's host contract), with the user's m, n, k and S3
// as its scales: it runs over wide_k(k) itself. tmap_a over A3 (dims (a3_pitch, m), box (128 rows, 64 halves)),
// tmap_b over B3 (dims (n, 2 kp), box (64 rows, 64 halves)), both fp16, 128B swizzle, zero OOB fill.
#pragma once

#include "operands_16bit.cuh"

namespace wgmma_3xfp16 {

constexpr int K_ALIGN = 64;      // each block of k padded to whole k steps of the GEMM (BK halves)
// The pre-pass: a block of 32 x 32 threads, 32 columns of B or rows of A. A block of B's columns is the only one that
// reads them, k rows at a time by its 32 warps, so it needs all of an SM's warps to keep enough bytes in flight: n / 32
// blocks (128 at n = 4096) fill each SM once. A row of A is split by row_threads(k) threads, a warp to all 1024, each
// holding HELD of its elements in registers from the first read to the split (a block holds 1024 / row_threads(k) rows:
// a warp a row up to k = 256, as many blocks as rows from k = 4097), so that rows of k <= 8192 are read once: read
// twice, as B's columns are, the second read of a row came mostly from DRAM, since every block's first reads ran at
// once and together passed L2's size (ncu at 4096^3 on an H100: 390 MB moved against the 268 MB read and written once).
// HELD = 8 keeps the kernel within 32 registers a thread, two blocks an SM; fewer threads a row at a short k keep a
// block's threads busy (a block a row would leave most idle and make m blocks of little work).
constexpr int COLUMNS = 32;
constexpr int ROWS = 32;
constexpr int THREADS = COLUMNS * ROWS;
constexpr int HELD = 8;
constexpr int BIG_EXPONENT = 15;  // a row's or column's largest magnitude scaled into [2^14, 2^15)

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int padded_k(int k) { return cdiv(k, K_ALIGN) * K_ALIGN; }
__host__ __device__ constexpr int wide_k(int k) { return 3 * padded_k(k); }
__host__ __device__ constexpr int a3_pitch(int k) { return 2 * padded_k(k); }  // halves; a multiple of 128
__host__ __device__ constexpr int b3_pitch(int n) { return cdiv(n, 8) * 8; }     // halves: 16-byte rows
__host__ __device__ constexpr int b_blocks(int n) { return cdiv(n, COLUMNS); }
// The threads that split a row of A: the fewest powers of two from a warp that hold k at HELD each, 1024 at most.
__host__ __device__ constexpr int row_threads(int k)
{
    int t = COLUMNS;
    while (t < THREADS && t * HELD < k) t *= 2;
    return t;
}
__host__ __device__ constexpr int a_blocks(int m, int k) { return cdiv(m, THREADS / row_threads(k)); }
__host__ __device__ constexpr int prepass_blocks(int m, int n, int k) { return b_blocks(n) + a_blocks(m, k); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// The exponent that scales a largest magnitude `top` into [2^14, 2^15): 0 for a row of zeros or one that is not
// finite (inf and NaN pass through as they are).
__device__ __forceinline__ int scale_exponent(float top)
{
    if (!(top > 0.f) || !isfinite(top)) return 0;
    int e;
    frexpf(top, &e);  // top = f 2^e, f in [0.5, 1)
    return BIG_EXPONENT - e;
}

// x 2^e = big + small (+ at most ~2^-22 of it); an infinite big gets small = 0 rather than inf - inf = NaN.
__device__ __forceinline__ void split(float x, int e, __half& big, __half& small)
{
    const float y = ldexpf(x, e);
    big = __float2half_rn(y);
    const float b = __half2float(big);
    small = isfinite(b) ? __float2half_rn(y - b) : __float2half_rn(0.f);
}
#endif

}  // namespace wgmma_3xfp16

#if HOPPER_SM90A
namespace wgmma_ws {
// The 16-bit operands over A3 and B3 (config.cuh's ThreeProducts): of the GEMM's ktiles k steps, three blocks of
// ktiles / 3, the third reading A3's first block (A_big) and B3's second (B_big); promotable (their fp32 sums
// truncate), and C scaled per row and column by S3 (ROW_COL_SCALED).
struct Op3xFp16 : Op16<__half>, ThreeProducts {
    static constexpr bool PROMOTABLE = true;
    static constexpr bool ROW_COL_SCALED = true;
    static_assert(wgmma_3xfp16::K_ALIGN == BK, "a block of k is a whole number of k steps");
    // One k step on COLS of the tile's columns from col0 (a multiple of 64: whole strips of B), from zero or
    // (`accumulate`) onto d: the promoted mainloop's column parts.
    template <int COLS>
    static __device__ __forceinline__ void mma_columns(float (&d)[COLS / 2], uint32_t da, uint32_t db, int col0,
                                                       bool accumulate = false)
    {
        static_assert(COLS % 64 == 0, "column parts of whole 64-column strips of B");
        const uint32_t dbc = db + ((col0 / 64) * B_STRIP_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            hopper::wgmma_m64k16<COLS, __half>(d, hopper::desc_join(da + kk * (32 >> 4), 1024),
                                               hopper::desc_join(dbc + kk * (2048 >> 4), 1024), kk > 0 || accumulate);
    }
};
}  // namespace wgmma_ws
#endif

// The pre-pass. Blocks 0 .. b_blocks(n) - 1, the longest, first: 32 columns of B each, a column a lane and 32 rows of
// k at a time, the columns' largest magnitudes met in shared memory; the writes of B3's rows are coalesced along n.
// The rest: rows of A, each by rt = row_threads(k) consecutive threads, element c at the row's thread c % rt, which
// keeps its first HELD elements from the first read (the largest magnitude) to the second (the split) and reads
// only those past HELD x rt again; the largest magnitudes of a row's warps meet in shared memory. Columns past k (A3)
// and rows past k (B3) up to kp are written as zeros, and B3's columns past n up to its pitch too.
extern "C" __global__ void __launch_bounds__(wgmma_3xfp16::THREADS)
    wgmma_3xfp16_split(const float* __restrict__ A, const float* __restrict__ B, __half* __restrict__ a3,
                       __half* __restrict__ b3, float* __restrict__ s3, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace wgmma_3xfp16;
#if __CUDA_ARCH__ >= 900
    // Programmatic dependent launch: the GEMM may launch now (it waits for this grid to complete before reading
    // A3, B3 and S3); this grid waits for the previous one (the last GEMM reads them) before writing.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const int kp = padded_k(k);
    const int tx = threadIdx.x, ty = threadIdx.y;
    __shared__ float tops[ROWS][COLUMNS];
    if (blockIdx.x >= b_blocks(n)) {
        const int rt = row_threads(k), t = ty * COLUMNS + tx, lane = t % rt;
        const int r = (blockIdx.x - b_blocks(n)) * (THREADS / rt) + t / rt;
        const bool live = r < m;  // the last block's rows past m: no loads or stores, but at the barrier
        const float* row = A + static_cast<size_t>(live ? r : 0) * k;
        float held[HELD];
        float top = 0.f;
#pragma unroll
        for (int j = 0; j < HELD; ++j) {
            const int c = lane + j * rt;
            held[j] = live && c < k ? row[c] : 0.f;
            top = fmaxf(top, fabsf(held[j]));
        }
        if (live)
            for (int c = lane + HELD * rt; c < k; c += rt) top = fmaxf(top, fabsf(row[c]));
#pragma unroll
        for (int o = COLUMNS / 2; o > 0; o /= 2) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
        if (tx == 0) tops[0][ty] = top;
        __syncthreads();
        const int warp0 = t / rt * (rt / COLUMNS);  // the row's first warp
        for (int w = 0; w < rt / COLUMNS; ++w) top = fmaxf(top, tops[0][warp0 + w]);
        const int e = scale_exponent(top);
        if (!live) return;
        __half* out = a3 + static_cast<size_t>(r) * a3_pitch(k);
        auto put = [&](int c, float x) {  // element c of the row (zero past k), split into A3's two blocks
            __half big, small;
            split(x, e, big, small);
            out[c] = big;
            out[kp + c] = small;
        };
#pragma unroll
        for (int j = 0; j < HELD; ++j)
            if (lane + j * rt < kp) put(lane + j * rt, held[j]);
        for (int c = lane + HELD * rt; c < kp; c += rt) put(c, c < k ? row[c] : 0.f);
        if (lane == 0) s3[r] = ldexpf(1.f, -e);
        return;
    }
    const int col = blockIdx.x * COLUMNS + tx;
    const bool in = col < n;
    float top = 0.f;
    if (in) {
#pragma unroll 8
        for (int kk = ty; kk < k; kk += ROWS) top = fmaxf(top, fabsf(B[static_cast<size_t>(kk) * n + col]));
    }
    tops[ty][tx] = top;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ROWS; ++j) top = fmaxf(top, tops[j][tx]);
    const int e = scale_exponent(top);
    if (col >= b3_pitch(n)) return;
    const size_t pitch = static_cast<size_t>(b3_pitch(n));
    for (int kk = ty; kk < kp; kk += ROWS) {
        __half big, small;
        split(in && kk < k ? B[static_cast<size_t>(kk) * n + col] : 0.f, e, big, small);
        b3[static_cast<size_t>(kk) * pitch + col] = small;
        b3[static_cast<size_t>(kp + kk) * pitch + col] = big;
    }
    if (ty == 0 && in) s3[m + col] = ldexpf(1.f, -e);
#endif
}
