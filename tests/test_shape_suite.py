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
