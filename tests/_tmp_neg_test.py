import dataclasses, pytest
from matmul_study.core import registry
import tests.test_kernels_compile as t

def test_typo_define_fails(tmp_path, monkeypatch):
    m = registry.get("wgmma_warp_specialized")
    bad = dataclasses.replace(m, variants=(registry.Variant("typo", ("WGMMA_WS_CLUSTR=1",)),
                                           registry.Variant("smem", ("WGMMA_WS_STAGES=3",))))
    monkeypatch.setitem(registry.METHODS, m.name, bad)
    with pytest.raises(AssertionError):
        t.test_every_registry_variant_builds_for_its_target_and_changes_the_code(m.name, "typo", tmp_path / "a")
    with pytest.raises(AssertionError):  # stages 3 with the default launch's shared memory
        t.test_registry_launch_matches_the_warp_specialized_kernels_config(m.name, "smem", tmp_path / "b")
