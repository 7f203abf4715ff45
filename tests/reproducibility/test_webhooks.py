"""Signed webhooks: an account's URL is called, with an HMAC-SHA256 signature of the body, when one of its
submissions finishes; failures are retried; only http(s) URLs are taken."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from rest_framework.test import APIClient

from catalogue.models import Submission
from evaluator.harness.record import Record
from evaluator.models import Evaluation, Webhook
from evaluator.services.evaluations import evaluation_finish
from evaluator.services.webhooks import WebhookFailed, sign, webhook_deliver, webhook_set
from evaluator.tasks.reproducibility import deliver_webhook
from tests.factories import KernelFactory, SubmissionFactory

pytestmark = pytest.mark.django_db


class Receiver:
    """A local HTTP server that records each call and answers with the next status of `answers`."""

    def __init__(self, answers: list[int]) -> None:
        self.answers, self.calls = answers, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.calls.append((self.headers, body))  # case-insensitive names
                self.send_response(outer.answers.pop(0) if outer.answers else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(answers: list[int] | None = None) -> Receiver:
        made.append(Receiver(list(answers or [])))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def running(django_user_model):
    """A submission of one kernel whose evaluation is running, uploaded by alice."""
    alice = django_user_model.objects.create_user(username="alice", password="pw-alice-123")
    submission = SubmissionFactory(uploader=alice, hardware="cpu", status="running", kernel_count=1)
    kernel = KernelFactory(submission=submission)
    evaluation = Evaluation.objects.create(kernel=kernel, hardware="cpu", status="running", attempts=1)
    return alice, submission, evaluation


def test_a_finished_submission_calls_the_signed_webhook(
    running, receiver, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on 127.0.0.1
    alice, submission, evaluation = running
    server = receiver()
    hook = webhook_set(user=alice, url=server.url)
    # The task runs in this process, as a worker would run it after commit.
    monkeypatch.setattr(deliver_webhook, "apply_async", lambda args: deliver_webhook.apply(args=args))
    record = Record(status="ok", correct=True, standard_correct=True, speedup=1.8).to_dict()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert evaluation_finish(evaluation=evaluation, record=record)
    assert callbacks and len(server.calls) == 1
    headers, body = server.calls[0]
    expected = "sha256=" + hmac.new(hook.secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-KBV-Signature"] == expected == sign(secret=hook.secret, body=body)
    payload = json.loads(body)
    assert payload["event"] == "submission.finished"
    assert payload["submission"]["id"] == submission.pk
    assert payload["submission"]["status"] == Submission.Status.DONE and payload["kernels"][0]["speedup"] == 1.8
    assert Webhook.objects.get(pk=hook.pk).last_status == "attempt 1: HTTP 200"


def test_a_failing_receiver_is_retried_then_answered(running, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    alice, submission, _ = running
    server = receiver([500])
    webhook_set(user=alice, url=server.url)
    with pytest.raises(WebhookFailed, match="HTTP 500"):
        webhook_deliver(submission_id=submission.pk, attempt=1)
    assert webhook_deliver(submission_id=submission.pk, attempt=2) == 200
    assert [h["X-Kbv-Delivery"] for h, _ in server.calls] == [f"{submission.pk}-1", f"{submission.pk}-2"]
    # The task retries with backoff (eager here: each retry runs at once) until the receiver answers 2xx.
    server.answers = [503, 502]
    deliver_webhook.apply(args=[submission.pk])
    assert len(server.calls) == 5


def test_only_http_urls_and_no_private_addresses(running, settings):
    alice, _, _ = running
    settings.WEBHOOK_ALLOW_PRIVATE = False
    for url in ("ftp://example.org/x", "file:///etc/passwd", "http://127.0.0.1:9/x", "http://user:pw@example.org/"):
        with pytest.raises(ValueError, match="webhook"):
            webhook_set(user=alice, url=url)
    api = APIClient()
    api.force_authenticate(alice)
    answer = api.put("/api/webhook/", {"url": "http://localhost:9/x"}, format="json")
    assert answer.status_code == 400 and "loopback" in answer.json()["url"][0]
    assert api.get("/api/webhook/").status_code == 404
    settings.WEBHOOK_ALLOW_PRIVATE = True
    made = api.put("/api/webhook/", {"url": "http://localhost:9/x"}, format="json").json()
    assert len(made["secret"]) == 64 and made["signature_header"] == "X-KBV-Signature"
    assert api.get("/api/webhook/").json()["url"] == "http://localhost:9/x"
    assert api.delete("/api/webhook/").status_code == 204 and not Webhook.objects.exists()


def test_the_account_page_sets_and_removes_the_webhook(client, django_user_model, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    bob = django_user_model.objects.create_user(username="bob", password="pw-bob-12345")
    client.force_login(bob)
    assert "Webhook" in client.get("/account/").content.decode()
    refused = client.post("/account/webhook/", {"url": "http://127.0.0.1/x"}, follow=True).content.decode()
    assert "Webhook not set" in refused and not Webhook.objects.exists()
    settings.WEBHOOK_ALLOW_PRIVATE = True
    page = client.post("/account/webhook/", {"url": "http://127.0.0.1:9/x"}, follow=True).content.decode()
    hook = Webhook.objects.get(user=bob)
    assert "Webhook set" in page and hook.secret in page and "http://127.0.0.1:9/x" in page
    client.post("/account/webhook/", {"url": hook.url, "rotate": "1"})
    assert Webhook.objects.get(user=bob).secret != hook.secret
    client.post("/account/webhook/", {"delete": "1"})
    assert not Webhook.objects.exists()


def test_a_name_that_rebinds_to_loopback_after_the_check_is_never_called(running, receiver, settings, monkeypatch):
    """DNS rebinding: the name resolves to a public address when checked and to 127.0.0.1 when connected to. The
    call goes to the address that was checked, so the site's own network never sees it."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    settings.WEBHOOK_TIMEOUT = 2
    alice, submission, _ = running
    server = receiver()
    port = server.server.server_port
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host, *args, **kwargs):
        if host != "rebind.example":
            return real(host, *args, **kwargs)
        asked.append(host)
        address = "93.184.215.14" if len(asked) <= 2 else "127.0.0.1"  # registration, the call's check, then...
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    webhook_set(user=alice, url=f"http://rebind.example:{port}/hook")
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=1)
    assert asked == ["rebind.example", "rebind.example"], "the call resolved the name again after its check"
    assert server.calls == []


def test_an_https_webhook_speaks_tls_to_the_checked_address(running, receiver, settings):
    """The TLS path runs its handshake (here against a plain-HTTP receiver, so it fails as a delivery failure,
    retried, never as a crash of the task)."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    alice, submission, _ = running
    server = receiver()
    webhook_set(user=alice, url=server.url.replace("http://", "https://"))
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=1)
    assert "SSL" in Webhook.objects.get(user=alice).last_status
