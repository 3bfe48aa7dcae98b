"""The README's Markdown tables, printed from a run's results (results.csv, the study's or a suite run's), so that
every number in them comes from a committed run and a test can hold the text to it (bench/ladder_table.py and
bench/suite_table.py print them):

- answer_table: each dtype's top rungs at 4096³ and 8192³ against the vendor line of their accuracy class, with the
  8192³ rates and errors;
- squares_table: the fastest verified kernel of ours ÷ the vendor line of its class at every square, the pick named
  at the small ones;
- suite_table: the same at every shape of a suite run, one column per dtype and accuracy class (or the rates and
  the picks, `rates=True`).

Every ratio is like with like (analysis.accuracy): ours over the vendor line of the same accuracy class, verified
rows only, burst over burst; where a burst rate is missing on either side (a launch longer than the power limiter's
window), sustained over sustained, marked *. A cell with no such pair is "–".
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from matmul_study.analysis.accuracy import vendor_rows, with_classes
from matmul_study.core import registry
from matmul_study.core.specs import CLASS_DTYPES, FAST_ACCUMULATION, PROMOTED

NONE = "–"
SUSTAINED = "*"


def _verified(results: pd.DataFrame) -> pd.DataFrame:
    return with_classes(results)[lambda d: d["status"] == "passed"]


def _at(d: pd.DataFrame, dtype: str, m: int, k: int, n: int) -> pd.DataFrame:
    return d[(d["dtype"] == dtype) & (d["m"] == m) & (d["k"] == k) & (d["n"] == n)]


def _vendors(d: pd.DataFrame) -> pd.Series:
    return d["method"].isin(registry.vendor_methods())


def _sustained(d: pd.DataFrame) -> pd.Series:
    """The sustained rate of each row: the study's column, or, in results of older schemas, the rate over all
    samples."""
    for column in ("sustained_gflops", "gflops_all_samples"):
        if column in d:
            return d[column]
    return pd.Series(float("nan"), index=d.index)


# ---------------------------------------------------------------------------------------------------------------
# The answer table: a dtype's top rungs at the two largest squares.

@dataclass(frozen=True)
class AnswerRow:
    dtype: str
    method: str
    within: str | None  # its builds of this accuracy class only ("": the dtype's own); None: of any class
    label: str  # the row's first cell
    per: str = ""  # after each ratio, where the rung runs another arithmetic than the vendor line (" × SGEMM")


ANSWER_ROWS = (
    AnswerRow("float8_e4m3", "wgmma_fp8", FAST_ACCUMULATION, "float8_e4m3, fast accumulation"),
    AnswerRow("float8_e4m3", "wgmma_fp8", PROMOTED, "float8_e4m3, promoted (cuBLASLt's default)"),
    AnswerRow("float16", "wgmma_warp_specialized", None, "float16"),
    AnswerRow("bfloat16", "wgmma_warp_specialized", None, "bfloat16"),
    AnswerRow("tf32", "wgmma_tf32", None, "tf32"),
    AnswerRow("float32", "warptiled", None, "float32"),
    AnswerRow("float32", "wgmma_3xtf32", "", "float32, 3xTF32 promoted (fp32 at tf32 speed)", " × SGEMM"),
    AnswerRow("float32", "wgmma_3xfp16", None, "float32, 3xFP16 (fp32 on the fp16 tensor cores)", " × SGEMM"),
    AnswerRow("float64", "dmma", None, "float64"),
    AnswerRow("int8", "wgmma_int8", None, "int8"),
)
ANSWER_SIZES = (4096, 8192)


def _fastest(d: pd.DataFrame, method: str, dtype: str, size: int, within: str | None) -> pd.Series | None:
    hit = _at(d, dtype, size, size, size)
    hit = hit[(hit["method"] == method) & ((hit["accuracy_class"] == within) if within is not None else True)]
    return hit.sort_values("gflops").iloc[-1] if len(hit) else None  # a sweep's fastest verified build


def _vendor_of(d: pd.DataFrame, ours: pd.Series | None, dtype: str, size: int) -> tuple[pd.Series | None, bool]:
    """The fastest vendor row of `ours`'s accuracy class at its shape, and whether it is of that class."""
    at = _at(d, dtype, size, size, size)
    vendors = at[_vendors(at)]
    if ours is None or vendors.empty:
        return None, False
    rows, same = vendor_rows(vendors, ours["accuracy_class"])
    return rows.sort_values("gflops").iloc[-1], same


