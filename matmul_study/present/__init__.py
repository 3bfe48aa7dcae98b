"""Figures and report: seaborn figures from the tidy table, and the self-contained HTML report.

May import: core, analysis. Never measure or build: the report reads tables, it measures nothing."""
