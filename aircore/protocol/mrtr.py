"""Multi round-trip requests (2026-07-28): ``input_required`` rounds and their ``requestState``.

A handler that needs input raises :class:`~aircore.context.InputRequired`; the request answers
``resultType: "input_required"`` with the ``inputRequests`` and a ``requestState``. The client
retries the same request with ``inputResponses`` and the state echoed; the handler runs again and
gets its answers. Answers of earlier rounds travel inside the state, so any replica can serve the
next round and the server keeps nothing between rounds.

The state is the client's to carry but not to change: ``v1.<payload>.<HMAC-SHA256>``, keyed with
the server's request-state key (``AIR_REQUEST_STATE_KEY``, or a random per-process key). The
payload binds the state to the request it was minted for (method, name or URI, a digest of the
arguments) and expires after :data:`DEFAULT_STATE_TTL` seconds; a state that fails any check is
refused with -32602 and nothing runs. States are bounded in size (:data:`MAX_STATE_BYTES`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import time
from collections.abc import Mapping
from typing import Any

import orjson

from aircore.context import InputRequest, InputRequired
from aircore.errors import INTERNAL_ERROR, AirError, InvalidParamsError

__all__ = [
    "DEFAULT_STATE_TTL",
    "MAX_STATE_BYTES",
    "RoundInputs",
    "StateSealer",
    "binding_of",
    "read_responses",
]

DEFAULT_STATE_TTL = 600.0
"""Seconds a ``requestState`` stays valid."""
MAX_STATE_BYTES = 64 * 1024
"""Largest ``requestState`` minted or accepted (answers of earlier rounds count)."""
_VERSION = "v1"
_NOTHING: Mapping[str, Any] = {}
_INVALID = "Invalid or expired requestState"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def binding_of(method: str, name: Any, arguments: Any) -> str:
    """What a ``requestState`` is bound to: the method, the tool/prompt name or resource URI
    and a digest of the arguments (canonical JSON)."""
    try:
        canonical = orjson.dumps(
            {"m": method, "n": name, "a": arguments},
            option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        )
    except TypeError:  # not JSON (in-process callers); bind to the name only
        canonical = orjson.dumps({"m": method, "n": name})
    return _b64(hashlib.sha256(canonical).digest())


class StateSealer:
    """Mints and checks ``requestState`` values with one server-wide HMAC key.

    Args:
        key: the secret (any bytes; hashed to 32). ``None``: a random per-process key, so
            states only work against this process.
        ttl: seconds a state stays valid.
        max_bytes: the size limit of a state.
    """

    def __init__(
        self,
        key: bytes | None = None,
        *,
        ttl: float = DEFAULT_STATE_TTL,
        max_bytes: int = MAX_STATE_BYTES,
    ) -> None:
        self._key = hashlib.sha256(key).digest() if key else os.urandom(32)
        self.ttl = ttl
        self.max_bytes = max_bytes

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode("ascii"), hashlib.sha256).digest())

    def seal(self, *, binding: str, answers: Mapping[str, Any], pending: list[str]) -> str:
        """A state carrying ``answers`` for the next round of the request ``binding`` names.

        Raises:
            AirError: -32603 when the state would exceed :attr:`max_bytes` or an answer is
                not JSON.
        """
        body = {"b": binding, "x": time.time() + self.ttl, "a": answers, "p": pending}
        try:
            payload = _b64(orjson.dumps(body))
        except TypeError as exc:  # in-process callers may hand over anything
            raise AirError(INTERNAL_ERROR, f"the answers cannot be carried: {exc}") from exc
        state = f"{_VERSION}.{payload}.{self._mac(payload)}"
        if len(state) > self.max_bytes:
            raise AirError(
                INTERNAL_ERROR,
                f"the answers gathered so far exceed the requestState limit of "
                f"{self.max_bytes} bytes",
                data={"limit": self.max_bytes, "size": len(state)},
            )
        return state

    def open(self, state: Any, *, binding: str) -> tuple[dict[str, Any], list[str]]:
        """Check a client-echoed state; return ``(answers so far, keys asked last round)``.

        Raises:
            InvalidParamsError: not a string, too large, malformed, tampered with, minted for
                another request or by another key, or expired.
        """
        if not isinstance(state, str) or len(state) > self.max_bytes:
            raise InvalidParamsError(_INVALID, data={"reason": "malformed"})
        version, _, rest = state.partition(".")
        payload, _, mac = rest.partition(".")
        if version != _VERSION or not payload or not mac:
            raise InvalidParamsError(_INVALID, data={"reason": "malformed"})
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise InvalidParamsError(_INVALID, data={"reason": "integrity check failed"})
        try:
            body = orjson.loads(_unb64(payload))
        except (ValueError, binascii.Error) as exc:  # only our own key signs, so unreachable
            raise InvalidParamsError(_INVALID, data={"reason": "malformed"}) from exc
        if not isinstance(body, dict) or body.get("b") != binding:
            raise InvalidParamsError(_INVALID, data={"reason": "minted for another request"})
        expires = body.get("x")
        if not isinstance(expires, (int, float)) or expires < time.time():
            raise InvalidParamsError(_INVALID, data={"reason": "expired"})
        answers = body.get("a")
        pending = body.get("p")
        if not isinstance(answers, dict) or not isinstance(pending, list):
            raise InvalidParamsError(_INVALID, data={"reason": "malformed"})
        return answers, [str(k) for k in pending]


def read_responses(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request's ``inputResponses`` (``None`` when absent), checked for shape.

    Raises:
        InvalidParamsError: ``inputResponses`` is not an object of objects.
    """
    if "inputResponses" not in params:
        return None
    responses = params["inputResponses"]
    if not isinstance(responses, dict):
        raise InvalidParamsError("inputResponses must be an object of key → result objects")
    bad = sorted(str(k) for k, v in responses.items() if not isinstance(v, dict))
    if bad:
        raise InvalidParamsError(
            f"inputResponses values must be result objects: {', '.join(bad)}",
            data={"keys": bad},
        )
    return responses


