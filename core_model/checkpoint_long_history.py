"""Opening checkpoints of earlier versions, which stored a training-history row per step (a million rows or more).

torch's weights-only unpickler is pure Python, too slow for millions of rows, so such a history is thinned before it
is unpickled. The rows are found in the pickled bytes by the layout torch.save (pickle protocol 2) gives a list of
dicts of metric name -> number, with regular expressions (C speed); the rows a checkpoint keeps (checkpoint_records.
kept_rows) are copied byte for byte, with every row that names a metric first (later rows refer back to the name;
such a row leaves the history again once it is read), and the shortened pickle goes, in a copy of the archive, to
torch.load(weights_only=True) and every usual check.
Nothing here builds an object from the file: bytes that only look like this layout give a pickle that the loader
refuses or reads like any other file.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import islice

from .checkpoint_records import MAX_HISTORY_ROWS, kept_rows

# Rows counted at most, and entries a row may have: they bound the work on a crafted file of many small or wide rows.
# The app's rows have 8 entries and take 110 bytes, so a pickle within checkpoint_files.MAX_LONG_PICKLE_BYTES holds
# fewer than MAX_ROWS.
MAX_ROWS = 1_300_000
MAX_ENTRIES = 16

_PUT = rb"(?:q.|r.{4})"  # BINPUT, LONG_BINPUT: the pickler memoises every dict and string it writes
_GET = rb"(?:h.|j.{4})"  # BINGET, LONG_BINGET: a metric name written before
_NAME = b"|".join(b"X" + re.escape(struct.pack("<I", n)) + b".{%d}" % n for n in range(1, 65))  # BINUNICODE, 1-64
_LONG = b"|".join(b"\\x8a" + re.escape(bytes([n])) + b".{%d}" % n for n in range(1, 9))  # LONG1 of 1-8 bytes
_NUMBER = rb"(?:G.{8}|K.|M.{2}|J.{4}|\x88|\x89|" + _LONG + rb")"  # float, int (1, 2, 4 bytes, long), True, False
_ENTRY = rb"(?:" + _GET + rb"|(?:" + _NAME + rb")" + _PUT + rb")" + _NUMBER
_ROW_PATTERN = rb"\}" + _PUT + rb"(?:\((?:" + _ENTRY + rb"){1,%d}+u|" % MAX_ENTRIES + _ENTRY + rb"s)"  # a dict
_ROW = re.compile(_ROW_PATTERN, re.DOTALL)
_HISTORY_KEY = b"X\x07\x00\x00\x00history"
_HEAD = re.compile(re.escape(_HISTORY_KEY) + _PUT + rb"\]" + _PUT, re.DOTALL)  # the key, then an empty list
# the list's items: batches of up to 1000 between MARK and APPENDS (a one-item list uses APPEND); possessive, so
# the scan never backtracks
_ROWS = re.compile(rb"(?:\((?:" + _ROW_PATTERN + rb")++e|" + _ROW_PATTERN + rb"a)*+", re.DOTALL)
_NEW_NAME = re.compile(rb"X[\x01-\x40]\x00\x00\x00")  # where a row may name a metric first; a false hit keeps a row


@dataclass(frozen=True)
class ShortHistory:
    """A checkpoint's pickle with fewer history rows: `kept` of its `rows`, and at `name_rows` (positions in the
    shortened list) the rows there only because they name a metric first."""

    data: bytes
    rows: int
    kept: int
    name_rows: frozenset[int]

    def without_name_rows(self, payload: object) -> object:
        """The payload read from `data` with the history it would have had if thinned after reading."""
        if not self.name_rows or not isinstance(payload, dict) or not isinstance(payload.get("history"), list):
            return payload
        return {**payload, "history": [row for j, row in enumerate(payload["history"]) if j not in self.name_rows]}


def shortened_history(data: bytes) -> ShortHistory | None:
    """`data` (a checkpoint's pickle) with its history cut to the rows a checkpoint keeps (plus any that name a
    metric first).

    None when the top-level key "history" is not followed by rows in torch.save's layout, or by more than MAX_ROWS.
    """
    at = data.find(_HISTORY_KEY)
    head = _HEAD.match(data, at) if at >= 0 else None
    if head is None:
        return None
    listed = _ROWS.match(data, head.end())  # matches always (possibly nothing): the pattern is a repetition
    first, end = head.end(), listed.end() if listed else head.end()
    starts = array("q", map(re.Match.start, islice(_ROW.finditer(data, first, end), MAX_ROWS + 1)))  # byte offsets
    if not 0 < len(starts) <= MAX_ROWS:
        return None
    evenly, naming = set(kept_rows(len(starts))), _naming_rows(data, starts, first, end)
    if naming is None:
        return None
    keep = sorted(evenly | naming)
    rows = b"".join(row.group() for i in keep if (row := _ROW.match(data, starts[i])))  # each found above
    name_rows = frozenset(j for j, i in enumerate(keep) if i not in evenly)
    return ShortHistory(data[:first] + b"(" + rows + b"e" + data[end:], len(starts), len(evenly), name_rows)


def _naming_rows(data: bytes, starts: array, first: int, end: int) -> set[int] | None:
    """The rows that may name a metric first (a byte pattern; a false hit keeps a row); None when there are so many
    that thinning would not shorten the history."""
    hits = list(islice(_NEW_NAME.finditer(data, first, end), MAX_HISTORY_ROWS + 1))
    if len(hits) > MAX_HISTORY_ROWS:
        return None
    return {max(0, bisect_right(starts, hit.start()) - 1) for hit in hits}


def archive_with(source: zipfile.ZipFile, entry: zipfile.ZipInfo, data: bytes) -> io.BytesIO:
    """A copy of the archive `source`, in memory, whose record `entry` holds `data` instead: for torch.load."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
        for info in source.infolist():
            record = zipfile.ZipInfo(info.filename, info.date_time)
            copy.writestr(record, data if info is entry else source.read(info))
    out.seek(0)
    return out
