"""Numbers, shapes and names as the report writes them, and escaped HTML tables.

Every table goes through `html_table`: `DataFrame.to_html(escape=True)` escapes the cell text, so only markup
added here after escaping (the failed-status class, the word breaks in headers) is trusted.

One number format per unit, in the text and in every table: a rate in TF/s is written by `tf`, one in GFLOP/s by
`gflops` (both by `rate`: three significant digits, whole numbers from 1000 up, never an exponent); `html_table`
writes a column that holds a rate (by its name: `rate_unit`) with its unit's function, other floats with
`format_float`."""

from __future__ import annotations

import math
import re
from typing import Callable, Iterable

import numpy as np
import pandas as pd
from markupsafe import Markup

from matmul_study.analysis.ladder import VENDOR_NAMES, vendor_line


def format_float(x: float) -> str:
    """Four significant digits, no exponent for everyday magnitudes (12346, 0.001230, 1.5e-07)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    magnitude = math.floor(math.log10(abs(x)))
    if -3 <= magnitude < 6:
        return f"{x:.{max(0, 3 - magnitude)}f}"
    return f"{x:.4g}"


IDENTIFIER_CELL = re.compile(r"<td>([A-Za-z0-9]+(?:_[A-Za-z0-9]+){2,})</td>")  # a name joined by underscores


def html_table(df: pd.DataFrame, columns: Iterable[str] | None = None) -> Markup:
    """An escaped HTML table; rates in their unit's format (rate_unit), failed statuses with a class so they
    stand out."""
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    if {"value", "unit"} <= set(df.columns):  # a value in the unit its row names (the ceilings): rates as rates
        df = df.assign(value=[_cells_of(rate_unit(u))(v) if rate_unit(u) is not None and pd.notna(v) else v
                              for v, u in zip(df["value"], df["unit"])])
    text = df.to_html(escape=True, index=False, na_rep="", float_format=format_float, formatters=rate_formatters(df),
                      border=0, classes="data", justify="left")
    # the cell text is escaped already, so this exact match can only hit a status cell that says failed
    text = text.replace("<td>failed</td>", '<td class="failed">failed</td>')
    # a long column name (timing_median_s) may wrap after an underscore, so headers do not widen the table
    text = re.sub(r"<th>([^<]*)</th>", lambda m: "<th>" + m.group(1).replace("_", "_<wbr>") + "</th>", text)
    # and so may a cell's configuration or kernel name of three or more parts (swap_bn128_promote_cluster1,
    # wgmma_warp_specialized), the longest words of the job tables
    text = IDENTIFIER_CELL.sub(lambda m: "<td>" + m.group(1).replace("_", "_<wbr>") + "</td>", text)
    return Markup(text)


def table_text(df: pd.DataFrame) -> str:
    """html_table as a plain str, for pages built as strings: str + Markup would escape the str's tags."""
    return str(html_table(df))


def in_order(values: list[str], order: Iterable[str]) -> list[str]:
    rank = {v: i for i, v in enumerate(order)}
    return sorted(values, key=lambda v: (rank.get(v, len(rank)), v))


def shape_text(m: int, k: int, n: int) -> str:
    return f"{m}³" if m == k == n else f"{m}×{k}×{n}"


def shape_words(shape: str) -> str:
    """A shape column's "8192x8192x8192" as the text writes it (8192³)."""
    parts = str(shape).split("x")
    return shape_text(*(int(x) for x in parts)) if len(parts) == 3 and all(x.isdigit() for x in parts) else str(shape)


def rate(x: float) -> str:
    """A rate as the report writes it, in any unit: three significant digits, whole numbers from 1000 up, never
    an exponent (1487, 786, 49.3, 7.98, 0.125, 0.000123); trailing zeros dropped (9, not 9.00)."""
    if x is None or not np.isfinite(x):
        return ""
    if abs(x) >= 999.5:
        return f"{x:.0f}"
    return np.format_float_positional(float(x), precision=3, unique=False, fractional=False, trim="-")


def tf(x: float) -> str:
    """A rate in TF/s (or a number read like one: GB, FLOP/B), everywhere in the report: `rate`."""
    return rate(x)


def gflops(x: float) -> str:
    """A rate in GFLOP/s, everywhere in the report: `rate` (1486512, 786, 49.3)."""
    return rate(x)


def rate_unit(column) -> Callable[[float], str] | None:
    """The function that writes a table column's numbers when the column holds a rate, by its name: a "TF/s"
    heading or a tflops column (tf); a "GFLOP/s" heading or a gflops column (gflops); None for any other."""
    name = str(column)
    if "TF/s" in name or "tflops" in name.lower():
        return tf
    if "GFLOP/s" in name or "gflops" in name.lower():
        return gflops
    return None


def rate_formatters(df: pd.DataFrame) -> dict | None:
    """DataFrame.to_html's formatters that write each rate column of `df` in its unit's format (None if none)."""
    rates = {c: _cells_of(unit) for c in dict.fromkeys(df.columns) if (unit := rate_unit(c)) is not None}
    return rates or None


def _cells_of(unit: Callable[[float], str]) -> Callable[[object], str]:
    """A to_html formatter: numbers through `unit`, text (a cell written already, a mark added) as it is."""
    def write(value) -> str:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            return unit(float(value))
        return str(value)

    return write


def pct(x: float) -> str:
    """A percentage in words: whole numbers from 10 up (77%), two significant digits below (1.6%)."""
    return f"{x:.0f}%" if x >= 10 else f"{x:.2g}%"


def error(x: float) -> str:
    """A relative error in one format down a column (9.6e-06, 3.1e-04); 0 is exact."""
    if not np.isfinite(x):
        return ""
    return "0 (exact)" if x == 0 else f"{x:.1e}"


def times(x: float) -> str:
    """A ratio as a factor: 1.62×, 190×; from 1000 up in powers of ten (5.2×10⁸), which a reader compares at a
    glance."""
    if x < 1000:
        return f"{tf(x)}×"
    exponent = int(math.floor(math.log10(x)))
    mantissa = float(f"{x / 10 ** exponent:.2g}")
    if mantissa >= 10:  # 9.96 rounds up to the next power
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:g}×10{str(exponent).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))}"


def and_join(items: list[str]) -> str:
    """The items in a sentence: one alone, more as "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def kernel_name(row) -> str:
    """A kernel's name in a sentence: its label, and its configuration where that is not the default build."""
    variant = str(row.get("variant") or "default")
    return row["label"] if variant in ("default", "nan") else f"{row['label']} ({variant} configuration)"


def vendor_name(dtype: str) -> str:
    """The vendor line's name in prose: cuBLAS, or cuBLASLt (FP8), as the ratios of that dtype divide by it."""
    return VENDOR_NAMES.get(vendor_line(dtype), "cuBLAS")
