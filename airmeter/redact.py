"""Redaction: secrets are masked by key name and by value shape before anything leaves the meter.

Two rules, applied to captured arguments and results (at any depth) and to every error
message, so that neither the call log, OpenTelemetry, Prometheus nor the dashboard ever sees a
secret:

- **by name**: the value under a secret-looking key is replaced (``password``, ``api_key``,
  ``X-Auth-Token``, ``pass``, ``pw``, ``PGPASSWORD``, ``creds``, ``connectionString``,
  ``webhook_url``, ``*_KEY``, ``*TOKEN*``, ``*SECRET*``…);
- **by shape**, inside any text: bearer/basic credentials, passwords in URLs and DSNs (``/``
  and ``@`` included), ``NAME=value`` / ``"name": "value"`` pairs whose name looks secret
  (JSON-escaped quotes included), provider tokens (AWS, Google, GitHub, GitLab, Slack, Stripe,
  SendGrid, OpenAI, npm, PyPI), Slack webhook URLs, JSON Web Tokens and PEM private keys.
  docs/metering.md has the table.

Text is scanned once, left to right, by one compiled pattern whose every quantifier that can
fail is bounded, so the time is linear in the text's length and nothing recurses: an error
message of any size or shape is redacted, never raises.
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
    "auth", "authorization", "bearer", "cookie", "credential", "credentials", "creds", "session",
    "private", "signature", "sig", "otp", "pin", "ssn", "jwt", "sessionid", "accesstoken",
    "refreshtoken", "dsn", "connstr", "connectionstring", "connstring", "webhookurl",
})  # fmt: skip
"""A name is secret when one of its words (split like tool names), or the whole name without
``-``, ``_`` and ``.`` (``conn_str``, ``connectionString``, ``webhook_url``), is in this set."""
SECRET_PARTS: Final[tuple[str, ...]] = ("password", "passwd", "passphrase", "secret", "token")
"""A name is secret when it contains one of these anywhere (``PGPASSWORD``, ``GHTOKEN``)."""

MAX_DEPTH = 32
_MAX_CACHED_NAMES = 4096
_MAX_CACHED_NAME_CHARS = 128

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}+"
_SCHEME = r"(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN)"
_SHAPES: Final = re.compile(
    "|".join(
        (
            # PEM private keys (and PGP private key blocks), whole block
            r"(?P<pem>-----BEGIN [A-Z ]{0,64}PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z ]{0,64}PRIVATE KEY(?: BLOCK)?-----|$))",
            # JSON Web Tokens: header.payload.signature, base64url, header and payload JSON
            r"(?P<jwt>\beyJ[A-Za-z0-9_-]{4,1024}+\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)",
            # provider tokens
            r"(?P<provider>\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|sk-[A-Za-z0-9_-]{16,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
            r"|SG\.[A-Za-z0-9_-]{16,64}\.[A-Za-z0-9_-]{16,}"
            r"|xox[abposre]-[A-Za-z0-9-]{8,}"
            r"|(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[0-9A-Z]{16}"
            r"|AIza[0-9A-Za-z_-]{30,}|ya29\.[0-9A-Za-z_-]{16,}"
            r"|gl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{16,}"
            r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}))",
            # Slack incoming-webhook (and workflow) URLs: the path is the secret
            r"(?P<hook>\bhooks\.slack\.com/)(?P<hookpath>(?:services|workflows|triggers)/"
            r"[A-Za-z0-9/_+-]+)",
            # credentials in a URL or DSN: scheme://user: — the password is found after it
            r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]{0,31}+://[^\s:/@\"'<>]{0,256}+:)",
            # Authorization schemes inside text: "Bearer abc…", "Basic dXNl…"
            rf"(?P<scheme>\b{_SCHEME}\s{{1,16}})(?P<cred>[A-Za-z0-9._~+/=-]{{8,}})",
            # NAME=value, NAME: value, "name": "value", \"name\": \"value\" — the value is read
            # after it, only when the name looks secret
            rf"(?P<pair>(?<![A-Za-z0-9_.\-])(?P<q>\\?[\"']|)(?P<name>{_NAME})(?P=q)"
            r"\s{0,16}+[=:]\s{0,16})",
            # command-line flags: --password hunter2, --api-key=abc, -token x
            rf"(?P<flag>(?<![A-Za-z0-9_.\-])--?(?P<fname>{_NAME})(?:=|\s{{1,16}}+)(?=[^\s-]))",
        )
    ),
    re.DOTALL,
)
# A URL's password: everything up to the last "@" before a space, quote, "?" or "#" (so "/" and
# "@" inside it are covered: mysql://u:pa/ss@db, postgres://u:p@ss@host), at most 512 characters.
_URL_PASSWORD: Final = re.compile(r"[^\s\"'<>?#]{1,512}(?=@)")
# The value of a secret pair: an optional auth scheme, then a JSON string inside JSON text
# (\"…\", escapes kept), a quoted string (escaped quotes inside it kept; it may run over several
# lines, up to 4 KiB), an unterminated quote (to the end of the line), or a bare word. A quoted
# scan stops at the next quote, so no text is scanned twice by failed scans: linear time.
_VALUE: Final = re.compile(
    rf"(?:{_SCHEME}\s{{1,16}})?"
    r"(?:\\\"(?:\\\\\\\\(?:\\.|[^\\\n])|[^\\\"\n]|\\[^\\\"\n])*\\\""
    r"|\"(?:[^\"\\]|\\.){0,4096}+\"|'(?:[^'\\]|\\.){0,4096}+'"
    r"|[\"'][^\n]*"
    r"|(?:[^\s,;&\"'}\]\\]|\\.)+)"
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
        """Whether the value under ``key`` must be masked (cached per short key)."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = _name_is_secret(key, self._words)
            if len(self._verdicts) < _MAX_CACHED_NAMES and len(key) <= _MAX_CACHED_NAME_CHARS:
                self._verdicts[key] = verdict
        return verdict

    def text(self, text: str) -> str:
        """``text`` with every secret-shaped part masked (the same object when none is).

        One pass, left to right, in time linear in ``len(text)``; it never recurses.
        """
        match = _SHAPES.search(text)
        if match is None:
            return text
        out: list[str] = []
        done = 0  # text[:done] is settled (in ``out``)
        placeholder = self._placeholder
        while match is not None:
            kind = match.lastgroup
            resume = match.end()
            if kind in ("pair", "flag"):
                resume = self._pair(text, match, out, done)
                if resume != match.end():
                    done = resume
            elif kind == "url":
                at = match.end()  # an "@" must follow within reach (memchr first: cheap)
                password = (
                    None if text.find("@", at, at + 513) < 0 else _URL_PASSWORD.match(text, at)
                )
                if password is not None:
                    out += (text[done : match.end()], placeholder)
                    done = resume = password.end()
            elif kind in ("cred", "hookpath"):
                start = match.start(kind)
                out += (text[done:start], placeholder)
                done = resume
            else:
                out += (text[done : match.start()], placeholder)
                done = resume
            match = _SHAPES.search(text, resume)
        if done == 0 and not out:
            return text
        out.append(text[done:])
        result = "".join(out)
        return text if result == text else result

    def _pair(self, text: str, match: re.Match[str], out: list[str], done: int) -> int:
        """Mask the value after a ``name=`` / ``"name":`` whose name is secret; where to go on
        (the pair's end when it is not, so its value is searched like any text)."""
        end = match.end()
        if not self.is_secret(match["name"] or match["fname"]):
            return end
        value = _VALUE.match(text, end)
        if value is None:
            return end
        raw = value.group()
        quote = ""
        for opener in ('\\"', '"', "'"):
            if raw.startswith(opener) and len(raw) > len(opener) and raw.endswith(opener):
                quote = opener
                break
        out += (text[done:end], quote, self._placeholder, quote)
        return value.end()

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
