"""Redaction: secrets are masked by key name and by value shape before anything leaves the meter.

Two rules, applied to captured arguments and results (at any depth) and to every error
message, so that neither the call log, OpenTelemetry, Prometheus nor the dashboard ever sees a
secret:

- **by name**: the value under a secret-looking key is replaced (``password``, ``api_key``,
  ``X-Auth-Token``, ``pass``, ``pw``, ``PGPASSWORD``, ``*_KEY``, ``*TOKEN*``, ``*SECRET*``…);
- **by shape**, inside any text: bearer/basic credentials, passwords in URLs and DSNs,
  ``NAME=value`` / ``"name": "value"`` pairs whose name looks secret, provider tokens (GitHub
  ``ghp_``/``github_pat_``, OpenAI ``sk-``/``sk-proj-``, Slack ``xox?-``, AWS ``AKIA``/``ASIA``,
  Google ``AIza``, GitLab ``glpat-``), JSON Web Tokens and PEM private keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from airmeter.classify import split_words

__all__ = ["REDACTED", "SECRET_WORDS", "Redactor", "redact", "redact_text"]

REDACTED: Final = "[REDACTED]"
SECRET_WORDS: frozenset[str] = frozenset({
    "password", "passwd", "passphrase", "pwd", "pass", "pw", "secret", "token", "key", "apikey",
    "auth", "authorization", "bearer", "cookie", "credential", "credentials", "session",
    "private", "signature", "otp", "pin", "ssn", "jwt", "sessionid", "accesstoken",
    "refreshtoken", "dsn",
})  # fmt: skip
"""A name is secret when one of its words (split like tool names) is in this set."""
SECRET_PARTS: Final[tuple[str, ...]] = ("password", "passwd", "passphrase", "secret", "token")
"""A name is secret when it contains one of these anywhere (``PGPASSWORD``, ``GHTOKEN``)."""

MAX_DEPTH = 32
_MAX_CACHED_NAMES = 4096

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}"
_SHAPES: Final = re.compile(
    "|".join(
        (
            # PEM private keys, whole block
            r"(?P<pem>-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$))",
            # JSON Web Tokens: header.payload.signature, base64url, header and payload JSON
            r"(?P<jwt>\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)",
            # provider tokens
            r"(?P<provider>\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|sk-[A-Za-z0-9_-]{16,}|xox[abposr]-[A-Za-z0-9-]{8,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
            r"|AIza[0-9A-Za-z_-]{30,}|glpat-[A-Za-z0-9_-]{16,}))",
            # credentials in a URL or DSN: scheme://user:password@host
            r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<urlpw>[^\s@/]+)(?=@)",
            # Authorization schemes inside text: "Bearer abc…", "Basic dXNl…"
            r"(?P<scheme>\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN)\s+)"
            r"(?P<cred>[A-Za-z0-9._~+/=-]{8,})",
            # NAME=value, NAME: value, "name": "value" whose name looks secret
            rf"(?P<pair>(?<![A-Za-z0-9_.\-])(?P<q>[\"']?)(?P<name>{_NAME})(?P=q)\s*(?:=|:)\s*)"
            r"(?P<value>(?:(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN)\s+)?"
            r"(?:\"[^\"]*\"|'[^']*'|[^\s,;&\"'}\]]+))",
        )
    ),
    re.DOTALL,
)


def _name_is_secret(name: str, words: frozenset[str]) -> bool:
    lowered = name.lower()
    if lowered in words or any(part in lowered for part in SECRET_PARTS):
        return True
    if lowered.replace("-", "").replace("_", "").replace(".", "") in words:
        return True
    return any(w in words for w in split_words(name))


class Redactor:
    """Masks secrets by key name (in mappings, at any depth) and by value shape (in any text).

    Args:
        words: the secret words (default :data:`SECRET_WORDS`); a key matches when any of its
            words (``api_key`` → ``api``, ``key``; ``X-Auth-Token`` → ``x``, ``auth``,
            ``token``), the whole key lowercased, or a part of :data:`SECRET_PARTS` matches.
        extra: more words, added to ``words``.
        placeholder: what replaces a secret.
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
            verdict = _name_is_secret(key, self._words)
            if len(self._verdicts) < _MAX_CACHED_NAMES:
                self._verdicts[key] = verdict
        return verdict

    def text(self, text: str) -> str:
        """``text`` with every secret-shaped part masked (the same object when none is)."""
        out, n = _SHAPES.subn(self._replace, text)
        return out if n and out != text else text

    def _replace(self, match: re.Match[str]) -> str:
        kind = match.lastgroup
        if kind == "urlpw":
            return f"{match['url']}{self._placeholder}"
        if kind == "cred":
            return f"{match['scheme']}{self._placeholder}"
        if kind == "value":
            value = match["value"]
            if not self.is_secret(match["name"]):  # the value may still hold a secret shape
                return f"{match['pair']}{self.text(value)}"
            quote = value[0] if value[:1] in ("'", '"') else ""
            return f"{match['pair']}{quote}{self._placeholder}{quote}"
        return self._placeholder

    def __call__(self, value: Any, *, max_text: int | None = None) -> Any:
        """A redacted copy of ``value``, or ``value`` itself when nothing in it is secret
        (the input is never modified).

        Args:
            value: any JSON-like value.
            max_text: strings longer than this are cut to it (ending with "…") before they
                are searched (for values that will be cut anyway).
        """
        return self._walk(value, 0, max_text)

    def _walk(self, value: Any, depth: int, max_text: int | None) -> Any:
        if isinstance(value, str):
            if max_text is not None and len(value) > max_text:
                return self.text(value[:max_text]) + "…"
            return self.text(value)
        if depth > self._max_depth:
            return self._placeholder
        if isinstance(value, Mapping):
            changed = not isinstance(value, dict)
            out: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and self.is_secret(k):
                    new: Any = self._placeholder
                else:
                    new = self._walk(v, depth + 1, max_text)
                changed = changed or new is not v
                out[k] = new
            return out if changed else value
        if isinstance(value, list | tuple):
            items = [self._walk(v, depth + 1, max_text) for v in value]
            if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items
        return value


_DEFAULT = Redactor()


def redact(value: Any) -> Any:
    """Redact ``value`` with the default :class:`Redactor`."""
    return _DEFAULT(value)


def redact_text(text: str) -> str:
    """Mask secret-shaped parts of ``text`` with the default :class:`Redactor`."""
    return _DEFAULT.text(text)
