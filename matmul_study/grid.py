"""The job grid: one job per valid (method, dtype, block, shape); axes that do not apply collapse."""

from __future__ import annotations

import importlib.util

import pandas as pd

from . import registry
from .config import shapes

GRID_COLUMNS = ["method", "dtype", "block", "m", "k", "n"]
NO_BLOCK = 0  # the block value of methods without a block axis


def available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def build(config: dict, have_cupy: bool | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (jobs, pruned). jobs has GRID_COLUMNS; pruned has method, dtype, block, reason."""
    if have_cupy is None:
        have_cupy = available("cupy")
    jobs, pruned = [], []
    for name in config["methods"]:
        method = registry.get(name)
        if method.backend == "cupy" and not have_cupy:
            pruned.append((name, "*", "*", "CuPy is not installed (pip install -e '.[cublas]'), so cuBLAS is not run"))
            continue
        blocks = config["block_sizes"] if method.block_axis else [NO_BLOCK]
        if not method.block_axis and len(config["block_sizes"]) > 1:
            pruned.append((name, "*", "other blocks", f"{name} has no block-size axis; it runs once per dtype and shape"))
        for dtype in config["dtypes"]:
            if dtype not in method.dtypes:
                pruned.append((name, dtype, "*", f"{name} supports {', '.join(method.dtypes)} only"))
                continue
            for block in blocks:
                if method.blocks is not None and block not in method.blocks:
                    pruned.append((name, dtype, block, f"{name} supports blocks {method.blocks} only"))
                    continue
                for s in shapes(config):
                    jobs.append((name, dtype, int(block), s.m, s.k, s.n))
    jobs_df = pd.DataFrame(jobs, columns=GRID_COLUMNS).drop_duplicates(ignore_index=True)
    pruned_df = pd.DataFrame(pruned, columns=["method", "dtype", "block", "reason"]).astype(str)
    return jobs_df, pruned_df


def compile_units(jobs: pd.DataFrame) -> pd.DataFrame:
    """One compile per (method, dtype, template block): blocks that are only launch parameters share a cubin."""
    from .kernels import template_block

    gpu = jobs[jobs["method"].isin(registry.CUDA_METHODS)]
    units = {(r.method, r.dtype, template_block(r.method, r.block)) for r in gpu.itertuples()}
    return pd.DataFrame(sorted(units), columns=["method", "dtype", "block"])


def gpu_methods(jobs: pd.DataFrame) -> list[str]:
    return sorted({m for m in jobs["method"] if registry.get(m).on_gpu})
