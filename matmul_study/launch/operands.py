"""The operands a launch works on: the job's device buffers, and the copies of A or B that a kernel or library call
needs in another layout (a row pitch padded to 16 bytes for TMA, B transposed for K-major operands, a pre-pass's
outputs), each refreshed by its launch so that the copy is timed with it. Shared by launchers.py and the library
launchers in their own modules (cublaslt.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from matmul_study.core.specs import cdiv, pitch_elements


@dataclass
class DeviceBuffers:
    """The job's PyCUDA arrays: A (m x k), B (k x n) and C (m x n), row-major; for a scaled dtype (the 8-bit floats)
    `scales`, 2 float32 (scale_a, scale_b), which the GEMM multiplies its result by."""
    a: object
    b: object
    c: object
    scales: object | None = None


COPY_ROWS_UNITS = (16, 8, 4, 2, 1)  # kernels/copy_rows.cu's entries, copy_rows_<bytes>
COPY_ROWS_BLOCKS = 1024  # at most this many blocks of 256 threads, each taking every so many units


def copy_unit(*sizes: int) -> int:
    """The widest copy unit of kernels/copy_rows.cu that divides every size and address in `sizes` (bytes)."""
    return next(u for u in COPY_ROWS_UNITS if all(s % u == 0 for s in sizes))


@functools.lru_cache(maxsize=None)
def _loaded(source: str, name: str, signature: str, arch: str):
    """Kernel `name` of `source` (a helper of kernels/, not a matmul method) compiled for `arch`, loaded into the
    current context and prepared with `signature`, once per process."""
    import pycuda.driver as cuda

    from matmul_study.launch.kernels import compile_with_pycuda

    func = cuda.module_from_buffer(compile_with_pycuda(source, arch)).get_function(name)
    func.prepare(signature)
    return func


def helper_kernel(source: str, name: str, signature: str):
    """_loaded's kernel for the current context's device."""
    import pycuda.driver as cuda

    major, minor = cuda.Context.get_device().compute_capability()
    return _loaded(source, name, signature, f"sm_{major}{minor}")


class RowCopy:
    """A copy of `rows` rows of `row_bytes` bytes from `src` (row pitch `src_pitch` bytes) to `dst` (`dst_pitch`),
    by kernels/copy_rows.cu on the legacy default stream, the launches' own: called, it queues the copy."""

    def __init__(self, src: int, dst: int, rows: int, row_bytes: int, src_pitch: int, dst_pitch: int):
        from matmul_study.launch.kernels import COPY_ROWS_SOURCE

        unit = copy_unit(row_bytes, src_pitch, dst_pitch, src, dst)
        func = helper_kernel(COPY_ROWS_SOURCE, f"copy_rows_{unit}", "PPIIII")
        grid = (max(1, min(-(-rows * row_bytes // unit // 256), COPY_ROWS_BLOCKS)), 1, 1)
        args = (src, dst, np.uint32(rows), np.uint32(row_bytes // unit), np.uint32(src_pitch // unit),
                np.uint32(dst_pitch // unit))
        self._launch = lambda: func.prepared_call(grid, (256, 1, 1), *args)

    def __call__(self) -> None:
        self._launch()


class PitchedOperand:
    """An operand as TMA reads it. A row pitch that is not a multiple of 16 bytes (k = 65 in fp16, say) cannot
    be described by a tensor map, so such an operand is copied into a padded buffer on every launch (RowCopy), and
    that copy is part of the timed launch. The tensor map keeps the logical width, so the padding reads as zeros."""

    def __init__(self, source, rows: int, cols: int, itemsize: int):
        import pycuda.driver as cuda

        self.rows, self.cols, self.itemsize = rows, cols, itemsize
        self.pitch = pitch_elements(cols, itemsize)
        self.copy = None
        self.pointer = int(source.gpudata)
        if self.pitch != cols:
            self._padded = cuda.mem_alloc(max(1, rows * self.pitch * itemsize))
            self.pointer = int(self._padded)
            self.copy = RowCopy(int(source.gpudata), self.pointer, rows, cols * itemsize, cols * itemsize,
                                self.pitch * itemsize)

    def refresh(self) -> None:
        if self.copy is not None:
            self.copy()


TRANSPOSE_TILE = 64  # kernels/transpose_bytes.cu: a block of 256 threads per 64 x 64 tile
# Bᵀ's rows start on 128-byte lines: where K's bytes are not a multiple of 128, a tensor map's box rows (128 bytes
# of K) straddle two lines each, and the 8-bit rungs' builds without a cluster ran far behind (an H200, x cuBLASLt's
# fast line, 4096x4096x4080: cluster1 0.72 against 0.99 with the rows padded; small-problems/bt-pitch-*.txt).
TRANSPOSED_ROW_BYTES = 128


class ByteTransposedOperand(PitchedOperand):
    """Bᵀ (n x k, K-major) of a 1-byte B (int8), for the int8 rung and cuBLAS's int8 call: tensor cores read 8-bit
    operands only K-major. cuBLAS has no 8-bit geam, so kernels/transpose_bytes.cu rewrites it on every launch,
    timed with the GEMM. Its pitch is padded to 16 bytes (TMA's and cuBLAS's alignment rules); the padding, and
    rows up to `min_rows` below the n rows of Bᵀ, are zeros that no launch overwrites."""

    def __init__(self, source, rows: int, cols: int, min_rows: int = 0, min_pitch: int = 0):
        import pycuda.driver as cuda

        self.rows, self.cols, self.itemsize = cols, rows, 1
        self.pitch = pitch_elements(max(rows, min_pitch), 1)  # min_pitch: zero columns a library's K padding reads
        self.copy = None
        size = max(1, max(cols, min_rows) * self.pitch)
        self._buffer = cuda.mem_alloc(size)
        cuda.memset_d8(self._buffer, 0, size)
        self.pointer = int(self._buffer)
        from matmul_study.launch.kernels import TRANSPOSE_BYTES_SOURCE

        func = helper_kernel(TRANSPOSE_BYTES_SOURCE, "transpose_bytes", "PPiiii")
        grid = (-(-cols // TRANSPOSE_TILE), -(-rows // TRANSPOSE_TILE), 1)
        args = (source.gpudata, self._buffer, np.int32(rows), np.int32(cols), np.int32(cols), np.int32(self.pitch))
        self._launch = lambda: func.prepared_call(grid, (256, 1, 1), *args)

    def refresh(self) -> None:
        self._launch()


def transposed_operand(source, rows: int, cols: int, itemsize: int, storage: str) -> PitchedOperand:
    """Bᵀ of a 1-byte B (rows x cols) for a kernel that reads B K-major: the byte transpose, each of its rows
    starting on a 128-byte line (TRANSPOSED_ROW_BYTES). (32-bit operands come transposed from their method's
    pre-pass: wgmma_tf32's, 3xTF32's.)"""
    if itemsize != 1:
        raise ValueError(f"B is transposed by the launcher only for 1-byte storage, not {storage}: a method with "
                         "32-bit operands read K-major writes Bᵀ in its pre-pass (specs.Prepass)")
    return ByteTransposedOperand(source, rows, cols, min_pitch=cdiv(rows, TRANSPOSED_ROW_BYTES) * TRANSPOSED_ROW_BYTES)


class PrepassOperand:
    """A buffer that the method's pre-pass writes and its tensor maps read (specs.PrepassOutput): rows x cols
    with the row pitch padded to 16 bytes, allocated once per launcher; the pre-pass, not a copy, refreshes it.
    `storage`: the dtype name of its elements where they are not the job's (PrepassOutput.storage)."""

    def __init__(self, rows: int, cols: int, itemsize: int, storage: str | None = None):
        import pycuda.driver as cuda

        self.rows, self.cols, self.itemsize, self.storage = rows, cols, itemsize, storage
        self.pitch = pitch_elements(cols, itemsize)
        self._buffer = cuda.mem_alloc(max(1, rows * self.pitch * itemsize))
        self.pointer = int(self._buffer)

    def refresh(self) -> None:
        pass


class ZeroPaddedBytes(PitchedOperand):
    """A 1-byte operand (rows x cols) inside a zeroed buffer of at least rows_padded rows whose pitch covers
    cols_padded (and 16 bytes), rewritten from the source on every launch (refresh), so that the copy is timed: the
    zeros past the source's rows and columns are the padding a library's alignment rules ask for."""

    def __init__(self, source, rows: int, cols: int, rows_padded: int, cols_padded: int):
        import pycuda.driver as cuda

        self.rows, self.cols, self.itemsize = rows, cols, 1
        self.pitch = pitch_elements(max(cols, cols_padded), 1)
        size = max(1, max(rows, rows_padded) * self.pitch)
        self._padded = cuda.mem_alloc(size)
        cuda.memset_d8(self._padded, 0, size)
        self.pointer = int(self._padded)
        self.copy = RowCopy(int(source.gpudata), self.pointer, rows, cols, cols, self.pitch)


class KMajorBytes:
    """A, Bᵀ and C of a row-major GEMM on 1-byte operands as a library's "TN" call wants them (cuBLAS int8, cuBLASLt
    FP8: both operands K-major): our A as stored (m x k row-major is K-major), Bᵀ rewritten from B by the byte
    transpose, and n, k and m padded to n_padded, k_padded and m_padded (the library's alignment rules; m_padded
    None: m) with zeros, which add nothing to the sums: the rows of Bᵀ past n, the columns past k of Bᵀ and, through
    a zero-padded copy of A, of A, and that copy's rows past m; C then goes through a padded buffer, copied back.
    run(call) does the copies around the call, so they are timed with it."""

    def __init__(self, buffers: DeviceBuffers, m: int, n: int, k: int, n_padded: int, k_padded: int,
                 c_itemsize: int = 4, m_padded: int | None = None):
        import pycuda.driver as cuda

        self.m, self.n, self.k = m if m_padded is None else m_padded, n_padded, k_padded
        a_op = ZeroPaddedBytes(buffers.a, m, k, self.m, self.k) if (m, k) != (self.m, self.k) else None
        self.a_ptr, self.ld_a = (a_op.pointer, a_op.pitch) if a_op else (int(buffers.a.gpudata), k)
        self.bt = ByteTransposedOperand(buffers.b, k, n, min_rows=self.n, min_pitch=self.k)
        padded_c = n != self.n or m != self.m
        self._c_padded = cuda.mem_alloc(max(1, self.m * self.n * c_itemsize)) if padded_c else None
        self._back = None
        if self._c_padded is not None:
            self._back = RowCopy(int(self._c_padded), int(buffers.c.gpudata), m, n * c_itemsize, self.n * c_itemsize,
                                 n * c_itemsize)
        self.c_ptr = int(self._c_padded) if self._c_padded is not None else int(buffers.c.gpudata)
        self._before = [op.refresh for op in (a_op, self.bt) if op is not None]
        self._keep = (a_op,)

    def run(self, call) -> None:
        for step in self._before:
            step()
        call()
        if self._back is not None:
            self._back()
