"""Measure and verify: one job's inputs, its run on the CPU or the GPU, verification against fp64, timing and the
burst and sustained rates, the GPU device and its slots, device ceilings (calibrate), and the job runner that
writes one result file.

May import: core, launch."""
