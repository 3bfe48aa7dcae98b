// The 3xTF32 operands (kernels/14_wgmma_3xtf32.cu, method wgmma_3xtf32): fp32 A and B in, fp32 C out, at fp32's
// accuracy on the tf32 tensor cores, through a pre-pass and the tf32 policy (operands_tf32.cuh). Each fp32 operand x
// is split into two tf32 numbers, big = tf32(x) (rounded to nearest) and small = tf32(x - big); big + small
// reproduces x to about 2^-23 relative (x - big is exact in fp32 and has at most 13 significant bits, of which small
// keeps 11). The product is then
//     A·B ≈ A_big·B_small + A_small·B_big + A_big·B_big
// (A_small·B_small, about 2^-22 of the product, is dropped), three tf32 GEMMs summed in one fp32 accumulator, the
// two small ones first. The order matters: the tensor cores' fp32 accumulation truncates towards zero, so each
// wgmma (k 8) loses a fraction of an ulp of the running sum, always in the same direction, and the error grows
// linearly with the number of k steps taken on a large sum. Measured on an H200 (bench/compare.py, inputs uniform
// in [-5, 5]): with big·big first, the correction terms were added onto the full-size sum, relative error 3.9e-5 at
// 4096³ and 8.3e-5 at 8192³; with them first they accumulate at 2^-11 of its size and only big·big's k / 8 steps
// run on the large sum: 9.4e-6 and 1.9e-5, about 2.35e-9 x k on every shape measured. cuBLAS SGEMM (IEEE fp32
// FMAs, rounded to nearest): 1.1e-6 and 1.6e-6; plain tf32 3.1e-4. Closing the rest of the gap needs the running
// sum taken out of the tensor cores every few k steps and added in fp32 (a second accumulator: 128 registers per
// consumer thread that this 64x256-per-warpgroup pipeline does not have), or K split into slices whose partial
// tiles are summed in fp32 (the error falls as 1 / slices if each slice holds its share of big·big).
//
// Two kernels, one timed launch:
//   pre-pass (wgmma_3xtf32_split): reads row-major A (m x k) and B (k x n) once and writes two K-major operands
//     of two blocks of kp columns each, kp = k rounded up to 32 (the GEMM's k step), zeros past k:
//         A3  (m x 2 kp) = [ A_big    | A_small ]
//         BT3 (n x 2 kp) = [ B_smallᵀ | B_bigᵀ  ]
//     B's transpose (tf32 wgmma reads both operands K-major) comes with it, as wgmma_tf32's comes with its own
//     pre-pass (transpose_tf32.cuh).
//   GEMM: the warp-specialised pipeline (kernel.cuh) with wgmma_tf32's operands and instruction (Op3xTf32, below)
//     over K' = 3 kp: its first two blocks of k steps multiply A3's blocks with BT3's (big·small, small·big), and
//     its third reads A3's first block and BT3's second again (big·big), so the dot product of a row of A with a
//     column of B is the sum of the three products. A k step never straddles two blocks (kp is a whole number of
//     them), and the padding columns are zero in both operands.
// Both parts are stored already rounded (low 13 bits zero), so the tensor maps are typed FLOAT32: the copy
// engine's TFLOAT32 rounding would change nothing, and the wgmma's truncation of the low bits drops only zeros.
//
// Traffic of the pre-pass: reads 4(mk + kn) bytes, writes 8 kp (m + n) bytes. Writing big·big's block a second
// time, as A3 and BT3 of three blocks did, took 12 kp (m + n): 512 MiB in 0.146 ms at 4096³ (3.7 TB/s, 13 % of the
// launch) and 2 GiB in 0.58 ms at 8192³ (7 %) on an H200; the GEMM over K' = 3k ran at about 436 and 417 TF/s of
// tf32 work, so the whole launch reached 126 and 132 TF/s of fp32 work.
//
// Host contract: the pre-pass first, grid (prepass_blocks(m, n, k), 1, 1), block (32, 8, 1), no dynamic shared
// memory, launched as a programmatic dependent of the previous kernel (it waits for it before writing A3 and BT3,
// which that kernel may still read); A3 and BT3 with row pitch stored_k(k) floats. Then the GEMM, as wgmma_tf32's
// (kernel.cuh's host contract: persistent, dependent, so it waits for the pre-pass), with the user's m, n, k: it
// runs over wide_k(k) itself. tmap_a over A3 (dims (stored_k, m)), tmap_bt over BT3 (dims (stored_k, n)),
// both fp32, box (rows 128, cols 32), 128B swizzle, zero OOB fill.
#pragma once

#include "operands_tf32.cuh"

