"""The workflow glue between Snakemake and the package: config validation and shapes, the job grid, the rules'
file-level steps, job logs and stopping with Snakemake, and the measurement worker that runs a GPU slot's jobs
in one process.

May import every group: it wires them together."""
