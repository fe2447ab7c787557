"""Strict JSON: a non-finite float is written as null; nothing Stamen writes holds a bare NaN or Infinity."""

import json
import math

import pytest

from stamen.contract import strict_json
from stamen.contract.strict_json import dumps, finite


def strict_loads(text: str):
    """``json.loads`` that refuses the non-JSON tokens NaN, Infinity and -Infinity."""

    def refuse(token: str):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_the_strict_parser_refuses_what_python_writes_by_default():
    with pytest.raises(ValueError, match="not JSON: NaN"):
        strict_loads(json.dumps({"loss": math.nan}))


def test_non_finite_floats_become_null_at_any_depth():
    value = {"a": math.nan, "b": [1.5, math.inf, (-math.inf, 2)], "c": {"d": {"e": math.nan}}, "f": "nan", "g": True}
    assert strict_loads(dumps(value)) == {
        "a": None,
        "b": [1.5, None, [None, 2]],
        "c": {"d": {"e": None}},
        "f": "nan",
        "g": True,
    }
    assert strict_loads(dumps(value, indent=2)) == strict_loads(dumps(value))
    assert finite(0.25) == 0.25 and finite(math.nan) is None and finite(3) == 3


def test_a_numpy_float_is_a_float():
    np = pytest.importorskip("numpy")
    assert dumps([np.float64("nan"), np.float64(0.5)]) == "[null, 0.5]"


def test_a_non_finite_value_the_rule_missed_fails_loudly(monkeypatch):
    monkeypatch.setattr(strict_json, "finite", lambda value: value)  # as if the rule missed every value
    with pytest.raises(ValueError, match="not JSON compliant"):
        strict_json.dumps({"loss": math.nan})


# json.dumps calls that write no figure (TOML quoting of strings, wire messages between Stamen's own
# processes, a cache key), by file and count; every other call must go through stamen.contract.strict_json.
NOT_OUTPUTS = {
    # the job digest's options (2) and the journal's unit lines, which Stamen alone reads back (an
    # unbounded score bound round-trips as itself); the certificates written from them go through clean_floats
    "stamen/certify/journal.py": 3,
    # the bench and audit journal: its settings' digest and copy, and numpy scalars made plain before strict_json
    "stamen/experiments/journal.py": 3,
    "stamen/graphs/node_data.py": 1,  # a cache key of names and integers
    "stamen/server/runlock.py": 1,  # the lock holder's command, pid, time and token
    "stamen/benches/sim.py": 2,  # TOML quoting; the run config handed to a child process
    "stamen/cli/commands/deploy.py": 1,  # a node's public key path and id
    "stamen/simulations/deploy/clientapp_launcher.py": 1,  # the launcher's wire protocol
    "stamen/simulations/deploy/clientapp_shim.py": 1,
    "stamen/simulations/deploy/gate.py": 1,  # an HTTP refusal's body
    "stamen/simulations/overrides.py": 1,  # TOML quoting of -c values
}


def test_every_json_output_goes_through_the_strict_helper():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found: dict[str, int] = {}
    for package in (
        "graphs",
        "models",
        "certify",
        "unlearn",
        "client",
        "server",
        "simulations",
        "experiments",
        "benches",
        "cli",
    ):
        for path in sorted((root / "stamen" / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Attribute) and func.attr in ("dump", "dumps"):
                    if isinstance(func.value, ast.Name) and func.value.id == "json":
                        strict = any(
                            k.arg == "allow_nan" and getattr(k.value, "value", True) is False for k in node.keywords
                        )
                        if not strict:
                            name = str(path.relative_to(root))
                            found[name] = found.get(name, 0) + 1
    assert found == NOT_OUTPUTS
