"""Deployment folders: Stamen never deletes a folder it did not make, nor anything it did not write."""

import subprocess
import sys

import pytest

from stamen.simulations.deploy.workdir import MARKER, prepare_workdir


def _stamen(*arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "stamen.cli.main", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_deploy_local_refuses_a_workdir_holding_a_user_file(tmp_path):
    workdir = tmp_path / "thesis"
    workdir.mkdir()
    (workdir / "chapter1.tex").write_text("three years of work")
    result = _stamen("deploy", "local", "--workdir", str(workdir), "--clients", "2", "-c", "min-clients=2")
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = result.stderr.strip().splitlines()
    assert "Stamen did not create (chapter1.tex)" in line and "new or empty folder" in line
    assert (workdir / "chapter1.tex").read_text() == "three years of work"
    assert sorted(p.name for p in workdir.iterdir()) == ["chapter1.tex"]


def test_a_workdir_is_marked_and_only_stamens_own_entries_are_cleared(tmp_path):
    workdir = prepare_workdir(tmp_path / "new")  # absent: created and marked
    assert (workdir / MARKER).is_file()
    (workdir / "logs").mkdir()
    (workdir / "logs" / "superlink.log").write_text("old run")
    for name in ("superlink-state.db", "superlink-state.db-wal", "superlink-state.db-shm"):
        (workdir / name).write_text("old state")  # SQLite's log would be replayed into the next run's state
    (workdir / "notes.txt").write_text("the user's, added later")
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data.csv").write_text("keep")
    (workdir / "certs").symlink_to(outside)  # a link among Stamen's names: removed as a link only
    prepare_workdir(workdir)
    assert sorted(p.name for p in workdir.iterdir()) == [MARKER, "notes.txt"]
    assert (outside / "data.csv").read_text() == "keep"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prepare_workdir(empty) == empty and sorted(p.name for p in empty.iterdir()) == [MARKER]


def test_links_files_and_fake_markers_are_refused_before_anything_is_removed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / MARKER).write_text("")
    (real / "logs").mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(ValueError, match="symbolic link"):
        prepare_workdir(tmp_path / "link")
    assert (real / "logs").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        prepare_workdir(tmp_path / "file")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "data").mkdir()
    (fake / MARKER).symlink_to(real / MARKER)
    with pytest.raises(ValueError, match="not a regular file"):
        prepare_workdir(fake)
    assert (fake / "data").is_dir()


@pytest.mark.slow
def test_partition_out_must_be_a_real_folder_without_earlier_partitions(tmp_path):
    (tmp_path / "file").write_text("x")
    result = _stamen("deploy", "partition", "--out", str(tmp_path / "file"), "--clients", "2")
    assert result.returncode == 2 and "is a file" in result.stderr
    (tmp_path / "out" / "node-1").mkdir(parents=True)
    (tmp_path / "out" / "node-1" / "stamen-partition.pt").write_bytes(b"an earlier export")
    result = _stamen("deploy", "partition", "--out", str(tmp_path / "out"), "--clients", "2")
    assert result.returncode == 2 and "node-1/stamen-partition.pt exists" in result.stderr
    assert (tmp_path / "out" / "node-1" / "stamen-partition.pt").read_bytes() == b"an earlier export"
    assert not (tmp_path / "out" / "node-0").exists()


def test_a_workdir_in_use_is_refused_and_left_whole(tmp_path):
    from stamen.server.runlock import FolderLocked
    from stamen.simulations.deploy.workdir import held_workdir

    with held_workdir(tmp_path / "work") as workdir:
        (workdir / "certs").mkdir()
        (workdir / "certs" / "ca.pem").write_text("the first deployment's CA")
        with pytest.raises(FolderLocked, match=r"deployment workdir .*work is being written by"):
            with held_workdir(workdir):
                pass
        assert (workdir / "certs" / "ca.pem").read_text() == "the first deployment's CA"
    with held_workdir(tmp_path / "work") as again:  # the first one ended: the next takes it and clears it
        assert not (again / "certs").exists()
