"""The real-world shape suite (shapes.yaml): what it must hold, and that the pipeline accepts it."""

from pathlib import Path

import yaml

from matmul_study.pipeline.config import shapes, validate

REPO = Path(__file__).resolve().parent.parent


def suite() -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config.update(yaml.safe_load((REPO / "shapes.yaml").read_text()))  # as --configfile merges it, key by key
    return validate(config)


def test_the_suite_covers_llm_projections_skinny_and_deep_k_shapes():
    found = shapes(suite())
    non_square = [s for s in found if not (s.m == s.k == s.n)]
    assert len(non_square) >= 16
    assert sum(min(s.m, s.n) <= 128 for s in found) >= 3  # skinny: decode batches, narrow outputs
    assert sum(s.k >= 8 * max(s.m, s.n) for s in found) >= 3  # deep K
    tokens = {s.m for s in found if s.k in (4096, 14336, 3584, 18944)}
    assert min(tokens) <= 16 and max(tokens) >= 8192  # token counts from 16 to 8192


def test_every_llm_shape_names_its_source():
    text = (REPO / "shapes.yaml").read_text()
    for model in ("Meta-Llama-3-8B", "Qwen2.5-7B"):
        assert f"{model}, config.json" in text


def test_the_decode_profile_plans_decode_builds_for_every_shape():
    # decode.yaml: a few token rows against LLM weights, in every tensor-core dtype with its vendor line; kernel 10's
    # heuristic picks a decode build for each (M at most 64) and dtype, sized for the SMs of the device it plans for.
    from matmul_study.core import configs, dtypes, registry

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    profile = yaml.safe_load((REPO / "decode.yaml").read_text())
    config.update({k: v for k, v in profile.items() if k != "measurement"})
    config["measurement"].update(profile["measurement"])
    config = validate(config)
    found = shapes(config)
    assert len(found) >= 10 and all(s.m <= 64 for s in found) and {1, 16, 32, 64} <= {s.m for s in found}
    assert "mma_async_copy" in config["methods"]
    method = registry.get("mma_async_copy")
    assert set(config["dtypes"]) == set(method.dtypes)
    for dtype in config["dtypes"]:
        assert registry.vendor_method(dtype) in config["methods"], dtype
        for s in found:
            pick = configs.choose(method, configs.job_problem(dtypes.get(dtype), 0, s.m, s.k, s.n, sm_count=132))
            rows = min(s.m, 32) if dtype == "float8_e4m3" else s.m  # FP8: row tiles of at most 32 (configs)
            assert pick.variant.startswith("m") and int(pick.variant[1:].partition("_")[0]) >= rows, (s, pick)


def test_the_suite_runs_every_dtype_of_the_default_study_with_its_vendor_line():
    from matmul_study.core import registry

    config = suite()
    default = yaml.safe_load((REPO / "config.yaml").read_text())["dtypes"]
    assert set(config["dtypes"]) >= set(default)
    for dtype in config["dtypes"]:
        assert registry.vendor_method(dtype) in config["methods"], dtype
        ours = [m for m in config["methods"] if registry.get(m).compiled and dtype in registry.get(m).dtypes]
        assert ours, f"no kernel of ours runs {dtype} in the suite"
