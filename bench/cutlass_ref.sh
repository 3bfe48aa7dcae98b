#!/usr/bin/env bash
# On the GPU machine: build bench/cutlass_ref.cu (CUTLASS's Hopper GEMM beside cuBLAS, kernel 8's tile and cluster)
# against CUTLASS's headers and run it. The machine reaches no registry, so the headers travel with the working
# tree: copy CUTLASS's include/ and tools/util/include/ into the ignored .cutlass/ (same layout) and carry it.
#                                                        bash bench/cutlass_ref.sh [CUTLASS_DIR [ncu]]
set -euo pipefail
dir=${1:-.cutlass}
out=${OUT:-/tmp/cutlass_ref}
mkdir -p "$out"
nvcc -std=c++17 -O3 -DNDEBUG -arch=sm_90a --expt-relaxed-constexpr -diag-suppress 20012 -I"$dir/include" \
    -I"$dir/tools/util/include" -o "$out/cutlass_ref" bench/cutlass_ref.cu -lcublas
if [[ ${2:-} == ncu ]]; then  # L2 and DRAM traffic of one warm launch each of CUTLASS's kernel and cuBLAS's
    ncu --clock-control none --kernel-name regex:"device_kernel|nvjet" --launch-skip 2 --launch-count 2 \
        --metrics gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum,dram__bytes_read.sum \
        "$out/cutlass_ref" profile
else
    "$out/cutlass_ref"
fi
