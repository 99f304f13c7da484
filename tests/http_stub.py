"""A local OpenAI-compatible endpoint for tests: a real HTTP server on a free port whose
answers the test scripts, so the clients are exercised over real sockets."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, JSON body, extra headers) for one request, or None for 404.
Answer = tuple[int, Any, Mapping[str, str]] | None


@contextmanager
def json_endpoint(answer: Callable[[str, Any], Answer]) -> Iterator[str]:
    """Serve ``answer(path, request_json)`` for every POST; yield the base URL (``…/v1``).
    A client that timed out and hung up is no error of the server's."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = answer(self.path, body)
            if reply is None:
                self.send_error(404)
                return
            status, content, headers = reply
            payload = json.dumps(content).encode()  # NaN is written as a bare NaN token
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll interval keeps shutdown() (and so each test's teardown) quick.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
