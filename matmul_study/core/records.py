"""Quantities and record shapes shared by every stage: the work of a product, the job and calibration columns,
the burst sample limit and the config hash. Measuring writes them, analysis and presenting read them; keeping them
here lets the report and the tables know them without importing the code that measures."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

# What identifies one job in every table. `variant` is the method's configuration (core/configs.py); tables
# collated from result files without it read "default" there (analysis.collate.add_variant).
JOB_KEYS = ["method", "dtype", "block", "variant", "m", "k", "n"]


@dataclass(frozen=True)
class JobKey:
    """A job as its result path names it (JOB_KEYS): what a job measured by a worker sends, without resolving its
    records (measure.runner.Job, which adds them, is measured)."""
    method: str
    dtype: str
    block: int
    m: int
    k: int
    n: int
    variant: str = "default"

    @classmethod
    def from_wildcards(cls, wc) -> "JobKey":
        """From a result path's wildcards (a mapping, or Snakemake's object); paths without a variant (older
        workflows) are the default build."""
        get = wc.get if hasattr(wc, "get") else lambda key, default=None: getattr(wc, key, default)
        return cls(get("method"), get("dtype"), int(get("block")), int(get("m")), int(get("k")), int(get("n")),
                   get("variant") or "default")

    def __str__(self) -> str:
        built = "" if self.variant == "default" else f" [{self.variant}]"
        return f"{self.method} {self.dtype}{built} b{self.block} {self.m}x{self.k}x{self.n}"


def wildcard_words(words: list[str], required: tuple[str, ...]) -> dict[str, str]:
    """A job's wildcards from its command line's KEY=VALUE words (the plain commands of the GPU and compile steps);
    raises ValueError naming those of `required` that are missing, or a word without "="."""
    bad = [word for word in words if "=" not in word]
    if bad:
        raise ValueError(f"not KEY=VALUE: {', '.join(bad)}")
    wildcards = dict(word.split("=", 1) for word in words)
    missing = [key for key in required if key not in wildcards]
    if missing:
        raise ValueError(f"missing wildcards: {', '.join(missing)}")
    return wildcards


# One row of the calibration table: a device ceiling measured on one GPU.
CALIBRATION_COLUMNS = ["device_name", "device_uuid", "device_index", "ceiling", "value", "unit", "detail"]

# From an idle H200 the power limiter lets a heavy GEMM run at full clock for only 40-75 ms
# (measured with a probe kept in git history, removed at the bench/ rewrite; docs/measurement.md): a burst sample
# must be shorter than that, with room for a few of them.
BURST_SAMPLE_MAX_S = 0.025


# bench/compare.py's table (measure.compare.table), a row per case: these columns, one word each, around the check
# text, whose first word is BENCH_VERIFIED where every check of ours passed. analysis.tile_fit reads it back.
BENCH_BEFORE_CHECK = ("method", "variant", "dtype", "m x n x k", "batch")
BENCH_AFTER_CHECK = ("ms", "TF/s", "cuBLAS ms", "cuBLAS TF/s", "ratio", "pair")
BENCH_VERIFIED = "passed,"


def flops(m: int, k: int, n: int) -> int:
    """Useful floating-point operations of C = A·B: one multiply and one add per (i, j, l)."""
    return 2 * m * k * n


def gflops(m: int, k: int, n: int, seconds: float) -> float:
    return flops(m, k, n) / seconds / 1e9


# Measurement keys that choose which process runs a job (pipeline/worker.py), not what it measures: left out of the
# config hash and of the benchmark rules' params (Snakemake's rerun trigger), so that turning the worker on or off
# neither reruns a study's jobs nor mixes its results' hashes.
PROCESS_ONLY_MEASUREMENT_KEYS = ("worker", "worker_idle_s")


def measured_settings(measurement: dict) -> dict:
    """The measurement section without PROCESS_ONLY_MEASUREMENT_KEYS: what a result was measured with."""
    return {k: v for k, v in measurement.items() if k not in PROCESS_ONLY_MEASUREMENT_KEYS}


def config_hash(config: dict) -> str:
    """A short hash of the whole config but PROCESS_ONLY_MEASUREMENT_KEYS, recorded with every result."""
    if isinstance(config.get("measurement"), dict):
        config = {**config, "measurement": measured_settings(config["measurement"])}
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
