"""How many entries a zip archive lists, read from its end records before anything parses its directory.

zipfile reads the whole central directory when it opens an archive: an archive that lists millions of entries costs
minutes and gigabytes before any check can run. The count sits in the end-of-central-directory record (and, past
65,535 entries, in its zip64 twin), a few dozen bytes at the end of the file.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

END = b"PK\x05\x06"  # end of central directory: 22 bytes, then a comment of up to 65,535
ZIP64_END = b"PK\x06\x06"  # zip64 end of central directory record
ZIP64_LOCATOR = b"PK\x06\x07"  # 20 bytes just before END, pointing at the zip64 record
TAIL_BYTES = 22 + 65_535


def entry_count(fh: BinaryIO) -> int | None:
    """The number of entries the archive's end records claim; None when they are missing or damaged."""
    fh.seek(0, 2)
    size = fh.tell()
    fh.seek(max(0, size - TAIL_BYTES))
    tail = fh.read()
    at = tail.rfind(END)
    if at < 0 or len(tail) - at < 22:
        return None
    (count,) = struct.unpack_from("<H", tail, at + 10)
    locator = at - 20
    if locator < 0 or tail[locator : locator + 4] != ZIP64_LOCATOR:
        return count
    (offset,) = struct.unpack_from("<Q", tail, locator + 8)  # where the zip64 record starts in the file
    if offset + 56 > size:
        return None
    fh.seek(offset)
    record = fh.read(56)
    if record[:4] != ZIP64_END:
        return None
    return int(struct.unpack_from("<Q", record, 32)[0])
