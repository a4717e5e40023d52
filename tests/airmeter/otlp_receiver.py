"""A real OTLP/HTTP receiver for tests: decodes the protobuf requests it is sent."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver:
    """Holds what arrived; waits on a condition, never sleeps."""

    def __init__(self) -> None:
        self.url = ""
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.paths: list[str] = []
        self._cond = threading.Condition()

    def add(self, path: str, body: bytes) -> bytes:
        with self._cond:
            self.paths.append(path)
            if path.endswith("/v1/traces"):
                trace_req = ExportTraceServiceRequest()
                trace_req.ParseFromString(body)
                self.traces.append(trace_req)
                reply = ExportTraceServiceResponse().SerializeToString()
            else:
                metrics_req = ExportMetricsServiceRequest()
                metrics_req.ParseFromString(body)
                self.metrics.append(metrics_req)
                reply = ExportMetricsServiceResponse().SerializeToString()
            self._cond.notify_all()
        return reply

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def spans(self) -> list[Any]:
        with self._cond:
            return [
                span
                for req in self.traces
                for rs in req.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]

    def metric_points(self, name: str) -> list[Any]:
        """Every metric named ``name`` across all requests (newest last)."""
        with self._cond:
            return [
                metric
                for req in self.metrics
                for rm in req.resource_metrics
                for sm in rm.scope_metrics
                for metric in sm.metrics
                if metric.name == name
            ]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if not self.path.endswith(("/v1/traces", "/v1/metrics")):
                self.send_response(404)
                self.end_headers()
                return
            reply = receiver.add(self.path, body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """Run a receiver on 127.0.0.1 with a free port; ``receiver.url`` is its base URL."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
