"""Figures and report: seaborn figures from the tidy table (figures/), and the self-contained HTML report
(report/). Presenting only formats and lays out: what a figure or the report shows is computed in analysis.

May import: core, analysis. Never measure or build: the report reads tables, it measures nothing."""
