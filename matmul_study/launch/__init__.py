"""Compile and launch: CUDA source generation and compilation of kernels/*.cu (kernels), the device buffers and the
relaid copies of operands that launches share (operands), and the callables that launch one method once over a
job's device buffers (launchers; cuBLASLt's in cublaslt, loaded only by the jobs that call it).

May import: core."""
