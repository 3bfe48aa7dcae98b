"""The large inputs of a run, generated once and shared by its jobs.

Every method of a study multiplies the same matrices (inputs.generate: same seed, shape and dtype, same values),
and drawing them is a job's largest fixed cost at large sizes: about 1 s for two 8192 x 8192 fp32 matrices on
one core, 5 s for FP8 with its quantization. A run's jobs of one (shape, dtype) therefore read them from a file
that the first of them wrote. The key holds everything the values depend on, the text of inputs.py included, so
a file is never read for inputs it does not hold; a missing or unreadable one is generated again. The workflow
removes the folder when the run ends.

A process that runs many jobs (the measurement worker) also keeps the inputs it last read or drew, up to
KEEP_BYTES, so that the next job of the same shape and dtype takes them from memory instead of the file (0.3 to 1
s at 8192^3). Kept arrays are read-only: a job that wrote into its inputs would fail, not change the next job's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np

from matmul_study.core import dtypes
from matmul_study.measure import inputs

# Smaller problems are drawn faster than a file is written and read.
MIN_MULTIPLY_ADDS = 2048**3
# The workflow's folder for them (relative to its working directory), removed when a run ends.
RUN_DIRECTORY = "results/.inputs"
# The most bytes of inputs a process keeps in memory (at most a quarter of the host's memory available when it
# keeps them): the 8192^3 inputs of the default study's dtypes take about 3 GiB.
KEEP_BYTES = 4 * 2**30
_kept: OrderedDict[Path, inputs.Operands] = OrderedDict()  # the latest last


def _fingerprint() -> str:
    return hashlib.sha256(Path(inputs.__file__).read_bytes()).hexdigest()


def path_for(directory: str | os.PathLike, m: int, k: int, n: int, record: dtypes.DType, seed: int, low: float,
             high: float) -> Path:
    key = hashlib.sha256(json.dumps([m, k, n, record.name, seed, low, high, _fingerprint()]).encode()).hexdigest()
    return Path(directory) / f"{record.name}_{m}x{k}x{n}_{key[:16]}.npz"


def load_or_generate(m: int, k: int, n: int, dtype: dtypes.DType | str, seed: int, low: float = -5,
                     high: float = 5, directory: str | os.PathLike | None = None) -> inputs.Operands:
    """inputs.generate's operands, read from `directory` where an earlier job of the run left them (problems of
    at least MIN_MULTIPLY_ADDS), else generated and, with a directory, written there for the next job."""
    record = dtypes.get(dtype)
    if directory is None or m * k * n < MIN_MULTIPLY_ADDS:
        return inputs.generate(m, k, n, record, seed, low, high)
    path = path_for(directory, m, k, n, record, seed, low, high)
    if path in _kept:
        _kept.move_to_end(path)
        return _kept[path]
    try:
        operands = _read(path, record)
    except (OSError, KeyError, ValueError):  # not there yet (or left half-written by a killed run): generate it
        operands = inputs.generate(m, k, n, record, seed, low, high)
        _write(path, operands, record)
    _keep(path, operands)
    return operands


def _nbytes(operands: inputs.Operands) -> int:
    return sum(x.nbytes for x in (*operands, operands.scales))


def _keep(path: Path, operands: inputs.Operands) -> None:
    """Keep `operands` (read-only) as the latest, dropping the oldest kept beyond the budget (KEEP_BYTES, at most a
    quarter of the memory available now); operands alone past it are not kept."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        available = KEEP_BYTES
    budget = min(KEEP_BYTES, available // 4)
    for array in (*operands, operands.scales):
        array.flags.writeable = False
    _kept[path] = operands
    total = sum(_nbytes(kept) for kept in _kept.values())
    while _kept and total > budget:
        total -= _nbytes(_kept.popitem(last=False)[1])


def _read(path: Path, record: dtypes.DType) -> inputs.Operands:
    with np.load(path, allow_pickle=False) as stored:
        # ml_dtypes' types travel as their raw bits (device_view), which .npy stores without pickling.
        a, b = (stored[name].view(record.numpy) for name in ("a", "b"))
        quantization = json.loads(str(stored["quantization"]))
        return inputs.Operands(a, b, stored["scales"] if record.scaled else None, quantization)


def _write(path: Path, operands: inputs.Operands, record: dtypes.DType) -> None:
    """Written beside its final name and renamed into place: a reader sees the whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    a, b = operands
    try:
        with open(partial, "wb") as out:
            np.savez(out, a=a.view(record.device_view), b=b.view(record.device_view), scales=operands.scales,
                     quantization=np.array(json.dumps(operands.quantization)))
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)  # a full disk costs the next job a regeneration, not a failure


def clear(directory: str | os.PathLike = RUN_DIRECTORY) -> None:
    """Remove the run's shared inputs (gigabytes at 8192^3): the workflow calls this when a run ends."""
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
    _kept.clear()
