"""Crafted tar headers cost a bounded parse whatever the interpreter (CVE-2024-6232: CPython's pax header parser
before 3.11.10 and 3.12.6 is quadratic on a run of digits; a 375-byte .tar.gz held a worker for 50 s)."""

from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalogue.models import Submission
from leaderboard.bundles import BundleError, Limits, parse_bundle
from leaderboard.bundles.tar_headers import HEADER_MAX_BYTES
from tests.pipeline.helpers import DEMO_SET, demo_kernel, kernel_name, make_zip

KERNEL = demo_kernel(1, 1)


def crafted_pax(digits: int) -> bytes:
    """A .tar.gz whose first member is a pax extended header made of `digits` digits and nothing else: the shape
    that makes the vulnerable parser's `\\d+ hdrcharset=` search quadratic (about a minute for 64 KiB here)."""
    payload = b"1" * digits
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = len(payload)
    kernel = tarfile.TarInfo(kernel_name(1, 1))
    kernel.size = len(KERNEL.encode())
    raw = io.BytesIO()
    raw.write(header.tobuf(format=tarfile.USTAR_FORMAT))
    raw.write(payload + b"\0" * (-len(payload) % tarfile.BLOCKSIZE))
    raw.write(kernel.tobuf(format=tarfile.USTAR_FORMAT))
    raw.write(KERNEL.encode() + b"\0" * (-kernel.size % tarfile.BLOCKSIZE) + b"\0" * 2 * tarfile.BLOCKSIZE)
    return gzip.compress(raw.getvalue(), 9)


def pax_run_folder(comment: str) -> bytes:
    """A well-formed pax .tar.gz (as GNU tar writes long names) holding one kernel with a long path and a pax
    record `comment`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("runs/" + "long-run-name-" * 12 + "/" + kernel_name(1, 1))
        info.size = len(KERNEL.encode())
        info.pax_headers = {"comment": comment}
        archive.addfile(info, io.BytesIO(KERNEL.encode()))
    return buf.getvalue()


@pytest.fixture
def stdlib_pax_parser_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter's own pax parser (quadratic before 3.11.10) must not be reached on any path here."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tarfile.TarInfo._proc_pax ran")

    monkeypatch.setattr(tarfile.TarInfo, "_proc_pax", refuse)


def test_the_issues_kilobyte_upload_is_refused_by_its_header_size(stdlib_pax_parser_never_runs) -> None:
    data = crafted_pax(1024 * 1024)
    assert len(data) < 2048  # a megabyte of digits compresses to about a kilobyte
    with pytest.raises(BundleError) as refused:
        parse_bundle(filename="run.tar.gz", data=data)
    assert f"over the {HEADER_MAX_BYTES}-byte limit" in str(refused.value)


def test_a_crafted_header_under_the_size_cap_is_refused_by_the_linear_parser(stdlib_pax_parser_never_runs) -> None:
    data = crafted_pax(HEADER_MAX_BYTES - 1)  # the vulnerable parser spends about a minute on this one
    with pytest.raises(BundleError) as refused:
        parse_bundle(filename="run.tar.gz", data=data)
    assert "invalid pax header" in str(refused.value)


def test_a_well_formed_pax_archive_with_a_long_digit_run_is_read(stdlib_pax_parser_never_runs) -> None:
    bundle = parse_bundle(filename="run.tar.gz", data=pax_run_folder("7" * 60_000))
    assert [entry.key for entry in bundle.entries] == [(1, 1, 0)]
    assert bundle.entries[0].source == KERNEL
    assert bundle.report[0].name.startswith("runs/long-run-name-long-run-name-")  # the pax path, whole


def test_gnu_sparse_members_are_refused() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo(kernel_name(1, 1))
        info.pax_headers = {"GNU.sparse.size": "10", "GNU.sparse.numblocks": "1"}
        archive.addfile(info, io.BytesIO(b""))
    with pytest.raises(BundleError, match="sparse"):
        parse_bundle(filename="run.tar", data=buf.getvalue())


def test_reading_an_archive_stops_at_its_cpu_bound() -> None:
    limits = Limits(max_bytes=1 << 20, max_files=50, kernel_max_bytes=1 << 16, max_uncompressed_bytes=1 << 22)
    spent = replace(limits, parse_seconds=-1.0)  # spent before the first member: the check is under test, no clock
    for name, data in (("run.tar.gz", pax_run_folder("x")), ("run.zip", make_zip({kernel_name(1, 1): KERNEL}))):
        assert parse_bundle(filename=name, data=data, limits=limits).entries
        with pytest.raises(BundleError, match="BUNDLE_PARSE_SECONDS"):
            parse_bundle(filename=name, data=data, limits=spent)


@pytest.mark.django_db
def test_the_crafted_upload_is_refused_with_400_and_nothing_stored(demo_problems, api, sent) -> None:
    payload = {
        "bundle": SimpleUploadedFile("run.tar.gz", crafted_pax(1024 * 1024)),
        "llm": "m",
        "problem_set": DEMO_SET,
    }
    response = api.post("/api/submissions/", payload, format="multipart")
    assert response.status_code == 400, response.content
    assert f"over the {HEADER_MAX_BYTES}-byte limit" in response.json()["detail"]
    assert Submission.objects.count() == 0 and not sent.calls
