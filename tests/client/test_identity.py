"""A client trains only the head's federation: the same Stamen, a data root here, the same partition cut."""

import dataclasses

import pytest

from stamen.client.identity import HeadMismatch, check_head, peak_rss_mb, where_name
from stamen.contract.identity import COMMIT, PARTITION_DIGEST, VERSION, identity_problem, own_identity
from stamen.contract.run_config import RunConfig
from stamen.graphs import build_federation
from stamen.simulations.preflight import default_run_config


@pytest.fixture(scope="module")
def spec():
    values = {**default_run_config(), "dataset": "csbm", "csbm-nodes": 300, "partitioner": "label-dirichlet"}
    return RunConfig.from_flower(values).federation(3)


def _head(spec, **changes):
    return {**own_identity(), PARTITION_DIGEST: build_federation(spec).digest, **changes}


def test_a_client_of_the_heads_stamen_and_partition_trains(spec):
    check_head(_head(spec), spec, exported=False)
    check_head({}, spec, exported=False)  # a head of an earlier version sends nothing to compare


def test_another_version_or_commit_fails_the_client_in_one_line(spec):
    with pytest.raises(HeadMismatch, match=r"version .* \(the head runs 0\.0\.0-other\)") as caught:
        check_head(_head(spec, **{VERSION: "0.0.0-other"}), spec, exported=False)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(where_name())
    if own_identity()[COMMIT]:
        with pytest.raises(HeadMismatch, match="commit"):
            check_head(_head(spec, **{COMMIT: "0000000"}), spec, exported=False)


def test_a_side_that_does_not_know_its_commit_or_version_is_not_compared_on_it():
    own = {VERSION: "1.0", COMMIT: ""}
    assert identity_problem({VERSION: "1.0", COMMIT: "abc1234"}, own) is None
    assert "version 1.0 (the head runs 2.0)" in identity_problem({VERSION: "2.0", COMMIT: ""}, own)
    assert identity_problem({VERSION: "", COMMIT: ""}, own) is None


def test_a_missing_data_root_or_another_cut_fails_the_client(spec, tmp_path):
    missing = dataclasses.replace(spec, data_root=str(tmp_path / "nowhere"))
    with pytest.raises(HeadMismatch, match="is not a folder on this node"):
        check_head(_head(spec), missing, exported=False)
    other = dataclasses.replace(spec, seed=spec.seed + 1)  # another seed: another Dirichlet cut of the graph
    assert build_federation(other).digest != build_federation(spec).digest
    with pytest.raises(HeadMismatch, match="cut another partition"):
        check_head(_head(spec), other, exported=False)
    check_head(_head(spec), other, exported=True)  # an exported partition has no cut of its own to compare


def test_a_client_reports_its_peak_memory():
    assert peak_rss_mb() > 10  # this test process holds torch: tens of MB at least


def test_a_staged_app_carries_its_version_and_commit(tmp_path):
    import tomllib

    from stamen.contract.provenance import BUILD_FILE
    from stamen.simulations.flower import stage_app

    build = tomllib.loads((stage_app(tmp_path) / BUILD_FILE).read_text())
    assert build == {"version": own_identity()[VERSION], "commit": own_identity()[COMMIT]}


def test_a_run_whose_clients_cut_another_partition_fails_saying_so(tmp_path, monkeypatch, capsys):
    import json

    from stamen.cli.main import main as stamen
    from stamen.contract.identity import PARTITION_DIGEST_ENV

    monkeypatch.setenv(PARTITION_DIGEST_ENV, "0" * 16)  # the head's digest, as a head with other data would send
    out = tmp_path / "runs"
    code = stamen(["run", "--quiet", "--engine", "inprocess", "--clients", "3", "-c",
                   f"num-server-rounds=2 csbm-nodes=300 output-dir='{out}' run-name='other'"])  # fmt: skip
    assert code == 1
    status = json.loads((out / "other" / "status.json").read_text())
    assert status["status"] == "failed" and "cut another partition" in status["error"], status
    assert "cut another partition" in capsys.readouterr().err
