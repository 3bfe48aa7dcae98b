"""Configuration: schema errors for people, shapes, and the config hash."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config value that is not allowed; the message names the key, the value and what is allowed."""


class _DuplicateKey(Exception):
    def __init__(self, key, first_line: int, line: int, column: int):
        super().__init__(key)
        self.key, self.first_line, self.line, self.column = key, first_line, line, column


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error (YAML 1.2 says so; PyYAML
    and Snakemake keep the last value silently)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise _DuplicateKey(key, first, key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return super().construct_mapping(node, deep)


def check_yaml_syntax(path: str | Path) -> None:
    """Raise ConfigError naming the file, line and column of a YAML syntax error in a config file (Snakemake's
    own message names neither), or the key given twice and both its lines (Snakemake keeps the last silently);
    a file that does not exist is left to Snakemake."""
    path = Path(path)
    if not path.is_file():
        return
    try:
        yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506  (a SafeLoader)
    except _DuplicateKey as dup:
        raise ConfigError(f"{path}, line {dup.line}, column {dup.column}: config key {json.dumps(dup.key)} is given "
                          f"twice (first on line {dup.first_line}); YAML keeps only the last one. Remove one of "
                          "them.") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        what = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        if exc.context_mark and mark and exc.context_mark.line != mark.line:
            what += f" (the construct opened on line {exc.context_mark.line + 1})"
        raise ConfigError(f"{where}: YAML syntax error: {what}.") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}.") from None


def check_config_file(path: str | Path) -> None:
    """Check a config file's own values before Snakemake merges it into config.yaml's: the merge keeps the old
    value where the file gives an empty mapping (`variants: {}` would leave `variants: auto` in place without a
    word), so those are errors here, as are the floats and infinities of check_strict_types."""
    if not Path(path).is_file():
        return
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping of keys to values, not {type(data).__name__}.")
    schema = load_schema()
    check_strict_types(data, schema)
    if "variants" in data:
        check_variants({"variants": data["variants"]})


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(Path(path).read_text())


KIND_WORDS = {"array": "a list", "object": "a mapping", "string": "a string", "integer": "an integer",
              "number": "a number", "boolean": "true or false"}


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _allowed(schema: dict) -> str:
    """What a schema node allows, in words."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "oneOf" in schema:
        return " or ".join(_allowed(s) for s in schema["oneOf"])
    kind = schema.get("type", "value")
    if kind == "array" and "minItems" in schema:
        return f"a list with at least {schema['minItems']} item(s)"
    if kind == "object" and "properties" in schema:
        return "a mapping with keys " + ", ".join(schema["properties"])
    if kind in KIND_WORDS and not any(key in schema for key in ("minimum", "maximum", "exclusiveMinimum", "pattern")):
        return KIND_WORDS[kind]
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if "exclusiveMinimum" in schema:
        lo = f">{schema['exclusiveMinimum']}"
    if lo is not None and hi is not None:
        return f"{'an integer' if kind == 'integer' else 'a number'} from {lo} to {hi}"
    if lo is not None:
        return f"{'an integer' if kind == 'integer' else 'a number'} {lo if str(lo).startswith('>') else '>= ' + str(lo)}"
    if "pattern" in schema:
        return f"a {kind} matching {schema['pattern']}"
    return f"a {kind}"


def describe_validation_error(error, schema: dict | None = None) -> str:
    """One line for a jsonschema ValidationError: config key, offending value, what is allowed."""
    key = _key(error.absolute_path)
    value = json.dumps(error.instance) if not isinstance(error.instance, dict) else repr(error.instance)
    node = error.schema
    if error.validator == "additionalProperties":
        allowed = sorted(node.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = f"config key '{key}'" if error.absolute_path else "the config"
        return (f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"allowed keys: {', '.join(allowed)}.")
    if error.validator == "required":
        return f"config key '{key}': {error.message}; allowed: {_allowed(node)}."
    if error.validator in ("oneOf", "anyOf"):
        allowed = _allowed(node)
    elif error.validator in ("minItems",):
        allowed = f"a list with at least {node['minItems']} item(s)"
    else:
        allowed = _allowed(node)
    line = f"config key '{key}': value {value} is not allowed; allowed: {allowed}."
    if error.validator == "maximum" and error.absolute_path and error.absolute_path[0] == "block_sizes":
        line += f" A block of {error.instance}x{error.instance} threads exceeds CUDA's 1024 threads per block."
    return line


def format_workflow_error(exc: Exception) -> str | None:
    """If `exc` (Snakemake's WorkflowError from validate) wraps a schema error, describe it."""
    import jsonschema

    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, jsonschema.ValidationError):
        return "Invalid configuration: " + describe_validation_error(cause)
    return None


