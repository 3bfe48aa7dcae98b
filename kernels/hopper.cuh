// Shared Hopper (sm_90a) device helpers for the tensor-core rungs (wgmma_tma, wgmma_warp_specialized, wgmma_tf32,
// wgmma_int8): shared-memory addresses, mbarriers, TMA (bulk tensor) loads with and without cluster multicast,
// cluster rank / sync, named barriers, register reallocation, wgmma descriptors, fences and the wgmma instructions
// the rungs use, the guarded accumulator stores and reductions, and flags in global memory.
//
// Everything lives in namespace `hopper` and is compiled only for the arch-specific sm_90a target
// (HOPPER_SM90A == 1); for sm_80 / sm_90 and the host pass the header defines nothing but the macro, so the
// kernel files that include it still build there (their bodies are guarded the same way).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HOPPER_SM90A 1
#else
#define HOPPER_SM90A 0
#endif

#if HOPPER_SM90A
namespace hopper {

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ------------------------------------------------------------------------------------------- mbarriers
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Make the initialised barriers visible to the copy engine and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

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

__device__ __forceinline__ void mbar_arrive_local(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// mbar_arrive_local where `arrives` holds, as a predicated instruction: a branch around the arrive instead (one lane
// arriving for its warp, inside the block-scaled consumers' k step) made ptxas spill 1,060 bytes there.
__device__ __forceinline__ void mbar_arrive_local_if(uint32_t bar, bool arrives)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %1, 0;\n"
        "@p mbarrier.arrive.shared::cta.b64 _, [%0];\n"
        "}\n" ::"r"(bar),
        "r"(static_cast<uint32_t>(arrives))
        : "memory");
}

// Arrive on the barrier at the same shared offset in CTA `rank` of this cluster (possibly this CTA).
// Default (.release.cta) semantics on purpose: ".release.cluster" compiles to MEMBAR.ALL.GPU before every
// arrive, which waits for this thread's outstanding global stores (an epilogue) and cost the warp-specialised
// kernel ~40 % of its throughput (413 vs 711 TF/s). The ordering needed is "this warpgroup's wgmma reads of the stage have
// retired" (wgmma.wait_group) before the peer's copy engine overwrites it.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" ::"r"(bar),
        "r"(rank)
        : "memory");
}

// ------------------------------------------------------------------------------------------- small copies
// One 4-byte element global -> shared through L2 (cp.async), completing asynchronously.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}

// Arrive on `bar` once this thread's cp.async copies so far have landed, counted as one of the barrier's expected
// arrivals (.noinc: its count includes them).
__device__ __forceinline__ void cp_async_arrive(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ float ld_shared_f32(uint32_t addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}

// ------------------------------------------------------------------------------------------- TMA, clusters
// 2-D tiled bulk copy global -> shared, completing on `bar`. c0 is the innermost (column) coordinate.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}

// Same copy, written to the same shared offsets (and signalling the same barrier offset) in every CTA of
// the cluster named in `mask`.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0,
                                                      int c1, uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
        : "memory");
}

// A K-major operand tile of 2 * HALF_ROWS rows (Bt for the tf32 and int8 rungs), as two TMA boxes of HALF_ROWS rows
// and HALF_BYTES bytes each. With a cluster of 2, CTA `rank` loads half `rank` into both CTAs (each CTA's k step
// needs the same Bt rows), so each loads half the bytes from L2.
template <int CLUSTER, int HALF_BYTES, int HALF_ROWS>
__device__ __forceinline__ void load_halves(uint32_t dst, const CUtensorMap* map, uint32_t bar, int k0, int row0,
                                            uint32_t rank)
{
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        if constexpr (CLUSTER == 1)
            tma_load_2d(dst + j * HALF_BYTES, map, bar, k0, row0 + HALF_ROWS * j);
        else if (j == static_cast<int>(rank))
            tma_load_2d_multicast(dst + j * HALF_BYTES, map, bar, k0, row0 + HALF_ROWS * j,
                                  static_cast<uint16_t>((1u << CLUSTER) - 1));
    }
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Named barrier `id` (1..15) over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier(uint32_t id, uint32_t threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Arrive at named barrier `id` without waiting (the other `threads` minus these wait at it with named_barrier).
__device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t threads)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}

