"""The job grid: one job per valid (method, dtype, block, configuration, shape); axes that do not apply collapse,
and what is left out is listed with its reason.

The configuration axis is the method's registry variants, chosen per problem by config `variants:`
(core/configs.py): the heuristic's pick ("auto"), the default build, a sweep of all of them, or a list. The plan's
Problem is configs.job_problem's, for the planning device, and its pick configs.choose's, as the job's and the
regret table's are. Each job keeps the reason in the plan's variant_reason column; the job itself records the
reason on the device that ran it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Callable

import pandas as pd

from matmul_study.core import configs, dtypes, registry, specs
from matmul_study.core.dtypes import DType
from matmul_study.core.backends import module_available
from matmul_study.pipeline.config import ConfigError, shapes

# What identifies a job (and its result file's path); the plan adds the reason its variant runs.
GRID_COLUMNS = ["method", "dtype", "block", "variant", "m", "k", "n"]
PLAN_COLUMNS = [*GRID_COLUMNS, "variant_reason"]
NO_BLOCK = 0  # the block value of methods without a block axis
DEFAULT_SM_COUNT = next(f.default for f in dataclasses.fields(specs.Problem) if f.name == "sm_count")


class PlanningDevice:
    """The device facts the heuristics plan for, its SM count and memory bandwidth: GPU 0's where one is usable at
    planning time (measure.gpu_device.planning_facts), else the registry Problem's defaults. Read once, and only if
    a heuristic runs. `facts`: a dict of sm_count and hbm_bytes_per_s (either missing or None where not known), None,
    or a function returning either."""

    def __init__(self, facts: dict | Callable[[], dict | None] | None):
        self._source = facts
        self._read: tuple[int, str] | None = None
        self._hbm: float | None = None

    def read(self) -> tuple[int, str]:
        """(SM count, where it came from, as the reason's last words)."""
        if self._read is None:
            facts = (self._source() if callable(self._source) else self._source) or {}
            count = facts.get("sm_count")
            self._read = ((int(count), "the SM count of GPU 0 at planning") if count else
                          (DEFAULT_SM_COUNT, "no GPU usable at planning: the registry's default SM count"))
            self._hbm = facts.get("hbm_bytes_per_s")
        return self._read

    def hbm_bytes_per_s(self) -> float | None:
        """GPU 0's memory bandwidth at planning, None where it is not known (the heuristics plan as for an H200)."""
        self.read()
        return self._hbm


def variant_choices(method: specs.Method, dtype: DType, block: int, shape, setting,
                    device: PlanningDevice) -> list[configs.Choice]:
    """The configurations of one (method, dtype record, block, shape) the config's `variants` asks for
    (configs.plan), with the planning device's SM count in the heuristic's reason."""
    mode = configs.setting_for(setting, method.name)
    planned_by_heuristic = mode == configs.AUTO and method.variants and method.choose is not None
    sm_count, source = device.read() if planned_by_heuristic else (DEFAULT_SM_COUNT, "")
    problem = configs.job_problem(dtype, block, shape.m, shape.k, shape.n, sm_count=sm_count,
                                  hbm_bytes_per_s=device.hbm_bytes_per_s() if planned_by_heuristic else None)
    choices = configs.plan(method, problem, mode)
    if planned_by_heuristic:
        choices = [configs.Choice(c.variant, f"{c.reason} ({source})") for c in choices]
    return choices


def build(config: dict, compute_capability: tuple[int, int] | None = None,
          have_module: Callable[[str], bool] = module_available,
          device_facts: dict | Callable[[], dict | None] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (jobs, pruned). jobs has PLAN_COLUMNS (GRID_COLUMNS and each job's variant_reason); pruned has method,
    dtype, block, reason.

    `compute_capability` is the target GPU's, where known: methods that cannot run on it are pruned with the
    reason. `device_facts` are the planning GPU's (see PlanningDevice). A config that leaves no job at all is an
    error that says what each method supports."""
    jobs, pruned = [], []
    device = PlanningDevice(device_facts)
    setting = config.get("variants", configs.AUTO)
    for name in config["methods"]:
        method = registry.get(name)
        unmet = method.unmet_requirement(compute_capability, have_module)
        if unmet:
            pruned.append((name, "*", "*", unmet))
            continue
        blocks = config["block_sizes"] if method.block_axis else [NO_BLOCK]
        if not method.block_axis and len(config["block_sizes"]) > 1:
            pruned.append((name, "*", "other blocks",
                           f"{name} has no block-size axis; it runs once per dtype and shape"))
        for dtype in config["dtypes"]:
            if dtype not in method.dtypes:
                pruned.append((name, dtype, "*", f"{name} supports {', '.join(method.dtypes)} only"))
                continue
            unmet_dtype = method.unmet_dtype_requirement(dtype, compute_capability)
            if unmet_dtype:
                pruned.append((name, dtype, "*", unmet_dtype))
                continue
            record = dtypes.get(dtype)  # once per (method, dtype): every block and shape plans with it
            for block in blocks:
                if method.blocks is not None and block not in method.blocks:
                    pruned.append((name, dtype, block, f"{name} supports blocks {method.blocks} only"))
                    continue
                for s in shapes(config):
                    unmet_shape = method.unmet_shape_requirement(s.m)
                    if unmet_shape:
                        pruned.append((name, dtype, block, f"{unmet_shape} ({s.m}x{s.k}x{s.n} is not run)"))
                        continue
                    for choice in variant_choices(method, record, block, s, setting, device):
                        jobs.append((name, dtype, int(block), choice.variant, s.m, s.k, s.n, choice.reason))
    jobs_df = pd.DataFrame(jobs, columns=PLAN_COLUMNS).drop_duplicates(GRID_COLUMNS, ignore_index=True)
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
    """One compile per (method, dtype, template block, variant): blocks that are only launch parameters share a
    cubin; each variant is a build of its own."""
    from matmul_study.launch.kernels import template_block

    compiled = jobs[jobs["method"].isin(registry.compiled_methods())]
    variants = compiled["variant"] if "variant" in compiled else pd.Series(configs.DEFAULT, index=compiled.index)
    units = {(r.method, r.dtype, template_block(r.method, r.block), v)
             for r, v in zip(compiled.itertuples(), variants)}
    return pd.DataFrame(sorted(units), columns=["method", "dtype", "block", "variant"])


def gpu_methods(jobs: pd.DataFrame) -> list[str]:
    return sorted({m for m in jobs["method"] if registry.get(m).on_gpu})
