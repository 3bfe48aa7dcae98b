"""Config validation: every bad case gives one message naming the key, the value and what is allowed."""

import re
from pathlib import Path

import pytest
import yaml

from matmul_study.core import dtypes, registry
from matmul_study.core.records import config_hash
from matmul_study.pipeline.config import (ConfigError, check_yaml_syntax, coerce_numbers, load_schema,
                                          shapes, validate, Shape)

REPO = Path(__file__).resolve().parent.parent


def test_default_config_is_valid_and_complete(default_config):
    assert default_config["block_sizes"] == [16, 32]
    assert default_config["measurement"]["distribution"] == {"low": -5, "high": 5}
    assert default_config["measurement"]["mode"] == "hot"


def test_defaults_fill_an_empty_config():
    cfg = validate({})
    assert cfg["sizes"] == [512, 1024, 2048, 4096, 8192]
    assert cfg["measurement"]["warmup"] == 2 and cfg["measurement"]["seed"] == 12345
    assert cfg["methods"] == list(registry.default_methods())
    assert cfg["threads"] == "auto" and cfg["measurement"]["cpu_max_s"] > 0


def test_the_method_list_lives_in_the_registry_only():
    # Neither the schema's default nor config.yaml keeps a copy of the list that could drift from the registry.
    assert load_schema()["properties"]["methods"]["default"] == "default"
    assert yaml.safe_load((REPO / "config.yaml").read_text())["methods"] == "default"
    assert validate({"methods": "default"})["methods"] == list(registry.default_methods())
    assert validate({"methods": "all"})["methods"] == list(registry.METHODS)
    assert set(registry.METHODS) - set(registry.default_methods()) == {
        name for name, m in registry.METHODS.items() if not m.default_study}
    assert validate({"methods": ["cublas", "numpy"]})["methods"] == ["cublas", "numpy"]  # a list stays as given


def test_the_readmes_method_list_is_the_registrys():
    text = (REPO / "README.md").read_text()
    match = re.search(r"<!-- methods -->(.*?)<!-- /methods -->", text, re.S)
    assert match, "README.md has no <!-- methods --> ... <!-- /methods --> list"
    listed = re.findall(r"`([a-z0-9_]+)`", match.group(1))
    assert listed == list(registry.default_methods())


@pytest.mark.parametrize(
    "override, key, value, allowed",
    [
        ({"bogus": 1}, "the config", "'bogus'", "allowed keys: arch, block_sizes"),
        ({"measurement": {"warmups": 3}}, "measurement", "'warmups'", "allowed keys:"),
        ({"sizes": [0]}, "sizes[0]", "0", "an integer >= 1 or a mapping with keys m, k, n"),
        ({"sizes": [-4]}, "sizes[0]", "-4", "an integer >= 1"),
        ({"sizes": [{"m": 3, "k": 4}]}, "sizes[0]", "'k': 4", "a mapping with keys m, k, n"),
        ({"sizes": [{"m": 3, "k": 4, "n": 0}]}, "sizes[0]", "'n': 0", "a mapping with keys m, k, n"),
        ({"sizes": "big"}, "sizes", '"big"', "a list"),
        ({"sizes": [1.5]}, "sizes[0]", "1.5", "an integer >= 1"),
        ({"block_sizes": [64]}, "block_sizes[0]", "64", "an integer from 1 to 32"),
        ({"block_sizes": [0]}, "block_sizes[0]", "0", "an integer from 1 to 32"),
        ({"dtypes": ["float8"]}, "dtypes[0]", '"float8"',
         "one of float8_e4m3, float8_e4m3_block, float16, bfloat16, tf32, float32, float64, int32"),
        ({"methods": ["magic"]}, "methods[0]", '"magic"', "one of numpy, naive"),
        ({"methods": []}, "methods", "[]", "a list with at least 1 item"),
        ({"methods": "every"}, "methods", '"every"', "one of default, all or a list"),
        ({"measurement": {"min_reps": "x"}}, "measurement.min_reps", '"x"', "an integer >= 1"),
        ({"measurement": {"mode": "warm"}}, "measurement.mode", '"warm"', "one of hot, cold"),
        ({"arch": "ampere"}, "arch", '"ampere"', "matching"),
        ({"threads": 0}, "threads", "0", "an integer >= 1 or one of auto"),
        ({"measurement": {"cpu_max_s": 0}}, "measurement.cpu_max_s", "0", "a number >0"),
    ],
)
def test_bad_values_name_key_value_and_allowed(override, key, value, allowed):
    with pytest.raises(ConfigError) as err:
        validate(override)
    message = str(err.value)
    assert key in message and value in message and allowed in message, message
    assert "\n" not in message.strip()