// ------------------------------------------------------------------------------------------- wgmma
// Shared-memory matrix descriptor, 128-byte swizzle (mode 1 in bits 62-63); offsets in bytes. Built in two
// halves so that loops can keep only the low word (address and LBO) in a register: desc_lo, plus 16-byte
// units to move on, then desc_join with the constant high word (SBO, swizzle).
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, uint32_t lbo) { return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16); }
__device__ __forceinline__ uint64_t desc_join(uint32_t lo, uint32_t sbo)
{
    return static_cast<uint64_t>(lo) | (static_cast<uint64_t>((sbo >> 4) | (1u << 30)) << 32);
}
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return desc_join(desc_lo(addr, lbo), sbo);
}
// The shared-memory address that a low descriptor word starts at, less the CTA's window (desc_lo's inverse for the
// low 18 bits). A descriptor keeps those 18 bits and the tensor cores add the executing CTA's window; in a cluster a
// CTA's own shared::cta addresses carry that window in the bits above (rank 1's are not rank 0's), so an address for
// ld.shared or ldmatrix adds shared_window of an address in this CTA's shared memory back.
__device__ __forceinline__ uint32_t desc_address(uint32_t lo) { return (lo & 0x3FFFu) << 4; }
__device__ __forceinline__ uint32_t shared_window(uint32_t addr) { return addr & ~0x3FFFFu; }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#define HOPPER_D16_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define HOPPER_D16_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define HOPPER_D32_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define HOPPER_D32_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define HOPPER_D64_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define HOPPER_D64_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define HOPPER_D96_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define HOPPER_D96_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define HOPPER_D128_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define HOPPER_D128_OPS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// One wgmma with both operands in shared memory (descriptors desc_a, desc_b) and scale-d from scale_d: false, D =
// A * B (the accumulators' old values are ignored; no zeroing needed), true, D += A * B.
#define HOPPER_WGMMA(INSTR, REGS, OPS, NA, NB, NS, TAIL)                                                  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" NS ", 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned." INSTR " " REGS ", %" NA ", %" NB ", p" TAIL ";\n}\n"  \
                 : OPS                                                                                     \
                 : "l"(desc_a), "l"(desc_b), "r"(static_cast<uint32_t>(scale_d)))