namespace wgmma_3xtf32 {

constexpr int K_ALIGN = 32;    // each block of k padded to whole k steps of the GEMM (BK floats; 16-byte rows)
constexpr int TILE = 32;       // the pre-pass's tile: 32 x 32 elements per block
constexpr int TILE_ROWS = 8;   // block 32 x 8 threads, 4 rows of the tile each
constexpr int PREPASS_THREADS = TILE * TILE_ROWS;

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int padded_k(int k) { return cdiv(k, K_ALIGN) * K_ALIGN; }
// The GEMM's K: three blocks of padded_k(k). Columns of A3 and BT3 (their row pitch): two.
__host__ __device__ constexpr int wide_k(int k) { return 3 * padded_k(k); }
__host__ __device__ constexpr int stored_k(int k) { return 2 * padded_k(k); }
// Pre-pass tiles: A's (row tiles x column tiles of kp) first, then B's (kp tiles x column tiles of n).
__host__ __device__ constexpr int a_tiles(int m, int k) { return cdiv(m, TILE) * cdiv(padded_k(k), TILE); }
__host__ __device__ constexpr int prepass_blocks(int m, int n, int k)
{
    return a_tiles(m, k) + cdiv(padded_k(k), TILE) * cdiv(n, TILE);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// fp32 -> tf32, rounded to nearest (ties away from zero), as an fp32 with its low 13 bits zero. The mask keeps
// that true whatever cvt leaves in the bits tf32 does not have.
__device__ __forceinline__ float tf32_rna(float x)
{
    uint32_t bits;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
    return __uint_as_float(bits & 0xFFFFE000u);
}

// x = big + small (+ at most ~2^-23 |x|). An infinite big (x infinite, or rounded past FLT_MAX) gets small = 0
// rather than inf - inf = NaN.
__device__ __forceinline__ void split(float x, float& big, float& small)
{
    big = tf32_rna(x);
    small = isfinite(big) ? tf32_rna(x - big) : 0.f;
}
#endif

}  // namespace wgmma_3xtf32

#if HOPPER_SM90A
namespace wgmma_ws {
// wgmma_tf32's operands over A3 and BT3 (config.cuh's ThreeProducts): of the GEMM's ktiles k steps, three blocks
// of ktiles / 3, the third reads A3's first block (A_big) and BT3's second (B_bigᵀ).
struct Op3xTf32 : OpTf32, ThreeProducts {
    static_assert(wgmma_3xtf32::K_ALIGN == BK, "a block of k is a whole number of k steps");
};
}  // namespace wgmma_ws
#endif

// The pre-pass: one 32 x 32 tile per block. A's tiles copy rows (no transpose): each warp reads 32 consecutive k
// of a row and writes them twice. B's tiles are transposed through shared memory (padded row: no bank
// conflicts), so both the reads of B's rows (along n) and the writes of BT3's rows (along k) are coalesced.
// Columns k..kp-1 are written as zeros; nothing past kp is touched.
extern "C" __global__ void __launch_bounds__(wgmma_3xtf32::PREPASS_THREADS)
    wgmma_3xtf32_split(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ a3,
                       float* __restrict__ bt3, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace wgmma_3xtf32;
#if __CUDA_ARCH__ >= 900
    // Programmatic dependent launch: the GEMM may launch now (it waits for this grid to complete before reading
    // A3 and BT3); this grid waits for the previous one (the last GEMM reads A3 and BT3) before writing.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    __shared__ float tile[TILE][TILE + 1];
    const int kp = padded_k(k);
    const size_t pitch = static_cast<size_t>(stored_k(k));
    const int tx = threadIdx.x, ty = threadIdx.y;
    int t = blockIdx.x;
    const int ta = a_tiles(m, k);
    if (t < ta) {
        const int kt = cdiv(kp, TILE);
        const int r0 = (t / kt) * TILE, c = (t % kt) * TILE + tx;
        if (c >= kp) return;
        float x[TILE / TILE_ROWS];  // all loads first, so that a thread has all of them in flight at once
#pragma unroll
        for (int j = 0; j < TILE / TILE_ROWS; ++j) {
            const int r = r0 + ty + TILE_ROWS * j;
            x[j] = (r < m && c < k) ? A[static_cast<size_t>(r) * k + c] : 0.f;
        }
#pragma unroll
        for (int j = 0; j < TILE / TILE_ROWS; ++j) {
            const int r = r0 + ty + TILE_ROWS * j;
            if (r < m) {
                float big, small;
                split(x[j], big, small);
                float* row = a3 + static_cast<size_t>(r) * pitch;
                row[c] = big;
                row[kp + c] = small;
            }
        }
        return;
    }
    t -= ta;
    const int nt = cdiv(n, TILE);
    const int k0 = (t / nt) * TILE, n0 = (t % nt) * TILE;
#pragma unroll
    for (int j = 0; j < TILE / TILE_ROWS; ++j) {  // tile[k - k0][n - n0] = B[k][n]
        const int i = ty + TILE_ROWS * j, kk = k0 + i, nn = n0 + tx;
        tile[i][tx] = (kk < k && nn < n) ? B[static_cast<size_t>(kk) * n + nn] : 0.f;
    }
    __syncthreads();
    const int kk = k0 + tx;
    if (kk >= kp) return;
#pragma unroll
    for (int j = 0; j < TILE / TILE_ROWS; ++j) {  // BT3 row n: [small | big] at column kk of each block
        const int i = ty + TILE_ROWS * j, nn = n0 + i;
        if (nn < n) {
            float big, small;
            split(tile[tx][i], big, small);
            float* row = bt3 + static_cast<size_t>(nn) * pitch;
            row[kk] = small;
            row[kp + kk] = big;
        }
    }
#endif
}
