"""Signed webhooks: an account's URL is called, signed as Standard Webhooks sign (webhook-id, webhook-timestamp,
webhook-signature over both and the body), when one of its submissions finishes; failures are retried with the
same id; only http(s) URLs to globally reachable addresses are taken, whatever form the address is written in, under
the README's set-up too (DJANGO_DEBUG=True), and a private target's answers are never reported back."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from standardwebhooks import Webhook as StandardWebhook
from standardwebhooks import WebhookVerificationError

from catalogue.models import Submission
from evaluator.harness.record import Record
from evaluator.models import Evaluation, Webhook
from evaluator.services.evaluations import evaluation_finish
from evaluator.services.webhooks import WebhookFailed, sign, submission_finished_notify, webhook_deliver, webhook_set
from evaluator.tasks.reproducibility import deliver_webhook
from tests.factories import KernelFactory, SubmissionFactory
from tests.pipeline.helpers import REPO_ROOT

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
    assert hook.secret.startswith("whsec_")
    # The task runs in this process, as a worker would run it after commit.
    monkeypatch.setattr(deliver_webhook, "apply_async", lambda args, kwargs: deliver_webhook.apply(args, kwargs))
    record = Record(status="ok", correct=True, standard_correct=True, speedup=1.8)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert evaluation_finish(evaluation=evaluation, record=record)
    assert callbacks and len(server.calls) == 1
    headers, body = server.calls[0]
    # What a receiver does with the README's snippet: the signature holds over id, timestamp and body.
    payload = StandardWebhook(hook.secret).verify(body, dict(headers))
    assert headers["webhook-id"].startswith("msg_") and headers["webhook-signature"].startswith("v1,")
    assert payload["event"] == "submission.finished"
    assert payload["submission"]["id"] == submission.pk
    assert payload["submission"]["status"] == Submission.Status.DONE and payload["kernels"][0]["speedup"] == 1.8
    # A private target (allowed here) gets its call, but its answer is not reported back.
    assert "HTTP" not in Webhook.objects.get(pk=hook.pk).last_status


def test_a_replayed_call_fails_verification(running):
    """A call captured on the way and sent again later: its timestamp is old, so verification fails; a fresh
    timestamp put in its place breaks the signature."""
    alice, _, _ = running
    secret = Webhook.objects.create(user=alice, url="https://example.org/x", secret="whsec_" + "QUJD" * 11).secret
    body = b'{"event": "submission.finished"}'
    captured = sign(secret=secret, delivery_id="msg_1", timestamp=timezone.now() - timedelta(minutes=10), body=body)
    with pytest.raises(WebhookVerificationError, match="too old"):
        StandardWebhook(secret).verify(body, captured)
    refreshed = captured | {"webhook-timestamp": str(int(timezone.now().timestamp()))}
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        StandardWebhook(secret).verify(body, refreshed)
    fresh = sign(secret=secret, delivery_id="msg_1", timestamp=timezone.now(), body=body)
    assert StandardWebhook(secret).verify(body, fresh) == {"event": "submission.finished"}
    with pytest.raises(WebhookVerificationError):  # another body under the same headers
        StandardWebhook(secret).verify(b'{"event": "x"}', fresh)


def test_each_event_has_its_own_delivery_id_and_retries_keep_it(
    running, receiver, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """The upload's finish and a later re-run's finish of the same submission are two events: two ids (they were
    both "3-1" before). The retries of one event carry its id."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    alice, submission, _ = running
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.DONE)
    webhook_set(user=alice, url=receiver().url)
    messages: list[dict] = []
    monkeypatch.setattr(deliver_webhook, "apply_async", lambda args, kwargs: messages.append(kwargs))
    for _ in range(2):  # the upload finishes; later a re-run finishes the submission again
        with django_capture_on_commit_callbacks(execute=True):
            submission_finished_notify(submission_id=submission.pk)
    ids = [m["delivery_id"] for m in messages]
    assert len(ids) == 2 and len(set(ids)) == 2 and all(i.startswith("msg_") for i in ids)

    server = receiver([500, 503])
    webhook_set(user=alice, url=server.url)
    deliver_webhook.apply(args=[submission.pk], kwargs={"delivery_id": ids[1]})  # eager: retries run at once
    assert [h["webhook-id"] for h, _ in server.calls] == [ids[1]] * 3


