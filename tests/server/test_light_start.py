"""The ServerApp starts without PyTorch or PyG: on a small machine every second of import
in the server process is taken from the clients starting beside it."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_server_app_imports_neither_torch_nor_pyg():
    code = "import sys, stamen.server.app; print(sorted(m for m in ('torch', 'torch_geometric') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_package_attributes_still_resolve():
    from stamen import graphs, models

    assert callable(graphs.build_federation) and "cora" in graphs.DATASETS
    assert callable(models.build_model) and "gcn" in models.MODELS
