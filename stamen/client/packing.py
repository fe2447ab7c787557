"""The ClientApp's side of packed array records (:mod:`stamen.contract.packed`).

:func:`packed_records_mod` is the outermost mod of every handler: a message whose array
records came packed (Stamen's ServerApp packs what it sends over a Flower grid) is
unpacked before any other mod or handler sees it, and the reply's array records are packed
on the way out. A message that did not come packed (Flower's SecAgg+ workflow, another
ServerApp) passes as it is and its reply goes as the handler made it.
"""

from __future__ import annotations

from flwr.app import Context, Message

from stamen.client.mod_types import ClientAppCallable
from stamen.contract.packed import has_packed, packed_content, unpacked_content


def packed_records_mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """Unpack ``message``'s array records, call the handler, pack the reply's (only when ``message`` came packed).

    Raises:
        ValueError: a packed record that cannot be read (Flower answers the server with the error).
    """
    if not message.has_content() or not has_packed(message.content):
        return call_next(message, context)
    message.content = unpacked_content(message.content)
    reply = call_next(message, context)
    if reply.has_content():
        reply.content = packed_content(reply.content)
    return reply
