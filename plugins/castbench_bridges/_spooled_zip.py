"""A zip written without its directory in memory (#59).

Python's `zipfile.ZipFile` keeps a `ZipInfo` per member (`filelist`, `NameToInfo`) until it is
closed, to write the zip's central directory at the end of the file: about 0.55 KB a member,
27 MiB for a 50,000-sample `.eval` log. `SpooledZipFile` writes each member as `ZipFile` does
(its local header, compressed data and compressor: Inspect's zstd included), then moves the
member's central directory record to a temporary file and forgets its `ZipInfo`; closing copies
the records after the last member and ends the zip with the standard end records (zip64 where
the count, the directory's size or its offset needs them, as `zipfile` does). What stays in
memory is a count: duplicate names are not looked for (`zipfile` warns of one; the writers here
name each member once).

`compressor`, where given, makes each compressed member's compressor (`compressobj`-like):
Inspect's zstd compressor runs 12 threads whose buffers grow with a member's size (the
summaries of every sample are one member: several MiB at 10k trials), where a single-threaded
one keeps a window.

The records are the standard zip format (APPNOTE 4.3.12, 4.3.14-16): the file reads back with
`zipfile`, Inspect's `read_eval_log` and any unzip.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
import zipfile
from collections.abc import Callable
from typing import IO, Any, Literal

__all__ = ["SpooledZipFile", "central_record"]

_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # central directory file header, 46 bytes
_END = struct.Struct("<4s4H2LH")  # end of central directory record, 22 bytes
_END64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end of central directory record, 56 bytes
_LOCATOR64 = struct.Struct("<4sLQL")  # zip64 end of central directory locator, 20 bytes
_ZIP64_EXTRA = 0x0001
_UTF8_NAME = 0x0800
_ZIP64_VERSION = 45
_VERSIONS = {zipfile.ZIP_BZIP2: 46, zipfile.ZIP_LZMA: 63}
ZIP64_LIMIT = zipfile.ZIP64_LIMIT  # (1 << 31) - 1: zipfile's own bound for sizes and offsets
COUNT_LIMIT = 0xFFFF  # members the end record counts; more need the zip64 end record


def _without_zip64(extra: bytes) -> bytes:
    """An extra field with any zip64 block taken out (one is written afresh where needed)."""
    kept, at = b"", 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        if kind != _ZIP64_EXTRA:
            kept += extra[at : at + 4 + size]
        at += 4 + size
    return kept + extra[at:]


def central_record(info: zipfile.ZipInfo) -> bytes:
    """A member's central directory file header: name, sizes, CRC and where its local header is,
    with a zip64 extra block for a size or an offset past `ZIP64_LIMIT`."""
    year, month, day, hour, minute, second = info.date_time
    dos_date = (year - 1980) << 9 | month << 5 | day
    dos_time = hour << 11 | minute << 5 | second // 2
    wide: list[int] = []
    file_size, compress_size, offset = info.file_size, info.compress_size, info.header_offset
    if file_size > ZIP64_LIMIT or compress_size > ZIP64_LIMIT:
        wide += [file_size, compress_size]
        file_size = compress_size = 0xFFFFFFFF
    if offset > ZIP64_LIMIT:
        wide.append(offset)
        offset = 0xFFFFFFFF
    extra, needed = info.extra, 0
    if wide:
        extra = struct.pack(f"<HH{len(wide)}Q", _ZIP64_EXTRA, 8 * len(wide), *wide) + _without_zip64(extra)
        needed = _ZIP64_VERSION
    needed = max(needed, _VERSIONS.get(info.compress_type, 0))
    try:
        name, flags = info.filename.encode("ascii"), info.flag_bits
    except UnicodeEncodeError:
        name, flags = info.filename.encode("utf-8"), info.flag_bits | _UTF8_NAME
    head = _CENTRAL.pack(
        b"PK\x01\x02",
        max(needed, info.create_version),
        info.create_system,
        max(needed, info.extract_version),
        info.reserved,
        flags,
        info.compress_type,
        dos_time,
        dos_date,
        info.CRC,
        compress_size,
        file_size,
        len(name),
        len(extra),
        len(info.comment),
        0,  # disk number start
        info.internal_attr,
        info.external_attr,
        offset,
    )
    return head + name + extra + info.comment


class SpooledZipFile(zipfile.ZipFile):
    """`zipfile.ZipFile(file, "w", ...)` whose central directory waits in a temporary file, record
    by record, as the members are written: memory does not grow with the members. Write members
    with `writestr` or `open(name, "w")`; a member's `ZipInfo` is dropped once it is written (so
    `getinfo`, `namelist` and `infolist` see only the member not yet spooled)."""

    def __init__(
        self, file: str | IO[bytes] | Any, compressor: Callable[[], Any] | None = None, **kwargs: Any
    ) -> None:
        self._compressor = compressor
        self._zip64 = bool(kwargs.get("allowZip64", True))
        self._directory: IO[bytes] = tempfile.TemporaryFile("w+b")  # noqa: SIM115 (closed by close)
        self._members = 0
        try:
            super().__init__(file, "w", **kwargs)
        except BaseException:
            self._directory.close()
            raise

    @property
    def members(self) -> int:
        """The members written so far."""
        return self._members + len(self.filelist)

    def writestr(self, *args: Any, **kwargs: Any) -> None:
        super().writestr(*args, **kwargs)
        self._spool()

    def open(self, name: Any, mode: Literal["r", "w"] = "r", *args: Any, **kwargs: Any) -> IO[bytes]:
        """`ZipFile.open`; a member opened for writing (`writestr` included) and compressed takes
        its compressor from `compressor` where one was given (before any byte of it is written)."""
        self._spool()  # the member written through the last `open(..., "w")`, if any
        member = super().open(name, mode, *args, **kwargs)
        if mode == "w" and self._compressor is not None and getattr(member, "_compressor", None) is not None:
            member._compressor = self._compressor()  # type: ignore[attr-defined]
        return member

    def _spool(self) -> None:
        """The members written since the last call: their records to the temporary file."""
        if self.filelist:
            self._directory.write(b"".join(central_record(info) for info in self.filelist))
            self._members += len(self.filelist)
            self.filelist.clear()
            self.NameToInfo.clear()

    def _write_end_record(self) -> None:
        """`ZipFile.close` calls this with the file at the end of the last member: the spooled
        directory, then the end records (zip64 ones where a figure does not fit the plain one)."""
        self._spool()
        fp = self.fp
        assert fp is not None
        start = fp.tell()
        self._directory.seek(0)
        shutil.copyfileobj(self._directory, fp, 1 << 20)
        end = fp.tell()
        count, size = self._members, end - start
        if count > COUNT_LIMIT or start > ZIP64_LIMIT or size > ZIP64_LIMIT:
            if not self._zip64:
                raise zipfile.LargeZipFile("the zip's directory would need zip64 extensions")
            fp.write(_END64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, start))
            fp.write(_LOCATOR64.pack(b"PK\x06\x07", 0, end, 1))
            count, size, start = min(count, 0xFFFF), min(size, 0xFFFFFFFF), min(start, 0xFFFFFFFF)
        fp.write(_END.pack(b"PK\x05\x06", 0, 0, count, count, size, start, len(self.comment)))
        fp.write(self.comment)
        fp.flush()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._directory.close()
