"""A run's per-round records written on one thread of their own, while the next round runs.

Each round ends with two durable writes: its metrics row (appended to ``metrics.jsonl``,
fsync-ed) and the server's checkpoint (a temporary file, fsync-ed, renamed, the folder
fsync-ed). On this project's machines they cost 1 ms and 2.5 ms a round, about a tenth
of a Cora round in process, all of it waiting for the disk. :class:`BehindWriter` takes
them off the round loop: the loop encodes each record (its bytes are fixed at hand-over,
whatever the loop does next with the objects) and hands it over; one thread writes the
records in the order they were handed over.

What is on disk at any moment is therefore what the same writes made one after another
in the loop would have left at some earlier moment: a checkpoint is never newer than the
rows written before it, and a resumed run finds the same files a synchronous writer
could have left. The writer keeps at most ``depth`` records waiting; a fuller queue makes
the loop wait (the disk sets the pace, memory stays bounded). The first write that fails
stops the writer (nothing after it is written, so the order still holds) and its error
is raised in the loop, at the next hand-over or at :meth:`BehindWriter.close`.
:meth:`~BehindWriter.close` (also on the way out of a ``with`` block, Ctrl-C included)
waits for every record handed over: what was handed over had happened, and nothing is
written after the run's status says how it ended.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType

Write = Callable[[], None]


class BehindWriter:
    """Runs the writes handed to :meth:`put` on one thread, in order; :meth:`close` waits for them.

    Args:
        depth: how many writes may wait before :meth:`put` waits for the disk (at least 1).
    """

    def __init__(self, depth: int = 4) -> None:
        if depth < 1:
            raise ValueError(f"depth={depth}: give at least 1")
        self._queue: queue.Queue[Write | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="stamen-records", daemon=True)
        self._thread.start()

    def put(self, write: Write) -> None:
        """Hand over one write (its data already encoded); raise the error of an earlier write, if any."""
        self._raise()
        if not self._thread.is_alive():
            raise RuntimeError("the writer is closed")
        self._queue.put(write)

    def close(self) -> None:
        """Wait until every write handed over is done; raise the first write's error, if any."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def __enter__(self) -> BehindWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if error is None:
            self.close()
            return
        try:  # the loop's own error wins; the writes handed over are still finished first
            self.close()
        except Exception:  # a failed write after a failed round: the round's error is the one to see
            pass

    def _work(self) -> None:
        while (write := self._queue.get()) is not None:
            if self._error is None:
                try:
                    write()
                except BaseException as error:  # handed to the loop by put / close
                    self._error = error

    def _raise(self) -> None:
        if self._error is not None:  # kept: every later write stays unwritten
            raise self._error
