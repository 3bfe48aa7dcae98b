#!/usr/bin/env bash
# On the GPU machine: build bench/cutlass_ref.cu (CUTLASS's Hopper GEMM beside cuBLAS, kernel 8's tile and cluster)
# against CUTLASS's headers and run it. The machine reaches no registry, so the headers travel with the working
# tree: copy CUTLASS's include/ and tools/util/include/ into the ignored .cutlass/ (same layout) and carry it.
#                                                                   bash bench/cutlass_ref.sh [CUTLASS_DIR]
set -euo pipefail
dir=${1:-.cutlass}
out=${OUT:-/tmp/cutlass_ref}
mkdir -p "$out"
nvcc -std=c++17 -O3 -DNDEBUG -arch=sm_90a --expt-relaxed-constexpr -diag-suppress 20012 -I"$dir/include" \
    -I"$dir/tools/util/include" -o "$out/cutlass_ref" bench/cutlass_ref.cu -lcublas
"$out/cutlass_ref"
