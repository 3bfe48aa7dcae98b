"""`python -m matmul_study pick`: the builds a study would run for one problem on a card, and why, without a GPU."""
import pytest

from matmul_study.__main__ import main
from matmul_study.core import configs, dtypes, registry


def picked(capsys, *args):
    assert main(["pick", *args]) == 0
    return [line.split("\t") for line in capsys.readouterr().out.splitlines()]


def test_it_prints_the_plan_the_study_makes_for_the_problem_on_that_card(capsys):
    lines = picked(capsys, "--dtype", "float8_e4m3", "--m", "64", "--k", "4096", "--n", "5120", "--device", "H100",
                   "--method", "wgmma_fp8")
    problem = configs.job_problem(dtypes.get("float8_e4m3"), 0, 64, 4096, 5120, sm_count=132,
                                  hbm_bytes_per_s=3.35e12)
    plan = configs.plan(registry.get("wgmma_fp8"), problem, configs.AUTO)
    assert [(name, variant, reason) for name, variant, reason in lines] == \
        [("wgmma_fp8", c.variant, c.reason) for c in plan]
    assert len(plan) == 2  # the pick, and the promoted class's pick that a study runs beside it


def test_the_card_s_bandwidth_an_sm_moves_the_16bit_decode_pick(capsys):
    # The whole twin of the 64x64 two-k-group tiles only on a card of less bandwidth an SM (configs.k_group_twin).
    shape = ("--dtype", "float16", "--m", "64", "--k", "4096", "--n", "4096", "--method", "wgmma_warp_specialized")
    h200, h100 = picked(capsys, *shape), picked(capsys, *shape, "--device", "H100")
    assert h200[0][1] == "bm64_bn128_splitk4" and h100[0][1] == "swap_bm64_bn64_kg2"


def test_every_kernel_of_ours_for_the_dtype_and_those_the_shape_rules_out_say_why(capsys):
    lines = picked(capsys, "--dtype", "float32", "--m", "64", "--k", "256", "--n", "256")
    names = [line[0] for line in lines]
    assert "cublas" not in names and "numpy" not in names  # the vendor and CPU lines are no pick of ours
    assert {"warptiled", "wgmma_3xtf32", "few_rows"} <= set(names)
    assert ["few_rows", "-", "not run: few_rows serves M of 8 rows or fewer, not 64"] in lines
    assert ["tiled", "-", "not run: needs --block (1 to 32)"] in lines


@pytest.mark.parametrize("args, message", [
    (("--method", "dmma"), "--method dmma: it does not run float16; it runs float64"),
    (("--method", "cublas"), "--method cublas: not a compiled kernel of ours"),
    (("--m", "0"), "--m must be a positive integer, got 0"),
])
def test_bad_input_names_the_option_the_value_and_what_is_allowed(capsys, args, message):
    base = {"--dtype": "float16", "--m": "8", "--k": "8", "--n": "8"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    with pytest.raises(SystemExit):
        main(["pick", *(x for pair in base.items() for x in pair)])
    assert message in capsys.readouterr().err
