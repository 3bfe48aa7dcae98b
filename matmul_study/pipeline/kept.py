"""Results kept through a rerun. Snakemake deletes a job's result when the job starts again (its params, code or
input changed): a rerun that then fails or is stopped would lose a finished result. So `onstart` keeps each result
this run rewrites, with Snakemake's record of how it was made (its params, code and input), under results/.kept/
(outside results/runs: nothing that reads results there sees a kept copy). Where its job writes the new result, the
run's end drops the copy. Where it does not, the next start puts the result back, with its record, if it was
measured under the current config (the change was undone), and otherwise sets it aside beside its path, as the
start-up check does (result_check), so that its job is measured again: a restored result never stands for a config
it was not measured under.

Snakemake's records are read and put back where its file persistence keeps them (.snakemake/metadata/, its default
backend). Under another backend none is kept: a result put back then keeps the rerun's record, and Snakemake measures
its job again wherever that record differs from the current params."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from base64 import urlsafe_b64encode
from collections.abc import Iterable
from pathlib import Path

from matmul_study.pipeline.recovery import RUNS_DIR

KEPT_DIR = "results/.kept"
RECORD_SUFFIX = ".snakemake-record"  # beside a kept result: Snakemake's metadata record of it


def kept_copy(path: str | Path, workdir: Path) -> Path:
    """Where the result at `path` (relative to `workdir`, under results/runs) is kept."""
    return workdir / KEPT_DIR / (workdir / path).relative_to(workdir / RUNS_DIR)


def record_copy(kept: Path) -> Path:
    return kept.with_name(kept.name + RECORD_SUFFIX)


def snakemake_record(workdir: Path, path: str | Path) -> Path:
    """Snakemake's metadata record of the output `path` (as the rule names it, relative to `workdir`): its file
    persistence names it by the path in URL-safe base64, split into "@"-prefixed folders where longer than a file
    name may be."""
    root = workdir / ".snakemake" / "metadata"
    try:
        max_len = os.pathconf(root if root.is_dir() else workdir, "PC_NAME_MAX") or 255
    except (OSError, ValueError):
        max_len = 255
    encoded = urlsafe_b64encode(str(path).encode()).decode()
    parts = [encoded[i:i + max_len - 1] for i in range(0, len(encoded), max_len - 1)]
    return root.joinpath(*(f"@{part}" for part in parts[:-1]), parts[-1])


def _place(source: Path, target: Path, link: bool) -> None:
    """`source` at `target` in one rename, as a hard link where `link` and the file system allows one, else as a
    copy: `target` is whole or absent."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.unlink(tmp)
        try:
            if not link:
                raise OSError
            os.link(source, tmp)
        except OSError:
            shutil.copy2(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def keep_before_rerun(paths: Iterable[str], workdir: str | Path = ".") -> list[str]:
    """Called in `onstart` with the result files this run writes: keep each that exists (its job reruns over it,
    and Snakemake deletes it when the job starts) and Snakemake's record of it. Returns the paths kept. Where one
    cannot be kept, the run stops before any job, naming the file."""
    from matmul_study.pipeline import stops

    workdir = Path(workdir)
    kept = []
    for path in paths:
        result = workdir / path
        if not result.is_file():
            continue
        copy = kept_copy(path, workdir)
        try:
            record = snakemake_record(workdir, path)
            if record.is_file():
                _place(record, record_copy(copy), link=False)
            else:
                record_copy(copy).unlink(missing_ok=True)
            _place(result, copy, link=True)
        except OSError as exc:
            stops.fail(f"{path}: cannot keep it in {KEPT_DIR}/ while its job reruns ({exc.strerror or exc}); "
                       "Snakemake deletes it when the job starts. Make that folder writable (or free space on its "
                       "disk), then rerun the same command.")
        kept.append(str(path))
    return kept


def _kept_results(workdir: Path) -> list[Path]:
    root = workdir / KEPT_DIR
    return sorted(p for p in root.rglob("*.json") if p.is_file()) if root.is_dir() else []


def _tidy(workdir: Path) -> None:
    """Remove what is left in results/.kept/ of the kept results gone: their records, temporary files of a keep
    that was stopped, empty folders."""
    root = workdir / KEPT_DIR
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            if path.is_dir():
                path.rmdir()  # only where empty
            elif path.name.endswith(".tmp") or (path.name.endswith(RECORD_SUFFIX) and
                                                 not path.with_name(path.name.removesuffix(RECORD_SUFFIX)).exists()):
                path.unlink()
    with contextlib.suppress(OSError):
        root.rmdir()


def drop_settled(workdir: str | Path = ".") -> None:
    """Called when a run ends (`onsuccess`, `onerror`): drop the kept copy of each result that exists (its job
    wrote the new one, or never started). The copies of results whose job did not finish stay, for the next start."""
    workdir = Path(workdir)
    for copy in _kept_results(workdir):
        if (workdir / RUNS_DIR / copy.relative_to(workdir / KEPT_DIR)).exists():
            copy.unlink(missing_ok=True)
    _tidy(workdir)


def _run_alive(workdir: Path) -> bool:
    """Whether a Snakemake run may be at work in `workdir`: it holds locks there and /proc shows it (or there is no
    /proc to tell)."""
    from matmul_study.pipeline.processes import running_here

    if not list((workdir / ".snakemake" / "locks").glob("*.lock")):
        return False
    return not Path("/proc/self").exists() or bool(running_here(workdir.resolve()))


def restore_kept(config: dict, workdir: str | Path = ".", argv: list[str] | None = None) -> list[str]:
    """Before Snakemake plans: put back each kept result whose job's rerun did not finish (its path is empty) where
    it was measured under `config` (the hash it recorded), with Snakemake's record of it; set each other one aside
    beside its path (`<name>.old-config`, or `.corrupt` / `.wrong-schema` where it cannot be read), so that its job
    is measured again. Drops the copies of results that exist. One line per result put back or set aside. Nothing
    while a run is at work here, nor in a job that an executor spawned (its run's Snakemake did this)."""
    from matmul_study.core import results
    from matmul_study.core.records import config_hash
    from matmul_study.pipeline.result_check import measured_under_another_config

    argv = sys.argv if argv is None else argv
    workdir = Path(workdir)
    kept = _kept_results(workdir)
    if "--target-jobs" in argv or "--mode" in argv or not kept or _run_alive(workdir):
        return []
    current, lines = config_hash(config), []
    for copy in kept:
        shown = Path(RUNS_DIR) / copy.relative_to(workdir / KEPT_DIR)
        result = workdir / shown
        if result.exists():  # its job wrote the new result, or never started
            copy.unlink(missing_ok=True)
            continue
        try:
            other = measured_under_another_config(copy, current)
            why, kind = other and f"was measured under {other}", "old-config"
        except results.ResultFileError as exc:
            why, kind = f"is not a whole result ({exc.kind})", exc.kind
        if why:
            aside = result.with_name(f"{result.name}.{kind}")
            aside.parent.mkdir(parents=True, exist_ok=True)
            os.replace(copy, aside)
            lines.append(f"{shown}: its job's rerun did not finish, and the result kept from before it {why}: "
                         f"set aside as {aside.name}, the job is measured again.")
            continue
        record = snakemake_record(workdir, shown)
        if record_copy(copy).is_file():
            record.parent.mkdir(parents=True, exist_ok=True)
            os.replace(record_copy(copy), record)
        else:
            record.unlink(missing_ok=True)  # the rerun's record, of params this result was not measured with
        result.parent.mkdir(parents=True, exist_ok=True)
        os.replace(copy, result)
        lines.append(f"{shown}: its job's rerun did not finish; put back the result kept from before it, which was "
                     "measured under the current config: its job is not measured again.")
    _tidy(workdir)
    return lines
