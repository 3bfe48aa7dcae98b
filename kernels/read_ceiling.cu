// Not a matmul method: a measurement helper (bench/read_ceiling.py). It reads N bytes once and does nothing else, so
// the shortest time it takes, launched back to back as the study launches its GEMMs, is the ceiling of any kernel
// that must read those bytes: a decode GEMM's weights, say, whose share of HBM bandwidth the report gives. Each
// thread keeps U 16-byte loads in flight (a grid-stride loop, U strides at a time); the XOR of what it read is
// stored only if it equals a constant no input of the tool makes, so that the loads cannot be dropped.
#pragma once

template <int U>
__device__ __forceinline__ void read_once(const uint4* __restrict__ p, unsigned long long chunks, unsigned int* sink)
{
    unsigned int acc = 0;
    unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (; i + (U - 1) * stride < chunks; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldg(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < chunks; i += stride) {
        const uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

// `chunks` 16-byte chunks from p, 4 or 8 loads in flight per thread.
extern "C" __global__ void read_ceiling_4(const uint4* p, unsigned long long chunks, unsigned int* sink)
{
    read_once<4>(p, chunks, sink);
}
extern "C" __global__ void read_ceiling_8(const uint4* p, unsigned long long chunks, unsigned int* sink)
{
    read_once<8>(p, chunks, sink);
}
// The launch alone: the floor under every kernel timed this way.
extern "C" __global__ void read_ceiling_empty(const uint4*, unsigned long long, unsigned int*) {}
