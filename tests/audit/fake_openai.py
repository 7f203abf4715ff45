"""A small OpenAI-compatible chat-completions server for the judge tests (real HTTP on 127.0.0.1, in a thread).

Each test scripts the answers: a list of steps, consumed one per request. A step is
- {"content": "..."}: a 200 chat completion whose message content is that text;
- {"status": 400, "error": "..."}: an error response in the OpenAI error shape;
- {"sleep": seconds, ...}: wait first (to trigger client timeouts), then behave like the rest of the step.
Every request body is recorded, so tests can assert what the judge was sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "body": body})
                    step = server.steps.pop(0) if server.steps else {"status": 500, "error": "no scripted answer"}
                if step.get("sleep"):
                    time.sleep(step["sleep"])
                if "status" in step:
                    payload = {"error": {"message": step["error"], "type": "invalid_request_error", "code": None}}
                    self._send(step["status"], payload)
                    return
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": step["content"]}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })  # fmt: skip

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, *steps: dict[str, Any]) -> None:
        with self.lock:
            self.steps = list(steps)
            self.requests.clear()

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
