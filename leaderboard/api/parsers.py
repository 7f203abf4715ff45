"""The API's JSON parser: DRF's, reading through `leaderboard.untrusted.json_loads` (depth limit, finite numbers,
valid Unicode), so a hostile body is a 400 "JSON parse error", never a RecursionError."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from leaderboard.untrusted import json_loads


class UntrustedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json_loads(stream.read().decode(encoding), strict_unicode=True)
        except ValueError as exc:  # UnicodeDecodeError and UntrustedJSONError alike
            raise ParseError(f"JSON parse error - {exc}") from exc
