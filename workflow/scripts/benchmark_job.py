"""A benchmark job, as benchmark_gpu's and benchmark_cpu's commands run it (matmul_study.pipeline.job_script.main):
a plain process, so that a job starts in a fraction of a `script:` job's time (a GPU job measured by its slot's
worker loads nothing that measures)."""
import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.pipeline import job_script

# Guarded: the CPU job times numpy in fresh "spawn" processes, which import this file as __mp_main__.
if __name__ == "__main__":
    job_script.main()
