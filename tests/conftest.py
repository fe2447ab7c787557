"""Shared test setup: one torch thread, a writable data cache, the shared datasets."""

import os

# Before torch is imported anywhere: two threads on a shared 2-core machine can be 50x slower.
os.environ["OMP_NUM_THREADS"] = "1"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


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
