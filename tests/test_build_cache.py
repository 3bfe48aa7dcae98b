"""compile_with_pycuda keeps its builds: the same build is compiled once, and any change to what it depends on
(source, arch, options, a file the source includes, however deep) compiles again."""

import sys
import types

import pytest

from matmul_study.launch import kernels


@pytest.fixture
def fake_pycuda(monkeypatch, tmp_path):
    calls = []

    def compile(source, no_extern_c, arch, options, include_dirs, target, cache_dir=None):
        # PyCUDA's own cache preprocesses every source to find its entry: this one replaces it.
        assert cache_dir is False
        calls.append((source, arch, tuple(options), target))
        return f"binary of {source} for {arch} {options} {target}".encode()

    compiler = types.ModuleType("pycuda.compiler")
    compiler.compile = compile
    package = types.ModuleType("pycuda")
    package.compiler, package.VERSION_TEXT = compiler, "fake"
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    monkeypatch.setenv("MATMUL_STUDY_BUILD_CACHE", str(tmp_path / "cache"))
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "helper.cu").write_text("// one\n")
    monkeypatch.setattr(kernels, "KERNEL_DIR", sources)
    return calls, sources


def test_a_build_is_compiled_once_and_read_back(fake_pycuda):
    calls, _ = fake_pycuda
    first = kernels.compile_with_pycuda('#include "helper.cu"\n', "sm_90")
    assert kernels.compile_with_pycuda('#include "helper.cu"\n', "sm_90") == first
    assert len(calls) == 1


def test_what_a_build_depends_on_is_in_its_key(fake_pycuda):
    calls, sources = fake_pycuda
    source = '#include "helper.cu"\n'
    kernels.compile_with_pycuda(source, "sm_90")
    kernels.compile_with_pycuda(source, "sm_80")
    kernels.compile_with_pycuda(source, "sm_90", options=["-O1"])
    kernels.compile_with_pycuda(source, "compute_90", target="ptx")
    assert len(calls) == 4
    (sources / "helper.cu").write_text("// two\n")  # an included file changed
    kernels.compile_with_pycuda(source, "sm_90")
    assert len(calls) == 5


def test_an_unwritable_cache_still_builds(fake_pycuda, monkeypatch, tmp_path):
    calls, _ = fake_pycuda
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MATMUL_STUDY_BUILD_CACHE", str(blocker / "cache"))
    assert kernels.compile_with_pycuda("x", "sm_90").startswith(b"binary of x")
    assert kernels.compile_with_pycuda("x", "sm_90") and len(calls) == 2


def test_an_edit_to_a_file_included_through_another_folder_changes_the_key(fake_pycuda):
    _, sources = fake_pycuda
    (sources / "family").mkdir()
    (sources / "rung.cu").write_text('#include "family/mainloop.cuh"\n')
    (sources / "family/mainloop.cuh").write_text('#include "../shared.cuh"\n')
    (sources / "shared.cuh").write_text("// one\n")
    source = '#include "rung.cu"\n'

    def key():
        return kernels.build_key(source, "sm_90a", kernels.COMPILE_OPTIONS, "cubin")

    before = key()
    (sources / "helper.cu").write_text("// not included\n")
    assert key() == before  # a build does not depend on the kernels it does not include
    (sources / "shared.cuh").write_text("// two\n")
    assert key() != before
