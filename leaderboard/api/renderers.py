"""A text/csv renderer, so `Accept: text/csv` is honoured by the results.csv endpoints."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.renderers import BaseRenderer


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if isinstance(data, str):
            return data.encode(self.charset)
        return json.dumps(data).encode(self.charset)  # error bodies (404, 401) stay readable
