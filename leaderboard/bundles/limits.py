"""Upload limits, read from settings each time so tests can override them."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int  # the uploaded file itself
    max_files: int  # archive members, JSON kernels or JSONL lines
    kernel_max_bytes: int  # one kernel source, uncompressed
    max_uncompressed_bytes: int  # everything read out of an archive, together (zip-bomb guard)

    @classmethod
    def from_settings(cls) -> Limits:
        max_bytes = settings.BUNDLE_MAX_BYTES
        return cls(
            max_bytes=max_bytes,
            max_files=settings.BUNDLE_MAX_FILES,
            kernel_max_bytes=settings.KERNEL_MAX_BYTES,
            # Python source compresses about 4-6x; anything far beyond that is a bomb, not a bundle.
            max_uncompressed_bytes=getattr(settings, "BUNDLE_MAX_UNCOMPRESSED_BYTES", 8 * max_bytes),
        )
