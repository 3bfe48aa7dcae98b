// Not a matmul method: a measurement helper. It holds its stream while the host queues a whole batch of
// launches behind it, then the host releases it and the batch runs back to back at GPU speed, however long
// each launch took to queue (the blocking kernel of NVIDIA's nvbench).
#pragma once

__device__ __forceinline__ unsigned long long global_timer_ns()
{
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// `release` and `timed_out` live in mapped, page-locked host memory; volatile makes every poll re-read it.
extern "C" __global__ void hold_stream(const volatile int* release, int* timed_out, unsigned long long timeout_ns)
{
    const unsigned long long start = global_timer_ns();
    while (*release == 0) {
        // A full launch queue blocks the host before it can release us: give up rather than hang.
        if (global_timer_ns() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
    }
}
