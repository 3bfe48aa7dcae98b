"""The noise flag in the report's tables and sentences: a rate whose job missed its noise target
(analysis.noise.noise_flags) carries MARK, and every table with one is followed by the line that says what it
means. Tables of jobs (rows of the results) take the flags from their rows; derived tables (the headline, the
summaries, the ladder's steps) find the jobs again through analysis.noise.NoisyJobs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from matmul_study.analysis.noise import MARK, NoisyJobs, noise_flags
from matmul_study.present.report.text import format_float, html_table, rate_unit, shape_words

LEGEND = (f"{MARK} the job behind this number missed its noise target: its samples spread wider than the target "
          "allows (or it had one sample), so the number is less certain than the others; the All jobs table and "
          "the Measurement section say why.")


def legend() -> Markup:
    return Markup('<p class="noise-legend">') + escape(LEGEND) + Markup("</p>")


def cell(value, column: str = "") -> str:
    """A cell's value as html_table writes it in `column`: a rate in its unit's format (text.rate_unit), other
    floats with four significant digits, missing values empty."""
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    unit = rate_unit(column)
    if unit is not None:
        return unit(float(value))
    return format_float(float(value)) if isinstance(value, (float, np.floating)) else str(value)


def with_mark(value, reason: str, column: str = "") -> str:
    """`value` as text (as html_table writes it in `column`), followed by MARK where `reason` says its job was
    flagged."""
    text = value if isinstance(value, str) else cell(value, column)
    return f"{text} {MARK}" if reason else text


def mark_column(table: pd.DataFrame, column: str, reasons: pd.Series) -> pd.DataFrame:
    """`table` with MARK after each cell of `column` whose reason is not empty (unchanged where none is)."""
    if column not in table or not reasons.astype(bool).any():
        return table
    reasons = reasons.reindex(table.index, fill_value="")
    return table.assign(**{column: [with_mark(v, r, column) for v, r in zip(table[column], reasons)]})


def marked(text: Markup | str) -> Markup:
    """A table's HTML, with the legend after it where it carries MARK."""
    html = Markup(text) if not isinstance(text, Markup) else text
    return html + legend() if MARK in str(html) else html


def job_reasons(rows: pd.DataFrame) -> pd.Series:
    """The reason each row (a job of the results) was flagged; '' where it was not."""
    return noise_flags(rows)["reason"] if not rows.empty else pd.Series("", index=rows.index, dtype=object)


def flag_sentence(flagged: list[tuple[str, str]]) -> str:
    """The numbers marked in a sentence, each with why: '' where none is."""
    if not flagged:
        return ""
    return " ".join(f"{MARK} {what} missed its noise target: {why}." for what, why in dict.fromkeys(flagged))


def _cells(table: pd.DataFrame, columns: dict, noisy: NoisyJobs) -> pd.DataFrame:
    """MARK after the cells of each column of `columns` whose job is flagged; `columns` maps a column to the
    function that names the job of its cell in a row (the keys of NoisyJobs.reason)."""
    for column, job in columns.items():
        if column in table:
            reasons = pd.Series([noisy.reason(**job(row)) for _, row in table.iterrows()], index=table.index)
            table = mark_column(table, column, reasons)
    return table


def _summary_jobs(key: str, table: pd.DataFrame) -> dict:
    """For a summary table, which job each rate column's cell stands for (see _cells)."""
    def at(row) -> dict:
        return {"dtype": row.get("dtype"), "shape": row["shape"]}

    if key == "best":
        return {"gflops": lambda row: {**at(row), "label": row.get("best")},
                "runner_up_gflops": lambda row: {**at(row), "label": row.get("runner_up")}}
    if key == "blocks":
        return {c: (lambda row, b=str(c).removeprefix("gflops_b"): {**at(row), "method": row.get("method"),
                                                                     "block": b})
                for c in table if str(c).startswith("gflops_b")}
    if key == "float_vs_double":
        return {c: (lambda row, d=c.removeprefix("gflops_"): {"dtype": d, "shape": row["shape"],
                                                              "label": row.get("label")})
                for c in ("gflops_float32", "gflops_float64")}
    if key == "speedup":
        return {c: (lambda row, c=c: {**at(row), "label": c}) for c in table if c not in ("dtype", "shape")}
    name = "label" if "label" in table else "method" if "method" in table else None  # a table of jobs: its name
    return {name: lambda row: {**at(row), name: row[name], "device": row.get("device")}} if name else {}


def summary(key: str, table: pd.DataFrame, noisy: NoisyJobs) -> Markup:
    """A summary table (collate.SUMMARIES: best, speedup, blocks, float_vs_double; or a caller's own table of
    jobs) with MARK after each rate whose job is flagged, and the legend under it."""
    if not noisy or table.empty or "shape" not in table:
        return html_table(table)
    return marked(html_table(_cells(table, _summary_jobs(key, table), noisy)))


def shape_name(row: pd.Series) -> str:
    """A job's name in a flag sentence: "numpy float32 at 256³"."""
    return f"{row.get('label', row.get('method'))} {row['dtype']} at {shape_words(row['shape'])}"
