"""Upload limits, read from settings each time so tests can override them.

The size of an upload is checked in one place, `check_bundle_size`, wherever it is known: the request's body
(`config.middleware.RequestBodyLimitMiddleware`, before anything reads it), the uploaded file (before the service
reads it) and the bytes the parser is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from leaderboard.bundles.types import BundleTooLarge

# Room around the bundle in a multipart body: boundaries, part headers and the form's other fields (notes <= 5000).
UPLOAD_ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int  # the uploaded file itself
    max_files: int  # archive members, JSON kernels or JSONL lines
    kernel_max_bytes: int  # one kernel source, uncompressed
    max_uncompressed_bytes: int  # everything read out of an archive, together (zip-bomb guard)
    parse_seconds: float = 30.0  # CPU seconds reading one archive may take (leaderboard.bundles.archives)

    @classmethod
    def from_settings(cls) -> Limits:
        max_bytes = settings.BUNDLE_MAX_BYTES
        return cls(
            max_bytes=max_bytes,
            max_files=settings.BUNDLE_MAX_FILES,
            kernel_max_bytes=settings.KERNEL_MAX_BYTES,
            # Python source compresses about 4-6x; anything far beyond that is a bomb, not a bundle.
            max_uncompressed_bytes=getattr(settings, "BUNDLE_MAX_UNCOMPRESSED_BYTES", 8 * max_bytes),
            parse_seconds=float(settings.BUNDLE_PARSE_SECONDS),
        )


def upload_size_error(limit: int | None = None) -> str:
    """The one message for an upload over the cap, whichever check saw it."""
    limit = settings.BUNDLE_MAX_BYTES if limit is None else limit
    return f"The upload is larger than the {limit}-byte limit (BUNDLE_MAX_BYTES); nothing was stored."


def check_bundle_size(size: int | None, *, limit: int | None = None) -> None:
    """Raise BundleTooLarge when `size` bytes (None: unknown, not checked) exceed BUNDLE_MAX_BYTES (or `limit`)."""
    limit = settings.BUNDLE_MAX_BYTES if limit is None else limit
    if size is not None and size > limit:
        raise BundleTooLarge(upload_size_error(limit))


def request_body_limit() -> int:
    """The most bytes a request body may hold: one bundle at the cap, plus its multipart envelope."""
    return settings.BUNDLE_MAX_BYTES + UPLOAD_ENVELOPE_BYTES
