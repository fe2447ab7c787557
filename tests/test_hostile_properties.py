"""Property-based hostile inputs: whatever a user or a damaged file hands Stamen's parsers and readers, the answer
is a result or one line of ``ValueError`` (``FileNotFoundError`` for a missing file), never another exception or a
traceback, and nothing is written.

Hypothesis draws the inputs (random values of every key type, random override text, random TOML and bytes in
experiment files, random bytes in each file of the TU, npz, OGB and Planetoid readers, of a run folder and of
certify's --graph file, random tune-space, sweep and unlearning-request texts, random certify option values, random
arguments of the Python API).
Every new reader or option joins this file.
"""

from __future__ import annotations

import gzip
import math
import string
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stamen.config import federation_config, run_config
from stamen.contract.run_config import KEYS, RunConfig
from stamen.graphs.npz_graph import read_npz_graph
from stamen.graphs.ogb_folder import read_ogb_folder
from stamen.graphs.tu_folder import read_tu_folder, tu_source
from stamen.simulations.experiment_file import run_config_file
from stamen.simulations.overrides import parse_overrides

HOSTILE = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# every type a value may arrive as from Python, TOML or the command line
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
KEY_NAMES = st.sampled_from(sorted(KEYS))


def one_line(error: BaseException) -> str:
    """``error``'s message, asserted to be one non-empty line."""
    text = str(error)
    assert text.strip(), f"{type(error).__name__} without a message"
    assert "\n" not in text, text
    assert "Traceback" not in text, text
    return text


def nothing_written(folder: Path, before: set[Path]) -> None:
    assert set(folder.rglob("*")) == before


@HOSTILE
@given(key=KEY_NAMES, value=VALUES)
def test_any_value_of_any_key_is_a_config_or_one_line(key, value):
    try:
        config = RunConfig.from_flower({key: value})
    except ValueError as error:
        one_line(error)
    else:
        held = getattr(config, KEYS[key].attribute)
        assert held == value or (isinstance(value, int) and held == float(value)) or (value is None and held is None)
        assert not (isinstance(held, float) and not math.isfinite(held))
        assert not (isinstance(held, int) and not -(2**63) <= held < 2**63)


@HOSTILE
@given(values=st.dictionaries(KEY_NAMES, VALUES, max_size=6))
def test_any_set_of_values_is_a_config_or_one_line(values):
    try:
        RunConfig.from_flower(values)
    except ValueError as error:
        one_line(error)


OVERRIDE_TEXT = st.one_of(
    st.text(max_size=60),
    st.builds(lambda k, v: f"{k}={v}", KEY_NAMES, st.text(alphabet=string.printable, max_size=30)),
)


@HOSTILE
@given(items=st.lists(OVERRIDE_TEXT, min_size=1, max_size=3))
def test_any_override_text_is_parsed_or_refused_in_one_line(items, tmp_path):
    before = set(tmp_path.rglob("*"))
    try:
        values = parse_overrides(items, files=False)
    except ValueError as error:
        one_line(error)
    else:
        assert all(isinstance(key, str) for key in values)
    nothing_written(tmp_path, before)


TOML_LINES = st.lists(
    st.one_of(
        st.builds(
            lambda k, v: f"{k} = {v}",
            KEY_NAMES,
            st.sampled_from(["1", "-1", "1e400", "nan", '"x"', "true", "[1, 2]", "{a = 1}", "1979-05-27", ""]),
        ),
        st.text(max_size=30),
    ),
    max_size=5,
)


@HOSTILE
@given(content=st.one_of(TOML_LINES.map("\n".join).map(str.encode), st.binary(max_size=200)))
def test_any_experiment_file_gives_run_config_keys_or_one_line(content, tmp_path):
    path = tmp_path / "exp.toml"
    path.write_bytes(content)
    before = set(tmp_path.rglob("*"))
    try:
        values = run_config_file(str(path))
    except ValueError as error:
        assert one_line(error).startswith(f"{path}: "), str(error)
    else:
        assert values and all(isinstance(v, bool | int | float | str) for v in values.values())
        try:
            RunConfig.from_flower(values)
        except ValueError as error:
            one_line(error)
    nothing_written(tmp_path, before)


API_KEYS = st.one_of(KEY_NAMES, KEY_NAMES.map(lambda k: k.replace("-", "_")), st.text(max_size=12))


@HOSTILE
@given(
    config=st.one_of(st.none(), st.dictionaries(API_KEYS, VALUES, max_size=4)),
    overrides=st.dictionaries(KEY_NAMES.map(lambda k: k.replace("-", "_")), VALUES, max_size=3),
    clients=st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3), st.booleans()),
    federation=st.one_of(st.none(), st.dictionaries(st.text(max_size=20), VALUES, max_size=2)),
)
def test_any_api_arguments_are_a_typed_config_or_one_line(config, overrides, clients, federation):
    try:
        typed = run_config(config, overrides, output_dir="runs")  # the API's dict straight to a RunConfig
        fed = federation_config(clients, federation)
    except ValueError as error:
        one_line(error)
        return
    assert typed.output_dir == "runs"
    assert RunConfig.from_flower(typed.to_flower()) == typed  # what Flower's transport gets reads back the same
    assert fed.num_supernodes == (10 if clients is None else clients) and fed.num_supernodes >= 1


