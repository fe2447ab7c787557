"""Device choice for a client: ``auto | cpu | cuda | cuda:N``.

A client on a Ray worker trains on a GPU only with a GPU share (``client-resources-num-gpus``
> 0): Ray then makes the GPUs it assigned the worker's only visible ones, so ``cuda`` is that
worker's share and the clients of a machine spread over its GPUs. Without a share, Ray hides
every GPU from the worker (``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=1``, which Stamen's Flower
environment sets), and :func:`choose_device` also asks Ray for the worker's share, so that a
cluster node started without that setting cannot put zero-share clients on its GPU 0.
"""

from __future__ import annotations

import functools
import logging
import sys

import torch

logger = logging.getLogger("stamen.client")


def choose_device(spec: str) -> torch.device:
    """The torch device a client trains on.

    ``auto`` takes the first visible GPU and the CPU otherwise; ``cuda`` or ``cuda:N``
    without a matching visible GPU falls back to the CPU and says so once per process.
    A Ray worker without a GPU share trains on the CPU (see the module docstring).
    """
    if spec == "cpu":
        return torch.device("cpu")
    if ray_gpu_share() == []:
        if spec != "auto":
            _warn_fallback(spec, "this Ray worker has no GPU share (client-resources-num-gpus=0)")
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


def ray_gpu_share() -> list[str] | None:
    """The GPU ids Ray assigned this worker (``[]``: none), or ``None`` outside a Ray worker.

    Only a process that has imported Ray and joined it can be a Ray worker; nothing else imports Ray for this.
    """
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        return [str(i) for i in ray.get_runtime_context().get_accelerator_ids().get("GPU", [])]
    except Exception:  # a Ray being shut down: the environment's visible devices decide
        return None


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
