"""Client-level DP's client side: Flower's clipping mods, for the runs that ask for them.

With ``privacy='client-dp'`` the server adds the noise (:mod:`stamen.server.privacy`); with
``clipping='client-fixed'`` or ``'client-adaptive'`` each client clips its own update
first, through Flower's ``fixedclipping_mod`` or ``adaptiveclipping_mod``. Any other run
passes through untouched. A light module: the ClientApp loads it at import.
"""

from __future__ import annotations

from flwr.app import Context, Message, UserConfig
from flwr.clientapp.mod import adaptiveclipping_mod, fixedclipping_mod

from stamen.client.mod_types import ClientAppCallable


def clips_on_client(run_config: UserConfig) -> bool:
    """Whether each client clips its own update (client-level DP with client-side clipping)."""
    return run_config.get("privacy") == "client-dp" and run_config.get("clipping") in (
        "client-fixed",
        "client-adaptive",
    )


def client_dp_mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """Flower's client-side clipping mods, for the runs whose ``clipping`` asks for them."""
    config = context.run_config
    if not clips_on_client(config):
        return call_next(message, context)
    if config.get("clipping") == "client-fixed":
        return fixedclipping_mod(message, context, call_next)
    return adaptiveclipping_mod(message, context, call_next)