# --- the readers: random bytes in each file of a well-formed dataset


def _tu_files(root: Path) -> None:
    from tests.graphs.test_tu_folder import write_tu

    write_tu(root)


TU_PARTS = st.sampled_from(["A", "graph_indicator", "graph_labels", "node_labels", "node_attributes"])
NUMBERS_TEXT = st.text("0123456789,-. \n", max_size=120).map(str.encode)  # near-valid tables, besides raw bytes


@HOSTILE
@given(part=TU_PARTS, content=st.one_of(st.binary(max_size=120), NUMBERS_TEXT))
def test_any_tu_file_is_read_or_refused_in_one_line(part, content, tmp_path_factory):
    root = tmp_path_factory.mktemp("tu")
    _tu_files(root)
    (root / "TINY" / "raw" / f"TINY_{part}.txt").write_bytes(content)
    before = set(root.rglob("*"))
    try:
        graphs = read_tu_folder(tu_source("tu:TINY", root))
    except ValueError as error:
        one_line(error)
    else:
        assert graphs and all(g.edge_index.numel() == 0 or int(g.edge_index.max()) < g.num_nodes for g in graphs)
    nothing_written(root, before)


def _npz(root: Path) -> Path:
    folder = root / "npz"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tiny.npz"
    rng = np.random.default_rng(0)
    adjacency = (rng.random((6, 6)) < 0.4).astype(np.float32)
    np.savez(
        path,
        adj_data=adjacency[adjacency.nonzero()],
        adj_indices=adjacency.nonzero()[1],
        adj_indptr=np.concatenate([[0], np.cumsum((adjacency > 0).sum(1))]),
        adj_shape=np.array([6, 6]),
        attr_data=np.ones(6, dtype=np.float32),
        attr_indices=np.zeros(6, dtype=np.int64),
        attr_indptr=np.arange(7),
        attr_shape=np.array([6, 1]),
        labels=np.array([0, 1, 0, 1, 0, 1]),
    )
    return path


def test_the_npz_fixture_is_read():
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        data = read_npz_graph(_npz(Path(folder)), "npz:tiny")
        assert int(data.num_nodes) == 6 and int(data.num_classes) == 2


@HOSTILE
@given(cut=st.integers(min_value=0, max_value=2000), noise=st.binary(min_size=1, max_size=64))
def test_any_damaged_npz_is_read_or_refused_in_one_line(cut, noise, tmp_path_factory):
    root = tmp_path_factory.mktemp("npz")
    path = _npz(root)
    raw = bytearray(path.read_bytes())
    at = cut % len(raw)
    raw[at : at + len(noise)] = noise  # overwrite a stretch anywhere: headers, CRCs, arrays
    path.write_bytes(bytes(raw))
    before = set(root.rglob("*"))
    try:
        read_npz_graph(path, "npz:tiny")
    except ValueError as error:
        one_line(error)
    nothing_written(root, before)


def _ogb(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "node-feat.csv.gz": "0.5,1\n1,0\n0,0\n",
        "node-label.csv.gz": "0\n1\n0\n",
        "edge.csv.gz": "0,1\n1,2\n",
    }
    for name, text in files.items():
        with gzip.open(folder / name, "wt", encoding="ascii") as stream:
            stream.write(text)


@HOSTILE
@given(part=st.sampled_from(["node-feat.csv.gz", "node-label.csv.gz", "edge.csv.gz"]),
       content=st.one_of(st.binary(max_size=80), st.text(alphabet="0123456789,-.e \n", max_size=80).map(
           lambda text: gzip.compress(text.encode()))))  # fmt: skip
