import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

import contextlib
import sys
from pathlib import Path

from matmul_study.core import results
from matmul_study.measure import input_cache
from matmul_study.measure.runner import Job, run_job
from matmul_study.pipeline import worker
from matmul_study.pipeline.progress import progress_line
from matmul_study.pipeline.recovery import pause_for_tests
from matmul_study.pipeline.stops import job_finished, logged

# The CPU job times numpy in fresh "spawn" processes, which import this file as __mp_main__: only the job itself
# (run as __main__) may touch the `snakemake` object.
if __name__ == "__main__":
    output = Path(snakemake.output[0])
    # The job writes its record beside the output first; the output appears once, whole, with what it was
    # measured with: a stop before that leaves no result (and its partial file is removed at the next start).
    partial = output.with_name(f".{output.name}.job.tmp")
    # Before any measuring: a read-only result folder or a full disk would otherwise fail the write at the end,
    # after the job's whole time. One line, no traceback (the log says the same).
    try:
        results.check_can_write(output.parent)
    except results.ResultFolderError as exc:
        with contextlib.suppress(OSError):
            Path(snakemake.log[0]).write_text(f"{exc}\n")
        sys.exit(f"{output}: {exc}")
    with logged(snakemake.log[0]):
        job = Job.from_wildcards(snakemake.wildcards)
        cubin = snakemake.input.get("cubin") or None
        on_cpu = not job.method_record.on_gpu
        # measurement.worker: a GPU job is measured by its GPU slot's long-lived process (the same run_job there).
        measure = worker.run_job_in_worker if worker.use_worker(snakemake.config, not on_cpu) else run_job
        try:
            record = measure(job, snakemake.config, str(partial), cubin=cubin, threads=snakemake.threads,
                             inputs_dir=input_cache.RUN_DIRECTORY)
            # What the numbers were measured with, in the result itself: the report shows these values.
            record["measured_config"] = {"measurement": dict(snakemake.params.measurement)}
            if on_cpu:
                record["measured_config"]["threads"] = record["threads"]  # the BLAS threads the job used
            results.write_atomic(output, record)
            pause_for_tests("benchmark")
            job_finished()
        finally:
            partial.unlink(missing_ok=True)
        print(f"{job}: {record['status']}, {record['gflops']} GFLOP/s, verification {record['verification']}")
    # Outside the timed region, from the result as written: one line on the console per finished job.
    print(progress_line(results.read(output)), file=sys.stderr, flush=True)
