"""The environment of Flower's processes: offline and quiet, Ray's settings chosen, a user's own kept."""

from stamen.simulations.flower import INLINE_BYTES, flower_environment


def test_flower_runs_offline_with_rays_messages_inline(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_max_direct_call_object_size", raising=False)
    env = flower_environment(tmp_path)
    assert env["FLWR_HOME"] == str(tmp_path)
    assert env["FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION"] == "1" and env["FLWR_TELEMETRY_ENABLED"] == "0"
    assert int(env["RAY_max_direct_call_object_size"]) == INLINE_BYTES > 100 * 1024


def test_a_users_own_ray_and_thread_settings_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_max_direct_call_object_size", "1024")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    env = flower_environment(tmp_path)
    assert env["RAY_max_direct_call_object_size"] == "1024" and env["OMP_NUM_THREADS"] == "4"


def test_a_supernodes_superexec_looks_for_tasks_less_often_than_a_runs_start_needs(tmp_path):
    from stamen.simulations.deploy.processes import SUPERNODE_TASK_POLL, supernode_environment

    assert float(flower_environment(tmp_path)["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"]) == 0.05
    node = supernode_environment(tmp_path)
    assert float(node["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"]) == SUPERNODE_TASK_POLL == 0.2
    assert {k: v for k, v in node.items() if k != "FLWR_SUPEREXEC_TASK_POLL_INTERVAL"} == {
        k: v for k, v in flower_environment(tmp_path).items() if k != "FLWR_SUPEREXEC_TASK_POLL_INTERVAL"
    }