def test_any_ogb_file_is_read_or_refused_in_one_line(part, content, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ogb") / "raw"
    _ogb(folder)
    (folder / part).write_bytes(content)
    before = set(folder.rglob("*"))
    try:
        data = read_ogb_folder(folder, "ogb:ogbn-tiny")
    except ValueError as error:
        one_line(error)
    else:
        assert data.edge_index.numel() == 0 or int(data.edge_index.max()) < int(data.x.size(0))
    nothing_written(folder, before)


def test_the_ogb_fixture_is_read(tmp_path):
    _ogb(tmp_path / "raw")
    data = read_ogb_folder(tmp_path / "raw", "ogb:ogbn-tiny")
    assert data.x.shape == (3, 2) and data.edge_index.size(1) == 2


# ----------------------------------------------------------------------------- the readers and options added since

TEXT = st.one_of(st.text(max_size=60), st.text("abcdefghilmnoprstu-_=:.,0123456789 '\"[]", max_size=60))


@HOSTILE
@given(part=st.sampled_from(["x", "graph"]), content=st.binary(max_size=200))
def test_any_planetoid_pickle_is_read_or_refused_in_one_line(part, content, tmp_path_factory):
    from stamen.graphs.data_pickle import read_adjacency, read_matrix

    root = tmp_path_factory.mktemp("planetoid")
    path = root / f"ind.cora.{part}"
    path.write_bytes(content)
    before = set(root.rglob("*"))
    try:
        (read_matrix if part == "x" else read_adjacency)(path)
    except ValueError as error:
        one_line(error)
    nothing_written(root, before)


@HOSTILE
@given(text=TEXT)
def test_any_tune_space_text_is_a_dimension_or_one_line(text):
    from stamen.experiments.tune_space import parse_dimension

    try:
        parse_dimension(text)
    except ValueError as error:
        one_line(error)


@HOSTILE
@given(text=TEXT)
def test_any_sweep_set_text_is_values_or_one_line(text):
    from stamen.experiments.sweep import check_set, parse_seeds, parse_set

    try:
        key, values = parse_set(text)
        check_set(key, values, "--set", f"--set {text!r}")
    except ValueError as error:
        one_line(error)
    try:
        parse_seeds(text)
    except ValueError as error:
        one_line(error)


@HOSTILE
@given(text=TEXT, clients=st.one_of(st.none(), st.integers(-3, 50)), classes=st.one_of(st.none(), st.integers(-3, 9)))
def test_any_unlearning_request_is_parsed_or_one_line(text, clients, classes):
    from stamen.contract.requests import parse_request

    try:
        parse_request(text, clients, classes)
    except ValueError as error:
        one_line(error)


def _certify_options() -> list[str]:
    from stamen.contract.certify_config import OPTIONS

    return sorted(OPTIONS)


@HOSTILE
@given(name=st.sampled_from(_certify_options()), value=st.one_of(VALUES, TEXT))
def test_any_certify_option_value_is_a_config_or_one_line(name, value):
    from stamen.contract.certify_config import CertifyConfig

    try:
        CertifyConfig.from_values({name: value, "out": "o"} if name != "out" else {name: value})
    except ValueError as error:
        one_line(error)


RUN_FILES = st.sampled_from(["config.json", "status.json", "metrics.jsonl", "summary.json"])


def _finished_run(root: Path) -> Path:
    """A finished run's folder with the files a reader reads: config, status, rows and summary."""
    import json

    from stamen.server.rundir import row_line

    run_dir = root / "r"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(RunConfig(output_dir=str(root), run_name="r").to_flower()))
    (run_dir / "status.json").write_text(json.dumps({"status": "finished"}))
    (run_dir / "metrics.jsonl").write_text(row_line({"round": 0, "global_test_acc": 0.5}) + row_line({"round": 1}))
    (run_dir / "summary.json").write_text(json.dumps({"final": {"global_test_acc": 0.6}}))
    return run_dir


@HOSTILE
@given(
    name=RUN_FILES, content=st.one_of(st.binary(max_size=120), st.text(max_size=120).map(str.encode)), cut=st.booleans()
)
def test_any_damaged_run_folder_is_loaded_or_refused_in_one_line(name, content, cut, tmp_path_factory):
    import stamen

    run_dir = _finished_run(tmp_path_factory.mktemp("run"))
    path = run_dir / name
    path.write_bytes(path.read_bytes()[: len(content)] if cut else content)
    before = set(run_dir.parent.rglob("*"))
    try:
        stamen.load(run_dir)
    except (ValueError, FileNotFoundError) as error:
        one_line(error)
    nothing_written(run_dir.parent, before)


@HOSTILE
@given(cut=st.integers(min_value=0, max_value=4000), noise=st.binary(min_size=1, max_size=64))
@example(cut=1437, noise=b"\x05")  # a header whose offset seeks before the file's start: zipfile's EINVAL
def test_any_damaged_certify_graph_is_read_or_refused_in_one_line(cut, noise, tmp_path_factory):
    from stamen.certify.data import load_graph_npz

    root = tmp_path_factory.mktemp("graph")
    path = root / "g.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.random((6, 2)), edge_index=np.array([[0, 1], [1, 2]]), y=np.array([0, 1] * 3),
             labeled=np.array([0, 1]), targets=np.array([2, 3]))  # fmt: skip
    raw = bytearray(path.read_bytes())
    at = cut % len(raw)
    raw[at : at + len(noise)] = noise
    path.write_bytes(bytes(raw))
    before = set(root.rglob("*"))
    try:
        load_graph_npz(path)
    except ValueError as error:
        one_line(error)
    nothing_written(root, before)