def _number(x: float | None, digits: int = 3) -> str:
    return NONE if x is None or pd.isna(x) else f"{x:.{digits}f}"


def _error(r: pd.Series | None) -> str:
    if r is None:
        return NONE
    e = r["verification_rel_fro_error"]
    return "0" if e == 0 else f"{e:.1e}"


def _answer_ratio(row: AnswerRow, ours: pd.Series | None, vendor: pd.Series | None, same: bool) -> str:
    """Burst × `vendor`, the vendor line of the class of `ours` (the row's fastest build at the square; `same`: of
    that class), then sustained × sustained in brackets where both ran; a ratio against a vendor line of another
    class (a class without a line of its own) is a trade, marked †."""
    if ours is None or vendor is None or pd.isna(ours["gflops"]) or pd.isna(vendor["gflops"]):
        return NONE
    mark = "" if same else "†"
    text = _number(ours["gflops"] / vendor["gflops"]) + mark + row.per
    sustained = _sustained(pd.DataFrame([ours, vendor]))
    if sustained.notna().all():
        text += f" ({_number(sustained.iloc[0] / sustained.iloc[1])}{mark})"
    return text


def answer_table(runs: list[pd.DataFrame]) -> str:
    """The README's answer: for each of ANSWER_ROWS the study ran, its ratios at ANSWER_SIZES, its and the vendor's
    TF/s at the largest and both errors there; several runs side by side in each cell, first / second."""
    runs = [_verified(d) for d in runs]
    lines = ["| dtype | rung | 4096³ × vendor | 8192³ × vendor | 8192³ TF/s | vendor 8192³ TF/s "
             "| error (vendor's) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    largest = ANSWER_SIZES[-1]
    for row in ANSWER_ROWS:
        fastest = [{size: _fastest(d, row.method, row.dtype, size, row.within) for size in ANSWER_SIZES}
                   for d in runs]
        if all(ours is None for at in fastest for ours in at.values()):
            continue  # a rung (or class) the study did not run
        # each run's (ours, its vendor line, whether of its class) at each size, each found once
        found = [{size: (ours, *_vendor_of(d, ours, row.dtype, size)) for size, ours in at.items()}
                 for d, at in zip(runs, fastest)]
        pairs = [at[largest][:2] for at in found]
        cells = [" / ".join(_answer_ratio(row, *at[size]) for at in found) for size in ANSWER_SIZES]
        rates = [" / ".join(_number(p[i]["gflops"] / 1e3 if p[i] is not None else None, 1) for p in pairs)
                 for i in (0, 1)]
        errors = " / ".join(f"{_error(ours)} ({_error(vendor)})" for ours, vendor in pairs)
        lines.append(f"| {row.label} | {row.method} | {cells[0]} | {cells[1]} | {rates[0]} | {rates[1]} | {errors} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Ratios like with like at a shape: the squares and the suite.

@dataclass(frozen=True)
class Cell:
    ratio: float
    sustained: bool  # sustained over sustained (no burst rate on one side)
    ours: pd.Series  # the row of the fastest kernel of ours

    def text(self) -> str:
        return f"{self.ratio:.2f}" + (SUSTAINED if self.sustained else "")


def _own_arithmetic(method: str, dtype: str) -> bool:
    """Whether `method` runs `dtype` on that dtype's own arithmetic (not fp32 on the tf32 or fp16 tensor cores)."""
    return method in registry.METHODS and registry.get(method).arithmetic_of(dtype) == dtype


def best_cell(at: pd.DataFrame, dtype: str, accuracy: str | None = None) -> Cell | None:
    """Of one shape's rows `at` (with their accuracy classes), those verified: the fastest kernel of ours in `dtype`
    on its own arithmetic, of class `accuracy` (None: of any class), over the vendor line of its class. Burst over
    burst where every row weighed has a burst rate, else sustained over sustained. None where no kernel of ours has
    a vendor line of its class."""
    at = at[(at["dtype"] == dtype) & (at["status"] == "passed")]
    vendors, ours = at[_vendors(at)], at[~_vendors(at)]
    ours = ours[ours["method"].map(lambda method: _own_arithmetic(method, dtype)).astype(bool)]
    if accuracy is not None:
        ours = ours[ours["accuracy_class"] == accuracy]
    pairs = []
    for accuracy_class, builds in ours.groupby("accuracy_class", sort=False):
        line, same = vendor_rows(vendors, accuracy_class)
        if same:
            pairs.append((builds, line))
    if not pairs:
        return None
    sustained = not all(b["gflops"].notna().all() and line["gflops"].notna().all() for b, line in pairs)
    rate = _sustained if sustained else (lambda d: d["gflops"])
    ratios = [(rate(b).max() / rate(line).max(), b.loc[rate(b).idxmax()]) for b, line in pairs
              if rate(b).notna().any() and rate(line).notna().any()]
    if not ratios:
        return None
    best = max(ratios, key=lambda pair: pair[0])
    return Cell(best[0], sustained, best[1])


SQUARES = (512, 1024, 2048, 4096, 8192)
SQUARES_DTYPES = ("float8_e4m3", "float8_e4m3_block", "float16", "bfloat16", "tf32", "float32", "float64", "int8")


def _several_classes(dtype: str) -> bool:
    return sum(dtype in dtypes for dtypes in CLASS_DTYPES.values()) > 1


def squares_table(results: pd.DataFrame, sizes: tuple[int, ...] = SQUARES, named_upto: int = 1024) -> str:
    """A row per dtype the run has (SQUARES_DTYPES' order), a column per square: the fastest verified kernel of ours
    on the dtype's own arithmetic over the vendor line of its class; up to `named_upto`, where the picks differ
    most, with the pick (method and build, and its class where the dtype has several)."""
    d = _verified(results)
    lines = ["| dtype | " + " | ".join(f"{s}³" for s in sizes) + " |", "| --- " * (len(sizes) + 1) + "|"]
    for dtype in (t for t in SQUARES_DTYPES if (d["dtype"] == t).any()):
        cells = []
        for size in sizes:
            cell = best_cell(_at(d, dtype, size, size, size), dtype)
            text = NONE if cell is None else cell.text()
            if cell is not None and size <= named_upto:
                accuracy = cell.ours["accuracy_class"]
                named = f", {accuracy}" if accuracy and _several_classes(dtype) else ""
                text += f" ({cell.ours['method']} {cell.ours['variant']}{named})"
            cells.append(text)
        lines.append(f"| {dtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class SuiteColumn:
    label: str
    dtype: str
    accuracy: str  # the accuracy class ("": the dtype's own)


SUITE_COLUMNS = (SuiteColumn("fp16", "float16", ""), SuiteColumn("bf16", "bfloat16", ""),
                 SuiteColumn("tf32", "tf32", ""), SuiteColumn("fp32", "float32", ""),
                 SuiteColumn("fp64", "float64", ""), SuiteColumn("int8", "int8", ""),
                 SuiteColumn("FP8 fast", "float8_e4m3", FAST_ACCUMULATION),
                 SuiteColumn("FP8 promoted", "float8_e4m3", PROMOTED))


def _rate_text(cell: Cell | None) -> str:
    """The fastest kernel's burst TF/s and its build; the build alone where it had no burst rate."""
    if cell is None:
        return NONE
    tflops = cell.ours["gflops"]
    build = f"`{cell.ours['variant']}`"
    return build if pd.isna(tflops) else f"{tflops / 1e3:.0f} {build}"


def suite_table(results: pd.DataFrame, rates: bool = False) -> str:
    """A row per shape of the run (m × k × n, in that order), a column per SUITE_COLUMNS: the fastest verified
    kernel of ours in the column's dtype and class over the vendor line of that class (`rates`: its TF/s and the
    build the heuristic picked)."""
    d = _verified(results)
    lines = ["| m × k × n | " + " | ".join(c.label for c in SUITE_COLUMNS) + " |",
             "| --- " * (len(SUITE_COLUMNS) + 1) + "|"]
    for (m, k, n), at in d.groupby(["m", "k", "n"]):  # in m, k, n order
        cells = [best_cell(at, c.dtype, c.accuracy) for c in SUITE_COLUMNS]
        texts = [_rate_text(c) if rates else (NONE if c is None else c.text()) for c in cells]
        lines.append(f"| {m} × {k} × {n} | " + " | ".join(texts) + " |")
    return "\n".join(lines)
