"""Who called, for upstreams that ask: ``params._meta["io.air/caller"]``.

An upstream whose entry says ``send_caller: true`` gets the identity the gateway admitted the
request with (``{"client_id": …, "subject": …}``, the keys it has; ``subject`` is the token's
``sub`` as issued, since the upstream asked for it) on ``tools/call``, ``resources/read`` and
``prompts/get``. Every other upstream gets nothing, and a value a client put there itself is
removed on the way to every upstream: only the gateway speaks under this key.
"""

from __future__ import annotations

from airgateway.types import JSONDict
from airhttp.identity import current_identity

__all__ = ["CALLER_META_KEY", "with_caller"]

CALLER_META_KEY = "io.air/caller"


def with_caller(params: JSONDict, *, send: bool) -> JSONDict:
    """``params`` for an upstream: with the current caller under ``_meta`` when ``send``, and
    without any ``io.air/caller`` of the client's own. The same object when nothing changes."""
    meta = params.get("_meta")
    own = isinstance(meta, dict) and CALLER_META_KEY in meta
    caller: JSONDict = {}
    if send:
        identity = current_identity()
        if identity is not None and identity.auth != "none":
            if identity.client_id is not None:
                caller["client_id"] = identity.client_id
            if identity.subject is not None:
                caller["subject"] = identity.subject
    if not caller and not own:
        return params
    kept = {k: v for k, v in meta.items() if k != CALLER_META_KEY} if isinstance(meta, dict) else {}
    if caller:
        kept[CALLER_META_KEY] = caller
    out = dict(params)
    if kept:
        out["_meta"] = kept
    else:
        out.pop("_meta", None)
    return out
