"""The per-round records written behind the rounds: in order, all of them before the run ends, none after a failure."""

import threading

import pytest

from stamen.server.writer import BehindWriter


def test_writes_run_in_order_and_close_waits_for_all_of_them():
    done: list[int] = []
    release = threading.Event()

    def write(i: int):
        def run():
            if i == 0:
                release.wait(5)  # the disk is slow: the loop goes on meanwhile
            done.append(i)

        return run

    with BehindWriter(depth=8) as writer:
        for i in range(6):
            writer.put(write(i))
        assert done == []  # handed over, not yet written: the loop did not wait
        release.set()
    assert done == [0, 1, 2, 3, 4, 5]


def test_a_full_queue_makes_the_loop_wait_for_the_disk():
    release = threading.Event()
    writer = BehindWriter(depth=1)
    writer.put(lambda: release.wait(5))  # being written
    writer.put(lambda: None)  # waiting: the queue is full
    third = threading.Thread(target=writer.put, args=(lambda: None,))
    third.start()
    third.join(0.3)
    assert third.is_alive()  # the third hand-over waits for the disk
    release.set()
    third.join(5)
    assert not third.is_alive()
    writer.close()


def test_a_failed_write_stops_the_later_ones_and_is_raised_in_the_loop():
    done: list[str] = []
    failed = threading.Event()

    def fail():
        failed.set()
        raise OSError("disk full")

    writer = BehindWriter()
    writer.put(lambda: done.append("row 1"))
    writer.put(fail)
    failed.wait(5)
    with pytest.raises(OSError, match="disk full"):
        for _ in range(100):  # the error reaches the loop at a hand-over at the latest...
            writer.put(lambda: done.append("after"))
    with pytest.raises(OSError, match="disk full"):
        writer.close()  # ...and at close
    assert done == ["row 1"]  # nothing written after the failed write: the order on disk holds


def test_the_loops_own_error_wins_after_the_records_handed_over_are_written():
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), BehindWriter() as writer:
        writer.put(lambda: done.append("row 1"))
        writer.put(lambda: done.append("checkpoint 1"))
        raise KeyboardInterrupt
    assert done == ["row 1", "checkpoint 1"]
    with pytest.raises(RuntimeError, match="closed"):
        writer.put(lambda: None)


def test_depth_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        BehindWriter(depth=0)
