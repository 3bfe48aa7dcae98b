// CUTLASS's own Hopper GEMM beside cuBLAS, in one process, on kernel 8's problem (fp16 in, fp32 accumulate and out,
// row-major A, B and C), as a third line for the 4096^3 question: does NVIDIA's open-source warp-specialised
// kernel, with kernel 8's tile (128 x 256 x 64) and cluster (2 x 1), match cuBLAS where kernel 8 stops at ~0.987?
// Not part of the study: a measurement tool (see bench/cutlass_ref.sh, which builds it on the GPU machine).
//
// Configurations (each verified against cuBLAS's result first, then timed in batches of back-to-back launches):
//   coop       KernelTmaWarpSpecializedCooperative, TMA warp-specialised cooperative epilogue, persistent scheduler
//   coop_pdl   the same, launched with programmatic dependent launch
//   auto       the collective builders' automatic choice of schedule and stage count for the same tile and cluster
//   coop_1x2   cooperative with the cluster along n instead (the two CTAs share A)
//   pingpong   KernelTmaWarpSpecializedPingpong, 128 x 128 x 64 per consumer warpgroup, cluster 2 x 1
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/device_memory.h"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

#define CHECK(x)                                                                            \
    do {                                                                                    \
        auto e = (x);                                                                       \
        if (e != 0) {                                                                       \
            std::printf("%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, static_cast<int>(e)); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

using Half = cutlass::half_t;
using RowMajor = cutlass::layout::RowMajor;
using CtaTile = Shape<_128, _256, _64>;  // kernel 8's CTA tile and k step
using Cluster = Shape<_2, _1, _1>;     // two CTAs along m, as kernel 8's cluster

template <class MainloopSchedule, class EpilogueSchedule, class TileShape = CtaTile, class ClusterShape = Cluster>
struct Config {
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, float, RowMajor, 4, float, RowMajor, 4,
        EpilogueSchedule>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Half, RowMajor, 8, Half, RowMajor, 8, float, TileShape, ClusterShape,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        MainloopSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                                        cutlass::gemm::PersistentScheduler>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};
using Coop = Config<cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative>;
using Auto = Config<cutlass::gemm::collective::KernelScheduleAuto, cutlass::epilogue::collective::EpilogueScheduleAuto>;
using Coop1x2 = Config<cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                       CtaTile, Shape<_1, _2, _1>>;
using Pingpong = Config<cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized,
                        Shape<_128, _128, _64>, Cluster>;

struct Problem {
    int m, n, k;
    Half *a, *b;
    float *c, *ref;
};

template <class Gemm>
struct Runner {
    Gemm gemm;
    typename Gemm::Arguments args;
    cutlass::device_memory::allocation<uint8_t> workspace;
    bool pdl;

    Runner(const Problem& p, bool pdl_) : pdl(pdl_)
    {
        using K = typename Gemm::GemmKernel;
        auto sa = cutlass::make_cute_packed_stride(typename K::StrideA{}, make_shape(p.m, p.k, 1));
        auto sb = cutlass::make_cute_packed_stride(typename K::StrideB{}, make_shape(p.n, p.k, 1));
        auto sc = cutlass::make_cute_packed_stride(typename K::StrideC{}, make_shape(p.m, p.n, 1));
        auto sd = cutlass::make_cute_packed_stride(typename K::StrideD{}, make_shape(p.m, p.n, 1));
        cutlass::KernelHardwareInfo hw;
        hw.device_id = 0;
        hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
        args = {cutlass::gemm::GemmUniversalMode::kGemm, {p.m, p.n, p.k, 1}, {p.a, sa, p.b, sb},
                {{1.f, 0.f}, p.c, sc, p.c, sd}, hw};
        workspace = cutlass::device_memory::allocation<uint8_t>(Gemm::get_workspace_size(args));
        CHECK(static_cast<int>(gemm.can_implement(args)));
        CHECK(static_cast<int>(gemm.initialize(args, workspace.get())));
    }
    void operator()() { CHECK(static_cast<int>(gemm.run(nullptr, nullptr, pdl))); }
};

static void cublas_gemm(cublasHandle_t h, const Problem& p, float* out)
{
    // Row-major C = A B is column-major C^T = B^T A^T.
    const float one = 1.f, zero = 0.f;
    CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.b, CUDA_R_16F, p.n, p.a, CUDA_R_16F, p.k,
                       &zero, out, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Holds the stream for `ns` while the host queues a batch behind it (as the pipeline's StreamHold).
__global__ void hold_ns(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// Per-launch ms of `batch` back-to-back launches, queued behind a 2 ms hold so that the host's queuing is not timed.
template <class F>
static float batch_ms(F&& launch, int batch)
{
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    hold_ns<<<1, 1>>>(2000000ull);
    CHECK(cudaEventRecord(e0));
    for (int i = 0; i < batch; ++i) launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    return ms / batch;
}

static double max_rel_diff(const Problem& p)
{
    const size_t count = static_cast<size_t>(p.m) * p.n;
    std::vector<float> got(count), want(count);
    CHECK(cudaMemcpy(got.data(), p.c, count * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(want.data(), p.ref, count * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < count; ++i) {
        num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        den += double(want[i]) * want[i];
    }
    return std::sqrt(num / den);
}

template <class Gemm>
static void compare(const char* name, const Problem& p, cublasHandle_t h, bool pdl, int reps, int batch)
{
    Runner<Gemm> run(p, pdl);
    CHECK(cudaMemset(p.c, 0xff, static_cast<size_t>(p.m) * p.n * 4));  // NaN
    run();
    CHECK(cudaDeviceSynchronize());
    const double rel = max_rel_diff(p);  // against cuBLAS's result (relative Frobenius)
    auto cub = [&] { cublas_gemm(h, p, p.ref); };
    for (int i = 0; i < 3; ++i) {
        run();
        cub();
    }
    std::vector<float> ours, theirs, pair;
    for (int r = 0; r < reps; ++r) {  // alternating batches
        ours.push_back(batch_ms(run, batch));
        theirs.push_back(batch_ms(cub, batch));
        pair.push_back(theirs.back() / ours.back());
    }
    auto median = [](std::vector<float> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    const double flop = 2.0 * p.m * p.n * p.k;
    std::printf("%-9s %5dx%5dx%5d  CUTLASS %7.1f TF/s  cuBLAS %7.1f TF/s  pair %.3f  rel vs cuBLAS %.1e%s\n", name, p.m,
                p.n, p.k, flop / median(ours) / 1e9, flop / median(theirs) / 1e9, median(pair), rel,
                rel < 1e-4 ? "" : "  MISMATCH");
}

int main(int argc, char** argv)
{
    // "profile": 4096^3 and the cooperative configuration only, for a profiler (bench/cutlass_ref.sh ncu).
    const bool profile = argc > 1 && std::string(argv[1]) == "profile";
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    for (int size : {4096, 8192}) {
        if (profile && size != 4096) break;
        Problem p{size, size, size, nullptr, nullptr, nullptr, nullptr};
        const size_t ab = static_cast<size_t>(size) * size;
        CHECK(cudaMalloc(&p.a, ab * 2));
        CHECK(cudaMalloc(&p.b, ab * 2));
        CHECK(cudaMalloc(&p.c, ab * 4));
        CHECK(cudaMalloc(&p.ref, ab * 4));
        std::vector<Half> host(ab);
        unsigned s = 12345;
        for (auto& x : host) {
            s = s * 1664525u + 1013904223u;
            x = Half(static_cast<float>((s >> 9) & 0xffff) / 65536.f - 0.5f);
        }
        CHECK(cudaMemcpy(p.a, host.data(), ab * 2, cudaMemcpyHostToDevice));
        for (auto& x : host) {
            s = s * 1664525u + 1013904223u;
            x = Half(static_cast<float>((s >> 9) & 0xffff) / 65536.f - 0.5f);
        }
        CHECK(cudaMemcpy(p.b, host.data(), ab * 2, cudaMemcpyHostToDevice));
        cublas_gemm(h, p, p.ref);
        CHECK(cudaDeviceSynchronize());
        const int reps = size <= 4096 ? 30 : 15, batch = 10;
        compare<Coop::Gemm>("coop", p, h, false, profile ? 1 : reps, profile ? 1 : batch);
        if (profile) break;
        cublas_gemm(h, p, p.ref);
        compare<Coop::Gemm>("coop_pdl", p, h, true, reps, batch);
        cublas_gemm(h, p, p.ref);
        compare<Auto::Gemm>("auto", p, h, false, reps, batch);
        cublas_gemm(h, p, p.ref);
        compare<Coop1x2::Gemm>("coop_1x2", p, h, false, reps, batch);
        cublas_gemm(h, p, p.ref);
        compare<Pingpong::Gemm>("pingpong", p, h, false, reps, batch);
        cublas_gemm(h, p, p.ref);
        compare<Pingpong::Gemm>("pp_pdl", p, h, true, reps, batch);
        CHECK(cudaFree(p.a));
        CHECK(cudaFree(p.b));
        CHECK(cudaFree(p.c));
        CHECK(cudaFree(p.ref));
    }
    return 0;
}
