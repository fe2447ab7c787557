"""One import package: Stamen installs ``stamen`` and nothing else, so a user's own ``models.py`` or
``server.py`` (the commonest names in FL code) cannot stand in for one of its rooms.

The wheel test builds the wheel, installs it (``--no-deps``) into a fresh virtual environment that borrows
this one's dependencies through a ``.pth`` line (a ``.pth`` folder's own ``.pth`` files are not run, so this
checkout's editable mapping stays out), and runs a 2-round job from a folder of clashing module names, in
process and on Flower's simulation engine.
"""

import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import stamen

ROOT = Path(__file__).resolve().parents[2]
CLASHING = (
    "models",
    "server",
    "client",
    "graphs",
    "contract",
    "certify",
    "unlearn",
    "simulations",
    "experiments",
    "benches",
    "cli",
    "tasks",
)


def _clashing_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in CLASHING:
        (folder / f"{name}.py").write_text(f'raise SystemExit("the user\'s {name}.py was imported")\n')
    return folder


def _python(code: str, cwd: Path, python: str = sys.executable, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.slow
def test_the_api_and_the_apps_import_no_torch():
    """``import stamen`` and the Flower apps' modules load no torch: a Ray actor or a SuperNode pays for it
    only when it trains (a second each on this machine's cores)."""
    code = (
        "import sys, stamen, stamen.client.app, stamen.server.app\n"
        "stamen.certify, stamen.unlearn\n"
        "print(sorted(name for name in ('torch', 'torch_geometric', 'flwr') if name in sys.modules))"
    )
    result = _python(code, ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["['flwr']"]


def test_certify_and_unlearn_are_rooms_and_calls():
    assert callable(stamen.certify) and callable(stamen.unlearn)
    from stamen.certify import ntk

    assert stamen.certify.ntk is ntk  # the room's modules stay reachable as attributes
    with pytest.raises(AttributeError, match="stamen.unlearn"):
        stamen.unlearn.no_such_name  # noqa: B018


@pytest.mark.slow
def test_a_folder_of_clashing_names_does_not_shadow_stamen(tmp_path):
    folder = _clashing_folder(tmp_path / "user")
    code = (
        "import stamen\n"
        "run = stamen.run({'num-server-rounds': 2, 'csbm-nodes': 300}, clients=3, out='runs')\n"
        "print(run.status.value, len(run.rows))"
    )
    result = _python(code, folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["finished", "3"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (path,) = out.glob("stamen-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package_and_the_app_config(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"stamen"}
    assert "stamen/simulations/app/pyproject.toml" in names  # what flwr run stages beside the code
    assert not any("__pycache__" in name or name.startswith("stamen/tests") for name in names)


def _console_scripts(bin_dir: Path, python: Path, distribution: str) -> None:
    """Write ``distribution``'s console scripts into ``bin_dir``, run by ``python``, as pip would on install."""
    for entry in importlib.metadata.distribution(distribution).entry_points.select(group="console_scripts"):
        script = bin_dir / entry.name
        script.write_text(
            f"#!{python}\nimport sys\nfrom {entry.module} import {entry.attr}\nsys.exit({entry.attr}())\n"
        )
        script.chmod(0o755)


@pytest.mark.slow
@pytest.mark.ray
def test_an_installed_wheel_runs_from_a_folder_of_clashing_names(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = _python("import sysconfig; print(sysconfig.get_paths()['purelib'])", tmp_path, str(python)).stdout.strip()
    # this environment's dependencies, after the fresh one's own site-packages (where the wheel goes)
    (Path(site) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _console_scripts(env_dir / "bin", python, "flwr")  # what installing flwr there would have written
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    folder = _clashing_folder(tmp_path / "user")
    code = (
        "import json, stamen\n"
        "figures = {}\n"
        "for engine in ('inprocess', 'flower'):\n"
        "    run = stamen.run({'num-server-rounds': 2, 'csbm-nodes': 300}, clients=3, engine=engine,\n"
        "                     out='runs', run_name=engine)\n"
        "    figures[engine] = [row.get('global_test_acc') for row in run.rows]\n"
        "print(json.dumps({'file': stamen.__file__, 'figures': figures}))"
    )
    result = _python(code, folder, str(python), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(report["file"]).is_relative_to(site)  # the wheel's copy, not this checkout
    assert len(report["figures"]["inprocess"]) == 3
    assert report["figures"]["flower"] == report["figures"]["inprocess"]
