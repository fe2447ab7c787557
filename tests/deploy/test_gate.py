"""The SuperLink's admission gate: SuperNodes on every address, the operator only on the control address."""

import asyncio
import json

import pytest

from stamen.simulations.deploy.gate import REFUSAL, OperatorGate


def _request(gate: OperatorGate, path: str, local_host: str, kind: str = "http") -> tuple[list[str], list[dict]]:
    """Send one request through ``gate``; return what reached the app and what was sent back."""
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(scope["path"])

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": kind, "path": path, "server": (local_host, 9092), "client": ("10.77.0.254", 40000)}
    asyncio.run(gate(scope, receive, send))
    return reached, sent


@pytest.mark.parametrize("local_host", ["10.77.0.1", "0.0.0.0", "::ffff:10.77.0.1", "192.168.1.5"])
def test_control_and_runtime_apis_are_refused_on_the_fleet_address(local_host):
    gate = OperatorGate(app=None, control_hosts=["127.0.0.1"])
    for path in ["/v1/control/start-run", "/v1/control/register-node", "/v1/runtime/acquire-task", "/docs", "/"]:
        gate.app = None  # never called: a refused request must not reach Flower
        reached, sent = _request(gate, path, local_host)
        assert reached == [] and sent[0]["status"] == 403, path
        assert json.loads(sent[1]["body"])["detail"] == REFUSAL


def test_fleet_api_is_admitted_everywhere_and_control_on_loopback():
    gate = OperatorGate(app=None, control_hosts=["127.0.0.1"])

    async def app(scope, receive, send):
        reached.append((scope["path"], scope["server"][0]))

    for path, host in [
        ("/v1/fleet/pull-messages", "10.77.0.1"),
        ("/v1/fleet/get-fab", "10.77.0.1"),
        ("/health", "10.77.0.1"),
        ("/v1/control/start-run", "127.0.0.1"),
        ("/v1/control/start-run", "127.0.0.2"),  # every loopback address is the host itself
        ("/v1/runtime/acquire-task", "::1"),
    ]:
        reached = []
        gate.app = app
        asyncio.run(gate({"type": "http", "path": path, "server": (host, 9092)}, None, None))
        assert reached == [(path, host)]


def test_a_non_loopback_control_host_admits_exactly_that_address():
    gate = OperatorGate(app=None, control_hosts=["10.0.0.5"])
    assert gate.admits("/v1/control/start-run", "10.0.0.5")
    assert not gate.admits("/v1/control/start-run", "10.0.0.6")
    assert not gate.admits("/v1/control/start-run", "127.0.0.1")
    assert not gate.admits("/v1/control/start-run", None)
    for spelling in ["/v1/fleet/../control/start-run", "/v1/fleet/./../control/x", "/v1/fleet//x", "//v1/fleet/x"]:
        assert not gate.admits(spelling, "10.0.0.6"), spelling
    assert gate.admits("/v1/fleet/push-messages", "10.0.0.6")


def test_a_refused_websocket_is_closed_and_bad_control_hosts_are_rejected():
    reached, sent = _request(OperatorGate(app=None, control_hosts=["::1"]), "/v1/control/x", "10.0.0.1", "websocket")
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]
    for bad in (["0.0.0.0"], ["superlink.example.org"], []):
        with pytest.raises(ValueError):
            OperatorGate(app=None, control_hosts=bad)
