"""A compile job, as compile_kernel's command runs it (matmul_study.pipeline.compile_script.main): a plain process,
so that each build starts in a fraction of a `script:` job's time."""
import _study  # noqa: F401  (the workflow's own matmul_study, also under --sdm conda)

from matmul_study.pipeline import compile_script

if __name__ == "__main__":
    compile_script.main()
