import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.measure.runner import Job, run_job
from matmul_study.pipeline.scripting import logged, record_measured_config

# The CPU job times numpy in fresh "spawn" processes, which import this file as __mp_main__: only the job itself
# (run as __main__) may touch the `snakemake` object.
if __name__ == "__main__":
    with logged(snakemake.log[0]):
        job = Job.from_wildcards(snakemake.wildcards)
        cubin = snakemake.input.get("cubin") or None
        record = run_job(job, snakemake.config, snakemake.output[0], cubin=cubin, threads=snakemake.threads)
        # What the numbers were measured with, in the result itself: the report shows these values.
        measured = {"measurement": dict(snakemake.params.measurement)}
        if "threads" in snakemake.params.keys():
            measured["threads"] = record["threads"]  # the BLAS threads the job actually used
        record = record_measured_config(snakemake.output[0], measured)
        print(f"{job}: {record['status']}, {record['gflops']} GFLOP/s, verification {record['verification']}")
