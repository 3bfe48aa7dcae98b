"""Collate and model: result files to tidy tables, the traffic model, the ladder, what precision costs, the source
study's claims, the devices of a results table and the comparison of two runs.

May import: core. It never imports measuring or building code: it reads what they wrote."""
