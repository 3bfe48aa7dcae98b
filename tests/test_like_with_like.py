"""Like with like: a build's ratio to the vendor is taken against the vendor line of its own accuracy class."""

import numpy as np
import pandas as pd

from matmul_study.analysis.accuracy import accuracy_class, with_classes
from matmul_study.analysis.collate import add_ratios
from matmul_study.core import configs, dtypes, registry
from matmul_study.core.specs import FAST_ACCUMULATION, PROMOTED, THREE_TF32


def rows(*entries) -> pd.DataFrame:
    """(method, variant, dtype, GFLOP/s) at 4096^3 on one device, every job verified."""
    return pd.DataFrame([{"method": m, "variant": v, "dtype": d, "gflops": g, "m": 4096, "k": 4096, "n": 4096,
                          "block": 0, "status": "passed", "env_device_name": "GPU"} for m, v, d, g in entries])


def ratio(df: pd.DataFrame, method: str, variant: str = "default") -> tuple[float, bool]:
    row = df[(df["method"] == method) & (df["variant"] == variant)].iloc[0]
    return round(row["pct_of_cublas"], 6), bool(row["like_with_like"])


def test_fp8_builds_are_compared_with_the_cublaslt_line_of_their_accumulation():
    df = add_ratios(rows(("cublaslt", "default", "float8_e4m3", 1000.0),
                         ("cublaslt", "fast_accum", "float8_e4m3", 1200.0),
                         ("wgmma_fp8", "default", "float8_e4m3", 1260.0),
                         ("wgmma_fp8", "bn128_promote", "float8_e4m3", 950.0)))
    assert ratio(df, "wgmma_fp8") == (105.0, True)  # fast accumulation against fast accumulation, not 126 %
    assert ratio(df, "wgmma_fp8", "bn128_promote") == (95.0, True)  # promoted against promoted
    assert ratio(df, "cublaslt", "fast_accum") == (100.0, True)
    classes = dict(zip(df["method"] + "/" + df["variant"], df["accuracy_class"]))
    assert classes["wgmma_fp8/default"] == FAST_ACCUMULATION and classes["cublaslt/default"] == PROMOTED


def test_a_class_without_its_vendor_line_is_a_trade_not_parity():
    # 3xTF32 has no vendor line of its class: its ratio is against SGEMM, marked as not like with like.
    df = add_ratios(rows(("cublas", "default", "float32", 50.0), ("wgmma_3xtf32", "default", "float32", 120.0),
                         ("warptiled", "default", "float32", 48.0)))
    assert ratio(df, "wgmma_3xtf32") == (240.0, False)
    assert ratio(df, "warptiled") == (96.0, True)
    assert df.loc[df["method"] == "wgmma_3xtf32", "accuracy_class"].item() == THREE_TF32
    # Without cuBLASLt's fast-accumulation line (an older study), FP8 fast accumulation is not like with like.
    old = add_ratios(rows(("cublaslt", "default", "float8_e4m3", 1000.0), ("wgmma_fp8", "default", "float8_e4m3",
                                                                          1050.0)))
    assert ratio(old, "wgmma_fp8") == (105.0, False)


def test_failed_vendor_lines_give_no_ratio():
    df = rows(("cublaslt", "fast_accum", "float8_e4m3", 1200.0), ("wgmma_fp8", "default", "float8_e4m3", 1260.0))
    df.loc[0, "status"] = "failed"
    out = add_ratios(df)
    assert np.isnan(out.loc[1, "pct_of_cublas"]) and not out.loc[1, "like_with_like"]


def test_a_study_runs_the_vendor_line_of_every_class():
    problem = configs.job_problem(dtypes.get("float8_e4m3"), 0, 4096, 4096, 4096, sm_count=132)
    planned = configs.plan(registry.get("cublaslt"), problem, "auto")
    assert [c.variant for c in planned] == ["default", "fast_accum"]
    assert "fast accumulation" in planned[1].reason
    # Block-scaled FP8 has one class: one line. A forced setting is still the user's.
    block = configs.job_problem(dtypes.get("float8_e4m3_block"), 0, 4096, 4096, 4096, sm_count=132)
    assert [c.variant for c in configs.plan(registry.get("cublaslt"), block, "auto")] == ["default"]
    assert [c.variant for c in configs.plan(registry.get("cublaslt"), problem, "default")] == ["default"]


