"""A GPU benchmark job, as benchmark_gpu's command runs it (matmul_study.pipeline.job_script.main): a plain
process, so that a job measured by its slot's worker starts in a fraction of a `script:` job's time."""
import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.pipeline import job_script

if __name__ == "__main__":
    job_script.main()
