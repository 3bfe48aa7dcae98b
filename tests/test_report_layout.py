"""The report reads cleanly on a laptop screen (1280 px) and at 1400 px: in headless Chromium, no page wider than
the window, no table wider than the page, nothing sticking out of it; one number format per unit in the text and
the tables; and no figure whose labels run into each other.

Two reports: the committed H200 reference re-rendered from its committed results (report/rerender.py), and a
CPU-only report from its numpy jobs (rerender --methods numpy, as tests/test_figures_report.py builds one). The
browser tests skip where there is no Chromium (apt-get install -y chromium), unless
MATMUL_STUDY_REQUIRE_CHROMIUM=1 (CI sets it where it installed Chromium; tests/conftest.py): then they fail.

How the width is measured: a small script added to a copy of the page writes, once the page has loaded, what the
browser laid out (the window's and the page's widths, the content's right edge, each table's box and scroll width,
and every element past the content's edge that no scrolling box clips) as JSON into a <pre>, and Chromium's
--dump-dom prints the DOM with it; nothing is read from pixels.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
from matplotlib.text import Text

from matmul_study.present.report.text import gflops, rate, rate_unit, tf

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "results" / "reference" / "NVIDIA_H200"
WIDTHS = (1280, 1400)  # a laptop screen, and the width report/screenshot.sh shows
MARK = "†"  # the noise flag after a number (analysis.noise.MARK)

PROBE = """<script>
window.addEventListener('load', () => {
  const box = e => e.getBoundingClientRect();
  const body = document.body, style = getComputedStyle(body);
  const right = box(body).right - parseFloat(style.paddingRight);
  const clipped = e => {
    for (let p = e.parentElement; p && p !== body; p = p.parentElement)
      if (getComputedStyle(p).overflowX !== 'visible') return true;
    return false;
  };
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '');
  const out = {
    window: window.innerWidth, height: window.innerHeight, client: document.documentElement.clientWidth,
    page: document.documentElement.scrollWidth, right: right,
    sticking: [...body.querySelectorAll('*')].filter(e => box(e).width > 0 && box(e).right > right + 1 && !clipped(e))
      .map(e => name(e) + ' to ' + Math.round(box(e).right)),
    tables: [...document.querySelectorAll('table')].map(t => ({
      section: (t.closest('section') || {}).id || '', right: box(t).right, scroll: t.scrollWidth,
      client: t.clientWidth, head: [...t.querySelectorAll('th')].slice(0, 3).map(h => h.textContent)})),
  };
  const pre = document.createElement('pre');
  pre.id = 'layout-probe';
  pre.textContent = JSON.stringify(out);
  body.appendChild(pre);
});
</script>"""


def _rerender(out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(REPO / "report" / "rerender.py"), str(REFERENCE), "--out", str(out),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """name -> report.html: the H200 reference and the CPU-only report, rendered side by side (two processes)."""
    root = tmp_path_factory.mktemp("layout")
    jobs = {"H200 reference": _rerender(root / "h200"), "CPU-only": _rerender(root / "cpu", "--methods", "numpy")}
    for name, job in jobs.items():
        output, _ = job.communicate(timeout=300)
        assert job.returncode == 0, f"{name}: {output[-3000:]}"
    return {"H200 reference": root / "h200" / "report.html", "CPU-only": root / "cpu" / "report.html"}


def _layout(chromium: str, report: Path, width: int) -> dict:
    """What headless Chromium lays out for `report` in a window `width` px wide (see the module's docstring)."""
    page = report.with_name(f"probe-{width}.html")
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},900",
                          f"--user-data-dir={report.parent / f'chromium-{width}'}", "--virtual-time-budget=5000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="layout-probe">(.*?)</pre>', out.stdout, re.S)
    assert match, f"Chromium laid out nothing for {report} at {width} px: {out.stderr[-2000:]}"
    return json.loads(html.unescape(match.group(1)))


@pytest.fixture(scope="module")
def layouts(chromium, reports) -> dict[tuple[str, int], dict]:
    return {(name, width): _layout(chromium, path, width) for name, path in reports.items() for width in WIDTHS}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["H200 reference", "CPU-only"])
def test_the_page_is_no_wider_than_the_window_and_no_table_wider_than_the_page(layouts, name, width):
    layout = layouts[(name, width)]
    assert layout["window"] == width
    assert layout["page"] <= layout["client"], f"{name} at {width} px: the page scrolls sideways"
    assert not layout["sticking"], f"{name} at {width} px: past the page's edge: {layout['sticking'][:10]}"
    assert layout["tables"], "no table found: the probe is broken"
    for table in layout["tables"]:
        where = f"{name} at {width} px, the table in #{table['section']} ({', '.join(table['head'])})"
        assert table["right"] <= layout["right"] + 1, f"{where} runs past the page's edge"
        # every column shown: a table wider than its box would hide its last columns behind a scrollbar
        assert table["scroll"] <= table["client"] + 1, \
            f"{where} is {table['scroll']} px wide in a {table['client']} px page: its last columns are cut off"


# ------------------------------------------------------------------------------------------ one format per unit


