"""Webhooks: one URL per account, called when one of its submissions finishes.

The call is a POST of a JSON body (`submission.finished`: the submission and each kernel's verdict) signed as
Standard Webhooks (standardwebhooks.com) sign it: `webhook-id` (unique per event, the same on each retry of it),
`webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature: v1,<base64 HMAC-SHA256 of
"id.timestamp.body" under the account's secret>`, made with the `standardwebhooks` package; a receiver verifies
it with the same package (or those three lines of hmac), refuses old timestamps (a replayed call) and ids it has
seen. The `evaluator.deliver_webhook` task makes the call after the finishing transaction commits, with
WEBHOOK_TIMEOUT seconds per call and WEBHOOK_MAX_RETRIES retries with backoff.

Only http(s) URLs are accepted; redirects are not followed. A URL whose host resolves to an address that is not
globally reachable (evaluator/webhook_addresses.py: loopback, private, link-local, reserved, and the IPv6 forms
that carry such an IPv4 address: mapped, compatible, NAT64, 6to4, Teredo) is refused, at registration and again at
each call, unless WEBHOOK_ALLOW_PRIVATE (off in every mode, never derived from DEBUG). The call connects to the
very address that was checked (the host name goes only into the Host header and TLS's server name), so a name
that resolves elsewhere a moment later (DNS rebinding) still cannot; no proxy from the environment is used. What
a call to a private address answered is never reported back (`last_status`), so an allowed private target is no
oracle of the site's own network.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import ssl
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook as StandardWebhook

from catalogue.models import Submission
from evaluator import enqueue
from evaluator.models import Evaluation, Webhook
from evaluator.webhook_addresses import refusal

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "webhook-signature"  # with webhook-id and webhook-timestamp (Standard Webhooks)
EVENT = "submission.finished"
SECRET_PREFIX = "whsec_"  # Standard Webhooks' form of a secret: the prefix, then the base64 of the key


class WebhookFailed(Exception):
    """The call did not reach a 2xx answer (retried by the task)."""


def new_secret() -> str:
    """A fresh signing secret, `whsec_` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_delivery_id() -> str:
    """A `webhook-id`: unique per event (an upload's finish, a later re-run's), kept by every retry of it."""
    return f"msg_{uuid.uuid4().hex}"


def sign(*, secret: str, delivery_id: str, timestamp: datetime, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one call: its id, its timestamp (whole seconds) and the signature over
    `id.timestamp.body` (standardwebhooks.Webhook.sign; a receiver checks it with Webhook(secret).verify)."""
    timestamp = timestamp.astimezone(UTC).replace(microsecond=0)
    signature = StandardWebhook(secret).sign(msg_id=delivery_id, timestamp=timestamp, data=body.decode())
    return {
        "webhook-id": delivery_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature,
    }


def webhook_url_check(url: str) -> str:
    """`url` if a webhook may call it; ValueError saying why not."""
    webhook_target(url)
    return url.strip()


@dataclass(frozen=True, slots=True)
class Target:
    """Where one call goes: the URL's parts and the one checked address it connects to."""

    parts: SplitResult
    address: str
    private: bool  # not globally reachable: called only under WEBHOOK_ALLOW_PRIVATE, and its answers never reported


def webhook_target(url: str) -> Target:
    """Where a call to `url` goes; ValueError saying why it may not be called."""
    parts = urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("a webhook URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise ValueError("a webhook URL must not carry credentials")
    try:
        infos = socket.getaddrinfo(parts.hostname, _port(parts), proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        raise ValueError(f"the webhook host does not resolve: {exc}") from exc
    addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
    if not addresses:
        raise ValueError("the webhook host does not resolve")
    reasons = [reason for a in addresses if (reason := refusal(a))]
    if reasons and not settings.WEBHOOK_ALLOW_PRIVATE:
        raise ValueError(
            f"a webhook URL must not point at a loopback, private, link-local or reserved address ({reasons[0]})"
        )
    return Target(parts=parts, address=str(addresses[0]), private=bool(reasons))


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


def _post(target: Target, body: bytes, headers: dict[str, str]) -> int:
    """POST `body` to the address webhook_target checked; the answer's status (a 3xx is not followed)."""
    parts = target.parts
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    assert parts.hostname is not None  # webhook_target refuses a URL without one
    connection = kind(parts.hostname, _port(parts), address=target.address, timeout=settings.WEBHOOK_TIMEOUT)
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
        return Webhook.objects.create(user=user, url=url, secret=new_secret())
    hook.url, hook.active = url, True
    if rotate_secret:
        hook.secret = new_secret()
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

    delivery_id = new_delivery_id()  # this event's: a later finish of the same submission (a re-run) gets another

    def send() -> None:
        try:
            enqueue.task(enqueue.DELIVER_WEBHOOK).apply_async(args=[submission_id], kwargs={"delivery_id": delivery_id})
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


def webhook_deliver(*, submission_id: int, attempt: int = 1, delivery_id: str = "") -> int:
    """POST the signed call for `submission_id` to its uploader's webhook; returns the HTTP status. Raises
    WebhookFailed (retried by the task) unless the answer is 2xx; does nothing without an active webhook.
    `delivery_id` is the event's `webhook-id` (the same on every attempt); a message without one gets a new one."""
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
        "X-KBV-Event": EVENT,
        **sign(secret=hook.secret, delivery_id=delivery_id or new_delivery_id(), timestamp=timezone.now(), body=body),
    }
    try:
        target = webhook_target(hook.url)
    except ValueError as exc:  # nothing was sent
        _note(hook, f"attempt {attempt}: refused: {exc}"[:300])
        raise WebhookFailed(str(exc)) from exc
    try:
        code = _post(target, body, headers)
    except (OSError, http.client.HTTPException) as exc:
        _note(hook, _reported(target, attempt, f"{type(exc).__name__}: {exc}"))
        raise WebhookFailed(str(exc)) from exc
    _note(hook, _reported(target, attempt, f"HTTP {code}"))
    if not 200 <= code < 300:
        raise WebhookFailed(f"HTTP {code}")
    return code


def _reported(target: Target, attempt: int, answer: str) -> str:
    """What `last_status` says of an attempt: the answer, except a private address's (no oracle of that network:
    it goes to the site's own log only)."""
    log.info("webhook call to %s, attempt %s: %s", target.parts.hostname, attempt, answer)
    if target.private:
        return f"attempt {attempt}: sent to a private address (WEBHOOK_ALLOW_PRIVATE); its answer is not reported"
    return f"attempt {attempt}: {answer}"[:300]


def _note(hook: Webhook, status: str) -> None:
    Webhook.objects.filter(pk=hook.pk).update(last_delivery_at=timezone.now(), last_status=status)
