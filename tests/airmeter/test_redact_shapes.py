"""Secrets by value shape: a table of the shapes that leaked before, masked in text, in captured
values under innocent keys, and end to end from a real server to the call log on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware, Redactor, recent_calls, redact, redact_text
from airmeter.redact import REDACTED
from airstore import FileStore

# Built from pieces, so that no contiguous token-shaped string sits in the source.
A36 = "a1B2c3D4" * 4 + "e5F6"
GHP = "ghp" + "_" + A36
PAT = "github" + "_pat_" + "11ABCDEFG0" + A36 + "_" + A36
SK = "sk" + "-" + A36
SK_PROJ = "sk" + "-proj-" + A36 + "-" + A36
XOXB = "xox" + "b-" + "1234567890-0987654321-" + A36
AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = (
    "eyJ"
    + "hbGciOiJIUzI1NiJ9"
    + "."
    + "eyJ"
    + "zdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstu"

# (what it is, text holding the secret, the secret, what must stay readable)
SHAPES: list[tuple[str, str, str, str]] = [
    ("bearer token in text", f"upstream refused Bearer {A36}", A36, "upstream refused Bearer"),
    ("basic credentials in text", "sent Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy",
     "Authorization"),
    ("password in a URL", "GET https://alice:hunter2pw@example.test/x failed", "hunter2pw",
     "https://alice:"),
    ("password in a DSN", "cannot connect to postgres://app:s3cretDSN@db:5432/main", "s3cretDSN",
     "postgres://app:"),
    ("password in a key=value DSN", "dsn 'host=db user=app password=kv5ecret' refused",
     "kv5ecret", "host=db user=app"),
    ("*_KEY=value", f"env OPENAI_API_KEY={A36} is invalid", A36, "is invalid"),
    ("*TOKEN*=value", "GITHUB_TOKEN=tok3nvalue rejected", "tok3nvalue", "rejected"),
    ("*SECRET*: value", "client_secret: v3rysecret", "v3rysecret", "client_secret"),
    ("PASSWORD=value", "PGPASSWORD=pgpassw0rd psql failed", "pgpassw0rd", "psql failed"),
    ("JSON pair in text", '{"api_key": "json5ecret", "q": "x"}', "json5ecret", '"q": "x"'),
    ("GitHub classic token", f"clone with {GHP} failed", GHP, "clone with"),
    ("GitHub fine-grained token", f"token {PAT}", PAT, ""),
    ("OpenAI key", f"key was {SK}", SK, "key was"),
    ("OpenAI project key", f"using {SK_PROJ} now", SK_PROJ, "now"),
    ("Slack bot token", f"slack said no to {XOXB}", XOXB, "slack said no"),
    ("AWS access key id", f"aws {AKIA} denied", AKIA, "denied"),
    ("Google API key", f"maps {GOOGLE}", GOOGLE, "maps"),
    ("JWT", f"session {JWT} expired", JWT, "expired"),
    ("PEM private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA "
     "PRIVATE KEY-----", "MIIEpAIBAAKCAQEA", ""),
]  # fmt: skip


@pytest.mark.parametrize(("what", "text", "secret", "kept"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_secret_shape_is_masked_in_text(what: str, text: str, secret: str, kept: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert REDACTED in out
    assert kept in out


@pytest.mark.parametrize(("what", "text", "secret", "kept"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_secret_shape_is_masked_under_an_innocent_key(
    what: str, text: str, secret: str, kept: str
) -> None:
    out = redact({"note": text, "items": [text, {"deep": text}]})
    assert secret not in repr(out)


@pytest.mark.parametrize("key", ["pass", "pw", "db_pass", "PGPASSWORD", "SLACK_TOKEN", "dsn"])
def test_short_and_glued_secret_key_names_are_masked(key: str) -> None:
    assert redact({key: "value1234", "name": "visible"}) == {key: REDACTED, "name": "visible"}


@pytest.mark.parametrize(
    "text",
    ["plain error: file not found", "monkey=banana", "author: ada", "keyboard layout=us",
     "https://example.test/path?q=1", "took 12.5 ms", "status=500 reason=timeout"],
)  # fmt: skip
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) is text


def test_unchanged_values_are_returned_as_they_are() -> None:
    value = {"q": "weather", "n": [1, 2, {"city": "Oslo"}]}
    assert Redactor()(value) is value


async def test_no_secret_reaches_the_call_log_from_arguments_results_or_errors(
    tmp_path: Path,
) -> None:
    def leak(params: dict[str, Any]) -> Any:
        if params["fail"]:
            raise ConnectionError(" ; ".join(text for _, text, _, _ in SHAPES))
        return {"echo": params["note"], "pass": "pa55word"}

    data = tmp_path / "data"
    tool = define_tool("leak", params={"note": "string", "fail": "boolean", "pw": "string?"},
                       handler=leak)  # fmt: skip
    hook = MeterMiddleware(capture_arguments=True, capture_results=True)
    server = define_server(name="s", tools=[tool], storage=f"file://{data}", meter=hook)
    note = " | ".join(text for _, text, _, _ in SHAPES)
    async with server:
        await server.call_tool("leak", {"note": note, "fail": False, "pw": "pw-value-1"})
        await server.call_tool("leak", {"note": "x", "fail": True})
    on_disk = b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())
    for _, _, secret, _ in SHAPES:
        assert secret.encode() not in on_disk
    assert b"pa55word" not in on_disk
    assert b"pw-value-1" not in on_disk
    async with FileStore(data, read_only=True) as store:
        failed, good = await recent_calls(store)
    assert failed.error_class == "exception"
    assert REDACTED in (failed.error_message or "")
    assert isinstance(good.arguments, dict)
    assert good.arguments["pw"] == REDACTED
