"""Secret shapes that got through before (issue 31, item 4), and the usual providers' shapes:
each is masked in text, under an innocent key, and on its way from a real server to the call
log on disk. docs/metering.md's table lists the same shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware, redact, redact_text
from airmeter.redact import REDACTED

# Built from pieces, so that no contiguous token-shaped string sits in the source.
A40 = "a1B2c3D4e5" * 4
B64 = "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
STRIPE = "sk" + "_live_" + "51Hx" + A40[:24]
STRIPE_R = "rk" + "_live_" + "51Hx" + A40[:24]
SENDGRID = "SG" + "." + A40[:22] + "." + A40 + "abc"
YA29 = "ya" + "29." + "a0AfH6SM" + A40
GHO = "gho" + "_" + A40[:36]
GHU = "ghu" + "_" + A40[:36]
GHS = "ghs" + "_" + A40[:36]
GHR = "ghr" + "_" + A40[:36]
GLPAT = "glpat" + "-" + A40[:20]
XOXP = "xox" + "p-" + "1234567890-1234567890-" + A40[:32]
HOOK_PATH = "services/" + "T0001" + "/B0002/" + A40[:24]
NPM = "npm" + "_" + A40[:36]
PYPI = "pypi" + "-" + "AgEIcHlwaS5vcmc" + A40 + A40[:20]
AWS_ROLE = "AROA" + "IOSFODNN7EXAMPLE"

# (what it is, text holding the secret, the secret, what must stay readable)
SHAPES: list[tuple[str, str, str, str]] = [
    ("URL password with /", "cannot reach mysql://admin:pa/ss0rd@db:3306 now", "pa/ss0rd",
     "mysql://admin:"),
    ("URL password with @", "dial postgres://admin:p@ssw0rd@host/app failed", "p@ssw0rd",
     "@host/app failed"),
    ("JSON-escaped quote in a password", '{"password": "pa\\"ss0rdX", "q": 1}', "ss0rdX",
     '"q": 1'),
    ("JSON inside a JSON string", '{\\"password\\": \\"in\\\\\\"ner5ecret\\", \\"q\\": 1}',
     "ner5ecret", '\\"q\\": 1'),
    ("Stripe secret key", f"charge failed with {STRIPE}", STRIPE, "charge failed"),
    ("Stripe restricted key", f"key {STRIPE_R} revoked", STRIPE_R, "revoked"),
    ("SendGrid key", f"mail api {SENDGRID} refused", SENDGRID, "refused"),
    ("connectionString key", '{"connectionString": "Server=db;Password=cs5ecret"}', "cs5ecret",
     "connectionString"),
    ("connectionString whole value", "connectionString=Server=db;Database=app ok", "Server=db",
     "ok"),
    ("conn_str key", "conn_str='host=db user=app' failed", "host=db user=app", "failed"),
    ("webhook_url key", 'webhook_url: "https://example.test/hook/abc123" is down',
     "example.test/hook/abc123", "is down"),
    ("creds key", "creds=u5er:pa55wd rejected", "u5er:pa55wd", "rejected"),
    ("AWS secret access key", f"aws_secret_access_key = {B64}", B64, "aws_secret_access_key"),
    ("AWS role id", f"principal {AWS_ROLE} denied", AWS_ROLE, "denied"),
    ("Google OAuth token", f"google said 401 for {YA29}", YA29, "google said 401"),
    ("Azure storage account key", f"DefaultEndpointsProtocol=https;AccountKey={B64};"
     "EndpointSuffix=core.windows.net", B64, "EndpointSuffix=core.windows.net"),
    ("Azure SAS signature", "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&"
     "sig=AbC%2Bd3F%3D&se=2030 denied", "AbC%2Bd3F%3D", "se=2030 denied"),
    ("GitHub OAuth token", f"auth {GHO} failed", GHO, "failed"),
    ("GitHub user token", f"auth {GHU} failed", GHU, "failed"),
    ("GitHub app token", f"auth {GHS} failed", GHS, "failed"),
    ("GitHub refresh token", f"auth {GHR} failed", GHR, "failed"),
    ("GitLab token", f"gitlab {GLPAT} expired", GLPAT, "expired"),
    ("Slack user token", f"slack {XOXP} revoked", XOXP, "revoked"),
    ("Slack incoming webhook", f"post to https://hooks.slack.com/{HOOK_PATH} failed", HOOK_PATH,
     "https://hooks.slack.com/"),
    ("npm token", f"npm publish with {NPM} denied", NPM, "denied"),
    ("PyPI token", f"upload with {PYPI} refused", PYPI, "refused"),
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n"
     "-----END OPENSSH PRIVATE KEY----- after", "b3BlbnNzaC1rZXktdjE", "after"),
    ("PGP private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0pgpKEY\n"
     "-----END PGP PRIVATE KEY BLOCK-----", "lQOYBF0pgpKEY", ""),
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


@pytest.mark.parametrize(
    "key",
    ["connectionString", "conn_str", "CONNECTION_STRING", "webhook_url", "webhookUrl", "creds",
     "sig", "AccountKey", "aws_secret_access_key"],
)  # fmt: skip
def test_secret_key_names_of_issue_31_are_masked(key: str) -> None:
    assert redact({key: "value1234", "name": "visible"}) == {key: REDACTED, "name": "visible"}


@pytest.mark.parametrize(
    "text",
    ["GET http://api:8080/users?email=bob@example.com failed", "webhook_id=42 ok",
     "connection refused", "signal=SIGTERM", "design: v2"],
)  # fmt: skip
def test_near_misses_are_left_alone(text: str) -> None:
    assert redact_text(text) is text


async def test_no_new_shape_reaches_the_call_log(tmp_path: Path) -> None:
    def leak(params: dict[str, Any]) -> Any:
        raise ConnectionError(" ; ".join(text for _, text, _, _ in SHAPES))

    data = tmp_path / "data"
    tool = define_tool("leak", params={"note": "string"}, handler=leak)
    hook = MeterMiddleware(capture_arguments=True)
    server = define_server(name="s", tools=[tool], storage=f"file://{data}", meter=hook)
    async with server:
        await server.call_tool("leak", {"note": " | ".join(t for _, t, _, _ in SHAPES)})
    on_disk = b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())
    assert on_disk
    for _, _, secret, _ in SHAPES:
        assert secret.encode() not in on_disk, secret


@pytest.mark.parametrize(
    ("text", "secret"),
    [('secret: "line1\nline2"', "line2"), ("token='one\ntwo'", "two"),
     ('{"password": "a\nb\nc"}', "b\nc"), ("--password hunter2pw", "hunter2pw"),
     ("run --api-key=abc123xyz --verbose", "abc123xyz"), ("-token  s3cr3tvalue", "s3cr3tvalue"),
     ("cli --client-secret 'q w e'", "q w e")],
)  # fmt: skip
def test_multi_line_quoted_values_and_cli_flags_are_masked(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text", ["ls --all --color auto", "git --no-pager log", "--token -x", "run --verbose"]
)
def test_flags_without_a_secret_name_or_value_are_left_alone(text: str) -> None:
    assert redact_text(text) is text


def test_a_quoted_value_ends_at_its_quote_and_the_next_lines_stay() -> None:
    assert redact_text('password="pw"\nuser="bob"') == f'password="{REDACTED}"\nuser="bob"'
