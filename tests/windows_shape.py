"""Run ``air ARGS`` with the Windows implementation of every platform seam this interpreter can
run: ``python -m tests.windows_shape [--no-uvloop] ARGS``.

- stop signals through process handlers (``signal.signal`` + ``call_soon_threadsafe``), as on
  the Proactor loop, which has no ``add_signal_handler``;
- stdin read and stdout written by threads, as Windows pipes need under the Proactor loop;
- stdio upstreams started and stopped without process groups or SIGKILL;
- ``--no-uvloop``: uvloop cannot be imported (it does not exist on Windows), so the loop is
  asyncio's default.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["--no-uvloop"]:
        argv = argv[1:]
        sys.modules["uvloop"] = None  # type: ignore[assignment]  # ``import uvloop`` fails
    import aircore._platform
    import airgateway._platform
    import airhttp._platform

    airhttp._platform.LOOP_HANDLERS = False
    aircore._platform.PIPE_TRANSPORTS = False
    airgateway._platform.PROCESSES = airgateway._platform.ConsoleGroups()
    from aircli import main as air

    return air(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
