"""Project-wide middleware: the request-body cap (uploads), query strings with NUL, the Content-Security-Policy."""

from __future__ import annotations

import tempfile
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream, WSGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from leaderboard.bundles import request_body_limit, upload_size_error
from leaderboard.untrusted import strict_int

API_PREFIX = "/api/"  # config/urls.py mounts the REST API here; its errors are JSON
_CHUNK = 64 * 1024


def too_large_response(request: HttpRequest) -> HttpResponse:
    """413: JSON shaped like the API's other upload errors, or a page for the web form."""
    message = upload_size_error()
    if request.path_info.startswith(API_PREFIX):
        return JsonResponse({"detail": message, "report": []}, status=413)
    return render(request, "413.html", {"message": message}, status=413)


class QueryStringMiddleware:
    """A query string holding a NUL character is a 400 before any view sees it: no parameter of this site needs one,
    and PostgreSQL refuses NUL in text, so a view filtering on the value would otherwise fail with a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if any("\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            message = "The query string holds a NUL character."
            if request.path_info.startswith(API_PREFIX):
                return JsonResponse({"detail": message}, status=400)
            return render(request, "400.html", {"message": message}, status=400)
        return self.get_response(request)


class RequestBodyLimitMiddleware:
    """Refuses a request body over the upload cap (BUNDLE_MAX_BYTES plus its form envelope) before anything reads
    it: on the declared Content-Length, unread; a body without one (chunked transfer) is read here only up to the
    cap, and refused as soon as more than that arrives. Must come before any middleware that reads the body (CSRF)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = request_body_limit()
        declared = request.META.get("CONTENT_LENGTH", "")
        if declared:
            length = strict_int(declared.strip(), max_digits=18)
            if length is not None and length > limit:
                return too_large_response(request)
        elif not _spool_unsized_body(request, limit):
            return too_large_response(request)
        return self.get_response(request)


def _spool_unsized_body(request: HttpRequest, limit: int) -> bool:
    """A body that declares no length: read at most limit+1 bytes of it into a spooled file that then stands in for
    the body (with its length declared, so Django's parsers see it). False when it holds more than `limit` bytes.

    Under WSGI a body without Content-Length is chunked only when the server says so (wsgi.input_terminated); under
    ASGI the stream is the body as received."""
    if isinstance(request, WSGIRequest):
        source = request.environ["wsgi.input"] if request.environ.get("wsgi.input_terminated") else None
    else:
        source = getattr(request, "_stream", None)
    if source is None:
        return True
    spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)  # noqa: SIM115 (it becomes the body)
    total = 0
    while total <= limit:
        chunk = source.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        spool.write(chunk)
        total += len(chunk)
    if total > limit:
        spool.close()
        return False
    if total:
        spool.seek(0)
        # Django's own wrapper for a body of known length (the stubs want a BytesIO in it and a BinaryIO out; both
        # are binary files, as the spool is)
        request._stream = LimitedStream(spool, total)  # type: ignore[arg-type,assignment]
        request.META["CONTENT_LENGTH"] = str(total)
    return True


class ContentSecurityPolicyMiddleware:
    """Sets CONTENT_SECURITY_POLICY on every response that has none. Pages carry no inline scripts (the charts' data
    is a JSON block that static/js/charts.js draws; the API docs load their script from a URL), so script-src needs
    neither 'unsafe-inline' nor a nonce."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy()
        return response


def content_security_policy() -> str:
    return "; ".join(f"{name} {value}" for name, value in settings.CONTENT_SECURITY_POLICY.items())