class RoundInputs:
    """The answers one 2026-07-28 round can give: those carried in the ``requestState`` plus
    this request's ``inputResponses`` (for the keys asked last round, or any key when the
    request carries no state). Records which answers the handler used, to carry them on.

    Args:
        answers: what the round can answer.
        request: ``(method, name or URI, arguments)``, what a state is bound to.
    """

    __slots__ = ("_answers", "_binding", "request", "used")

    def __init__(self, answers: Mapping[str, Any], request: tuple[str, Any, Any]) -> None:
        self._answers = answers
        self.request = request
        self._binding: str | None = None
        self.used: dict[str, Any] = {}

    @property
    def binding(self) -> str:
        """:func:`binding_of` the request (computed when a state is checked or minted)."""
        if self._binding is None:
            self._binding = binding_of(*self.request)
        return self._binding

    @classmethod
    def open(
        cls, sealer: StateSealer, params: Mapping[str, Any], request: tuple[str, Any, Any]
    ) -> RoundInputs:
        """The round a request opens (state checked, responses read).

        Raises:
            InvalidParamsError: a bad ``requestState`` or ``inputResponses``.
        """
        state = params.get("requestState")
        if state is None and "inputResponses" not in params:
            return cls(_NOTHING, request)  # the common first round
        responses = read_responses(params) or {}
        if state is None:
            return cls(responses, request)
        inputs = cls({}, request)
        carried, pending = sealer.open(state, binding=inputs.binding)
        inputs._answers = {**carried, **{k: v for k, v in responses.items() if k in pending}}
        return inputs

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """The answers, or :class:`~aircore.context.InputRequired` for the missing ones."""
        missing: dict[str, dict[str, Any]] = {}
        for key, req in requests.items():
            if key in self._answers:
                self.used[key] = self._answers[key]
            else:
                missing[key] = {"method": req.method, "params": dict(req.params)}
        if missing:
            raise InputRequired(missing)
        return {key: self._answers[key] for key in requests}

    def result(self, need: InputRequired, sealer: StateSealer) -> dict[str, Any]:
        """The ``input_required`` result for what the handler still needs."""
        state = sealer.seal(binding=self.binding, answers=self.used, pending=list(need.requests))
        return {
            "resultType": "input_required",
            "inputRequests": need.requests,
            "requestState": state,
        }