def test_the_headline_and_the_ladder_pair_each_kernel_with_its_class():
    from matmul_study.analysis.headline import headline
    from matmul_study.analysis.ladder import ladder_table
    from matmul_study.analysis.precision import precision_table

    df = rows(("cublaslt", "default", "float8_e4m3", 1000.0), ("cublaslt", "fast_accum", "float8_e4m3", 1200.0),
              ("wgmma_fp8", "default", "float8_e4m3", 1260.0), ("cublas", "default", "float32", 50.0),
              ("wgmma_3xtf32", "default", "float32", 120.0), ("warptiled", "default", "float32", 48.0))
    df = add_ratios(df.assign(shape="4096x4096x4096", env_device_kind="gpu", label=df["method"]))
    table = headline(df).table.set_index("dtype")
    assert table.loc["float8_e4m3", "vs_cublas"] == 1.05 and table.loc["float8_e4m3", "like_with_like"]
    # fp32's headline is the fastest kernel of SGEMM's class, not 3xTF32's 2.4x: a trade is not parity.
    assert table.loc["float32", "label"] == "warptiled" and table.loc["float32", "vs_cublas"] == 0.96
    ladder = ladder_table(df).set_index("method")
    assert ladder.loc["wgmma_fp8", "vs_cublas"] == 1.05
    precision = precision_table(df)
    fp8 = precision[precision["dtype"] == "float8_e4m3"]
    assert len(fp8[fp8["vendor"]]) == 2  # both cuBLASLt lines are points
    assert fp8.loc[fp8["method"] == "wgmma_fp8", "vs_vendor"].item() == 1.05


def test_the_answer_table_names_classes_and_marks_a_trade():
    from matmul_study.present.report.answer import headline as answer

    df = rows(("cublaslt", "default", "float8_e4m3", 1000.0), ("wgmma_fp8", "default", "float8_e4m3", 1050.0),
              ("cublas", "default", "float16", 700.0), ("wgmma_warp_specialized", "default", "float16", 710.0))
    df = add_ratios(df.assign(shape="4096x4096x4096", env_device_kind="gpu", label=df["method"]))
    out = answer(df)
    table = str(out["table"])
    assert "accuracy class" in table and "fast accumulation" in table and "1.050‡" in table
    assert "Not like with like" in out["note"] and "fast accumulation" in out["note"]
    # With cuBLASLt's fast-accumulation line in the run, the same kernel is like with like: no mark.
    both = add_ratios(rows(("cublaslt", "default", "float8_e4m3", 1000.0),
                           ("cublaslt", "fast_accum", "float8_e4m3", 1200.0),
                           ("wgmma_fp8", "default", "float8_e4m3", 1260.0)).assign(
        shape="4096x4096x4096", env_device_kind="gpu", label="x"))
    marked = answer(both)
    assert "‡" not in str(marked["table"]) and "Not like with like" not in (marked["note"] or "")


def test_the_headline_sentence_marks_a_ratio_across_classes():
    from matmul_study.present.report.answer import headline_sentences

    df = rows(("cublaslt", "default", "float8_e4m3", 1000.0), ("wgmma_fp8", "default", "float8_e4m3", 1050.0),
              ("cublas", "default", "float16", 700.0), ("wgmma_warp_specialized", "default", "float16", 710.0))
    df = add_ratios(df.assign(shape="4096x4096x4096", env_device_kind="gpu", label=df["method"]))
    text = " ".join(headline_sentences(df))
    assert "1.05× cuBLASLt‡" in text and "float8_e4m3 fast accumulation: no vendor line" in text
    assert "1.01× cuBLAS‡" not in text and "1.01× cuBLAS)" in text
    # With cuBLASLt's fast-accumulation line in the run, the sentence names the line it divides by.
    both = pd.concat([df, add_ratios(rows(("cublaslt", "fast_accum", "float8_e4m3", 1200.0)))], ignore_index=True)
    text = " ".join(headline_sentences(add_ratios(both.drop(columns=["pct_of_cublas", "like_with_like"]).assign(
        shape="4096x4096x4096", env_device_kind="gpu", label=both["method"]))))
    assert "0.88× cuBLASLt's fast-accumulation line" in text and "‡" not in text


def test_the_headline_names_the_class_only_where_the_vendor_runs_several():
    from matmul_study.present.report.answer import headline_sentences

    # Block-scaled FP8 is in the promoted class, but cuBLASLt has one line of it: the sentence names cuBLASLt alone,
    # where per-tensor FP8 names which of its two lines a ratio divides by.
    df = add_ratios(rows(("cublaslt", "default", "float8_e4m3", 1000.0),
                         ("cublaslt", "fast_accum", "float8_e4m3", 1200.0),
                         ("wgmma_fp8", "bn128_promote", "float8_e4m3", 950.0),
                         ("cublaslt", "default", "float8_e4m3_block", 1000.0),
                         ("wgmma_fp8_block", "default", "float8_e4m3_block", 940.0)).assign(
        shape="4096x4096x4096", env_device_kind="gpu", label="x"))
    text = " ".join(headline_sentences(df))
    assert "0.94× cuBLASLt)" in text and "0.94× cuBLASLt's promoted line" not in text
    assert "0.95× cuBLASLt's promoted line" in text


