"""Make the workflow's own matmul_study importable in every job, whatever environment runs it.

Under `--sdm conda` a job runs in an environment that holds the dependencies only (envs/*.yaml): Snakemake
copies an env file under .snakemake/conda/, so a local path in it (`pip: -e ../`) would point there and not at
this repository. Every rule script imports this module first (Snakemake puts the script's folder on sys.path);
it puts the repository that holds this workflow first on sys.path, so jobs run the same code as the Snakefile.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
