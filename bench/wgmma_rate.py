#!/usr/bin/env python3
"""How fast the tensor cores take kernel 8's k step, with nothing else in the way (H200 / H100, sm_90a).

Kernel 8's trace (tc_bench 8trace) puts a k step of one 128x256 tile (BK = 64) at ~1011 cycles, and a sweep over k
(tc_bench --time-shapes) puts cuBLAS's at ~2.5 % less. This asks the tensor cores alone: one CTA per SM, operands
fixed in shared memory (no copies, no barriers), the consumer warpgroups issuing the same wgmma groups in a loop,
clock64 around the loop. Forms (cycles per 128x256x64 step, both consumer warpgroups together):

  ours        2 warpgroups x 4 m64n256k16, A K-major, B N-major (as kernel 8), one group in flight
  ours_wait0  the same, each group waited for before the next (no group in flight)
  one_wg      1 warpgroup x 4 m64n256k16 (half the step's work; reported per whole step)
  b_kmajor    as ours, B K-major
  n128        2 warpgroups x 8 m64n128k16 (two 64-register halves, as the 8n128 variant)
  swapped     cuBLAS's roles: wgmma A = our B (N-major, 64 columns of n), wgmma B = our A (K-major, N = 128 rows
              of m); each warpgroup 2 x m64n128k16 per k16 over its 128 columns of n

  python3 bench/wgmma_rate.py [--steps 4000] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KDIR = os.path.join(ROOT, "kernels")
FORMS = ["ours", "ours_wait0", "one_wg", "b_kmajor", "n128", "swapped"]

SOURCE = r"""
#include "hopper.cuh"
using namespace hopper;

// wgmma with explicit transpose immediates (scale-a, scale-b, tnsp-a, tnsp-b); fp16 in, fp32 accumulate.
// scale_d = 0 on the first step: the accumulators are never written by other instructions (ptxas would then
// serialise the wgmmas, warning C7515).
#define RATE_WGMMA(SHAPE, REGS, OPS, NA, NB, NS, TAIL)                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" NS ", 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 " REGS ", %" NA ", %" NB ", p, " TAIL ";\n}\n" \
                 : OPS : "l"(da), "l"(db), "r"(scale_d))
__device__ __forceinline__ void n256(float (&d)[128], uint64_t da, uint64_t db, bool tnsp_b, uint32_t scale_d)
{
    if (tnsp_b) RATE_WGMMA("m64n256k16", HOPPER_D128_REGS, HOPPER_D128_OPS, "128", "129", "130", "1, 1, 0, 1");
    else RATE_WGMMA("m64n256k16", HOPPER_D128_REGS, HOPPER_D128_OPS, "128", "129", "130", "1, 1, 0, 0");
}
__device__ __forceinline__ void n128(float* p, uint64_t da, uint64_t db, bool tnsp_a, bool tnsp_b, uint32_t scale_d)
{
    float(&d)[64] = *reinterpret_cast<float(*)[64]>(p);
    if (tnsp_a) RATE_WGMMA("m64n128k16", HOPPER_D64_REGS, HOPPER_D64_OPS, "64", "65", "66", "1, 1, 1, 0");
    else if (tnsp_b) RATE_WGMMA("m64n128k16", HOPPER_D64_REGS, HOPPER_D64_OPS, "64", "65", "66", "1, 1, 0, 1");
    else RATE_WGMMA("m64n128k16", HOPPER_D64_REGS, HOPPER_D64_OPS, "64", "65", "66", "1, 1, 0, 0");
}

