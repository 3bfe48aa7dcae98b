"""The study's HTML report: one self-contained file (figures inlined, no network) rendered with jinja2 from the
template in present/templates.

Everything that comes from the config or the results is escaped by jinja2's autoescape or by
`DataFrame.to_html(escape=True)`; only those already-escaped tables, the base64 figure URIs and the caller's
`extra_sections` fragments are marked safe.

Besides the configuration, environment, failures, figures and tables, the report checks the measurement itself
(throttled GPU clocks, repetition noise against its target), checks the source study's claims
(`matmul_study.analysis.claims`), lists the calibrated device ceilings, compares GPU devices when the results hold more
than one, and gives the provenance (commits, config hashes, library versions) of every device's results.

Modules: page (`render_report` and the page's own sections), answer (the headline, the ladder's steps, precision,
regret, the claims, the methods), measurement (throttling, noise and caps, the CPU budget, burst and sustained
rates), noise (the † after a rate whose job missed its noise target, in every table and sentence) and text
(numbers and names in words, escaped tables).
"""

from matmul_study.present.report.page import PRUNED_COLUMNS, render_report

__all__ = ["PRUNED_COLUMNS", "render_report"]
