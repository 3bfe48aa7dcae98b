"""The workflow glue between Snakemake and the package: config validation and shapes, the job grid, the rules'
file-level steps, job logs and stopping with Snakemake.

May import every group: it wires them together."""