// The m64nNkK shapes, N = 32, 64, 128, 192 or 256, in a function with d (N / 2 accumulators), desc_a, desc_b and
// scale_d in scope. KIND is the rest of the instruction after the N, e.g. "k8.f32.tf32.tf32"; ACC the accumulators'
// operand lists (empty: fp32, HOPPER_D*_OPS; _S32: int32, HOPPER_D*_OPS_S32); TAIL what follows scale-d: the float
// kinds' scale immediates ", 1, 1" (none for integers), then for 16-bit operands the transpose immediates (tf32 and
// 8-bit have none: both operands K-major).
#define HOPPER_WGMMA_BY_N(KIND, ACC, TAIL)                                                                        \
    static_assert(N == 32 || N == 64 || N == 128 || N == 192 || N == 256, "N = 32, 64, 128, 192 or 256");     \
    if constexpr (N == 32)                                                                                    \
        HOPPER_WGMMA("m64n32" KIND, HOPPER_D16_REGS, HOPPER_D16_OPS##ACC, "16", "17", "18", TAIL);             \
    else if constexpr (N == 64)                                                                               \
        HOPPER_WGMMA("m64n64" KIND, HOPPER_D32_REGS, HOPPER_D32_OPS##ACC, "32", "33", "34", TAIL);             \
    else if constexpr (N == 128)                                                                              \
        HOPPER_WGMMA("m64n128" KIND, HOPPER_D64_REGS, HOPPER_D64_OPS##ACC, "64", "65", "66", TAIL);            \
    else if constexpr (N == 192)                                                                              \
        HOPPER_WGMMA("m64n192" KIND, HOPPER_D96_REGS, HOPPER_D96_OPS##ACC, "96", "97", "98", TAIL);            \
    else                                                                                                      \
        HOPPER_WGMMA("m64n256" KIND, HOPPER_D128_REGS, HOPPER_D128_OPS##ACC, "128", "129", "130", TAIL)

// D(64xN, fp32) (+)= A(64x16, K-major, smem) * B(16xN, N-major, smem), fp16 or bf16 operands: scale-a = scale-b =
// 1, trans-a = 0 (K-major), trans-b = 1 (N-major B, i.e. row-major k x n); N = 64 (32 accumulators per thread), 128
// (64), 192 (96) or 256 (128). A_MN_MAJOR: A is read M-major and B K-major instead (trans-a = 1, trans-b = 0), for a
// kernel that computes C^T = B^T A^T with B's N-major rows as its A and A's K-major rows as its B
// (warp_specialized/operands_16bit.cuh, Op16Swapped), where N = 32 (16) takes 32 of A's rows (a decode step's tokens).
template <int N, typename T, bool A_MN_MAJOR = false>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool scale_d = true)
{
    static_assert(sizeof(T) == 2, "fp16 or bf16");
    constexpr bool f16 = __is_same(T, __half);
    if constexpr (!A_MN_MAJOR && f16) {
        HOPPER_WGMMA_BY_N("k16.f32.f16.f16", , ", 1, 1, 0, 1");
    } else if constexpr (!A_MN_MAJOR) {
        HOPPER_WGMMA_BY_N("k16.f32.bf16.bf16", , ", 1, 1, 0, 1");
    } else if constexpr (f16) {
        HOPPER_WGMMA_BY_N("k16.f32.f16.f16", , ", 1, 1, 1, 0");
    } else {
        HOPPER_WGMMA_BY_N("k16.f32.bf16.bf16", , ", 1, 1, 1, 0");
    }
}

// D(64xN, fp32) (+)= A(64x8, K-major, smem) * B(8xN, K-major, smem) in tf32 (fp32 data in shared memory; the tensor
// cores use its top 19 bits), N = 64 (32 accumulators per thread), 128 (64), 192 (96) or 256 (128). tf32 has no
// transpose immediates: both operands must be K-major. The tensor cores add the products into D truncating towards
// zero, so a long sum drifts (operands_3xtf32.cuh).
template <int N>
__device__ __forceinline__ void wgmma_m64k8_tf32(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool scale_d = true)
{
    HOPPER_WGMMA_BY_N("k8.f32.tf32.tf32", , ", 1, 1");
}

// The m64nNk* shapes with A from registers and B K-major in shared memory (tf32 and 8-bit), N = 64, 128, 192 or
// 256, in a function with d (N / 2 accumulators), a (this thread's four registers of A's fragment), desc_b and
// scale_d in scope; KIND, ACC and TAIL as HOPPER_WGMMA_BY_N's. A read into registers may come from any layout
// in shared memory (OpTf32Swapped, OpBytesSwapped: B's N-major rows as wgmma's A).
#define HOPPER_WGMMA_RS(INSTR, REGS, OPS, A, NB, NS, TAIL)                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" NS ", 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned." INSTR " " REGS ", " A ", %" NB ", p" TAIL ";\n}\n"  \
                 : OPS                                                                                     \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<uint32_t>(scale_d)))
#define HOPPER_WGMMA_RS_BY_N(KIND, ACC, TAIL)                                                                     \
    static_assert(N == 64 || N == 128 || N == 192 || N == 256, "N = 64, 128, 192 or 256");                    \
    if constexpr (N == 64)                                                                                    \
        HOPPER_WGMMA_RS("m64n64" KIND, HOPPER_D32_REGS, HOPPER_D32_OPS##ACC, "{%32, %33, %34, %35}", "36", "37",  \
                        TAIL);                                                                                \
    else if constexpr (N == 128)                                                                              \
        HOPPER_WGMMA_RS("m64n128" KIND, HOPPER_D64_REGS, HOPPER_D64_OPS##ACC, "{%64, %65, %66, %67}", "68", "69",  \
                        TAIL);                                                                                \
    else if constexpr (N == 192)                                                                              \
        HOPPER_WGMMA_RS("m64n192" KIND, HOPPER_D96_REGS, HOPPER_D96_OPS##ACC, "{%96, %97, %98, %99}", "100", "101", \
                        TAIL);                                                                                \
    else                                                                                                      \
        HOPPER_WGMMA_RS("m64n256" KIND, HOPPER_D128_REGS, HOPPER_D128_OPS##ACC, "{%128, %129, %130, %131}", "132", \
                        "133", TAIL)

// D(64xN, fp32) (+)= A(64x8, registers) * B(8xN, K-major, smem) in tf32: a[4] is this thread's fragment of its
// warp's 16 rows x 8 k of A (a[0]: row lane / 4, k lane % 4; a[1] the row 8 below; a[2], a[3] the same rows at k + 4),
// N = 64, 128, 192 or 256.
template <int N>
__device__ __forceinline__ void wgmma_m64k8_tf32_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                    bool scale_d = true)
{
    HOPPER_WGMMA_RS_BY_N("k8.f32.tf32.tf32", , ", 1, 1");
}

// D(64xN, fp32) (+)= A(64x32, K-major, smem) * B(32xN, K-major, smem), e4m3 operands (no transpose immediates for 8-bit
// operands either), N = 64 (32 accumulators per thread), 128 (64), 192 (96) or 256 (128). The tensor cores add the k
// products into D with fewer bits than an fp32 add keeps (docs/tensor-cores.md, FP8), which is why long sums lose
// precision.
template <int N>
__device__ __forceinline__ void wgmma_m64k32_e4m3(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                  bool scale_d = true)
{
    HOPPER_WGMMA_BY_N("k32.f32.e4m3.e4m3", , ", 1, 1");
}

// The same with A from registers: a[4] is this thread's fragment of its warp's 16 rows x 32 k of A (a[0]: row lane /
// 4, k 4 (lane % 4) .. + 3; a[1] the row 8 below; a[2], a[3] the same rows at k + 16; ldmatrix_x4's layout), N = 64
// to 256. A read from shared memory is read once per wgmma, so a k step issued in column parts re-reads it for every
// part; from registers it is read once (operands_bytes.cuh, a_fragments).
template <int N>
__device__ __forceinline__ void wgmma_m64k32_e4m3_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                     bool scale_d = true)
{
    HOPPER_WGMMA_RS_BY_N("k32.f32.e4m3.e4m3", , ", 1, 1");
}

