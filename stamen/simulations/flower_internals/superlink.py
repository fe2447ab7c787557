"""Flower's SuperLink app, built from ``flower-superlink``'s flags as ``flower-superlink`` builds it.

Replaces: ``flwr.superlink.cli.flower_superlink`` (``_parse_superlink_lifespan_config``,
``SuperLinkLifespan``), ``flwr.superlink.main`` (``create_app``),
``flwr.supercore.http_logging`` (``get_uvicorn_log_config``) and ``flwr.supercore.logger``
(``console_handler``), none public API; and sets ``flwr.supercore.sql_mixin.SQLITE_PRAGMAS``'s
``busy_timeout`` (:func:`patient_state_database`).

The gated SuperLink (:mod:`stamen.simulations.deploy.gated_superlink`) serves the very ASGI app
``flower-superlink`` serves (same flags, same state, same lifespan: the SuperExec that
launches ServerApps), wrapped in Stamen's middlewares and on sockets of its own: Flower 1.42
has no public way to split its APIs over two addresses.

Dropping it: once ``flower-superlink`` can listen for the Fleet API and for the Control and
Runtime APIs on different addresses, start it as it is and drop the gated SuperLink (the
middlewares go with it, see :mod:`.wire`); :func:`patient_state_database` goes once Flower's
SQLite state waits long enough for its lock under load.
"""

from __future__ import annotations

from typing import Any

from flwr.supercore import sql_mixin
from flwr.supercore.http_logging import get_uvicorn_log_config
from flwr.supercore.logger import console_handler
from flwr.superlink.cli.flower_superlink import SuperLinkLifespan, _parse_superlink_lifespan_config
from flwr.superlink.main import create_app


def superlink_config() -> Any:
    """``flower-superlink``'s flags, read from ``sys.argv`` and checked by Flower (TLS files, state, isolation...).

    The result has, among others, ``host``, ``port``, ``ssl_keyfile`` and ``ssl_certfile``.
    """
    return _parse_superlink_lifespan_config()


STATE_BUSY_TIMEOUT_MS = 60_000
"""How long a write to the SuperLink's state database waits for the database's lock (Flower: 5,000 ms)."""


def patient_state_database() -> None:
    """Writes to the SuperLink's SQLite state wait up to :data:`STATE_BUSY_TIMEOUT_MS` for its lock.

    Flower 1.42 waits 5 s, then answers the request with HTTP 500 (``database is locked``), and a
    SuperNode does not send its reply again: with 10 SuperNodes on 2 loaded cores, one reply of
    round 1 was lost this way and the round waited out its ``round-timeout``
    (benchmarks/deploy-nodes.md). With the longer wait, a busy write takes longer instead of failing.
    """
    sql_mixin.SQLITE_PRAGMAS = tuple(
        (name, str(STATE_BUSY_TIMEOUT_MS) if name == "busy_timeout" else value)
        for name, value in sql_mixin.SQLITE_PRAGMAS
    )


def superlink_app(config: Any) -> Any:
    """The SuperLink's ASGI app for ``config``, with Flower's lifespan (state, SuperExec), its state
    database patient (:func:`patient_state_database`)."""
    patient_state_database()
    return create_app(config, SuperLinkLifespan)


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging set up as Flower sets it, at the level of Flower's console log."""
    return get_uvicorn_log_config(console_handler.level)
