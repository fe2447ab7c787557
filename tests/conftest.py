"""Shared test setup: one torch thread, a writable data cache, the shared datasets."""

import os

# Before torch is imported anywhere: two threads on a shared 2-core machine can be 50x slower.
os.environ["OMP_NUM_THREADS"] = "1"

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import torch

torch.set_num_threads(1)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


# Under pytest-xdist (the README's `-n 2 --dist loadgroup`), every test marked `ray` joins the one
# xdist group "ray": one worker runs them all, one after another, while the other worker takes the
# rest test by test. Two Ray instances starting at once on a 2-core machine time out ("the GCS has
# become overloaded"); one Ray at a time beside other tests does not. xdist hands out its largest
# group first, so this group, the longest share of the suite, starts at once. A `ray` test is `slow`
# too: `pytest -m "not slow"` must stay free of Ray.
RAY_GROUP = "ray"
_NOT_GROUPED = pytest.StashKey[str]()


@pytest.hookimpl(wrapper=True)  # around xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    for item in items:
        if item.get_closest_marker("ray") is not None:
            if item.get_closest_marker("slow") is None:
                raise pytest.UsageError(f"{item.nodeid} is marked ray but not slow")
            item.add_marker(pytest.mark.xdist_group(RAY_GROUP))
    result = yield
    # xdist passes a test's group on as a suffix of its node id. Where it cannot (pytest 9.2 with
    # pytest-xdist 3.8, xdist issue #1386) the Ray tests would silently spread over both workers:
    # each fails at once instead, before it starts anything.
    if getattr(config.option, "loadgroup", False):
        for item in items:
            if item.get_closest_marker("ray") is not None and not item.nodeid.endswith(f"@{RAY_GROUP}"):
                item.stash[_NOT_GROUPED] = (
                    f"--dist loadgroup did not put this test in the xdist group {RAY_GROUP!r} (pytest-xdist "
                    "issue #1386: pytest 9.2 with pytest-xdist 3.8); install the test extra's pytest<9.2"
                )
    return result


@pytest.fixture(autouse=True)
def ray_tests_are_grouped(request: pytest.FixtureRequest) -> None:
    """Fail a ``ray`` test that ``--dist loadgroup`` could not put in the "ray" group."""
    if _NOT_GROUPED in request.node.stash:
        pytest.fail(request.node.stash[_NOT_GROUPED], pytrace=False)


# The group holds only tests marked `ray`, so a test that starts Ray without the mark could run beside
# another Ray again. While a slow test without the mark runs, a watcher looks at this process's
# descendants every half second and fails the test if a Ray node's own processes appear among them
# (Ray's `ray.init`, Flower's simulation engine under `flwr run` or `stamen run`). A cluster started
# with `ray start` detaches its processes and is not seen: its tests are marked by hand.
RAY_NODE_PROCESSES = frozenset({"gcs_server", "raylet"})


