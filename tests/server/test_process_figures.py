"""What ran where: the processes and nodes that answered the clients' messages, and their memory."""

from types import SimpleNamespace

from flwr.app import ConfigRecord, MetricRecord, RecordDict

from stamen.contract import protocol as p
from stamen.server.outputs import process_figures
from stamen.server.rows import client_processes


def _reply(process: str, peak: float) -> SimpleNamespace:
    """A reply's content, as client_processes reads it."""
    info = ConfigRecord({p.DEVICE: "cpu", p.PROCESS: process, p.PEAK_RSS_MB: peak})
    return SimpleNamespace(content=RecordDict({p.METRICS: MetricRecord({}), p.CLIENT_INFO: info}))


def test_a_process_counts_once_with_its_largest_peak_and_nodes_by_host():
    rows = [
        {"client_processes": client_processes([_reply("a/ray-1 pid 7", 300.0), _reply("a/ray-2 pid 7", 200.0)])},
        {"client_processes": client_processes([_reply("a/ray-1 pid 7", 500.0), _reply("a/ray-1 pid 7", 400.0)])},
    ]
    assert rows[1]["client_processes"] == {"a/ray-1 pid 7": 500.0}  # one process serves two clients
    figures = process_figures(rows)
    assert figures["client_nodes"] == ["a/ray-1", "a/ray-2"]  # one host, two Ray nodes: the same PID twice
    assert figures["client_processes"] == 2 and figures["client_peak_memory_gb"] == (500.0 + 200.0) / 1024


def test_rows_of_clients_that_do_not_say_count_nothing():
    assert process_figures([{}]) == {"client_nodes": [], "client_processes": 0, "client_peak_memory_gb": 0.0}
