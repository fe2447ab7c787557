"""``stamen.deploy.local`` from Python: the deployment ``stamen deploy local`` makes, its run's records, the numbers
of the same config on the in-process engine."""

import pytest

import stamen

RUN = {"csbm-nodes": 300, "num-server-rounds": 2, "min-clients": 2, "device": "cpu"}


@pytest.mark.slow
def test_a_local_deployment_from_python_records_the_in_process_numbers(tmp_path, same_figures):
    deployed = stamen.deploy.local(
        {**RUN, "output-dir": str(tmp_path / "runs"), "run-name": "deployed"},
        clients=2,
        workdir=tmp_path / "work",
        loopback=True,
    )
    assert deployed.code == 0 and deployed.flower_run_id is not None
    assert deployed.run_dir == tmp_path / "runs" / "deployed"
    run = stamen.load(deployed.run_dir)
    assert run.status is stamen.RunStatus.FINISHED and [row["round"] for row in run.rows] == [0, 1, 2]
    twin = stamen.run(RUN, clients=2, out=tmp_path / "twin", run_name="inprocess")
    # the same config and seed: the same global model's figures on every transport (a deployment's rows leave out
    # the missing-class figures of a run without missing classes)
    shown = ("round", "global_val_acc", "global_test_acc")
    same_figures([{k: r[k] for k in shown} for r in run.rows], [{k: r[k] for k in shown} for r in twin.rows], "rows")
    assert (tmp_path / "work" / "logs").is_dir()  # the deployment's logs stay in its workdir


def test_bad_input_to_a_local_deployment_is_one_line_before_anything_starts(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.deploy.local({**RUN, "min-clients": 3}, clients=2, workdir=tmp_path / "work")
    assert str(refusal.value) == "min-clients=3 exceeds --clients=2; give more --clients"
    with pytest.raises(ValueError, match="clients must be a whole number >= 1, got 0"):
        stamen.deploy.local(RUN, clients=0, workdir=tmp_path / "work")
    with pytest.raises(ValueError, match="unknown run-config key 'csbm-node'"):
        stamen.deploy.local({"csbm-node": 3}, workdir=tmp_path / "work")
    assert not (tmp_path / "work").exists()