def _cells(doc: str) -> list[tuple[str, str]]:
    """(column heading, cell text) of every cell of every table in `doc`, tags and the noise mark left out."""
    cells = []
    for table in re.findall(r"<table.*?</table>", doc, re.S):
        heads = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
            values = [html.unescape(re.sub(r"<[^>]+>", "", c)).replace(MARK, "").strip()
                      for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            if len(values) == len(heads):
                row_of = dict(zip(heads, values))
                for head, value in row_of.items():
                    # a ceiling's value is in the unit its row names
                    cells.append((row_of.get("unit", head) if head == "value" else head, value))
    return cells


def _is_a_rate(text: str) -> bool:
    """Whether `text` is a number as `rate` writes it: rate(float(text)) gives `text` back."""
    try:
        return rate(float(text)) == text
    except ValueError:
        return False


@pytest.mark.parametrize("name", ["H200 reference", "CPU-only"])
def test_every_rate_in_the_tables_and_the_text_has_its_units_one_format(reports, name):
    doc = re.sub(r'src="data:[^"]*"', 'src=""', reports[name].read_text(encoding="utf-8"))
    rates = [(head, value) for head, value in _cells(doc) if rate_unit(head) is not None and value not in ("", "—")]
    assert rates, f"{name}: no rate column found"
    for head, value in rates:
        for number in value.split(" → "):  # the why-table writes a step as "27.8 → 229"
            assert _is_a_rate(number), f"{name}: {number!r} in column {head!r} is not in the rate format"
    text = html.unescape(re.sub(r"<[^>]+>", " ", doc)).replace(MARK, " ")
    written = re.findall(r"(?<![\w.])(-?\d[\d.e+\-]*)\s+(TF/s|GFLOP/s)", text)
    assert written, f"{name}: no rate in the text"
    wrong = sorted({f"{number} {unit}" for number, unit in written if not _is_a_rate(number)})
    assert not wrong, f"{name}: rates not in the one format of their unit: {wrong[:10]}"
    assert not re.search(r"\d\.?\d*e[+-]\d+\s+(TF/s|GFLOP/s)", text), f"{name}: a rate in scientific notation"


def test_a_rate_has_three_significant_digits_whole_numbers_from_1000_and_never_an_exponent():
    cases = {1486.5: "1486", 785.6: "786", 49.31: "49.3", 7.981: "7.98", 0.1125: "0.113", 9.0: "9", 999.7: "1000",
             1.5e6: "1500000", 1.23e-5: "0.0000123", 0.0: "0", float("nan"): ""}
    assert {x: rate(x) for x in cases} == cases
    assert tf(1486.5) == rate(1486.5)
    assert rate_unit("TF/s") is tf and rate_unit("cuBLAS TF/s") is tf and rate_unit("tflops") is tf
    assert rate_unit("burst GFLOP/s") is gflops and rate_unit("gflops_b16") is gflops
    assert rate_unit("timing_median_s") is None and rate_unit("× cuBLAS") is None


# ------------------------------------------------------------------------------------------- figure labels


@pytest.fixture(scope="module")
def reference_results():
    from matmul_study.analysis import collate
    from matmul_study.pipeline.steps import read_results

    return collate.best_variants(read_results(REFERENCE / "tables" / "results.csv").copy())


@pytest.fixture(scope="module")
def reference_calibration():
    from matmul_study.analysis import collate

    return collate.load_calibration([REFERENCE / "tables" / "calibration.csv"])


def _label_boxes(fig) -> list[tuple[int, bool, object]]:
    """(panel, whether it is a text drawn in the panel, box in pixels) of each panel's axis labels, tick labels of
    ticks in view and texts (a kernel's name, a line's name: its own box, without its leader line)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for i, ax in enumerate(a for a in fig.axes if a.get_visible()):
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        labels = [ax.xaxis.label, ax.yaxis.label, *(t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1),
                  *(t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1)]
        boxes += [(i, False, Text.get_window_extent(t, renderer)) for t in labels if t.get_visible() and t.get_text()]
        boxes += [(i, True, Text.get_window_extent(t, renderer)) for t in ax.texts if t.get_visible() and t.get_text()]
    # a gap of a twenty-fourth of an inch at least: labels that touch read as one
    return [(i, inside, box.padded(fig.dpi / 48)) for i, inside, box in boxes]


@pytest.mark.parametrize("figure, methods", [("throughput", ["numpy"]), ("speedup", None), ("precision", None),
                                             ("roofline", None)])
def test_no_figure_label_runs_into_another(reference_results, reference_calibration, figure, methods):
    """The CPU-only throughput figure and the speedup figure (two panels a row beside a legend: their x labels),
    the precision figure (each kernel named beside its point; a kernel's fp16 and bf16 builds at one place) and the
    roofline under the reference's calibrated ceilings (the roof's, the datasheet peak's and the slope's names, where
    the fp32 and fp64 peaks lie close): no label of one panel overlaps one of another, and no text drawn in a panel
    overlaps another."""
    from matmul_study.present.figures import FIGURES

    results = reference_results[reference_results["method"].isin(methods)] if methods else reference_results
    fig = FIGURES[figure].plot(results.reset_index(drop=True), reference_calibration)
    try:
        boxes = _label_boxes(fig)
        assert boxes, "no label found: the check is broken"
        clash = [(a, b) for k, (i, inside_a, a) in enumerate(boxes) for j, inside_b, b in boxes[k + 1:]
                 if (i != j or (inside_a and inside_b)) and a.overlaps(b)]
        assert not clash, f"{figure}: labels overlap: {clash[:3]}"
    finally:
        matplotlib.pyplot.close(fig)
