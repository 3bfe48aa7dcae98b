"""B's L2 policy, chosen at launch (specs.StreamB): which launches stream B, what the generated kernel takes, what
the launcher passes it and what a job's result says about it."""

from __future__ import annotations

import ctypes

import pytest

from matmul_study.core import dtypes, registry
from matmul_study.core.specs import DEFAULT_L2_BYTES, Launch, Problem, StreamB
from matmul_study.launch import kernels, launchers

FP16 = dtypes.get("float16")
L2 = 50 * 2**20  # an H100's or an H200's


def one_row(columns: int = 48, split: int = 2) -> Launch:
    return Launch((columns, 1, split), (128, 1, 1))


def test_b_streams_where_one_row_of_tiles_reads_more_of_it_than_the_share_of_the_l2():
    rule = StreamB(share=0.8)
    weights_50mb = Problem(16, 6144, 4096, 0, FP16, l2_bytes=L2)  # 50.3 MB of B: 0.96 of the L2
    weights_34mb = Problem(16, 4096, 4096, 0, FP16, l2_bytes=L2)  # 0.64
    assert rule(weights_50mb, one_row()) and not rule(weights_34mb, one_row())
    # Two rows of tiles read B twice: the L2 may serve the second.
    assert not rule(weights_50mb, Launch((48, 2, 1), (256, 1, 1)))
    # The share is of the device's L2, its bytes by the dtype's: a larger L2 keeps the 50 MB; int8's 25 MB fit.
    assert not rule(Problem(16, 6144, 4096, 0, FP16, l2_bytes=2 * L2), one_row())
    assert not rule(Problem(16, 6144, 4096, 0, dtypes.get("int8"), l2_bytes=L2), one_row())
    assert rule(Problem(16, 6144, 4096, 0, dtypes.get("tf32"), l2_bytes=2 * L2), one_row())


def test_an_unknown_l2_plans_as_for_an_h200():
    assert DEFAULT_L2_BYTES == L2
    rule = StreamB(share=0.8)
    assert rule(Problem(16, 6144, 4096, 0, FP16), one_row()) == rule(Problem(16, 6144, 4096, 0, FP16, l2_bytes=L2),
                                                                      one_row())
    assert not rule(Problem(16, 4096, 4096, 0, FP16), one_row())


def test_the_rule_says_why_in_a_sentence():
    rule = StreamB(share=0.8)
    assert rule.reason(Problem(16, 6144, 4096, 0, FP16, l2_bytes=L2), one_row()) == (
        "B streamed (L2 evict_first): its 50.3 MB pass 0.8 of the 52.4 MB L2")
    assert rule.reason(Problem(16, 4096, 4096, 0, FP16, l2_bytes=L2), one_row()) == (
        "B copied plainly: its 33.6 MB are within 0.8 of the 52.4 MB L2")
    assert rule.reason(Problem(300, 6144, 4096, 0, FP16), Launch((24, 3, 1), (256, 1, 1))) == (
        "B copied plainly: 3 rows of tiles read it again")


@pytest.mark.parametrize("share", [0, -0.5])
def test_a_share_that_is_not_positive_is_refused(share):
    with pytest.raises(ValueError, match=f"StreamB.share: {share!r} is not a positive share of the L2"):
        StreamB(share=share)


def test_kernels_10_and_20_take_the_flag_after_their_pointers_with_null_pointers_for_those_a_build_lacks():
    assert kernels.trailing_arguments("mma_async_copy", "float16") == ("stream_b",)
    assert kernels.trailing_arguments("mma_async_copy", "float8_e4m3", "m16_splitk4") == (
        "workspace", "scales", "stream_b")
    whole = kernels.wrapper("mma_async_copy", "int8", 0, "m16")
    assert "int m, int n, int k, int stream_b)" in whole
    assert "mma_async_copy_matmul<int8_t, int>(A, B, C, m, n, k, nullptr, nullptr, stream_b);" in whole
    fp8 = kernels.wrapper("mma_async_copy", "float8_e4m3", 0, "m16_splitk4")
    assert "float* __restrict__ workspace, const float* __restrict__ scales, int stream_b)" in fp8
    assert "(A, B, C, m, n, k, workspace, scales, stream_b);" in fp8
    three = kernels.wrapper("mma_3xtf32", "float32", 0, "m32_splitk2")
    assert "float* __restrict__ workspace, int stream_b)" in three
    assert "mma_3xtf32_matmul<float>(A, B, C, m, n, k, workspace, nullptr, stream_b);" in three
    # A method that does not choose B's policy takes no flag, and a build without a workspace still passes a null
    # one before its scales.
    assert registry.get("wgmma_fp8").stream_b is None
    assert kernels.trailing_arguments("wgmma_fp8", "float8_e4m3", "splitk4") == ("workspace", "scales")
    assert "(&tmap_a, &tmap_b, C, m, n, k, nullptr, scales);" in kernels.wrapper("wgmma_fp8", "float8_e4m3", 0)


@pytest.mark.parametrize("n,streamed", [(6144, 1), (4096, 0)])
def test_the_launcher_passes_the_flag_the_builds_launch_asks_for_as_an_int(n, streamed):
    method = registry.get("mma_async_copy")
    build = method.variant("m16_splitk2")
    p = Problem(16, n, 4096, 0, FP16, l2_bytes=L2)
    args = launchers.trailing_arguments_of(method, p, build, launchers.DeviceBuffers(None, None, None), 0x90)
    assert [type(x) for x in args] == [ctypes.c_uint64, ctypes.c_int]
    assert [x.value for x in args] == [0x90, streamed]


def test_a_jobs_reason_says_how_b_was_copied():
    from matmul_study.measure.runner import Job, variant_fields

    job = Job("mma_async_copy", "float16", 0, 16, 4096, 6144, "m16_splitk2")
    fields = variant_fields(job, {"variants": {"mma_async_copy": ["m16_splitk2"]}}, job.problem(132))
    assert fields["variant_reason"] == (
        "forced by config; B streamed (L2 evict_first): its 50.3 MB pass 0.84 of the 52.4 MB L2")
    plain = Job("naive", "float32", 16, 16, 4096, 6144)
    assert "L2" not in variant_fields(plain, {"variants": "auto"}, plain.problem(132))["variant_reason"]