def test_3xtf32_shares_the_tf32_peak_so_no_row_passes_100_percent():
    from matmul_study.analysis.ladder import datasheet_tflops, ladder_table

    df = rows(("cublas", "default", "float32", 50_000.0), ("wgmma_3xtf32", "default", "float32", 134_000.0))
    df = add_ratios(df.assign(shape="4096x4096x4096", env_device_kind="gpu", env_device_name="NVIDIA H200",
                              label=df["method"]))
    ladder = ladder_table(df).set_index("method")
    assert ladder.loc["wgmma_3xtf32", "datasheet_tflops"] == datasheet_tflops("NVIDIA H200", "tf32")
    assert ladder.loc["cublas", "datasheet_tflops"] == datasheet_tflops("NVIDIA H200", "float32")
    assert (ladder["tflops"] / ladder["datasheet_tflops"]).max() < 1


def test_the_bench_times_the_vendor_build_of_the_kernels_class():
    from matmul_study.measure.compare import vendor_line_of

    cublaslt = registry.get("cublaslt")
    assert vendor_line_of(cublaslt, FAST_ACCUMULATION, "float8_e4m3") == "fast_accum"
    assert vendor_line_of(cublaslt, PROMOTED, "float8_e4m3") is None  # its default build
    assert vendor_line_of(cublaslt, FAST_ACCUMULATION, "float8_e4m3_block") is None  # no such line: the default
    assert vendor_line_of(registry.get("cublas"), THREE_TF32, "float32") is None


def test_a_class_belongs_to_its_dtypes_so_a_method_of_several_dtypes_has_each_ones_own():
    # Kernel 10 promotes its FP8 sums every 32 k; in fp16 or int8 the same builds have the dtype's one class.
    method = registry.get("mma_async_copy")
    assert method.accuracy_of("m16_splitk4", "float8_e4m3") == PROMOTED
    assert method.accuracy_of("m16_splitk4", "float16") == method.accuracy_of(None, "int8") == ""
    assert accuracy_class("mma_async_copy", "m16", "float8_e4m3") == PROMOTED
    assert accuracy_class("mma_async_copy", "m16", "bfloat16") == ""
    frame = with_classes(pd.DataFrame({"method": ["mma_async_copy"] * 2, "variant": ["m16"] * 2,
                                       "dtype": ["float8_e4m3", "float16"]}))
    assert list(frame["accuracy_class"]) == [PROMOTED, ""]


def test_the_readme_answer_table_pairs_each_rung_with_its_class():
    from matmul_study.present.tables import answer_table

    def at(size, *entries):
        return rows(*entries).assign(m=size, k=size, n=size, sustained_gflops=np.nan, verification_rel_fro_error=0.0)

    both = pd.concat([at(s, ("cublaslt", "default", "float8_e4m3", 1000.0), ("cublaslt", "fast_accum", "float8_e4m3",
                      1200.0), ("wgmma_fp8", "default", "float8_e4m3", 1260.0)) for s in (4096, 8192)])
    fp8 = answer_table([both]).splitlines()[2]
    assert fp8.startswith("| float8_e4m3, fast accumulation | wgmma_fp8 | 1.050 | 1.050 | 1.3 | 1.2 |")
    # Without the fast-accumulation line the ratio is against the promoted one: a trade, marked.
    promoted_only = both[both["variant"] != "fast_accum"]
    assert "| 1.260† | 1.260† |" in answer_table([promoted_only]).splitlines()[2]
    # The promoted class, which a study runs beside the fast pick, has its own row, against the promoted line.
    classes = pd.concat([both, *(at(s, ("wgmma_fp8", "bn128_promote", "float8_e4m3", 950.0)) for s in (4096, 8192))])
    lines = answer_table([classes]).splitlines()
    assert lines[2].startswith("| float8_e4m3, fast accumulation | wgmma_fp8 | 1.050 | 1.050 |")
    assert lines[3].startswith("| float8_e4m3, promoted (cuBLASLt's default) | wgmma_fp8 | 0.950 | 0.950 | 0.9 | 1.0 |")
