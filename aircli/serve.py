"""``air serve TARGET``: serve an aircore server from a file or a module.

TARGET is ``path/to/file.py[:name]`` or ``package.module[:name]``; ``name`` defaults to
``server``, else the module's only :class:`~aircore.AirServer`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from aircli.locate import STORE_HELP
from aircli.remote import port_number, refuse_remote_bind
from aircli.settings import HTTP_TOKEN_ENV, cli_settings
from aircore.errors import AirError, DefinitionError
from aircore.server import AirServer
from aircore.transports import TRANSPORTS, get_transport
from aircore.transports.detect import TRANSPORT_ENV, detect_transport
from aircore.transports.http import DEFAULT_HOST, DEFAULT_PORT
from aircore.transports.stdio import DEFAULT_MAX_INFLIGHT as STDIO_MAX_INFLIGHT
from airhttp import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_INFLIGHT,
    AirhttpError,
)
from airstore.errors import AirstoreError, InvalidArgumentError

__all__ = ["import_target", "load_server", "pick_server", "register", "split_target"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` subcommand."""
    parser = sub.add_parser("serve", help="serve an aircore MCP server (stdio or HTTP)")
    parser.add_argument("target", help="path/to/file.py[:server] or package.module[:server]")
    parser.add_argument(
        "--transport",
        choices=("auto", *sorted(TRANSPORTS)),
        default="auto",
        help="default: MCP_TRANSPORT, else stdio when stdin is a pipe",
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"HTTP bind address (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"HTTP port (default {DEFAULT_PORT}; 0: any free)",
    )
    parser.add_argument("--store", default=None, help=f"{STORE_HELP} (for a metered server)")
    parser.add_argument(
        "--token",
        default=cli_settings().http_token,
        help=f"require this bearer token on HTTP (env {HTTP_TOKEN_ENV})",
    )
    parser.add_argument(
        "--auth-config",
        default=None,
        metavar="FILE",
        help="act as an OAuth 2.1 resource server on HTTP: issuer, resource, scopes "
        "(YAML; docs/authorization.md); combines with --token",
    )
    parser.add_argument(
        "--max-message",
        type=int,
        default=None,
        metavar="BYTES",
        help="largest stdio frame / HTTP body accepted (default 16 MiB / 4 MiB)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host on HTTP (needs --token)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an extra Origin accepted on HTTP besides localhost (repeatable)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="an extra Host name accepted on HTTP (repeatable)",
    )
    limits = parser.add_argument_group("limits (HTTP; --max-inflight also for stdio)")
    limits.add_argument(
        "--header-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"seconds to receive a request's headers (default {DEFAULT_HEADER_TIMEOUT:g})",
    )
    limits.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"keep-alive idle seconds between requests (default {DEFAULT_IDLE_TIMEOUT:g})",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help=f"open connections at once (default {DEFAULT_MAX_CONNECTIONS})",
    )
    limits.add_argument(
        "--max-inflight",
        type=int,
        default=None,
        metavar="N",
        help=f"calls handled at once (default {DEFAULT_MAX_INFLIGHT} on HTTP, "
        f"{STDIO_MAX_INFLIGHT} on stdio)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export calls over OTLP (also on when OTEL_EXPORTER_OTLP_*ENDPOINT is set)",
    )
    parser.set_defaults(func=_run)


_TARGET_FORMS = "TARGET is path/to/file.py[:server] or package.module[:server]"


def _is_path(spec: str) -> bool:
    """Whether ``spec`` names a file-system path rather than a module: a ``.py`` file, a path
    with a separator, or a bare directory that is no package (it would import as an empty
    namespace package)."""
    if spec.endswith(".py") or os.sep in spec or "/" in spec or spec in (".", ".."):
        return True
    return Path(spec).is_dir() and not (Path(spec) / "__init__.py").is_file()


def _import_target(spec: str) -> ModuleType:
    if not spec.strip():
        raise DefinitionError(f"no file or module given; {_TARGET_FORMS}")
    if spec.endswith(":"):  # split_target keeps a colon it found nothing after
        raise DefinitionError(
            f"{spec!r} names no server after ':' (drop the ':', or name one: "
            f"{spec.rstrip(':')}:server)"
        )
    if _is_path(spec):
        path = Path(spec).resolve()
        if path.is_dir():
            raise DefinitionError(f"{spec} is a directory, not a .py file; {_TARGET_FORMS}")
        if not path.is_file():
            raise DefinitionError(f"no such file: {spec}")
        name = f"_air_target_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise DefinitionError(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent))
        module_spec.loader.exec_module(module)
        return module
    if not all(spec.split(".")):  # ".x", "a..b", "x.": import_module would raise a TypeError
        raise DefinitionError(f"{spec!r} is not a module name (package.module); {_TARGET_FORMS}")
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:  # the target itself (not an import inside it) is missing
        if exc.name is None or not (spec == exc.name or spec.startswith(exc.name + ".")):
            raise
        raise DefinitionError(f"no module named {exc.name!r}; {_TARGET_FORMS}") from exc


