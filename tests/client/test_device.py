"""A client's device: ``cpu`` is honoured with a GPU visible; ``cuda`` without one falls back, once said."""

import logging

import pytest
import torch

from stamen.client import device as device_module
from stamen.client.device import choose_device


@pytest.fixture(autouse=True)
def fresh_warnings():
    device_module._warn_fallback.cache_clear()
    yield
    device_module._warn_fallback.cache_clear()


def _gpus(monkeypatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


def test_cpu_is_honoured_when_a_gpu_is_visible(monkeypatch):
    _gpus(monkeypatch, 2)
    assert choose_device("cpu") == torch.device("cpu")
    assert choose_device("auto") == torch.device("cuda", 0)
    assert choose_device("cuda:1") == torch.device("cuda", 1)


def test_cuda_without_a_gpu_falls_back_to_the_cpu_and_says_so_once(monkeypatch, caplog):
    _gpus(monkeypatch, 0)
    with caplog.at_level(logging.WARNING, logger="stamen.client"):
        assert choose_device("cuda") == torch.device("cpu")
        assert choose_device("cuda") == torch.device("cpu")
        assert choose_device("auto") == torch.device("cpu")
    warnings = [r for r in caplog.records if "training on the CPU" in r.getMessage()]
    assert len(warnings) == 1 and "'cuda'" in warnings[0].getMessage()


def test_a_missing_gpu_index_falls_back(monkeypatch, caplog):
    _gpus(monkeypatch, 1)
    with caplog.at_level(logging.WARNING, logger="stamen.client"):
        assert choose_device("cuda:3") == torch.device("cpu")
    assert "only 1 CUDA device(s) are visible" in caplog.text


class _FakeRay:
    """A Ray worker's view of its resources, for :func:`stamen.client.device.ray_gpu_share`."""

    def __init__(self, gpus):
        self.gpus = gpus

    def is_initialized(self):
        return True

    def get_runtime_context(self):
        gpus = self.gpus

        class Context:
            def get_accelerator_ids(self):
                return {"GPU": gpus}

        return Context()


def test_a_ray_worker_without_a_gpu_share_trains_on_the_cpu(monkeypatch):
    import sys

    from stamen.client.device import choose_device, ray_gpu_share

    monkeypatch.setitem(sys.modules, "ray", _FakeRay([]))
    assert ray_gpu_share() == []
    assert choose_device("auto").type == "cpu" and choose_device("cuda").type == "cpu"
    monkeypatch.setitem(sys.modules, "ray", _FakeRay(["1"]))
    assert ray_gpu_share() == ["1"]  # with a share, torch's visible devices decide (Ray made GPU 1 the only one)
    monkeypatch.delitem(sys.modules, "ray")
    assert ray_gpu_share() is None
