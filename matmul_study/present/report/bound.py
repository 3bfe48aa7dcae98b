"""The report's "What bounds each shape" section: the roofline per shape (analysis/bound.py) in words and a table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matmul_study.analysis.bound import LATENCY_US, LAUNCH_FLOOR_US, bound_table
from matmul_study.present.report.text import html_table, kernel_name, pct, rate, tf


def _share(x: float) -> str:
    return pct(x) if np.isfinite(x) else "—"


def bound(results: pd.DataFrame) -> dict | None:
    """Per (device, dtype, shape) with a known datasheet roof: memory- or math-bound, the fastest kernel of ours
    (of a class with its vendor line) and the vendor line, each with its share of HBM bandwidth and of the peak.
    Sentences say where bandwidth is the bar and where the operands came from L2 (latency decides). None where no
    shape has a roof (a CPU run, a device without datasheet numbers)."""
    table = bound_table(results)
    table = table[table["bound"] != ""]
    if table.empty:
        return None
    memory = table[table["bound"] == "memory"]
    sentences = [f"{len(memory)} of {len(table)} (shape, element type) pairs are memory-bound: their intensity "
                 "(2mnk FLOP over the bytes that A, B and C must move once) is below the ridge of the datasheet "
                 "roofline (peak over HBM bandwidth), so the share of HBM bandwidth, not of the peak, is the bar "
                 "there."] if len(memory) else []
    cached = table[(table["pct_of_hbm"] > 100) | (table["vendor_pct_of_hbm"] > 100)]
    if len(cached):
        sentences.append(f"{len(cached)} pass 100 % of HBM bandwidth: their operands fit in L2 and stay there "
                         "between timed launches, so latency (the launch, the pipeline's fill, a split's "
                         "reduction), not bandwidth or math, sets their time.")
    short = table[table["roof_us"] < LATENCY_US]
    if len(short):
        sentences.append(f"{len(short)} would take under {LATENCY_US:g} µs even at the roof (their bytes at the "
                         "datasheet bandwidth, or their FLOP at the peak): a launch alone takes "
                         f"{LAUNCH_FLOOR_US[0]:g}–{LAUNCH_FLOOR_US[1]:g} µs to complete in a batch of launches, so "
                         "there latency decides too, and no line reaches a large share of either roof.")
    shown = pd.DataFrame({
        "device": table["device"], "dtype": table["dtype"], "m × k × n": table["shape"].str.replace("x", " × "),
        "bound": table["bound"], "FLOP/byte": [rate(x) for x in table["intensity"]],
        "µs at the roof": [rate(x) for x in table["roof_us"]],
        "fastest of ours": [kernel_name(r) for _, r in table.iterrows()],
        "TF/s": [tf(x) for x in table["tflops"]], "% of HBM": [_share(x) for x in table["pct_of_hbm"]],
        "% of peak": [_share(x) for x in table["pct_of_peak"]],
        "vendor TF/s": [tf(x) for x in table["vendor_tflops"]],
        "vendor % of HBM": [_share(x) for x in table["vendor_pct_of_hbm"]],
        "vendor % of peak": [_share(x) for x in table["vendor_pct_of_peak"]]})
    if shown["device"].nunique() == 1:
        shown = shown.drop(columns="device")
    return {"sentences": sentences, "table": html_table(shown.reset_index(drop=True))}
