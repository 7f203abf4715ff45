"""Kernel bundles: the single parser shared by the web form, the REST API and the CLI client."""

from leaderboard.bundles.limits import Limits
from leaderboard.bundles.parser import parse_bundle, read_upload
from leaderboard.bundles.types import ACCEPTED, SKIPPED, BundleEntry, BundleError, FileReport, ParsedBundle

__all__ = [
    "ACCEPTED",
    "SKIPPED",
    "BundleEntry",
    "BundleError",
    "FileReport",
    "Limits",
    "ParsedBundle",
    "parse_bundle",
    "read_upload",
]
