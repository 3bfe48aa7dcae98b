"""Result files: one JSON per job, written atomically so a killed job never leaves half a result."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1


def _clean(value):
    """JSON has no NaN/inf: write them as null/strings that read back unambiguously."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_atomic(path: str | Path, record: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(_clean(record), f, indent=1, sort_keys=False)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~UMASK)  # mkstemp makes 0600; a result is as readable as any file
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()  # read once, at import: os.umask can only be read by setting it


REQUIRED = ("method", "dtype", "block", "m", "k", "n", "status")


class ResultFileError(ValueError):
    """A result file that cannot be read; the message names the file and says how to measure it again."""


def read(path: str | Path) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: not a valid result file ({exc}). Delete it and rerun to measure that job "
                              "again.") from None
    missing = [key for key in REQUIRED if key not in record] if isinstance(record, dict) else list(REQUIRED)
    if missing:
        raise ResultFileError(f"{path}: not a valid result file (no {', '.join(missing)}). Delete it and rerun to "
                              "measure that job again.")
    return record


def job_names(df) -> "pd.Series":
    """One readable name per row of a results table: "method dtype bBLOCK MxKxN", with " [VARIANT]" after the block
    for a configuration other than the default build."""
    names = df["method"].astype(str) + " " + df["dtype"].astype(str) + " b" + df["block"].astype(str)
    if "variant" in df:
        variant = df["variant"].fillna("default").astype(str)
        names = names + variant.map(lambda v: "" if v == "default" else f" [{v}]")
    return names + " " + df["m"].astype(str) + "x" + df["k"].astype(str) + "x" + df["n"].astype(str)
