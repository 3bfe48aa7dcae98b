"""The body of a benchmark job, as its rule runs it: check that the result can be written, measure (in this process,
or in the GPU slot's measurement worker), write the result whole, and print one progress line.

Both benchmark rules run it as a plain command (workflow/scripts/benchmark_job.py, `main` here), not a `script:`: a
`script:` job starts by loading Snakemake's own modules to read its job, and a GPU job measured by a worker needs
none of them, nor numpy, CuPy or the registry, which the worker has loaded already. The command reads the run's
config from a file the Snakefile writes once (write_config) and its job from the wildcards on its command line.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

from matmul_study.core import results
from matmul_study.core.records import JOB_KEYS, JobKey, measured_settings, wildcard_words
from matmul_study.pipeline import worker
from matmul_study.pipeline.progress import progress_line
from matmul_study.pipeline.recovery import pause_for_tests
from matmul_study.pipeline.stops import job_finished, logged

# Where write_config keeps the runs' configs, under the workflow's working directory (Snakemake's own folder).
CONFIG_DIRECTORY = Path(".snakemake") / "matmul_study_configs"


def write_config(config: dict, directory: Path = CONFIG_DIRECTORY) -> Path:
    """The run's config as JSON, in a file named by its content (two runs with different configs never share one);
    written once, whole. Returns its path."""
    text = json.dumps(config, sort_keys=True, default=str)
    path = directory / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_text(text)
        os.replace(partial, path)
    return path


def run(output: str, log: str, wildcards, config: dict, measurement: dict, *, on_gpu: bool,
        cubin: str | None = None, threads: int | None = None, inputs_dir: str | None = None) -> None:
    """One benchmark job: its result at `output`, its log at `log`; `inputs_dir`: where the run's jobs share their
    large inputs (input_cache). Exits with a one-line message (no traceback) where the result folder cannot take
    the result, before anything is measured."""
    output = Path(output)
    # The job writes its record beside the output first; the output appears once, whole, with what it was
    # measured with: a stop before that leaves no result (and its partial file is removed at the next start).
    partial = output.with_name(f".{output.name}.job.tmp")
    # Before any measuring: a read-only result folder or a full disk would otherwise fail the write at the end,
    # after the job's whole time. One line, no traceback (the log says the same).
    try:
        results.check_can_write(output.parent)
    except results.ResultFolderError as exc:
        with contextlib.suppress(OSError):
            Path(log).write_text(f"{exc}\n")
        sys.exit(f"{output}: {exc}")
    with logged(log):
        # measurement.worker: a GPU job is measured by its GPU slot's long-lived process (the same run_job there),
        # and this process imports nothing that measures.
        if worker.use_worker(config, on_gpu):
            job, measure = JobKey.from_wildcards(wildcards), worker.run_job_in_worker
        else:
            from matmul_study.measure.runner import Job, run_job

            job, measure = Job.from_wildcards(wildcards), run_job
        try:
            record = measure(job, config, str(partial), cubin=cubin, threads=threads, inputs_dir=inputs_dir)
            # What the numbers were measured with, in the result itself: the report shows these values.
            record["measured_config"] = {"measurement": dict(measurement)}
            if not on_gpu:
                record["measured_config"]["threads"] = record["threads"]  # the BLAS threads the job used
            results.write_atomic(output, record)
            pause_for_tests("benchmark")
            job_finished()
        finally:
            partial.unlink(missing_ok=True)
        print(f"{job}: {record['status']}, {record['gflops']} GFLOP/s, verification {record['verification']}")
    # Outside the timed region, from the result as written: one line on the console per finished job.
    print(progress_line(results.read(output)), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    """A benchmark job's command (benchmark_gpu, and benchmark_cpu with --cpu): the job's wildcards as KEY=VALUE, the
    run's config file (write_config), its cubin, result, log, the cores it holds and the run's inputs folder."""
    parser = argparse.ArgumentParser(prog="benchmark_job.py", description=main.__doc__)
    parser.add_argument("--cpu", action="store_true", help="a CPU job: measured in this process, never by a worker")
    parser.add_argument("--config", required=True, help="the run's config (JSON, from write_config)")
    parser.add_argument("--cubin", default="", help="the kernel's cubin (empty: a library's kernel)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--inputs-dir", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("wildcards", nargs="+", metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        wildcards = wildcard_words(args.wildcards, tuple(key for key in JOB_KEYS if key != "variant"))
    except ValueError as exc:
        parser.error(str(exc))
    config = json.loads(Path(args.config).read_text())
    run(args.output, args.log, wildcards, config, measured_settings(config["measurement"]), on_gpu=not args.cpu,
        cubin=args.cubin or None, threads=args.threads, inputs_dir=args.inputs_dir)