# How `snakemake --config key=...` spells a boolean: it turns True and False into booleans, but keeps YAML's
# true, false, yes and no as strings.
BOOLEAN_WORDS = {"true": True, "false": False, "yes": True, "no": False}


def coerce_numbers(value, schema: dict):
    """`snakemake --config 'sizes=[256]'` parses list items as strings, and `calibrate=false` as the string
    "false": turn numeric strings into the numbers, and true/false/yes/no into the booleans, that the schema asks
    for, so command-line overrides behave like config.yaml."""
    if isinstance(value, str) and schema_accepts(schema, "boolean") and value.lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[value.lower()]
    if isinstance(value, str) and schema_accepts(schema, "integer"):
        try:
            return int(value)
        except ValueError:
            pass
    if isinstance(value, str) and schema_accepts(schema, "number"):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, list):
        items = schema.get("items", {})
        return [coerce_numbers(v, items) for v in value]
    if isinstance(value, dict):
        props = {}
        for branch in [schema, *schema.get("oneOf", [])]:
            props.update(branch.get("properties", {}))
        return {k: coerce_numbers(v, props.get(k, {})) for k, v in value.items()}
    return value


def schema_accepts(schema: dict, kind: str) -> bool:
    return schema.get("type") == kind or any(b.get("type") == kind for b in schema.get("oneOf", []))


def _branches(schema: dict) -> list[dict]:
    return [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]


def check_strict_types(value, schema: dict, path: tuple = ()) -> None:
    """What JSON Schema lets through but the study cannot use: a float where only an integer is allowed (JSON
    Schema counts 256.0 as an integer, and Python code then indexes or counts with it), and an infinite or NaN
    number anywhere."""
    branches = _branches(schema)
    kinds = {b.get("type") for b in branches}
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key '{_key(path)}': value {value} is not allowed; allowed: {_allowed(schema)} "
                          "(a finite number).")
    if isinstance(value, float) and "integer" in kinds and "number" not in kinds:
        raise ConfigError(f"config key '{_key(path)}': value {value} is not allowed; allowed: {_allowed(schema)} "
                          f"(written without a decimal point, e.g. {int(value) if value.is_integer() else 256}).")
    if isinstance(value, list):
        items = [b["items"] for b in branches if "items" in b]
        for i, item in enumerate(value):
            for item_schema in items[:1]:
                check_strict_types(item, item_schema, (*path, i))
    elif isinstance(value, dict):
        props = {k: v for b in branches for k, v in b.get("properties", {}).items()}
        extra = next((b["additionalProperties"] for b in branches if isinstance(b.get("additionalProperties"), dict)),
                     None)
        for key, item in value.items():
            sub = props.get(key, extra)
            if sub is not None:
                check_strict_types(item, sub, (*path, key))