def test_block_limit_explains_threads():
    with pytest.raises(ConfigError, match="1024 threads"):
        validate({"block_sizes": [33]})


def test_cross_key_constraints():
    with pytest.raises(ConfigError, match="measurement.max_reps.*min_reps"):
        validate({"measurement": {"min_reps": 10, "max_reps": 3}})
    with pytest.raises(ConfigError, match="distribution.*low 5 is not below high 5"):
        validate({"measurement": {"distribution": {"low": 5, "high": 5}}})


def test_command_line_strings_become_numbers():
    schema = load_schema()
    cfg = coerce_numbers({"sizes": ["256", {"m": "3", "k": "4", "n": "5"}], "block_sizes": ["8"],
                          "methods": ["numpy"], "measurement": {"min_time_s": "0.1"}}, schema)
    assert cfg["sizes"] == [256, {"m": 3, "k": 4, "n": 5}]
    assert cfg["block_sizes"] == [8] and cfg["methods"] == ["numpy"]
    assert cfg["measurement"]["min_time_s"] == 0.1
    assert validate(cfg)["sizes"][0] == 256


def test_command_line_true_and_false_become_booleans():
    # `snakemake --config calibrate=false` hands over the string "false" (only True and False are parsed).
    schema = load_schema()
    assert coerce_numbers({"calibrate": "false"}, schema)["calibrate"] is False
    assert coerce_numbers({"calibrate": "Yes"}, schema)["calibrate"] is True
    assert validate({"calibrate": "false"})["calibrate"] is False
    with pytest.raises(ConfigError, match="calibrate.*maybe.*true or false"):
        validate({"calibrate": "maybe"})


@pytest.mark.parametrize("key, value", [("methods", "tiled_turbo"), ("dtypes", "float8")])
def test_names_outside_the_registry_and_dtype_records_are_refused_with_the_allowed_ones(make_config, key, value):
    known = list(registry.METHODS) if key == "methods" else list(dtypes.NAMES)
    with pytest.raises(ConfigError) as err:
        make_config(**{key: [known[0], value]})
    message = str(err.value)
    assert f"'{key}[1]'" in message and f'"{value}"' in message and ", ".join(known) in message


def test_every_registered_method_and_dtype_is_accepted(make_config):
    cfg = make_config(methods=list(registry.METHODS), dtypes=list(dtypes.NAMES))
    assert cfg["methods"] == list(registry.METHODS) and cfg["dtypes"] == list(dtypes.NAMES)


def test_every_schema_key_has_a_description_and_default():
    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            if path != "sizes[]":
                assert "description" in sub, f"{path}.{key} has no description"
            if "properties" in sub:
                walk(sub, f"{path}.{key}")

    schema = load_schema()
    for key, sub in schema["properties"].items():
        assert "description" in sub and "default" in sub, key
    walk(schema["properties"]["measurement"], "measurement")


def test_shapes_parse_square_and_rectangular_and_dedupe():
    cfg = validate({"sizes": [64, {"m": 17, "k": 33, "n": 65}, 64]})
    assert shapes(cfg) == [Shape(64, 64, 64), Shape(17, 33, 65)]
    assert Shape(17, 33, 65).label == "17x33x65"


def test_config_hash_is_stable_and_sensitive(make_config):
    assert config_hash(make_config()) == config_hash(make_config())
    assert config_hash(make_config()) != config_hash(make_config(measurement={"seed": 1}))


@pytest.mark.parametrize("text, key, line, first", [
    ("sizes: [32]\nmethods: [numpy]\nsizes: [64]\n", "sizes", 3, 1),
    ("measurement:\n  warmup: 1\n  min_reps: 3\n  warmup: 2\n", "warmup", 4, 2),
])
def test_a_key_given_twice_is_an_error_naming_the_key_and_both_lines(tmp_path, text, key, line, first):
    path = tmp_path / "other.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        check_yaml_syntax(path)
    message = str(err.value)
    assert message.startswith(f"{path}, line {line}, column ") and f'"{key}" is given twice' in message
    assert f"first on line {first}" in message
    path.write_text(text.replace(f"{key}:", "other:", 1))
    check_yaml_syntax(path)  # the same keys once each pass


def test_variants_default_to_auto_in_the_schema_config_yaml_and_quick_yaml():
    assert validate({})["variants"] == "auto" and load_schema()["properties"]["variants"]["default"] == "auto"
    for name in ("config.yaml", "quick.yaml"):
        assert yaml.safe_load((REPO / name).read_text())["variants"] == "auto"
    assert validate({"variants": "all"})["variants"] == "all"
    mapping = {"wgmma_warp_specialized": ["default", "splitk4"], "naive": "default"}
    assert validate({"variants": mapping})["variants"] == mapping


