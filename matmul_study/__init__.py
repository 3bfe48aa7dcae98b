"""GPU matrix-multiplication study: the logic behind the Snakemake pipeline."""

__version__ = "0.1.0"
