"""A real deployment on this machine: SuperLink and 3 SuperNodes as separate hosts, TLS and node auth.

Hosts are network namespaces on a virtual LAN when the machine allows (root, CI);
otherwise every host runs on the loopback interface and the test says so (a warning
in pytest's summary). Each SuperNode reads only its own exported partition from its
own data root. Every process is stopped by its PID, also when a test fails.

An outsider on another host who holds only the public ``ca.pem`` can reach the
SuperLink's Fleet port but can neither submit a run nor register a SuperNode key:
the Control API answers only on the SuperLink host's loopback.
"""

import json
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import pytest

from stamen.contract.run_config import RunConfig
from stamen.graphs.node_data import export_partitions
from stamen.server.checkpoint import load_checkpoint
from stamen.simulations.deploy.certs import make_node_key
from stamen.simulations.deploy.gate import REFUSAL
from stamen.simulations.deploy.local import LocalDeployment
from stamen.simulations.deploy.processes import (
    flwr_run_command,
    register_supernode,
    supernode_statuses,
    write_connection,
)
from stamen.simulations.flower import FEDERATION, flower_environment

# The tests share one deployment (the module's fixture) and run in order on it: one xdist worker runs them all.
pytestmark = pytest.mark.xdist_group("local-deployment")

NUM_NODES = 3
RUN = {
    "num-server-rounds": 2,
    "csbm-nodes": 900,
    "local-epochs": 5,
    "seed": 0,
    "min-clients": 2,
    "round-timeout": 150.0,
}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """The running deployment and two SuperNodes that must be refused.

    The refused ones start with the deployment, so their start-up and connection
    attempts overlap the training run; the last test checks how they ended.
    """
    workdir = tmp_path_factory.mktemp("deployment")
    spec = RunConfig.from_flower(RUN).federation(NUM_NODES)
    roots = [path.parent for path in export_partitions(spec, workdir / "data")]
    with LocalDeployment(workdir, NUM_NODES, node_config={"device": "cpu"}, data_roots=roots) as running:
        if not running.namespaces:
            warnings.warn(f"deployment test ran on {running.mode}, not on separate network namespaces", stacklevel=1)
        make_node_key(workdir / "rogue.key", workdir / "rogue.pub")  # never registered
        refused = {
            "unregistered key": running.start_supernode(
                0, private_key=workdir / "rogue.key", label="rogue", warm=False
            ),
            "no CA certificate": running.start_supernode(1, ca_certificate=None, label="no-ca", warm=False),
        }
        try:
            yield running, refused
        finally:
            for service in refused.values():
                service.stop()


def _rows(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_lost_supernode_is_named_and_the_run_resumes_from_its_checkpoint(deployment, tmp_path):
    deployment, _ = deployment
    run_dir = tmp_path / "deployed"
    config = {**RUN, "output-dir": str(tmp_path), "run-name": "deployed"}
    lost = deployment.supernodes[2]

    finished = threading.Event()

    def kill_after_first_round():  # round 1's replies are in when the round-0 row is written
        while not _rows(run_dir) and not finished.wait(0.2):
            pass
        lost.kill()

    killer = threading.Thread(target=kill_after_first_round, daemon=True)
    killer.start()
    try:
        code = deployment.run(config)
    finally:
        finished.set()
        killer.join()
    assert code == 0, deployment.run_log()[-4000:]
    assert not lost.alive()
    rows = _rows(run_dir)
    assert [row["round"] for row in rows] == [0, 1, 2]
    assert rows[1]["clients"] == NUM_NODES and rows[1]["failed_clients"] == []
    assert rows[2]["clients"] == NUM_NODES - 1
    [failure] = rows[2]["failed_clients"]
    assert failure["node_id"] == deployment.node_ids[2] and failure["partition_id"] == 2
    assert rows[2]["global_test_acc"] > rows[0]["global_test_acc"] + 0.1
    assert (run_dir / "model.pt").is_file() and (run_dir / "checkpoint.npz").is_file()
    # Every message was served inside its node's launcher (resident ClientApps), none cold.
    assert len(deployment.launchers) == NUM_NODES
    for launcher, node in zip(deployment.launchers, deployment.supernodes, strict=True):
        assert "task served in this process, exit 0" in launcher.log_file.read_text(), launcher.log_tail()
        assert "starting a cold flwr-clientapp" not in node.log_file.read_text()

    # The SuperLink restarts (its state database keeps the registrations), then the
    # run continues from round 2's checkpoint to round 3 with the two nodes left.
    deployment.restart_superlink()
    code = deployment.run({**config, "num-server-rounds": 3, "resume-from": str(run_dir)})
    assert code == 0, deployment.run_log()[-4000:]
    assert "resuming from the checkpoint of round 2" in deployment.run_log()
    rows = _rows(run_dir)
    assert [row["round"] for row in rows] == [0, 1, 2, 3]
    assert rows[3]["clients"] == NUM_NODES - 1
    assert load_checkpoint(run_dir).round == 3
    assert json.loads((run_dir / "summary.json").read_text())["final"]["global_test_acc"] == rows[3]["global_test_acc"]


@pytest.mark.slow
def test_unregistered_key_and_missing_ca_are_refused(deployment):
    deployment, refused = deployment
    deadline = time.monotonic() + 120
    while any(service.alive() for service in refused.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    rogue, untrusting = refused["unregistered key"], refused["no CA certificate"]
    assert not rogue.alive() and rogue.process.returncode != 0
    assert "Failed to activate SuperNode" in rogue.log_tail(20_000)
    assert not untrusting.alive() and untrusting.process.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in untrusting.log_tail(20_000)
    statuses = supernode_statuses(deployment.operator_home, deployment.operator_prefix)
    assert len(statuses) == NUM_NODES  # only the registered nodes are known to the SuperLink


OUTSIDER_APP = """
from pathlib import Path

from flwr.app import Context
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

app = ServerApp()
client = ClientApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    Path(context.run_config["marker"]).write_text("this ServerApp ran on the SuperLink host")
"""


def _outsider_app(folder: Path, marker: Path) -> Path:
    """A Flower app of someone else's whose ServerApp leaves ``marker`` behind if it runs."""
    folder.mkdir()
    (folder / "outsider_app.py").write_text(OUTSIDER_APP)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "outsider"\nversion = "1.0.0"\ndependencies = ["flwr"]\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["."]\n\n'
        '[tool.flwr.app]\npublisher = "outsider"\n\n'
        '[tool.flwr.app.components]\nserverapp = "outsider_app:app"\nclientapp = "outsider_app:client"\n\n'
        f'[tool.flwr.app.config]\nmarker = "{marker}"\n'
    )
    return folder


def _flwr(home: Path, command: list[str], prefix: list[str] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, *command], env=flower_environment(home), capture_output=True, text=True, timeout=180
    )