@contextmanager
def watching_for_ray(nodeid: str, every: float = 0.5) -> Iterator[None]:
    """Fail the test ``nodeid`` when one of :data:`RAY_NODE_PROCESSES` runs among this process's descendants."""
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        me = psutil.Process()
        while not stop.wait(every):
            try:
                children = me.children(recursive=True)
            except psutil.Error:  # a process gone while the tree was read: look again
                continue
            for child in children:
                try:
                    name = child.name()
                except psutil.Error:  # gone, or not ours to read
                    continue
                if name in RAY_NODE_PROCESSES:
                    seen.append(name)
                    return

    watcher = threading.Thread(target=watch, name="ray-watcher", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    if seen:
        pytest.fail(f"{nodeid} starts Ray ({seen[0]}) but is not marked ray", pytrace=False)


@pytest.fixture(autouse=True)
def ray_is_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a slow test not marked ``ray`` that starts Ray (see :func:`watching_for_ray`)."""
    node = request.node
    unwatched = "ray_watch" in request.fixturenames  # the watcher's own test plays a Ray node
    if unwatched or node.get_closest_marker("slow") is None or node.get_closest_marker("ray") is not None:
        yield
        return
    with watching_for_ray(node.nodeid):
        yield


@pytest.fixture
def ray_watch():
    """:func:`watching_for_ray`, for the test of the watcher itself."""
    return watching_for_ray


@pytest.fixture(scope="session", autouse=True)
def writable_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Processed data goes to a per-session cache: the shared data root is read-only in CI."""
    cache = tmp_path_factory.mktemp("stamen-cache")
    os.environ["STAMEN_CACHE"] = str(cache)
    return cache


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The data root with ``Cora/raw`` and ``npz/cora_ml.npz`` (``../shared/datasets``)."""
    assert (SHARED_DATASETS / "Cora" / "raw").is_dir(), f"missing test data under {SHARED_DATASETS}"
    return SHARED_DATASETS


# Commands a fast test may run: git (a run's provenance names its commit), uname
# (platform.processor()) and cbc (PuLP's bundled MILP solver, milliseconds a model). Anything
# else a test starts (Flower, Ray, a SuperLink, the stamen command, a Python child) takes
# seconds to minutes and belongs to `slow`, so that `pytest -m "not slow"` stays the fast loop.
FAST_COMMANDS = frozenset({"git", "uname", "cbc"})


@pytest.fixture(autouse=True)
def subprocesses_are_slow(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test not marked ``slow`` that starts a process (other than :data:`FAST_COMMANDS`)."""
    if request.node.get_closest_marker("slow") is None:
        guard_subprocesses(request.node.nodeid, monkeypatch)


def guard_subprocesses(nodeid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every ``subprocess.Popen`` of a program outside :data:`FAST_COMMANDS` fail the test ``nodeid``."""
    import subprocess

    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):  # type: ignore[no-untyped-def]
        program = args if isinstance(args, str | bytes | os.PathLike) else args[0]
        if Path(os.fsdecode(program)).name not in FAST_COMMANDS:
            pytest.fail(f"{nodeid} starts a process ({os.fsdecode(program)}) but is not marked slow", pytrace=False)
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


# Figures that measure time or place, not what was computed: they differ between engines and runs.
_NOT_COMPARED = ("seconds", "devices", "wall", "ratio_to_training", "process", "client_nodes", "memory")


def _same(a: object, b: object, where: str) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k in a.keys() | b.keys() if not any(part in k for part in _NOT_COMPARED)}
        for key in sorted(keys):
            assert key in a and key in b, f"{where}.{key} is missing on one side"
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-6), f"{where}: {a} vs {b}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


@pytest.fixture
def same_figures():
    """``same_figures(a, b, where)``: assert two records (rows, summaries) hold the same figures to 1e-6,
    leaving out those of time and place (:data:`_NOT_COMPARED`); ``where`` names the first difference."""
    return _same


@pytest.fixture
def subprocess_guard():
    """:func:`guard_subprocesses`, for the test of the guard itself."""
    return guard_subprocesses


@pytest.fixture
def milp_models(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for every sample-wise MILP model built (what a resumed certification
    must not build again for its finished targets)."""
    from stamen.certify import cascade

    built: list[int] = []
    original = cascade.SampleWiseMILP

    class Counting(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(cascade, "SampleWiseMILP", Counting)
    return built


@pytest.fixture(autouse=True)
def keep_signal_handlers():
    """``stamen``'s main() installs its SIGTERM and SIGINT handlers; each test gets the process's own back."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture
def interrupt_long_job(monkeypatch: pytest.MonkeyPatch):
    """``interrupt(n)``: Ctrl-C right after the ``n``-th unit of a bench or audit is journaled; returns the undo."""
    from stamen.experiments.long_job import LongJob

    def interrupt(units: int):
        original, calls = LongJob.finish, []

        def finish(self, *args):  # type: ignore[no-untyped-def]
            value = original(self, *args)
            calls.append(1)
            if len(calls) == units:
                raise KeyboardInterrupt
            return value

        monkeypatch.setattr(LongJob, "finish", finish)
        return lambda: monkeypatch.setattr(LongJob, "finish", original)

    return interrupt


@pytest.fixture
def registries():
    """The plug-in registries as they were before the test: what the test registers leaves with it."""
    from stamen.contract.algorithms import ALGORITHMS
    from stamen.contract.tasks import TASKS
    from stamen.graphs.names import DATASET_SPECS, PARTITIONER_SPECS
    from stamen.models.names import MODEL_SPECS

    kinds = (ALGORITHMS, MODEL_SPECS, TASKS, PARTITIONER_SPECS, DATASET_SPECS)
    for registry in kinds:
        len(registry)  # its entry points loaded first: what is saved is what every later read sees
    saved = [(registry, dict(registry._entries), dict(registry._origins)) for registry in kinds]
    yield
    for registry, entries, origins in saved:
        registry._entries, registry._origins = entries, origins
