"""The job grid: one job per valid (method, dtype, block, shape); axes that do not apply collapse, and what is
left out is listed with its reason."""

from __future__ import annotations

import json
from typing import Callable

import pandas as pd

from matmul_study.core import registry
from matmul_study.core.backends import module_available
from matmul_study.pipeline.config import ConfigError, shapes

GRID_COLUMNS = ["method", "dtype", "block", "m", "k", "n"]
NO_BLOCK = 0  # the block value of methods without a block axis


def build(config: dict, compute_capability: tuple[int, int] | None = None,
          have_module: Callable[[str], bool] = module_available) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (jobs, pruned). jobs has GRID_COLUMNS; pruned has method, dtype, block, reason.

    `compute_capability` is the target GPU's, where known: methods that cannot run on it are pruned with the
    reason. A config that leaves no job at all is an error that says what each method supports."""
    jobs, pruned = [], []
    for name in config["methods"]:
        method = registry.get(name)
        unmet = method.unmet_requirement(compute_capability, have_module)
        if unmet:
            pruned.append((name, "*", "*", unmet))
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
    if jobs_df.empty:
        raise ConfigError(no_jobs_message(config, pruned_df))
    return jobs_df, pruned_df


def check_listed_methods(config: dict, have_module: Callable[[str], bool] = module_available) -> None:
    """A method the config lists by name (not through `methods: default` or `all`) that cannot run here for want
    of a package is an error, not a silent prune: the message names the package, how to install it, and the
    methods to run without it."""
    def unmet(name):  # no compute capability given: packages only
        return registry.get(name).unmet_requirement(None, have_module)

    for i, name in enumerate(config["methods"]):
        missing = unmet(name)
        if missing:
            why = missing.split(", so ")[0]
            rest = [m for m in config["methods"] if not unmet(m)]
            without = (f"run without it: --config 'methods={json.dumps(rest)}'" if rest
                       else "choose methods that can run here")
            raise ConfigError(f"config key 'methods[{i}]': value {json.dumps(name)} cannot run here: {why}. Install "
                              f"it, or {without} (`methods: default` or `all` leave out what cannot run, with a "
                              "note).")


def pruned_methods_note(pruned: pd.DataFrame) -> list[str]:
    """One line per method pruned as a whole (it cannot run here), for the console: nothing is left out silently."""
    whole = pruned[(pruned["dtype"] == "*") & (pruned["block"] == "*")]
    return [f"Note: {row.reason if 'not run' in row.reason else f'{row.reason}: {row.method} is not run'}."
            for row in whole.itertuples()]


def no_jobs_message(config: dict, pruned: pd.DataFrame) -> str:
    reasons = "; ".join(dict.fromkeys(pruned["reason"])) or "nothing to run"
    return (f"config keys 'methods' {config['methods']} and 'dtypes' {config['dtypes']} select no job: {reasons}. "
            "Add a dtype one of these methods supports, or a method that supports these dtypes.")


def compile_units(jobs: pd.DataFrame) -> pd.DataFrame:
    """One compile per (method, dtype, template block): blocks that are only launch parameters share a cubin."""
    from matmul_study.build.kernels import template_block

    compiled = jobs[jobs["method"].isin(registry.compiled_methods())]
    units = {(r.method, r.dtype, template_block(r.method, r.block)) for r in compiled.itertuples()}
    return pd.DataFrame(sorted(units), columns=["method", "dtype", "block"])


def gpu_methods(jobs: pd.DataFrame) -> list[str]:
    return sorted({m for m in jobs["method"] if registry.get(m).on_gpu})