@pytest.mark.parametrize("variants, key, value, allowed", [
    ("best", "'variants'", '"best"', "one of auto, default, all, or a mapping from method names"),
    (3, "'variants'", "3", "one of auto, default, all"),
    ({}, "'variants'", "{}", "a mapping from method names"),
    ({"tiled_turbo": "all"}, "'variants'", '"tiled_turbo"', "method names of the registry (numpy, naive"),
    ({"fake_tiles": "most"}, "'variants.fake_tiles'", '"most"',
     "one of auto, default, all or a list of fake_tiles's variants: default, wide, deep_k."),
    ({"fake_tiles": []}, "'variants.fake_tiles'", "[]", "a list of fake_tiles's variants"),
    ({"fake_tiles": ["wide", "splitk3"]}, "'variants.fake_tiles[1]'", '"splitk3"',
     "(not a variant of the method); allowed: fake_tiles's variants: default, wide, deep_k."),
    ({"fake_tiles": ["probe"]}, "'variants.fake_tiles[0]'", '"probe"', "a diagnostic build"),
    ({"naive": ["wide"]}, "'variants.naive[0]'", '"wide"', "naive's variants: default (naive has one configuration)"),
])
def test_bad_variants_name_key_value_and_what_is_allowed(variant_method, variants, key, value, allowed):
    with pytest.raises(ConfigError) as err:
        validate({"variants": variants})
    message = str(err.value)
    assert f"config key {key}" in message and value in message and allowed in message, message


@pytest.mark.parametrize(
    "override, key, value, allowed",
    [
        # JSON Schema counts 256.0 as an integer; the study indexes and counts with these keys.
        ({"sizes": [256.0]}, "sizes[0]", "256.0", "an integer >= 1"),
        ({"sizes": [{"m": 3.0, "k": 4, "n": 5}]}, "sizes[0].m", "3.0", "an integer >= 1"),
        ({"block_sizes": [16.0]}, "block_sizes[0]", "16.0", "an integer from 1 to 32"),
        ({"measurement": {"cpu_processes": 2.0}}, "measurement.cpu_processes", "2.0", "an integer"),
        ({"measurement": {"warmup": 1.0}}, "measurement.warmup", "1.0", "an integer >= 0"),
        ({"threads": 4.0}, "threads", "4.0", "an integer >= 1 or one of auto"),
        # Bounds that cannot verify: infinite, or so large that fp32 sums of products overflow.
        ({"measurement": {"distribution": {"low": -1e300, "high": 1e300}}}, "measurement.distribution.low",
         "-1e+300", "a number from -1000 to 1000"),
        ({"measurement": {"distribution": {"high": float("inf")}}}, "measurement.distribution.high", "inf",
         "a finite number"),
        ({"measurement": {"min_time_s": float("nan")}}, "measurement.min_time_s", "nan", "a finite number"),
    ],
)
def test_floats_for_integers_and_unverifiable_bounds_are_refused(override, key, value, allowed):
    with pytest.raises(ConfigError) as err:
        validate(override)
    message = str(err.value)
    assert key in message and value in message and allowed in message, message


def test_integral_numbers_on_the_command_line_stay_integers_and_decimals_are_refused():
    assert validate({"sizes": ["256"]})["sizes"] == [256]
    with pytest.raises(ConfigError, match=r"sizes\[0\]': value \"256\.0\" is not allowed; allowed: an integer >= 1"):
        validate({"sizes": ["256.0"]})


@pytest.mark.parametrize("text, message", [
    ("variants: {}\n", "config key 'variants': value {}"),
    ("sizes: [256.0]\n", r"config key 'sizes\[0\]': value 256.0"),
    ("measurement:\n  distribution: {high: .inf}\n", "measurement.distribution.high"),
])
def test_a_config_files_own_values_are_checked_before_the_merge_can_hide_them(tmp_path, text, message):
    from matmul_study.pipeline.config import check_config_file

    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        check_config_file(path)
    check_config_file(tmp_path / "missing.yaml")  # a missing file is Snakemake's to report


def test_an_empty_variants_mapping_in_a_configfile_stops_the_run_before_any_job(tmp_path):
    import subprocess
    import sys

    (tmp_path / "study.yaml").write_text("variants: {}\nmethods: [numpy]\nsizes: [32]\n")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                          str(REPO), "-n", "--cores", "1", "--configfile", str(tmp_path / "study.yaml")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "Invalid configuration" in out.stderr and "'variants'" in out.stderr, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
