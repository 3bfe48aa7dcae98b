from matmul_study.runner import Job, run_job
from matmul_study.scripting import logged

with logged(snakemake.log[0]):
    job = Job.from_wildcards(snakemake.wildcards)
    cubin = snakemake.input.get("cubin") or None
    record = run_job(job, snakemake.config, snakemake.output[0], cubin=cubin, threads=snakemake.threads)
    print(f"{job}: {record['status']}, {record['gflops']} GFLOP/s, verification {record['verification']}")
