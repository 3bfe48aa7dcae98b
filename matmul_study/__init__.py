"""GPU matrix-multiplication study: the logic behind the Snakemake pipeline.

The package is grouped by the stages of the pipeline, in the order the rules run them: core (records every
stage shares), build (compile and launch), measure (run, verify, time), analysis (collate and model), present
(figures and report) and pipeline (the workflow glue). Each group's docstring says what it may import;
tests/test_structure.py keeps that direction.
"""

__version__ = "0.1.0"
