"""A run's rounds keep the objects alive when they start out of the garbage collector's scans, and give them back."""

import gc
import weakref

import pytest

import stamen
from stamen.common.heap import frozen_heap


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_block_freezes_what_is_alive_and_unfreezes_it_even_after_an_error():
    made_before = Cycle()
    ref = weakref.ref(made_before)
    with pytest.raises(RuntimeError), frozen_heap():
        del made_before
        gc.collect()
        assert ref() is not None  # frozen: a collection inside the block skips it
        raise RuntimeError("a round failed")
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None  # unfrozen: the next collection frees the cycle


def test_bulyan_collects_only_what_its_rounds_made(tmp_path, monkeypatch):
    """Flower's Bulyan calls gc.collect() for every selected reply: each call finds the run's start frozen."""
    seen: list[int] = []
    collect = gc.collect

    def counting_collect(*args, **kwargs):
        seen.append(gc.get_freeze_count())
        return collect(*args, **kwargs)

    monkeypatch.setattr(gc, "collect", counting_collect)
    config = {"algorithm": "bulyan", "num-malicious-nodes": 0, "csbm-nodes": 300, "num-server-rounds": 2}
    run = stamen.run(config, clients=3, out=tmp_path)
    assert run.rows[-1]["round"] == 2
    during_rounds = [count for count in seen if count]  # others: before the rounds
    assert len(during_rounds) >= 2 * 3  # a collection per selected reply and round at least
    assert min(during_rounds) > 100_000  # torch, PyG, Flower and the run's data: frozen
    assert gc.get_freeze_count() == 0
