"""Collate and model: result files to tidy tables, the traffic model, the ladder, what precision costs, the source
study's claims, the devices of a results table and the comparison of two runs; and what the report states from
them: the headline answer (headline), how well each job was measured (measurement: caps, CPU budget, throttled
clocks, noise), which rates missed their noise target (noise: the one rule the report flags by), the CPU line's
threads, cores and load (cpu_line), the burst and sustained rates (burst), each device's provenance (provenance), a
rate's spread (spread) and the results table read column by column (columns).

May import: core. It never imports measuring or building code: it reads what they wrote."""
