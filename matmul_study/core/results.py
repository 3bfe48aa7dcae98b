"""Result files: one JSON per job, written atomically so a killed job never leaves half a result."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
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
    with replaced_whole(path) as tmp, open(tmp, "w") as f:
        json.dump(_clean(record), f, indent=1, sort_keys=False)


@contextlib.contextmanager
def replaced_whole(path: str | Path):
    """Yield a temporary name beside `path` (same folder, so the rename is atomic) for a writer that takes a file
    name (matplotlib, pandas); once it returns, the file is moved to `path` in one rename. A step stopped or killed
    mid-write leaves no file under the final name, only a hidden temporary one (removed here, or at the next start
    by pipeline.recovery): a file under its final name is whole, which is how recovery knows it was finished."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fchmod(f.fileno(), 0o666 & ~UMASK)  # mkstemp makes 0600; an output is as readable as any file
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """`text` (UTF-8) to `path`, whole or not at all (replaced_whole)."""
    with replaced_whole(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


# Room a job needs in its result folder: its result and its partial record are a few kB; a disk this full fails
# the write after the measurement anyway.
MIN_FREE_BYTES = 16 * 2**20


class ResultFolderError(OSError):
    """The folder a job writes its result to cannot take it; the message names the folder and what to do."""


def check_can_write(folder: str | Path, min_free: int = MIN_FREE_BYTES) -> None:
    """Before a job spends any time measuring: it can create (and remove) a file in `folder`, which exists or can
    be made, and the disk holding it has `min_free` bytes free. Otherwise ResultFolderError, in one line."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ResultFolderError(
            f"cannot write results to {folder} ({reason}): make it a folder this user can write to "
            f"(chmod u+w it, or move aside a file in its way), then rerun the same command") from None
    free = shutil.disk_usage(folder).free
    if free < min_free:
        raise ResultFolderError(
            f"the disk holding {folder} has {free / 2**20:.1f} MB free, under the {min_free / 2**20:.0f} MB a job "
            f"needs to write its result: free some space there, then rerun the same command")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


UMASK = _umask()  # read once, at import: os.umask can only be read by setting it


REQUIRED = ("method", "dtype", "block", "m", "k", "n", "status")
# The types of the fields the tables compute with: a result that holds anything else is refused by name, here,
# rather than failing somewhere inside pandas. A rate is null where the job failed; "inf" as _clean writes it.
_INT = ("block", "m", "k", "n")
_TEXT = ("method", "dtype", "status", "variant")
_RATES = ("gflops", "gflops_all_samples")
STATUSES = ("passed", "failed")


class ResultFileError(ValueError):
    """A result file that cannot be read; the message names the file and says how to measure it again. `kind`
    says why: "corrupt" (not JSON, or not a result at all) or "wrong-schema" (a key missing or of the wrong type)."""

    def __init__(self, message: str, kind: str = "corrupt"):
        super().__init__(message)
        self.kind = kind


def _is_rate(value) -> bool:
    return value is None or value in ("inf", "-inf") or (isinstance(value, (int, float)) and not isinstance(value, bool))


def schema_problems(record) -> list[str]:
    """What makes `record` not a result the tables can use (empty when it is one)."""
    if not isinstance(record, dict):
        return [f"a JSON {type(record).__name__}, not an object"]
    problems = [f"no {key}" for key in REQUIRED if key not in record]
    for key in _INT:
        if key in record and (not isinstance(record[key], int) or isinstance(record[key], bool)):
            problems.append(f"{key} is {record[key]!r}, not an integer")
    for key in _TEXT:
        if key in record and not isinstance(record[key], str):
            problems.append(f"{key} is {record[key]!r}, not text")
    if isinstance(record.get("status"), str) and record["status"] not in STATUSES:
        problems.append(f"status is {record['status']!r}, not one of {', '.join(STATUSES)}")
    for key in _RATES:
        if key in record and not _is_rate(record[key]):
            problems.append(f"{key} is {record[key]!r}, not a number")
    verification = record.get("verification", {})
    if not isinstance(verification, dict) or not isinstance(verification.get("passed", False), bool):
        problems.append("verification.passed is not true or false")
    sustained = record.get("sustained", {})
    if not isinstance(sustained, dict) or not _is_rate(sustained.get("gflops")):
        problems.append("sustained.gflops is not a number")
    return problems


def read(path: str | Path) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: not a valid result file ({exc}). Delete it and rerun to measure that job "
                              "again.") from None
    problems = schema_problems(record)
    if problems:
        kind = "wrong-schema" if isinstance(record, dict) else "corrupt"
        raise ResultFileError(f"{path}: not a valid result file ({'; '.join(problems)}). Delete it and rerun to "
                              "measure that job again.", kind)
    return record


def job_names(df) -> "pd.Series":
    """One readable name per row of a results table: "method dtype bBLOCK MxKxN", with " [VARIANT]" after the block
    for a configuration other than the default build."""
    names = df["method"].astype(str) + " " + df["dtype"].astype(str) + " b" + df["block"].astype(str)
    if "variant" in df:
        variant = df["variant"].fillna("default").astype(str)
        names = names + variant.map(lambda v: "" if v == "default" else f" [{v}]")
    return names + " " + df["m"].astype(str) + "x" + df["k"].astype(str) + "x" + df["n"].astype(str)
