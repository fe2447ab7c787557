"""Device choice for a client: ``auto | cpu | cuda | cuda:N``."""

from __future__ import annotations

import functools
import logging

import torch

logger = logging.getLogger("stamen.client")


def choose_device(spec: str) -> torch.device:
    """The torch device a client trains on.

    ``auto`` takes the first visible GPU and the CPU otherwise; ``cuda`` or ``cuda:N``
    without a matching visible GPU falls back to the CPU and says so once per process.
    """
    if spec == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if spec != "auto":
            _warn_fallback(spec, "no CUDA device is visible to this client")
        return torch.device("cpu")
    if spec in ("auto", "cuda"):
        return torch.device("cuda", torch.cuda.current_device())
    index = int(spec.split(":", 1)[1])
    if index >= torch.cuda.device_count():
        _warn_fallback(spec, f"only {torch.cuda.device_count()} CUDA device(s) are visible")
        return torch.device("cpu")
    return torch.device("cuda", index)


def seed_device(seed: int, device: torch.device) -> None:
    """Seed the random draws a client makes on ``device``: the CPU generator, and that GPU's.

    The same CPU stream as :func:`torch.manual_seed`, at a fraction of its cost:
    ``torch.manual_seed`` also queues a lazy seeding call for every accelerator backend,
    each capturing a stack trace (about 1 ms a call on a machine without a GPU, paid
    twice per client message).
    """
    torch.default_generator.manual_seed(seed)
    if device.type == "cuda":
        with torch.cuda.device(device):
            torch.cuda.manual_seed(seed)


# Torch threads of a client's kernels. One, on every transport and machine: a CPU kernel that
# splits a sum over threads adds in an order that depends on their number, so two engines
# with different thread counts drift apart in the last bits and then in the figures (4 of
# 30 rounds differed between the in-process and the Flower engine on a 2-core machine).
# Flower's simulation runs each client as a one-thread actor anyway; the in-process engine
# trains a round's clients in one batched pass.
CLIENT_THREADS = 1


def pin_threads() -> None:
    """Run this process's torch kernels on :data:`CLIENT_THREADS` threads, whatever the
    environment (``OMP_NUM_THREADS``) says: the same numbers on every engine and machine."""
    if torch.get_num_threads() != CLIENT_THREADS:
        torch.set_num_threads(CLIENT_THREADS)


@functools.cache
def _warn_fallback(spec: str, reason: str) -> None:
    logger.warning("device %r requested but %s: training on the CPU", spec, reason)