def _run_ids(deployment) -> set[int]:
    command = [flwr_run_command(deployment.operator_home, Path("."), {})[0], "ls", FEDERATION, "--format", "json"]
    result = _flwr(deployment.operator_home, command, deployment.operator_prefix)
    assert result.returncode == 0, result.stdout + result.stderr
    return {run["run-id"] for run in json.loads(result.stdout[result.stdout.find("{") :])["runs"]}


@pytest.mark.slow
def test_an_outsider_holding_only_the_ca_can_neither_submit_a_run_nor_register_a_node(deployment, tmp_path):
    deployment, _ = deployment
    if not deployment.namespaces:
        pytest.skip(f"the outsider needs a host of its own (network namespaces); this run used {deployment.mode}")
    marker = tmp_path / "outsider-serverapp-ran"
    app = _outsider_app(tmp_path / "outsider-app", marker)
    outsider = tmp_path / "outsider-home"  # the root namespace: another host on the LAN, not the SuperLink's
    write_connection(outsider, deployment.superlink_address, deployment.files.ca_certificate)
    runs_before = _run_ids(deployment)

    attempt = _flwr(outsider, flwr_run_command(outsider, app, {}))
    assert attempt.returncode != 0, attempt.stdout
    assert "accepts only SuperNodes" in " ".join((attempt.stdout + attempt.stderr).split())
    make_node_key(tmp_path / "keys" / "outsider.key", tmp_path / "keys" / "outsider.pub")
    with pytest.raises(RuntimeError, match="accepts only SuperNodes"):
        register_supernode(outsider, tmp_path / "keys" / "outsider.pub")
    context = ssl.create_default_context(cafile=str(deployment.files.ca_certificate))
    for path in ("/v1/control/list-runs", "/v1/runtime/acquire-task"):
        request = urllib.request.Request(f"https://{deployment.superlink_address}{path}", data=b"", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, context=context, timeout=30)
        assert refused.value.code == 403 and json.loads(refused.value.read())["detail"] == REFUSAL
    time.sleep(5)  # a ServerApp, had one been started, would have written by now
    assert _run_ids(deployment) == runs_before and not marker.exists()
    assert len(supernode_statuses(deployment.operator_home, deployment.operator_prefix)) == NUM_NODES

    # The same app from the operator's seat (the SuperLink host) runs: the refusal above was the gate's.
    operator = deployment.operator_home
    accepted = _flwr(operator, flwr_run_command(operator, app, {}), deployment.operator_prefix)
    assert accepted.returncode == 0, accepted.stdout[-3000:] + accepted.stderr[-3000:]
    assert marker.read_text() == "this ServerApp ran on the SuperLink host"
    assert len(_run_ids(deployment)) == len(runs_before) + 1
