"""Imported first by every rule script: the workflow's own matmul_study, and a job that stops with Snakemake.

Under `--sdm conda` a job runs in an environment that holds the dependencies only (envs/*.yaml): Snakemake
copies an env file under .snakemake/conda/, so a local path in it (`pip: -e ../`) would point there and not at
this repository. This module (found because Snakemake puts the script's folder on sys.path) puts the repository
that holds this workflow first on sys.path, so jobs run the same code as the Snakefile. Then, before the slow
imports, the job starts watching its Snakemake (killed, it takes its running job with it) and stops promptly on
SIGTERM or SIGINT (stops.stop_with_snakemake).
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from matmul_study.pipeline.stops import stop_with_snakemake  # noqa: E402

stop_with_snakemake()
