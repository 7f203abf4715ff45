"""Webhooks: one URL per account, called when one of its submissions finishes.

The call is a POST of a JSON body (`submission.finished`: the submission and each kernel's verdict) with the header
`X-KBV-Signature: sha256=<hex HMAC-SHA256 of the body under the account's secret>`, made by the
`evaluator.deliver_webhook` task after the finishing transaction commits, with WEBHOOK_TIMEOUT seconds per call and
WEBHOOK_MAX_RETRIES retries with backoff. Only http(s) URLs are accepted; redirects are not followed, and unless
WEBHOOK_ALLOW_PRIVATE a URL whose host resolves to a loopback, private, link-local or reserved address is refused
(at registration and again at each call), so a webhook cannot reach the site's own network. The call connects to
the very address that was checked (the host name goes only into the Host header and TLS's server name), so a name
that resolves elsewhere a moment later (DNS rebinding) still cannot; no proxy from the environment is used.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import ssl
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue.models import Submission
from evaluator import enqueue
from evaluator.models import Evaluation, Webhook

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-KBV-Signature"
EVENT = "submission.finished"


class WebhookFailed(Exception):
    """The call did not reach a 2xx answer (retried by the task)."""


def sign(*, secret: str, body: bytes) -> str:
    """The X-KBV-Signature value of `body`: what a receiver recomputes with its secret and compares in constant
    time (hmac.compare_digest)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_url_check(url: str) -> str:
    """`url` if a webhook may call it; ValueError saying why not."""
    webhook_target(url)
    return url.strip()


def webhook_target(url: str) -> tuple[SplitResult, str]:
    """The URL's parts and the one address a call to it connects to; ValueError saying why it may not be called."""
    parts = urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("a webhook URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise ValueError("a webhook URL must not carry credentials")
    try:
        infos = socket.getaddrinfo(parts.hostname, _port(parts), proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        raise ValueError(f"the webhook host does not resolve: {exc}") from exc
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not addresses:
        raise ValueError("the webhook host does not resolve")
    if not settings.WEBHOOK_ALLOW_PRIVATE and any(not a.is_global or a.is_multicast for a in addresses):
        raise ValueError("a webhook URL must not point at a loopback, private or reserved address")
    return parts, str(addresses[0])


def _port(parts: SplitResult) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to one checked address, whatever its host name resolves to by now."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """The same over TLS: the certificate is checked against the host name, the socket goes to the address."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    """POST `body` to `url` at the address webhook_target checked; the answer's status (a 3xx is not followed)."""
    parts, address = webhook_target(url)
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    assert parts.hostname is not None  # webhook_target refuses a URL without one
    connection = kind(parts.hostname, _port(parts), address=address, timeout=settings.WEBHOOK_TIMEOUT)
    try:
        connection.request("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body, headers)
        return connection.getresponse().status
    finally:
        connection.close()


@transaction.atomic
def webhook_set(*, user: Any, url: str, rotate_secret: bool = False) -> Webhook:
    """Set (or replace) `user`'s webhook URL; a new one (or `rotate_secret`) gets a fresh signing secret."""
    url = webhook_url_check(url)
    hook = Webhook.objects.select_for_update().filter(user=user).first()
    if hook is None:
        return Webhook.objects.create(user=user, url=url, secret=secrets.token_hex(32))
    hook.url, hook.active = url, True
    if rotate_secret:
        hook.secret = secrets.token_hex(32)
    hook.save(update_fields=["url", "active", "secret"])
    return hook


def webhook_delete(*, user: Any) -> bool:
    return Webhook.objects.filter(user=user).delete()[0] > 0


def submission_finished_notify(*, submission_id: int) -> None:
    """Inside the transaction that counted a kernel: once the submission is closed (every kernel finished) and its
    uploader has an active webhook, send the call after commit."""
    closed = Submission.objects.filter(
        pk=submission_id,
        status__in=[Submission.Status.DONE, Submission.Status.FAILED],
        uploader__webhook__active=True,
    ).exists()
    if not closed:
        return

    def send() -> None:
        try:
            enqueue.task(enqueue.DELIVER_WEBHOOK).apply_async(args=[submission_id])
        except Exception as exc:  # the broker is down: the verdicts are stored; the call is lost, and logged
            log.warning("webhook for submission %s not sent: broker unreachable (%s)", submission_id, exc)

    transaction.on_commit(send)


def webhook_payload(*, submission: Submission) -> dict[str, Any]:
    """The body of a `submission.finished` call: the submission and each kernel's current verdict."""
    evaluations = (
        Evaluation.objects.filter(kernel__submission=submission, is_current=True)
        .select_related("kernel__problem")
        .order_by("kernel__problem__level", "kernel__problem__problem_id", "kernel__sample")
    )
    return {
        "event": EVENT,
        "submission": {
            "id": submission.pk,
            "status": submission.status,
            "llm": submission.llm.name,
            "problem_set": submission.problem_set,
            "hardware": submission.hardware,
            "kernels": submission.kernel_count,
            "evaluated": submission.evaluated_count,
            "correct": submission.correct_count,
        },
        "kernels": [
            {
                "kernel": ev.kernel_id,
                "evaluation": ev.pk,
                "problem": f"L{ev.kernel.problem.level}/{ev.kernel.problem.problem_id}",
                "sample": ev.kernel.sample,
                "status": ev.status,
                "result_status": ev.result_status,
                "correct": ev.correct,
                "speedup": ev.speedup,
                "error": ev.error[:300],
            }
            for ev in evaluations
        ],
    }


def webhook_deliver(*, submission_id: int, attempt: int = 1) -> int:
    """POST the signed call for `submission_id` to its uploader's webhook; returns the HTTP status. Raises
    WebhookFailed (retried by the task) unless the answer is 2xx; does nothing without an active webhook."""
    submission = Submission.objects.select_related("llm").filter(pk=submission_id).first()
    hook = (
        Webhook.objects.filter(user_id=submission.uploader_id, active=True).first()
        if submission and submission.uploader_id is not None
        else None
    )
    if submission is None or hook is None:
        return 0
    body = json.dumps(webhook_payload(submission=submission), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "KernelBench-Verified-webhook/1",
        SIGNATURE_HEADER: sign(secret=hook.secret, body=body),
        "X-KBV-Event": EVENT,
        "X-KBV-Delivery": f"{submission_id}-{attempt}",
    }
    try:
        code = _post(hook.url, body, headers)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        _note(hook, f"attempt {attempt}: {type(exc).__name__}: {exc}"[:300])
        raise WebhookFailed(str(exc)) from exc
    _note(hook, f"attempt {attempt}: HTTP {code}")
    if not 200 <= code < 300:
        raise WebhookFailed(f"HTTP {code}")
    return code


def _note(hook: Webhook, status: str) -> None:
    Webhook.objects.filter(pk=hook.pk).update(last_delivery_at=timezone.now(), last_status=status)