def split_target(target: str) -> tuple[str, str]:
    """A target (``file.py[:attr]``, ``package.module[:attr]``) as ``(spec, attr)``."""
    spec, sep, attr = target.rpartition(":")
    if not sep or not attr.isidentifier():
        return target, ""
    return spec, attr


def import_target(spec: str) -> ModuleType:
    """Import the file or module ``spec`` names (a file's folder joins ``sys.path``).

    Raises:
        DefinitionError: no such file or module.
    """
    return _import_target(spec)


def pick_server(module: ModuleType, spec: str, attr: str) -> AirServer:
    """The AirServer of an imported target: ``attr``, else ``server``, else the only one.

    Raises:
        DefinitionError: there is no such server, or several and none named.
    """
    if attr:
        found: Any = getattr(module, attr, None)
        if not isinstance(found, AirServer):
            raise DefinitionError(f"{spec} has no AirServer named {attr!r}")
        return found
    default = getattr(module, "server", None)
    if isinstance(default, AirServer):
        return default
    servers = [v for v in vars(module).values() if isinstance(v, AirServer)]
    if len(servers) != 1:
        raise DefinitionError(
            f"{spec}: name the server, e.g. {spec}:server (found {len(servers)} AirServer objects)"
        )
    return servers[0]


def load_server(target: str) -> AirServer:
    """Import TARGET and return its server.

    Raises:
        DefinitionError: the file/module or the server cannot be found.
    """
    spec, attr = split_target(target)
    return pick_server(_import_target(spec), spec, attr)


def _one_line(exc: BaseException) -> str:
    """The exception's message folded onto one line (problem lists joined with ``; ``)."""
    parts = [part.strip() for part in str(exc).splitlines() if part.strip()]
    if not parts:
        return type(exc).__name__
    head, rest = parts[0], parts[1:]
    return f"{head} {'; '.join(rest)}" if rest else head


def _use_otel(server: AirServer, *, requested: bool) -> None:
    from airmeter.otel_settings import otel_enabled

    if not otel_enabled(requested=requested):
        return
    from airmeter.otel_attach import otel_meter_hook  # the OTel SDK loads only when exporting

    hook = otel_meter_hook(server.meter, service_name=server.name, requested=requested)
    if hook is not None and hook is not server.meter:
        server.use_meter(hook)


def _run(args: argparse.Namespace) -> int:
    try:
        server = load_server(args.target)
    except DefinitionError as exc:
        print(f"air serve: {_one_line(exc)}", file=sys.stderr)
        return 2
    try:
        return _serve(server, args)
    except InvalidArgumentError as exc:  # a store that cannot be used as given: bad usage
        print(f"air serve: cannot start {server.name!r}: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (AirError, AirstoreError, AirhttpError, OSError) as exc:  # refused to start
        message = _one_line(exc)
        if "cannot start" not in message:
            message = f"cannot start {server.name!r}: {message}"
        print(f"air serve: {type(exc).__name__}: {message}", file=sys.stderr)
        return 1


def _serve(server: AirServer, args: argparse.Namespace) -> int:
    if args.store:
        server.use_storage(args.store)
    _use_otel(server, requested=args.otel)
    transport = None if args.transport == "auto" else args.transport
    kind = transport or detect_transport(os.environ, sys.stdin)
    chosen = get_transport(kind, source="" if transport else TRANSPORT_ENV)  # unknown: error
    # one rule whatever the transport: a --host beyond loopback is refused before anything runs
    # (stdio picked by "auto" for a piped stdin dropped it silently)
    auth = None
    if args.auth_config is not None:
        from airhttp import load_auth_config

        auth = load_auth_config(args.auth_config)  # AuthConfigError names the key
        if "auth" not in chosen.options:
            print(f"air serve: --auth-config is for HTTP; the {kind} transport ignores it",
                  file=sys.stderr)  # fmt: skip
    refused = refuse_remote_bind(
        "air serve",
        args.host,
        allow_remote=args.allow_remote,
        token=args.token or ("oauth" if auth is not None else None),
    )
    if refused is not None:
        return refused
    if "host" not in chosen.options and args.host != DEFAULT_HOST:
        print(f"air serve: --host {args.host} is for HTTP; the {kind} transport ignores it",
              file=sys.stderr)  # fmt: skip
    if not 0 <= args.port <= 65535:
        raise DefinitionError(f"--port {args.port} is not a port (0-65535; 0: any free port)")
    if args.max_message is not None and args.max_message < 1:
        raise DefinitionError(f"--max-message {args.max_message} must be a positive byte count")
    offered: dict[str, Any] = {
        "max_message": args.max_message,
        "host": args.host,
        "port": args.port,
        "token": args.token,
        "auth": auth,
        "allowed_origins": args.allow_origin,
        "allowed_hosts": args.allow_host,
        "header_timeout": args.header_timeout,
        "idle_timeout": args.idle_timeout,
        "max_connections": args.max_connections,
        "max_inflight": args.max_inflight,
    }
    # each transport gets the options it takes (stdio: max_message only)
    opts = {k: v for k, v in offered.items() if k in chosen.options and v is not None}
    server.run(kind, **opts)
    return 0
