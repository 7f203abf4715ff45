"""Tar member headers read in linear time and bounded size, whatever the interpreter.

CPython's tarfile before 3.12.6 and 3.11.10 (and 3.10.15, 3.9.20, 3.8.20) parses a pax extended header with
regular expressions that take quadratic time on a run of digits (CVE-2024-6232): a 375-byte .tar.gz held a worker
for 50 s, and a kilobyte for about twenty minutes. `BoundedTarInfo` replaces that parser with the one CPython
shipped as the fix (framing checked record by record, one pass), and refuses outright what a bundle of kernel files
never needs: a pax or GNU long-name header over `HEADER_MAX_BYTES`, and GNU sparse members (their pax parser,
`_proc_gnusparse_00`, has the same quadratic search).
"""

from __future__ import annotations

import re
import tarfile
from typing import Any

HEADER_MAX_BYTES = 64 * 1024  # a path of PATH_MAX (4096) and every other pax record fit many times over
# As in CPython's fix: the record's length, at most 20 digits, then one space.
_LENGTH_PREFIX = re.compile(rb"([0-9]{1,20}) ")
_SPARSE = ("GNU.sparse.map", "GNU.sparse.size", "GNU.sparse.major")
# The hooks below are tarfile's private ones (the same in 3.8-3.14), untyped in the stubs: reached through Any.
_TAR: Any = tarfile


class HeaderTooLarge(tarfile.HeaderError):
    """A pax or long-name header larger than HEADER_MAX_BYTES."""


def _check_size(info: tarfile.TarInfo, kind: str) -> None:
    if info.size > HEADER_MAX_BYTES:
        raise HeaderTooLarge(
            f"a {kind} header of {info.size} bytes, over the {HEADER_MAX_BYTES}-byte limit (CVE-2024-6232 guard)"
        )


def _records(buf: bytes) -> list[tuple[bytes, bytes]]:
    """The (keyword, value) records of a pax header, in one pass (CPython 3.12.6's framing checks)."""
    records = []
    pos = 0
    while pos < len(buf) and buf[pos] != 0:
        match = _LENGTH_PREFIX.match(buf, pos)
        if match is None:
            raise _TAR.InvalidHeaderError("invalid pax header")
        length = int(match.group(1))
        if length < 5 or pos + length > len(buf):  # the shortest record is "5 x=\n"
            raise _TAR.InvalidHeaderError("invalid pax header")
        end = match.start(1) + length - 1  # the record's last byte: its newline
        keyword, equals, value = buf[match.end(1) + 1 : end].partition(b"=")
        if not keyword or equals != b"=" or buf[end] != 0x0A:
            raise _TAR.InvalidHeaderError("invalid pax header")
        records.append((keyword, value))
        pos += length
    return records


class BoundedTarInfo(tarfile.TarInfo):
    """A TarInfo whose pax and long-name headers are size-capped, and whose pax parser is linear (see above)."""

    def _proc_gnulong(self, archive: Any) -> tarfile.TarInfo:
        _check_size(self, "GNU long-name")
        return _TAR.TarInfo._proc_gnulong(self, archive)

    def _proc_sparse(self, archive: Any) -> tarfile.TarInfo:
        raise tarfile.HeaderError("a GNU sparse member (never a kernel file)")

    def _proc_pax(self, archive: Any) -> tarfile.TarInfo:
        _check_size(self, "pax extended")
        me: Any = self
        buf = archive.fileobj.read(me._block(self.size))
        global_header = self.type == tarfile.XGLTYPE
        pax_headers = archive.pax_headers if global_header else archive.pax_headers.copy()
        records = _records(buf)
        encoding = "utf-8"
        charset = next((value for keyword, value in records if keyword == b"hdrcharset"), None)
        if charset == b"BINARY":  # POSIX lets names be raw bytes in the archive's own encoding
            encoding = archive.encoding
        for raw_keyword, raw_value in records:
            keyword = me._decode_pax_field(raw_keyword, "utf-8", "utf-8", archive.errors)
            if keyword in tarfile.PAX_NAME_FIELDS:
                value = me._decode_pax_field(raw_value, encoding, archive.encoding, archive.errors)
            else:
                value = me._decode_pax_field(raw_value, "utf-8", "utf-8", archive.errors)
            pax_headers[keyword] = value
        if any(key in pax_headers for key in _SPARSE):
            raise tarfile.HeaderError("a GNU sparse member (never a kernel file)")
        try:
            following: Any = self.fromtarfile(archive)
        except tarfile.HeaderError as exc:
            raise _TAR.SubsequentHeaderError(str(exc)) from None
        if self.type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
            following._apply_pax_info(pax_headers, archive.encoding, archive.errors)
            following.offset = self.offset
            if "size" in pax_headers:  # the extended header replaces the size: the next header moves with it
                offset = following.offset_data
                if following.isreg() or following.type not in tarfile.SUPPORTED_TYPES:
                    offset += following._block(following.size)
                archive.offset = offset
        return following