def test_a_failing_receiver_is_retried_then_answered(running, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    alice, submission, _ = running
    server = receiver([500])
    webhook_set(user=alice, url=server.url)
    with pytest.raises(WebhookFailed, match="HTTP 500"):
        webhook_deliver(submission_id=submission.pk, attempt=1, delivery_id="msg_a")
    assert webhook_deliver(submission_id=submission.pk, attempt=2, delivery_id="msg_a") == 200
    assert [h["webhook-id"] for h, _ in server.calls] == ["msg_a", "msg_a"]
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
    assert made["secret"].startswith("whsec_") and made["signature_header"] == "webhook-signature"
    assert api.get("/api/webhook/").json()["url"] == "http://localhost:9/x"
    assert api.delete("/api/webhook/").status_code == 204 and not Webhook.objects.exists()


REFUSED = [
    "http://127.0.0.1:8103/internal",  # loopback: the site's own services
    "http://localhost:8000/",
    "http://169.254.169.254/latest/meta-data/",  # link-local: the cloud metadata service
    "http://10.0.0.5/",  # private
    "http://[::1]:8000/",
    "http://[fe80::1]/",
    "http://[::ffff:169.254.169.254]/latest/meta-data/",  # IPv4-mapped
    "http://[::169.254.169.254]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",  # NAT64 of the metadata address
    "http://[64:ff9b::7f00:1]/",  # NAT64 of loopback
    "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64
    "http://[2002:a9fe:a9fe::]/latest/meta-data/",  # 6to4 of the metadata address
    "http://[2002:7f00:1::]/",  # 6to4 of loopback
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
]

README_SETUP_CHECK = """
import json, os, django
django.setup()
from django.conf import settings
from evaluator.services.webhooks import webhook_url_check
out = {"debug": settings.DEBUG, "allow_private": settings.WEBHOOK_ALLOW_PRIVATE, "accepted": []}
for url in json.loads(os.environ["URLS"]):
    try:
        webhook_url_check(url)
    except ValueError:
        continue
    out["accepted"].append(url)
print(json.dumps(out))
"""


def test_private_targets_are_refused_under_the_readmes_setup():
    """`make run` sets DJANGO_DEBUG=True: the site's settings, loaded as it loads them, still refuse loopback,
    link-local, private, NAT64, 6to4 and Teredo targets (the default once followed DEBUG and took them all)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WEBHOOK_ALLOW_PRIVATE", "DJANGO_SETTINGS_MODULE")}
    env |= {"DJANGO_DEBUG": "True", "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "webhook-check"}
    env |= {"URLS": json.dumps(REFUSED)}
    done = subprocess.run(
        [sys.executable, "-c", README_SETUP_CHECK], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"debug": True, "allow_private": False, "accepted": []}


@pytest.mark.parametrize("url", REFUSED)
def test_each_private_form_is_refused_with_its_reason(running, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    alice, _, _ = running
    with pytest.raises(ValueError, match="must not point at"):
        webhook_set(user=alice, url=url)


def test_a_public_address_in_any_form_is_accepted(running, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    alice, _, _ = running
    for url in ("http://93.184.215.14/hook", "http://[2606:4700:4700::1111]/hook", "http://[64:ff9b::808:808]/"):
        assert webhook_set(user=alice, url=url).url == url


def test_no_status_oracle_for_private_or_refused_targets(running, receiver, settings):
    """A target that turns private after registration (or one allowed by WEBHOOK_ALLOW_PRIVATE) tells nothing back:
    GET /api/webhook/ reports neither the internal port's HTTP status nor whether it was open."""
    alice, submission, _ = running
    api = APIClient()
    api.force_authenticate(alice)
    server = receiver([404])
    settings.WEBHOOK_ALLOW_PRIVATE = True
    webhook_set(user=alice, url=server.url)
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=1)
    shown = api.get("/api/webhook/").json()["last_status"]
    assert "404" not in shown and "not reported" in shown
    Webhook.objects.filter(user=alice).update(url="http://127.0.0.1:9/closed")  # a closed port
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=2)
    shown = api.get("/api/webhook/").json()["last_status"]
    assert "refused" not in shown.lower() and "not reported" in shown
    # With the setting off (the default), nothing is sent at all; the status says it was refused, and why.
    settings.WEBHOOK_ALLOW_PRIVATE = False
    Webhook.objects.filter(user=alice).update(url=server.url)
    calls = len(server.calls)
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=3)
    assert len(server.calls) == calls
    assert api.get("/api/webhook/").json()["last_status"].startswith("attempt 3: refused: ")


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


def test_an_https_webhook_speaks_tls_to_the_checked_address(running, receiver, settings, caplog):
    """The TLS path runs its handshake (here against a plain-HTTP receiver, so it fails as a delivery failure,
    retried, never as a crash of the task)."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    alice, submission, _ = running
    server = receiver()
    webhook_set(user=alice, url=server.url.replace("http://", "https://"))
    with pytest.raises(WebhookFailed):
        webhook_deliver(submission_id=submission.pk, attempt=1)
    assert "not reported" in Webhook.objects.get(user=alice).last_status  # a private address: no detail back
    assert "SSL" in caplog.text  # the site's own log says what happened