// FORM: 0 ours, 1 ours_wait0, 2 one_wg, 3 b_kmajor, 4 n128, 5 swapped.
template <int FORM>
__device__ void rate(unsigned long long* out, float* sink, int steps)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
    const uint32_t sa = base, sb = base + 16384;  // A 128 x 64 halves (16 KiB), B 32 KiB
    for (int i = threadIdx.x; i < (16384 + 32768) / 4; i += blockDim.x)
        reinterpret_cast<uint32_t*>(smem + (base - smem_addr(smem)))[i] = 0x3c003c00u * (i & 1);  // 1.0 / 0
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128;
    if (wg == 0 || (FORM == 2 && wg == 2)) return;
    const int c = wg - 1;
    float d[128];
    const long long t0 = clock64();
    for (int s = 0; s < steps; ++s) {
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const uint32_t acc = (s > 0 || kk > 0) ? 1u : 0u;
            if (FORM == 5) {  // wgmma A: strip 2c + j of B (64 n x 16 k, N-major); wgmma B: all of A (K-major)
                const uint64_t db = make_desc(sa + kk * 32, 16, 1024);
#pragma unroll
                for (int j = 0; j < 2; ++j)
                    n128(d + 64 * j, make_desc(sb + (2 * c + j) * 8192 + kk * 2048, 8192, 1024), db, true, false, acc);
            } else if (FORM == 4) {
                const uint64_t da = make_desc(sa + c * 8192 + kk * 32, 16, 1024);
                n128(d, da, make_desc(sb + kk * 2048, 8192, 1024), false, true, acc);
                n128(d + 64, da, make_desc(sb + 2 * 8192 + kk * 2048, 8192, 1024), false, true, acc);
            } else if (FORM == 3) {  // B as 256 rows of n x 64 k (K-major, 128-byte rows)
                n256(d, make_desc(sa + c * 8192 + kk * 32, 16, 1024), make_desc(sb + kk * 32, 16, 1024), false, acc);
            } else {
                n256(d, make_desc(sa + c * 8192 + kk * 32, 16, 1024), make_desc(sb + kk * 2048, 8192, 1024), true, acc);
            }
        }
        wgmma_commit();
        if (FORM == 1) wgmma_wait<0>();
        else wgmma_wait<1>();
    }
    wgmma_wait<0>();
    const long long t1 = clock64();
    float acc = 0.f;
    for (int i = 0; i < 128; ++i) acc += d[i];
    if (acc == 12345.f) sink[threadIdx.x] = acc;  // keep the results alive
    if (threadIdx.x % 128 == 0) out[blockIdx.x * 2 + c] = static_cast<unsigned long long>(t1 - t0);
}

#define RATE_ENTRY(F) \
    extern "C" __global__ void __launch_bounds__(384, 1) rate##F(unsigned long long* out, float* sink, int steps) \
    { rate<F>(out, sink, steps); }
RATE_ENTRY(0)
RATE_ENTRY(1)
RATE_ENTRY(2)
RATE_ENTRY(3)
RATE_ENTRY(4)
RATE_ENTRY(5)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/wgmma_rate"))
    a = ap.parse_args()
    import cupy as cp
    import numpy as np

    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="wgmma_rate_")
    cu, cubin = os.path.join(work, "rate.cu"), os.path.join(work, "rate.cubin")
    with open(cu, "w") as f:
        f.write(SOURCE)
    p = subprocess.run(["nvcc", "--cubin", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-O3", "-Xptxas",
                        "-v", "-I", KDIR, "-o", cubin, cu], capture_output=True, text=True)
    print(p.stdout + p.stderr, flush=True)
    p.check_returncode()
    mod = cp.RawModule(path=cubin)
    nsm = cp.cuda.Device().attributes["MultiProcessorCount"]
    smem = 1024 + 16384 + 32768
    out = cp.zeros(2 * nsm, dtype=cp.uint64)
    sink = cp.zeros(384, dtype=cp.float32)
    results = {}
    for rep in range(2):  # the second pass is the one reported (the first warms the clocks up)
        for i, form in enumerate(FORMS):
            fn = mod.get_function(f"rate{i}")
            fn.max_dynamic_shared_size_bytes = smem
            out.fill(0)
            fn((nsm,), (384,), (out, sink, np.int32(a.steps)), shared_mem=smem)
            cp.cuda.runtime.deviceSynchronize()
            cyc = cp.asnumpy(out).reshape(nsm, 2).astype(np.float64)
            per_step = cyc[:, 0] / a.steps if form == "one_wg" else cyc.max(axis=1) / a.steps
            if form == "one_wg":
                per_step = per_step * 2  # one warpgroup did half of a 128x256x64 step per loop step
            results[form] = dict(median=float(np.median(per_step)), min=float(per_step.min()),
                                 max=float(per_step.max()))
    print("cycles per 128x256x64 step (both halves), median / min / max over the SMs:")
    for form, r in results.items():
        print(f"  {form:10s} {r['median']:8.1f} {r['min']:8.1f} {r['max']:8.1f}   "
              f"({2 * 128 * 256 * 64 / r['median']:.0f} FLOP per SM cycle)")
    with open(os.path.join(a.out, "wgmma_rate.json"), "w") as f:
        json.dump(dict(steps=a.steps, sms=nsm, cycles_per_step=results), f, indent=1)


if __name__ == "__main__":
    main()
