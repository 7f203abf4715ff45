"""The API's pagination: DRF's limit/offset, bounded, so `?limit=` or `?offset=` past what a database integer holds
is clamped instead of reaching the SQL (SQLite: "datatype mismatch", a 500)."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

MAX_OFFSET = 10**12  # far beyond any table here, far below a 64-bit integer


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = 1000

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), MAX_OFFSET)
