"""Tiny HTTP helpers on urllib: JSON GET and multipart POST with token auth."""

from __future__ import annotations

import json
import mimetypes
import urllib.error
import urllib.request
import uuid
from typing import Any


class ApiError(Exception):
    """The server answered with an error status; `body` is its JSON (or text) answer."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


def _headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "kbv-client/1"}
    if token:
        headers["Authorization"] = f"Token {token}"
    return headers


def _send(request: urllib.request.Request, timeout: float) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # URL given by the user
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")[:2000]
        raise ApiError(exc.code, body) from None
    return json.loads(raw) if raw else None


def get_json(url: str, *, token: str | None = None, timeout: float = 30) -> Any:
    return _send(urllib.request.Request(url, headers=_headers(token)), timeout)


def post_multipart(
    url: str, *, fields: dict[str, str], files: dict[str, tuple[str, bytes]], token: str | None, timeout: float = 300
) -> Any:
    """POST multipart/form-data: `files` maps a field name to (filename, content)."""
    boundary = f"----kbv{uuid.uuid4().hex}"
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, content) in files.items():
        ctype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        safe = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{safe}"\r\n'
            f"Content-Type: {ctype}\r\n\r\n".encode()
            + content
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    headers = {**_headers(token), "Content-Type": f"multipart/form-data; boundary={boundary}"}
    return _send(urllib.request.Request(url, data=b"".join(parts), headers=headers, method="POST"), timeout)
