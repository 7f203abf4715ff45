"""Kernel bundles: the single parser shared by the web form, the REST API and the CLI client."""

from leaderboard.bundles.limits import Limits, check_bundle_size, request_body_limit, upload_size_error
from leaderboard.bundles.parser import parse_bundle, read_upload
from leaderboard.bundles.types import (
    ACCEPTED,
    SKIPPED,
    BundleEntry,
    BundleError,
    BundleTooLarge,
    FileReport,
    ParsedBundle,
)

__all__ = [
    "ACCEPTED",
    "SKIPPED",
    "BundleEntry",
    "BundleError",
    "BundleTooLarge",
    "FileReport",
    "Limits",
    "ParsedBundle",
    "check_bundle_size",
    "parse_bundle",
    "read_upload",
    "request_body_limit",
    "upload_size_error",
]
