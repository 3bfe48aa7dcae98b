// Kernel 7: the first Hopper rung. One warpgroup (128 threads) per CTA computes a 64x128 tile of C with
// wgmma.mma_async m64n128k16 (fp16 or bf16 in, fp32 accumulate). Each BK = 64 slice of A (64x64) and B
// (64x128) arrives through the bulk tensor copy engine (TMA, 128-byte swizzle) and completes on one
// mbarrier. Single stage, no overlap of copy and math: this is the simplest correct wgmma + TMA kernel,
// the reference point for the warp-specialised kernel 8.
//
// Layouts. A is row-major m x k, i.e. K-major for wgmma: smem rows of 64 halves (128 bytes), 8-row
// swizzle atoms of 1024 bytes. B is row-major k x n, i.e. N-major ("transposed" B, imm-trans-b = 1): it is
// loaded as BN/64 strips of 64 k-rows x 64 n-columns; within a strip each k-row is 128 bytes, swizzled in
// groups of 8 k-rows. The descriptor's leading byte offset is then the distance between strips (the next
// 64 columns of N) and its stride byte offset the distance between groups of 8 k-rows (1024 bytes).
// Edges: the tensor maps zero-fill everything outside (m, k) and (k, n), so partial tiles need no special
// case in the main loop; the epilogue guards rows >= m and columns >= n.
//
// Host contract: grid (ceil(n/BN), ceil(m/BM)), block THREADS, dynamic smem SMEM_BYTES, no cluster.
// tmap_a: dims (k, m), box (rows BM, cols BK), 128B swizzle. tmap_b: dims (n, k), box (rows BK, cols 64),
// 128B swizzle. Both zero-fill out of bounds.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace wgmma_tma {

constexpr int BM = 64, BN = 128, BK = 64;
constexpr int THREADS = 128, STAGES = 1;
constexpr int BOX_A_ROWS = BM, BOX_A_COLS = BK;  // tensor map boxes, 128-byte swizzle
constexpr int BOX_B_ROWS = BK, BOX_B_COLS = 64;
constexpr int A_BYTES = BM * BK * 2;       // 8 KiB
constexpr int B_STRIP_BYTES = BK * 64 * 2;  // 8 KiB: 64 k-rows x 64 n-columns
constexpr int B_BYTES = BK * BN * 2;       // 16 KiB
constexpr int SMEM_BYTES = 1024 /* alignment slack */ + A_BYTES + B_BYTES + 16 /* mbarrier */;  // 25,616

static_assert(BK * 2 == 128, "one 128-byte swizzle row per K slice");
static_assert(BN % 64 == 0 && BN <= 256, "B is loaded in 64-column strips");

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
namespace detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Arrive once and announce `bytes` of copy-engine traffic for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_LOOP:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_LOOP;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// 2-D tiled bulk copy global -> shared, completing on `bar`. c0 is the innermost (column) coordinate.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}

// wgmma shared-memory descriptor, 128-byte swizzle (mode 1 in bits 62-63); offsets in bytes.
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
           (static_cast<uint64_t>(sbo >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// D(64x128, fp32) += A(64x16, K-major, smem) * B(16x128, N-major, smem). Operands: scale-d = 1,
// scale-a = scale-b = 1, trans-a = 0 (K-major), trans-b = 1 (N-major).
#define WGMMA_TMA_N128(TYPE)                                                                      \
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " "                  \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                                                                       \
                 "%64, %65, 1, 1, 1, 0, 1;\n"                                                      \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                                                                      \
                 : "l"(desc_a), "l"(desc_b))

template <typename T>
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t desc_a, uint64_t desc_b);

template <>
__device__ __forceinline__ void wgmma_n128<__half>(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    WGMMA_TMA_N128("f16");
}

template <>
__device__ __forceinline__ void wgmma_n128<__nv_bfloat16>(float (&d)[64], uint64_t desc_a, uint64_t desc_b)
{
    WGMMA_TMA_N128("bf16");
}
#undef WGMMA_TMA_N128

}  // namespace detail
#endif

}  // namespace wgmma_tma

template <typename T>
__device__ __forceinline__ void wgmma_tma_matmul(const CUtensorMap* tmap_a, const CUtensorMap* tmap_b, float* C,
                                                 int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using namespace wgmma_tma;
    using namespace wgmma_tma::detail;
    static_assert(sizeof(T) == 2, "fp16 or bf16 operands");

    // 128-byte swizzled tiles must start on a 1024-byte boundary of the shared window.
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t sA = (raw + 1023u) & ~1023u;
    const uint32_t sB = sA + A_BYTES;
    const uint32_t bar = sB + B_BYTES;

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * BN;

    if (tid == 0) {
        mbar_init(bar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;

    const int ktiles = (k + BK - 1) / BK;
    for (int kt = 0; kt < ktiles; ++kt) {
        if (tid == 0) {
            mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
            tma_load_2d(sA, tmap_a, bar, kt * BK, m0);
#pragma unroll
            for (int j = 0; j < BN / 64; ++j) tma_load_2d(sB + j * B_STRIP_BYTES, tmap_b, bar, n0 + 64 * j, kt * BK);
        }
        mbar_wait(bar, kt & 1);

        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // A: next 16 columns of K are 32 bytes further along each swizzled 128-byte row.
            // B: next 16 rows of K are two 1024-byte swizzle atoms further on.
            const uint64_t da = make_desc(sA + kk * 32, 16, 1024);
            const uint64_t db = make_desc(sB + kk * 2048, B_STRIP_BYTES, 1024);
            wgmma_n128<T>(d, da, db);
        }
        wgmma_commit();
        wgmma_wait_all();
        __syncthreads();  // every warp is done reading this stage before thread 0 refills it
    }

    // Accumulator layout of m64nNk16: warp w holds rows 16w..16w+15; lane l holds rows l/4 and l/4 + 8,
    // columns 8j + 2(l%4) + {0, 1} in registers d[4j + {0,1}] (row l/4) and d[4j + {2,3}] (row l/4 + 8).
    const int warp = tid / 32, lane = tid % 32;
    const int row0 = m0 + warp * 16 + lane / 4;
    const int col0 = n0 + 2 * (lane % 4);
    const bool pairs = (n % 2) == 0;  // float2 stores are 8-byte aligned only for even n
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 8 * h;
            if (row >= m) continue;
            float* dst = C + static_cast<size_t>(row) * n + col;
            const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
            if (pairs && col + 1 < n) {
                *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
            } else {
                if (col < n) dst[0] = v0;
                if (col + 1 < n) dst[1] = v1;
            }
        }
    }
#endif
}
