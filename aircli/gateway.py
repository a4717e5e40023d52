"""``air gateway --config gateway.yml``: one MCP endpoint in front of many servers.

Serves Streamable HTTP on ``/mcp`` (both eras) and ``GET /status``; prints its URL on stderr.
A non-loopback ``--host`` needs ``--allow-remote`` and ``--token`` (or an ``auth:`` section:
OAuth callers prove who they are). SIGTERM / Ctrl+C stop it cleanly: stdio children are stopped
and metering is flushed. SIGHUP (or, where there is none, a change of the file) reloads
``--config``; a refused file leaves the running one in place. Sessions, rate counters and
metering go to ``--store`` (else the default location every ``air`` command uses); a store
given with ``--store`` (or ``AIR_DATA_DIR``) also shares the Server Registry between gateways.
"""

from __future__ import annotations

import argparse
import sys

from aircli.locate import STORE_HELP, store_location
from aircli.remote import refuse_remote_bind
from airstore import StoreLocation

__all__ = ["DEFAULT_GATEWAY_PORT", "register"]

DEFAULT_GATEWAY_PORT = 4000


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``gateway`` subcommand."""
    parser = sub.add_parser("gateway", help="serve one MCP endpoint in front of many servers")
    parser.add_argument("--config", required=True, help="the gateway.yml file")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_GATEWAY_PORT,
        help=f"port (default {DEFAULT_GATEWAY_PORT}; 0: any free)",
    )
    parser.add_argument(
        "--store",
        default=None,
        help="sessions, rate limits and metering; redis://… shares them between gateways. "
        + STORE_HELP,
    )
    parser.add_argument(
        "--no-meter",
        action="store_true",
        help="do not meter proxied calls (sessions still use --store)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export spans and metrics over OTLP (also on when OTEL_EXPORTER_OTLP_*ENDPOINT "
        "is set); each proxied call gets the gateway's span in the client's trace",
    )
    parser.add_argument(
        "--token",
        default=None,
        help="require this bearer token (default: env AIR_GATEWAY_TOKEN)",
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from airgateway.errors import ConfigError, GatewayError  # the gateway loads only when run
    from airgateway.settings import gateway_token
    from airstore.errors import AirstoreError

    args.token = args.token or gateway_token()
    if not 0 <= args.port <= 65535:
        print(f"air gateway: --port {args.port} is not a port (0-65535)", file=sys.stderr)
        return 2
    from airgateway.config import load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"air gateway: {exc}", file=sys.stderr)
        return 2
    # callers prove who they are with --token, or with OAuth tokens when the config has auth:
    refused = refuse_remote_bind(
        "air gateway",
        args.host,
        allow_remote=args.allow_remote,
        token=args.token or ("oauth" if config.auth is not None else None),
    )
    if refused is not None:
        return refused
    location = store_location("air gateway", args.store, reading=False)
    try:
        from aircore.transports.loop import run_loop  # uvloop where installed

        run_loop(_serve(config, location, args))
    except (GatewayError, AirstoreError, OSError) as exc:
        print(f"air gateway: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a second Ctrl+C during the shutdown
        return 130
    return 0


async def _serve(config: object, location: StoreLocation, args: argparse.Namespace) -> None:
    from airgateway.config import GatewayConfig
    from airgateway.gateway import Gateway
    from airgateway.metering import GatewayMeter
    from airgateway.serve import serve_gateway
    from airmeter.meter import Meter
    from airmeter.otel_settings import otel_enabled
    from airstore.factory import create_storage

    assert isinstance(config, GatewayConfig)
    store = await create_storage(location.url)
    try:
        otel = None
        if otel_enabled(requested=args.otel):
            from airmeter.otel import OtelSink  # the OTel SDK loads only when exporting

            otel = OtelSink.from_env(requested=args.otel, service_name="air-gateway")
        meter = None
        if not args.no_meter or otel is not None:  # --no-meter: spans and metrics only
            sinks = [] if otel is None else [otel]
            recorder = Meter(store=None if args.no_meter else store, sinks=sinks,
                             server="air-gateway")  # fmt: skip
            meter = GatewayMeter(recorder, otel=otel,
                                 store_url=None if args.no_meter else location.url)  # fmt: skip
        # the registry is shared only through a store named for it (--store, AIR_DATA_DIR):
        # gateways of unrelated projects falling back on the per-user directory stay apart
        shared = location.source in ("explicit", "environment")
        gateway = Gateway(config, store=store, token=args.token, meter=meter,
                          share_registry=shared, allow_remote=args.allow_remote)  # fmt: skip
        await serve_gateway(
            gateway,
            host=args.host,
            port=args.port,
            allowed_origins=args.allow_origin,
            allowed_hosts=args.allow_host,
            config_path=args.config,
        )
    finally:
        await store.close()