def validate(config: dict, schema_path: Path = SCHEMA_PATH) -> dict:
    """Validate and fill defaults outside Snakemake (CLI, tests), with Snakemake's own validator."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate as snakemake_validate

    schema = load_schema(schema_path)
    config.update(coerce_numbers(config, schema))
    check_strict_types(config, schema)
    check_variants(config)
    try:
        snakemake_validate(config, str(schema_path), set_default=True)
    except WorkflowError as exc:
        message = format_workflow_error(exc)
        raise ConfigError(message.removeprefix("Invalid configuration: ") if message else str(exc)) from None
    expand_methods(config)
    check_ranges(config)
    return config


# `methods` may name a set of the registry's methods instead of listing them.
METHOD_SETS = {
    "default": "the default study's methods (matmul_study/core/registry.py: every method but those marked "
               "default_study=False)",
    "all": "every method in the registry",
}


def method_set(name: str) -> list[str]:
    from matmul_study.core import registry

    return list(registry.default_methods() if name == "default" else registry.METHODS)


def expand_methods(config: dict) -> bool:
    """Replace `methods: default` or `methods: all` by the registry's methods, in ladder order. Returns whether
    the config listed its methods itself (a listed method that cannot run here is an error; one of a set is
    pruned with a note)."""
    methods = config.get("methods")
    if isinstance(methods, str) and methods in METHOD_SETS:
        config["methods"] = method_set(methods)
        return False
    return True


def check_names(config: dict) -> None:
    """Method and dtype names come from the registry and the dtype records, not from a list in the schema."""
    from matmul_study.core import dtypes, registry

    for key, known in (("methods", registry.METHODS), ("dtypes", dtypes.DTYPES)):
        values = config.get(key, [])
        if isinstance(values, str):  # a method set not expanded (expand_methods) is checked by the schema
            continue
        for i, name in enumerate(values):
            if name not in known:
                sets = f", or instead of the list: {' or '.join(METHOD_SETS)}" if key == "methods" else ""
                raise ConfigError(f"config key '{key}[{i}]': value {json.dumps(name)} is not allowed; allowed: one of "
                                  f"{', '.join(known)}{sets}.")


def check_variants(config: dict) -> None:
    """`variants`: one of configs.MODES, or a mapping from registry method names to one of them or to a list of the
    method's variant names. Checked before the schema, whose words for a wrong value inside the mapping would not
    name the method or its variants."""
    from matmul_study.core import configs, registry

    if "variants" not in config:
        return
    setting = config["variants"]
    modes = ", ".join(configs.MODES)
    allowed = (f"one of {modes}, or a mapping from method names to one of {modes} or to a list of the method's "
               "variant names")
    if isinstance(setting, str) and setting in configs.MODES:
        return
    if not isinstance(setting, dict) or not setting:
        raise ConfigError(f"config key 'variants': value {json.dumps(setting, default=str)} is not allowed; "
                          f"allowed: {allowed}.")
    for name, value in setting.items():
        if name not in registry.METHODS:
            raise ConfigError(f"config key 'variants': method {json.dumps(name, default=str)} is not allowed; "
                              f"allowed: method names of the registry ({', '.join(registry.METHODS)}).")
        method = registry.get(name)
        known = [configs.DEFAULT, *configs.runnable(method)]
        listed = f"{name}'s variants: {', '.join(known)}" + ("" if method.variants else
                                                             f" ({name} has one configuration)")
        if isinstance(value, str) and value in configs.MODES:
            continue
        if not isinstance(value, list) or not value:
            raise ConfigError(f"config key 'variants.{name}': value {json.dumps(value, default=str)} is not "
                              f"allowed; allowed: one of {modes} or a list of {listed}.")
        diagnostic = {v.name for v in method.variants if v.diagnostic}
        for i, variant in enumerate(value):
            if variant in known:
                continue
            why = ("a diagnostic build (a wrong result on purpose), timed by bench/compare.py only"
                   if variant in diagnostic else "not a variant of the method")
            raise ConfigError(f"config key 'variants.{name}[{i}]': value {json.dumps(variant, default=str)} is not "
                              f"allowed ({why}); allowed: {listed}.")


def check_ranges(config: dict) -> None:
    """Constraints between keys, which the schema cannot express."""
    check_names(config)
    m = config.get("measurement", {})
    if m.get("max_reps", 1) < m.get("min_reps", 1):
        raise ConfigError(
            f"config key 'measurement.max_reps': value {m['max_reps']} is below measurement.min_reps "
            f"({m['min_reps']}); allowed: an integer >= min_reps.")
    dist = m.get("distribution", {})
    if dist.get("low", 0) >= dist.get("high", 1):
        raise ConfigError(
            f"config key 'measurement.distribution': low {dist['low']} is not below high {dist['high']}; "
            "allowed: low < high.")


@dataclass(frozen=True, order=True)
class Shape:
    m: int
    k: int
    n: int

    @property
    def label(self) -> str:
        return f"{self.m}x{self.k}x{self.n}"

    @property
    def multiply_adds(self) -> int:
        return self.m * self.k * self.n


def parse_size(entry) -> Shape:
    if isinstance(entry, int):
        return Shape(entry, entry, entry)
    return Shape(int(entry["m"]), int(entry["k"]), int(entry["n"]))


def shapes(config: dict) -> list[Shape]:
    """Distinct shapes in config order (a size given twice runs once)."""
    return list(dict.fromkeys(parse_size(s) for s in config["sizes"]))