// D(64xN, s32) (+)= A(64x32, K-major, smem) * B(32xN, K-major, smem), signed 8-bit operands, exact int32 accumulation
// (no .satfinite: the host keeps k where the sums cannot overflow), N = 64 (32 accumulators per thread), 128 (64), 192
// (96) or 256 (128). 8-bit operands have no transpose immediates either: both must be K-major, and integer wgmma takes
// no scale immediates, so the instruction ends at scale-d.
#define HOPPER_D16_OPS_S32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
#define HOPPER_D32_OPS_S32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
#define HOPPER_D64_OPS_S32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
#define HOPPER_D96_OPS_S32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95])
#define HOPPER_D128_OPS_S32 "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
template <int N>
__device__ __forceinline__ void wgmma_m64k32_s8(int (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool scale_d = true)
{
    HOPPER_WGMMA_BY_N("k32.s32.s8.s8", _S32, "");
}

// The same with A from registers (a[4] as wgmma_m64k32_e4m3_rs's).
template <int N>
__device__ __forceinline__ void wgmma_m64k32_s8_rs(int (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                   bool scale_d = true)
{
    HOPPER_WGMMA_RS_BY_N("k32.s32.s8.s8", _S32, "");
}
#undef HOPPER_WGMMA_RS_BY_N
#undef HOPPER_WGMMA_RS
#undef HOPPER_D16_OPS_S32
#undef HOPPER_D32_OPS_S32
#undef HOPPER_D64_OPS_S32
#undef HOPPER_D96_OPS_S32
#undef HOPPER_D128_OPS_S32

#undef HOPPER_WGMMA

// ------------------------------------------------------------------------------------------- accumulators
// Accumulator layout of m64nNk*: warp w of the warpgroup holds rows 16w..16w+15; lane l holds rows l/4 and
// l/4 + 8, columns 8j + 2(l%4) + {0, 1} in d[4j + {0,1}] (row l/4) and d[4j + {2,3}] (row l/4 + 8).
// (row0, col0) = this thread's first element in C.

// V is the accumulators' and C's 32-bit type: float (fp16, bf16, tf32 operands) or int (int8 operands).

// Visit this thread's accumulator pairs that lie inside C (rows < m, columns < n): pair(dst, v0, v1) where
// both columns are inside and dst is 8-byte aligned (n even), else one(dst, v) per element inside.
template <int NJ, typename V, class Pair, class One>  // NJ = N / 8 column groups
__device__ __forceinline__ void for_acc_guarded(const V* d, V* C, int m, int n, int row0, int col0, Pair pair, One one)
{
    const bool pairs = (n % 2) == 0;
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const int col = col0 + 8 * j;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 8 * h;
            if (row >= m) continue;
            V* dst = C + static_cast<size_t>(row) * n + col;
            const V v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
            if (pairs && col + 1 < n) {
                pair(dst, v0, v1);
            } else {
                if (col < n) one(dst, v0);
                if (col + 1 < n) one(dst + 1, v1);
            }
        }
    }
}

