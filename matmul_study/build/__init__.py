"""Compile and launch: CUDA source generation and compilation of kernels/*.cu (kernels), and the callables that
launch one method once over a job's device buffers (launchers).

May import: core."""
