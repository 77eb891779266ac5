"""#59: `SpooledZipFile` writes the bytes `zipfile.ZipFile` writes, its central directory spooled
to a temporary file as the members are written instead of held as `ZipInfo`s: the same file,
byte for byte, with and without zip64 (a small bound stands in for 2 GiB), and no `ZipInfo` kept."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from castbench_bridges import _spooled_zip
from castbench_bridges._spooled_zip import SpooledZipFile

STAMP = (2026, 12, 7, 16, 40, 58)


def _write(archive: zipfile.ZipFile, members: int) -> None:
    for index in range(members):
        name = f"samples/{index}_épreuve.json" if index % 7 == 3 else f"samples/{index}.json"
        info = zipfile.ZipInfo(name, STAMP)
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, (b'{"n": %d, "text": "' % index) + b"x" * (index % 300) + b'"}')
        if index % 50 == 0:  # a member written as a stream, as the summaries are
            streamed = zipfile.ZipInfo(f"streamed/{index}.json", STAMP)
            streamed.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(streamed, "w", force_zip64=index % 100 == 0) as member:
                member.write(b"[" + b"1," * index + b"1]")
    archive.writestr(zipfile.ZipInfo("header.json", STAMP), b"{}")


def _both(members: int, **kwargs: Any) -> tuple[bytes, bytes]:
    plain, spooled = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(plain, "w", **kwargs) as archive:
        _write(archive, members)
    with SpooledZipFile(spooled, **kwargs) as archive:
        _write(archive, members)
        assert len(archive.filelist) <= 1 and archive.members > members  # no ZipInfo kept
    return plain.getvalue(), spooled.getvalue()


def test_a_spooled_zip_is_the_zip_zipfile_writes() -> None:
    plain, spooled = _both(300)
    assert spooled == plain
    with zipfile.ZipFile(io.BytesIO(spooled)) as archive:
        assert archive.testzip() is None and len(archive.namelist()) == 300 + 6 + 1


def test_past_the_zip64_bounds_the_records_are_zipfiles_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # offsets and sizes past a small bound take zip64 extra blocks and end records, as past 2 GiB
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 4_000)
    monkeypatch.setattr(_spooled_zip, "ZIP64_LIMIT", 4_000)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 100)
    monkeypatch.setattr(_spooled_zip, "COUNT_LIMIT", 100)
    plain, spooled = _both(400)
    assert b"PK\x06\x06" in spooled and spooled == plain
    with zipfile.ZipFile(io.BytesIO(spooled)) as archive:
        assert archive.testzip() is None and len(archive.infolist()) == 400 + 8 + 1
        assert archive.read("samples/399.json").endswith(b'"}')


def test_a_spooled_zip_compresses_each_member_with_the_compressor_given(tmp_path: Path) -> None:
    made: list[int] = []

    def compressor() -> object:
        made.append(1)
        return zlib.compressobj(1, zlib.DEFLATED, -15)

    target = tmp_path / "z.zip"
    with SpooledZipFile(target, compressor=compressor, compression=zipfile.ZIP_DEFLATED) as archive:
        _write(archive, 120)
    with zipfile.ZipFile(target) as read:
        assert read.testzip() is None and read.read("samples/119.json").endswith(b"x" * 119 + b'"}')
    assert len(made) == 120 + 3  # one a compressed member (header.json is stored)


def test_a_spooled_zip_refuses_zip64_when_told_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spooled_zip, "COUNT_LIMIT", 3)
    with pytest.raises(zipfile.LargeZipFile), SpooledZipFile(tmp_path / "z.zip", allowZip64=False) as archive:
        for index in range(5):
            archive.writestr(zipfile.ZipInfo(f"{index}", STAMP), b"")
