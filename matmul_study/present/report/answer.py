"""The report's answer and its reasons, in words and tables: the headline (the fastest kernel of ours against
cuBLAS and the datasheet peak), why each rung of the ladder is faster, what precision costs, how well the
configuration heuristic picked, the source study's claims checked, and what each method does. The numbers come
from analysis (headline, why, precision, regret, claims, collate); this module writes them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markupsafe import Markup, escape

from matmul_study.analysis import collate
from matmul_study.analysis.claims import check_claims
from matmul_study.analysis.columns import distinct, has_configurations, several_gpus
from matmul_study.analysis.cpu_line import load_words, machine_cores
from matmul_study.analysis.headline import headline as headline_table
from matmul_study.analysis.ladder import ladder_table, vendor_line
from matmul_study.analysis.noise import NoisyJobs
from matmul_study.analysis.precision import comparisons, precision_table
from matmul_study.analysis.regret import regret_table
from matmul_study.analysis.regret import summary as regret_summary
from matmul_study.analysis.result_devices import device_kind, device_labels
from matmul_study.analysis.why import climb, headline_facts, ladder_steps, reference_lines
from matmul_study.core import configs, registry
from matmul_study.present.figures import dtype_order, method_order
from matmul_study.present.report.noise import MARK, flag_sentence, mark_column, marked
from matmul_study.present.report.text import (
    and_join, error, format_float, html_table, in_order, kernel_name, pct, rate_formatters, shape_text, shape_words,
    table_text, tf, times, vendor_name,
)

VERDICT_CLASSES = {"holds": "holds", "partly holds": "partly", "does not hold": "fails", "not measured": "unmeasured"}

# Steps of the classic ladder that change one thing, with what the report says that thing is.
LADDER_STEPS = [
    ("tiled", "tiled_runtime_block",
     "tiled (the source study's kernel) fixes BLOCK at compile time; tiled_runtime_block reads it from blockDim at "
     "run time and keeps the inner loop rolled, so it pays for loop overhead and computed shared-memory offsets."),
    ("tiled_unrolled", "tiled",
     "tiled_unrolled is tiled with an explicit #pragma unroll on the inner loop (the A100 post's step). With BLOCK a "
     "compile-time constant the compiler may unroll tiled already, so the two can run alike."),
]


def _dtype_rank(name: str) -> int:
    order = dtype_order()
    return order.index(name) if name in order else len(order)


def _flagged(noisy: NoisyJobs, row: pd.Series, device: str, flagged: list, vendor: bool = False) -> str:
    """MARK where the job of `row` (the vendor line's at its shape, with `vendor`) is flagged, its name and
    reason added to `flagged`; '' otherwise."""
    keys = {"method": vendor_line(row["dtype"])} if vendor else {"label": row["label"], "variant": row.get("variant")}
    why_ = noisy.reason(device=device, dtype=row["dtype"], shape=row["shape"], **keys)
    if why_:
        name = vendor_name(row["dtype"]) if vendor else kernel_name(row)
        flagged.append((f"{name} {row['dtype']} at {shape_text(row['m'], row['k'], row['n'])}", why_))
    return f" {MARK}" if why_ else ""


def _gpu_sentence(lead: pd.Series, part: pd.DataFrame, device: str, one_gpu: bool, noisy: NoisyJobs) -> str:
    """A GPU's sentences: its fastest kernel of ours at the largest shape against cuBLAS and the datasheet peak,
    then the other element types in a list; a flagged number carries MARK and a last sentence says why."""
    shape = shape_text(lead["m"], lead["k"], lead["n"])
    where = f"this {device}" if one_gpu else f"the {device}"
    flagged: list = []
    text = (f"On {where}, our fastest kernel, {kernel_name(lead)}, runs {lead['dtype']} at "
            f"{tf(lead['tflops'])} TF/s{_flagged(noisy, lead, device, flagged)} at {shape}")
    clauses, trades = [], []
    if np.isfinite(lead["vs_cublas"]):
        clauses.append(f"{lead['vs_cublas']:.2f}× {_vendor_words(lead)}{_trade(lead, trades)}"
                       f"{_flagged(noisy, lead, device, flagged, vendor=True)} measured in the same run")
    if np.isfinite(lead["pct_of_datasheet"]):
        clauses.append(f"{pct(lead['pct_of_datasheet'])} of the datasheet's "
                       f"{tf(lead['datasheet_tflops'])} TF/s dense peak")
    text += (": " + " and ".join(clauses) if clauses else "") + "."
    others = []
    for _, row in part.iloc[1:].sort_values("dtype", key=lambda c: c.map(_dtype_rank)).iterrows():
        other_shape = shape_text(row["m"], row["k"], row["n"])
        detail = [kernel_name(row)]
        if np.isfinite(row["vs_cublas"]):
            detail.append(f"{row['vs_cublas']:.2f}× {_vendor_words(row)}{_trade(row, trades)}"
                          f"{_flagged(noisy, row, device, flagged, vendor=True)}")
        others.append(f"{row['dtype']} {tf(row['tflops'])} TF/s{_flagged(noisy, row, device, flagged)}"
                      + (f" at {other_shape}" if other_shape != shape else "") + f" ({', '.join(detail)})")
    if others:
        text += f" At the largest shape of the other element types: {', '.join(others)}."
    trade = (f"{TRADE} {and_join(trades)}: no vendor line of {'that' if len(trades) == 1 else 'each'} accuracy class "
             "ran, so the ratio is against the vendor's own class, a trade of accuracy for speed, not parity."
             if trades else "")
    return " ".join(filter(None, [text, trade, flag_sentence(flagged)]))


def _vendor_words(row: pd.Series) -> str:
    """The vendor line that a ratio divides by, in prose: its name, and where the vendor runs the dtype in more than
    one accuracy class (FP8 with per-tensor scales) and the ratio is like with like, the class of the line
    (cuBLASLt's fast-accumulation line, its promoted line). Block-scaled FP8 has one cuBLASLt line: its name."""
    accuracy = str(row.get("accuracy") or "")
    if not accuracy or not _paired(row) or len(_vendor_lines(row["dtype"])) < 2:
        return vendor_name(row["dtype"])
    return f"{vendor_name(row['dtype'])}'s {accuracy.replace(' ', '-')} line"


def _vendor_lines(dtype: str) -> list:
    """The vendor's lines of `dtype`, one per accuracy class (configs.vendor_lines: cuBLASLt in FP8 two)."""
    name = vendor_line(dtype)
    return configs.vendor_lines(registry.get(name), dtype) if name in registry.METHODS else []


def _paired(row: pd.Series) -> bool:
    """Whether a headline row's ratio is like with like."""
    return not (row.get("like_with_like", True) is False or row.get("like_with_like") == 0)


def _trade(row: pd.Series, trades: list) -> str:
    """TRADE after a ratio that is not like with like (analysis/accuracy.py), its kernel's class noted in `trades`."""
    if not _paired(row):
        trades.append(f"{row['dtype']} {row.get('accuracy') or 'its class'}")
        return TRADE
    return ""


def _cpu_sentence(lead: pd.Series, part: pd.DataFrame, device: str, only_cpu: bool, noisy: NoisyJobs,
                  jobs: pd.DataFrame) -> str:
    """A CPU's sentence: its fastest method's rate at each element type (a flagged one with MARK, and why), its
    BLAS threads of the machine's cores, and the load beside its jobs (`jobs`: the CPU's rows of the results)."""
    shape = shape_text(lead["m"], lead["k"], lead["n"])
    threads, cores = lead["threads"], machine_cores(jobs).max()
    with_threads = f", {threads:.0f} BLAS thread{'s' if threads != 1 else ''}" if np.isfinite(threads) else ""
    with_threads += f" of {cores:.0f} cores" if with_threads and np.isfinite(cores) else ""
    flagged: list = []
    rates = [f"{row['dtype']} at {tf(row['tflops'])} TF/s{_flagged(noisy, row, device, flagged)}" + (
        f" at {shape_text(row['m'], row['k'], row['n'])}" if i == 0 or
        shape_text(row["m"], row["k"], row["n"]) != shape else "")
        for i, (_, row) in enumerate(part.sort_values("dtype", key=lambda c: c.map(_dtype_rank)).iterrows())]
    if only_cpu:
        text = f"On this CPU ({device}{with_threads}), {lead['label']} runs {and_join(rates)}."
    else:
        text = f"The CPU line ({lead['label']} on {device}{with_threads}) runs {and_join(rates)}."
    load = load_words(jobs)
    if load:
        text += f" During {'its' if len(jobs) > 1 else 'the'} job{'s' if len(jobs) > 1 else ''}: {load}."
    return " ".join(filter(None, [text, flag_sentence(flagged)]))


def headline_sentences(results: pd.DataFrame) -> list[str]:
    """One or two sentences per device, generated from the data: the fastest rate of ours at the largest shape,
    against cuBLAS of the same run and the datasheet peak; then the other element types in a list. A CPU (the
    only device of a CPU-only run, or the reference line of a GPU run) gets its fastest method's rates."""
    facts = headline_facts(results)
    if facts.empty:
        return []
    gpus = facts.loc[facts["kind"] == "gpu", "device"].unique()
    noisy = NoisyJobs(results)
    labels, cpu = device_labels(results), device_kind(results) == "cpu"
    out = []
    for device, part in facts.groupby("device", sort=False):
        lead = part.iloc[0]  # fastest first
        if lead["kind"] == "gpu":
            out.append(_gpu_sentence(lead, part, device, len(gpus) == 1, noisy))
        else:
            jobs = results[(cpu & (labels == device)).to_numpy()]
            out.append(_cpu_sentence(lead, part, device, len(gpus) == 0, noisy, jobs))
    return out


def headline(results: pd.DataFrame) -> dict | None:
    """The answer first: a sentence or two per device (see headline_sentences), then per device, dtype and shape
    the fastest verified kernel of ours, its TF/s, its ratio to cuBLAS and its share of the datasheet peak, beside
    cuBLAS itself. A run with no kernel of ours (CPU only) ranks the reference lines instead, and says why the
    ratios are blank. None without a verified job."""
    facts = headline_table(results)
    if facts is None:
        return None
    column = "fastest of ours" if facts.ours else "fastest method"
    table, flagged = _mark_headline(facts.table, NoisyJobs(results))
    table, trades = _like_with_like(table)
    table = table.rename(columns={
        "label": column, "tflops": "TF/s", "vs_cublas": "× cuBLAS", "pct_of_datasheet": "% of datasheet peak",
        "cublas_tflops": "cuBLAS TF/s"})
    if not several_gpus(results):
        table = table.drop(columns="device")
    if not has_configurations(facts.ranked):
        table = table.drop(columns="configuration")  # no kernel with variants ran: nothing was chosen
    if table["cuBLAS TF/s"].isna().all():
        table = table.drop(columns="cuBLAS TF/s")
    blank = [c for c in ("× cuBLAS", "% of datasheet peak") if table[c].isna().all()]
    for c in blank:  # a dash, not an empty cell that reads as a bug; the note says why
        table[c] = "—"
    notes = []
    if not facts.ours:
        lines = in_order(distinct(facts.ranked["method"]), method_order())
        notes.append(f"This run has no GPU kernel of ours, only the reference line{'s' if len(lines) > 1 else ''} "
                     f"({', '.join(lines)}): the table gives the fastest verified method at each element type and "
                     "shape.")
    why_blank = {"× cuBLAS": "cuBLAS was not run",
                 "% of datasheet peak": "no datasheet peak is on file for this device (the datasheet peaks are "
                                        "listed in matmul_study/analysis/ladder.py)"
                 if facts.gpu else "the datasheet peaks are GPU peaks and this run has no GPU job"}
    if blank:
        notes.append(f"The — under {' and '.join(blank)}: {'; '.join(why_blank[c] for c in blank)}.")
    if trades:
        notes.append(f"{TRADE} Not like with like: no vendor line of the kernel's accuracy class ran "
                     f"({', '.join(trades)}), so its ratio is against the vendor's own class, a trade of accuracy "
                     "for speed, not parity.")
    if flagged:
        notes.append(flag_sentence(flagged))
    return {"table": marked(html_table(table.reset_index(drop=True))), "column": column,
            "note": " ".join(notes) or None, "sentences": headline_sentences(results)}


TRADE = "‡"


def _like_with_like(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The headline's accuracy classes shown where a dtype has several (a column), and each ratio that is not like
    with like (analysis/accuracy.py) marked TRADE; returns the table and the classes of the marked rows."""
    if "accuracy" not in table:
        return table, []
    classes = table["accuracy"].fillna("").astype(str)
    alike = table["like_with_like"].fillna(False).astype(bool) if "like_with_like" in table else classes == classes
    ratio = pd.to_numeric(table["vs_cublas"], errors="coerce")
    trade = ~alike & ratio.notna()
    table = table.drop(columns=["accuracy", "like_with_like"], errors="ignore")
    if (classes != "").any():
        table.insert(table.columns.get_loc("configuration") + 1 if "configuration" in table else 1,
                     "accuracy class", classes.where(classes != "", "—"))
    if trade.any():
        table["vs_cublas"] = [f"{format_float(r)}{TRADE}" if t else r for r, t in zip(ratio, trade)]
    return table, list(dict.fromkeys(classes[trade].where(classes[trade] != "", "its dtype's")))


def _mark_headline(table: pd.DataFrame, noisy: NoisyJobs) -> tuple[pd.DataFrame, list]:
    """The headline table with MARK after each rate whose job is flagged (ours, and the vendor line's), and the
    (name, reason) of each."""
    ours = noisy.reasons(table, device="device", dtype="dtype", shape="shape", label="label", variant="configuration")
    vendor = pd.Series([noisy.reason(device=row["device"], dtype=row["dtype"], shape=row["shape"],
                                     method=vendor_line(row["dtype"])) if np.isfinite(row["cublas_tflops"]) else ""
                        for _, row in table.iterrows()], index=table.index, dtype=object)
    flagged = [(f"{row['label']} {row['dtype']} at {shape_words(row['shape'])}", why_)
               for (_, row), why_ in zip(table.iterrows(), ours) if why_]
    flagged += [(f"{vendor_name(row['dtype'])} {row['dtype']} at {shape_words(row['shape'])}", why_)
                for (_, row), why_ in zip(table.iterrows(), vendor) if why_]
    return mark_column(mark_column(table, "tflops", ours), "cublas_tflops", vendor), flagged


def _precision_sentence(row: pd.Series) -> str:
    """One comparison of analysis.precision.comparisons in words: the rates, the errors, FP8's quantization."""
    a, b = row["dtype"], row["against"]
    shapes = ("" if row["shape"] == row["against_shape"] else
              f", at {shape_words(row['shape'])} and {shape_words(row['against_shape'])}")
    text = (f"{a} runs at {times(row['rate_ratio'])} the rate of {b} ({tf(row['tflops'])} against "
            f"{tf(row['against_tflops'])} TF/s, {row['method']} against {row['against_method']}{shapes})")
    mine, theirs = row["rel_error"], row["against_rel_error"]
    if np.isfinite(row["error_ratio"]) and mine > 0:
        text += f" at {times(row['error_ratio'])} its error ({error(mine)} against {error(theirs)})"
    elif mine == 0 and theirs > 0:
        text += f" and exactly (error 0, against {error(theirs)})"
    elif mine > 0 and theirs == 0:
        text += f" at an error of {error(mine)}, where {b} matched the reference exactly"
    elif mine == 0 and theirs == 0:
        text += "; both are exact"
    quantized = row["quantization_rel_error"]
    if np.isfinite(quantized):
        text += f"; quantizing fp32 inputs to {a} costs an error of {error(quantized)} of its own"
    return text + "."


def precision(results: pd.DataFrame, figures: list[dict]) -> dict | None:
    """Precision and speed (analysis.precision): per element type at its largest square shape, the two fastest
    verified kernels of ours and the vendor line with their rates and errors, the figure, and a sentence per
    comparison of an element type with the more precise one it stands in for. None without a verified GPU job."""
    table = precision_table(results)
    if table.empty:
        return None
    several = table["device"].nunique() > 1
    shown = pd.DataFrame({
        **({"device": table["device"]} if several else {}),
        "element type": table["dtype"],
        "shape": [shape_words(s) for s in table["shape"]],
        "kernel": [f"{label} (vendor)" if vendor else label for label, vendor in zip(table["label"], table["vendor"])],
        "TF/s": [tf(x) for x in table["tflops"]],
        "× vendor": ["—" if vendor or not np.isfinite(r) else f"{r:.2f}"
                     for r, vendor in zip(table["vs_vendor"], table["vendor"])],
        "rel. error": [error(x) for x in table["rel_error"]],
        "vendor's rel. error": ["—" if vendor else error(x) for x, vendor in zip(table["vendor_rel_error"],
                                                                                table["vendor"])],
        "quantization error": [error(x) for x in table["quantization_rel_error"]],
    })
    if not np.isfinite(table["quantization_rel_error"].astype(float)).any():
        shown = shown.drop(columns="quantization error")
    shown = mark_column(shown, "TF/s", NoisyJobs(results).reasons(table, device="device", dtype="dtype",
                                                                  shape="shape", method="method", label="label"))
    sentences = [(f"On {row['device']}: " if several else "") + _precision_sentence(row)
                 for _, row in comparisons(table).iterrows()]
    return {"table": marked(html_table(shown)), "sentences": sentences, "figures": figures}


def _climb_sentence(row: pd.Series, several: bool) -> str:
    """One element type's climb up the ladder (a row of analysis.why.climb) in a sentence."""
    shape = shape_text(*(int(x) for x in str(row["shape"]).split("x"))) if str(row["shape"]).count("x") == 2 \
        else row["shape"]
    return (f"{row['dtype']}" + (f" on {row['device']}" if several else "") + f" at {shape}: from "
            f"{row['first']} at {tf(row['first_tflops'])} TF/s to {row['top']} at {tf(row['top_tflops'])} TF/s "
            f"({row['factor']:.3g}×); the largest single step, {row['biggest_from']} → {row['biggest_to']}, "
            f"bought {row['biggest_gain']:.2f}×.")


def why(results: pd.DataFrame) -> dict | None:
    """The ladder's steps at the largest shape (analysis.why): what each adds, the modelled traffic and intensity
    before and after, and the rate it bought in the same run; one sentence per element type on the whole climb.
    None without two rungs of one element type."""
    steps = ladder_steps(results)
    if steps.empty:
        return None
    several = steps["device"].nunique() > 1
    noisy = NoisyJobs(results)
    marks = {end: noisy.reasons(steps, device="device", dtype="dtype", shape="shape", label=end).map(
        lambda r: f" {MARK}" if r else "") for end in ("from", "to")}
    table = pd.DataFrame({
        "element type": steps["dtype"],
        "step": steps["from"] + marks["from"] + " → " + steps["to"] + marks["to"],
        "what the step adds": steps["adds"],
        "modelled traffic (GB)": [f"{tf(a)} → {tf(b)}" + (f" (÷{c:.3g})" if c >= 1.005 else
                                                          f" (×{1 / c:.3g})" if c <= 0.995 else " (same)")
                                  for a, b, c in zip(steps["traffic_from_gb"], steps["traffic_to_gb"],
                                                     steps["traffic_cut"])],
        "intensity (FLOP/B)": [f"{tf(a)} → {tf(b)}" for a, b in zip(steps["intensity_from"], steps["intensity_to"])],
        "TF/s": [f"{tf(a)} → {tf(b)}" for a, b in zip(steps["tflops_from"], steps["tflops_to"])],
        "gain": [f"{g:.2f}×" for g in steps["gain"]],
        "reading": steps["reading"],
        **({"device": steps["device"]} if several else {}),  # last: the template styles columns 3 and 8
    })
    climbs = [_climb_sentence(row, several) for _, row in climb(results).iterrows()]
    rungs = ladder_table(results)
    rungs = rungs[~rungs["method"].isin(reference_lines())]
    single = [f"{dtype} has one rung ({part['label'].iloc[0]}), so no step to explain."
              for (_, dtype), part in rungs.groupby(["device", "dtype"], sort=False) if len(part) == 1]
    return {"table": marked(html_table(table)), "climbs": climbs, "single": single}


def regret(results: pd.DataFrame) -> dict | None:
    """Configuration regret (analysis.regret): where a sweep measured several configurations of a method on one
    shape, the heuristic's pick against the fastest verified one, per problem, with the median and the worst in a
    sentence. None where no method had two configurations verified on one shape."""
    table = regret_table(results)
    facts = regret_summary(table)
    if facts is None:
        return None
    several = table["device"].nunique() > 1
    shown = pd.DataFrame({
        **({"device": table["device"]} if several else {}),
        "method": table["method"] + table["block"].map(lambda b: f" b{b}" if b else ""),
        "element type": table["dtype"],
        "shape": [shape_text(m, k, n) for m, k, n in zip(table["m"], table["k"], table["n"])],
        "configurations measured": table["variants"],
        "heuristic's pick": table["pick"],
        "pick TF/s": table["pick_gflops"] / 1e3,
        "fastest measured": table["best"],
        "fastest TF/s": table["best_gflops"] / 1e3,
        "pick ÷ fastest": [f"{r:.2f}" if np.isfinite(r) else "not measured" for r in table["regret"]],
    })
    noisy = NoisyJobs(results)
    for rate, variant in (("pick TF/s", "pick"), ("fastest TF/s", "best")):
        shown = mark_column(shown, rate, noisy.reasons(table, device="device", method="method", block="block",
                                                       dtype="dtype", shape="shape", variant=variant))
    return {"table": marked(html_table(shown)), "sentences": _regret_sentences(facts)}


def _regret_sentences(facts: dict) -> list[str]:
    """analysis.regret.summary in words: the median and worst pick, or no regret; and the picks not measured."""
    sentences = []
    problems = f"{facts['measured']} problem{'s' if facts['measured'] != 1 else ''}"
    if facts["measured"] and facts["no_regret"] == facts["measured"]:
        sentences.append(f"Over {problems} with several configurations measured, the heuristic picked the fastest "
                         "configuration every time (no regret).")
    elif facts["measured"]:
        worst = facts["worst_row"]
        sentences.append(
            f"Over {problems} with several configurations measured, the heuristic's pick ran at "
            f"{facts['median']:.2f}× the fastest configuration at the median and {facts['worst']:.2f}× at worst "
            f"({worst['method']} {worst['dtype']} at {shape_text(worst['m'], worst['k'], worst['n'])}: it picked "
            f"{worst['pick']}, {worst['best']} ran fastest); it picked the fastest in {facts['no_regret']} of "
            f"{facts['measured']}.")
    if facts["unmeasured"]:
        sentences.append(f"In {facts['unmeasured']} problem{'s' if facts['unmeasured'] != 1 else ''} the pick was "
                         "not among the verified configurations measured (a sweep by a list of names that left it "
                         "out, or a pick that failed verification): no regret is stated there.")
    return sentences


def claims(results: pd.DataFrame) -> Markup | None:
    """The source study's claims (analysis.claims) with their verdicts; one sentence where none could be checked."""
    if results.empty or "method" not in results:
        return None
    table = check_claims(results)
    if not table.empty and (table["verdict"] == "not measured").all():
        # Rows of "not measured" say nothing one sentence cannot (a CPU-only run, say).
        return Markup('<p class="none">None of the source study\'s claims could be checked: each compares GPU '
                      "kernels (or a GPU kernel with the CPU), and this run has no verified job on one side of every "
                      "comparison.</p>")
    if not several_gpus(results):
        table = table.drop(columns="device")
    text = table_text(table)
    for verdict, css in VERDICT_CLASSES.items():
        # cell text is escaped already, so an exact match can only hit a verdict cell
        text = text.replace(f"<td>{verdict}</td>", f'<td class="verdict {css}">{verdict}</td>')
    return marked(Markup(text))


def methods(results: pd.DataFrame) -> Markup:
    """The registry's description of each method run, and the measured effect of each one-change ladder step."""
    ran = [name for name in registry.METHODS if "method" in results and name in set(results["method"])]
    rows = []
    for name in ran:
        method = registry.get(name)
        rows.append({"method": name, "what it does": method.description,
                     "kernel": f"kernels/{method.source}" if method.source else "(library)",
                     "dtypes": ", ".join(method.dtypes), "block axis": "yes" if method.block_axis else "no"})
    html = table_text(pd.DataFrame(rows)) if rows else ""
    noisy = NoisyJobs(results)
    for numerator, denominator, text in LADDER_STEPS:
        effect = collate.method_ratio(results, numerator, denominator)
        for method in (numerator, denominator) if not effect.empty else ():
            effect = mark_column(effect, f"{method} GFLOP/s", noisy.reasons(
                effect.assign(_m=method), device="device", dtype="dtype", block="block", shape="shape", method="_m"))
        if not effect.empty:
            html += f"<p>{escape(text)} Measured ({escape(numerator)} over {escape(denominator)}):</p>"
            html += effect.to_html(escape=True, index=False, float_format=lambda x: f"{x:.2f}", border=0,
                                   classes="data", justify="left", formatters=rate_formatters(effect))
    return marked(Markup(html))