// Two adjacent 32-bit elements as one 8-byte vector (float2 or int2), for 8-byte stores.
template <typename V>
struct pair_of;
template <>
struct pair_of<float> {
    using type = float2;
};
template <>
struct pair_of<int> {
    using type = int2;
};
template <typename V>
using pair_t = typename pair_of<V>::type;

// C = d, guarded (8-byte stores where aligned).
template <int NJ, typename V>
__device__ __forceinline__ void store_acc_guarded(const V* d, V* C, int m, int n, int row0, int col0)
{
    for_acc_guarded<NJ>(
        d, C, m, n, row0, col0, [](V* p, V v0, V v1) { *reinterpret_cast<pair_t<V>*>(p) = pair_t<V>{v0, v1}; },
        [](V* p, V v) { *p = v; });
}

// C += d, guarded, with reductions performed at L2 (red.global.add, float2 where aligned): C must already
// hold a value (another CTA's partial sum) that is visible at GPU scope.
template <int NJ>
__device__ __forceinline__ void red_add_acc_guarded(const float* d, float* C, int m, int n, int row0, int col0)
{
    for_acc_guarded<NJ>(
        d, C, m, n, row0, col0,
        [](float* p, float v0, float v1) {
            asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v0), "f"(v1) : "memory");
        },
        [](float* p, float v) { atomicAdd(p, v); });
}

// The same for int32 sums (exact and independent of the order of the additions). PTX has no vector integer
// reduction: one red.global.add.s32 per element, written out because atomicAdd with its result unused compiled to
// ATOMG (which returns the old value), not RED.
__device__ __forceinline__ void red_add_s32(int* p, int v)
{
    asm volatile("red.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// One element's reduction, either type.
__device__ __forceinline__ void red_add(float* p, float v)
{
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void red_add(int* p, int v) { red_add_s32(p, v); }
template <int NJ>
__device__ __forceinline__ void red_add_acc_guarded(const int* d, int* C, int m, int n, int row0, int col0)
{
    for_acc_guarded<NJ>(
        d, C, m, n, row0, col0,
        [](int* p, int v0, int v1) {
            red_add_s32(p, v0);
            red_add_s32(p + 1, v1);
        },
        [](int* p, int v) { red_add_s32(p, v); });
}

// ------------------------------------------------------------------------------------------- flags in global memory
// Spin (one thread) until the 32-bit flag is at least `value`, with acquire semantics at GPU scope.
__device__ __forceinline__ void flag_wait_ge(const unsigned int* flag, unsigned int value)
{
    unsigned int v;
    do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } while (v < value);
}

}  // namespace hopper
#endif  // HOPPER_SM90A
