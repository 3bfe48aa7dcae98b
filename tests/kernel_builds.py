"""A registered build compiled with nvcc on the CPU, for the tests that read what a kernel issues or refuses."""

from __future__ import annotations

from matmul_study.launch import kernels


def rung_build(method: str, dtype: str, variant: str | None, tmp_path, target: str, extra: tuple[str, ...] = (),
               options: list[str] | None = None) -> tuple[int, str, str]:
    """`method`'s `variant` for `dtype` compiled to `target` ("ptx" or "cubin") for sm_90a: (nvcc's status, the PTX
    or "", its messages). `options` replace the build's own; `extra` follow them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "module.cu"
    source.write_text(kernels.module_source(method, [(dtype, 0)], variant))
    output = tmp_path / f"module.{target}"
    options = [*(options or kernels.compile_options(method, variant)), *extra]
    result = kernels.run_nvcc(kernels.nvcc_command(source, output, "sm_90a", options, target))
    code = output.read_text() if target == "ptx" and result.returncode == 0 else ""
    return result.returncode, code, result.stdout + result.stderr
