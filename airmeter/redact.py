"""Redaction of opt-in arguments and results: secret-looking keys are masked recursively."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airmeter.classify import split_words

__all__ = ["REDACTED", "SECRET_WORDS", "Redactor", "redact"]

REDACTED = "[REDACTED]"
SECRET_WORDS: frozenset[str] = frozenset({
    "password", "passwd", "passphrase", "pwd", "secret", "token", "key", "apikey", "auth",
    "authorization", "bearer", "cookie", "credential", "credentials", "session", "private",
    "signature", "otp", "pin", "ssn", "jwt", "sessionid", "accesstoken", "refreshtoken",
})  # fmt: skip
"""A key is secret when one of its words (split like tool names) is in this set."""

MAX_DEPTH = 32


class Redactor:
    """Masks the values of secret-looking keys, at any depth, in dicts, lists and tuples.

    Args:
        words: the secret words (default :data:`SECRET_WORDS`); a key matches when any of its
            words (``api_key`` → ``api``, ``key``; ``X-Auth-Token`` → ``x``, ``auth``, ``token``)
            or the whole key lowercased is in the set.
        extra: more words, added to ``words``.
        placeholder: what replaces a secret value.
        max_depth: deeper structures are replaced by the placeholder too.
    """

    def __init__(
        self,
        *,
        words: Iterable[str] = SECRET_WORDS,
        extra: Iterable[str] = (),
        placeholder: str = REDACTED,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        self._words = frozenset(w.lower() for w in (*words, *extra))
        self._placeholder = placeholder
        self._max_depth = max_depth
        self._verdicts: dict[str, bool] = {}

    def is_secret(self, key: str) -> bool:
        """Whether the value under ``key`` must be masked (cached per key)."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            lowered = key.lower()
            verdict = (
                lowered in self._words
                or any(w in self._words for w in split_words(key))
                or lowered.replace("-", "").replace("_", "") in self._words
            )
            if len(self._verdicts) < 4096:
                self._verdicts[key] = verdict
        return verdict

    def __call__(self, value: Any) -> Any:
        """Return a redacted copy of ``value`` (the input is never modified)."""
        return self._walk(value, 0)

    def _walk(self, value: Any, depth: int) -> Any:
        if depth > self._max_depth:
            return self._placeholder
        if isinstance(value, Mapping):
            return {
                k: self._placeholder
                if isinstance(k, str) and self.is_secret(k)
                else self._walk(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._walk(v, depth + 1) for v in value]
        return value


_DEFAULT = Redactor()


def redact(value: Any) -> Any:
    """Redact ``value`` with the default :class:`Redactor`."""
    return _DEFAULT(value)
