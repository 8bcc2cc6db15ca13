"""How a caller stops a long computation in core_model: one convention for every entry.

A long entry takes `progress`, a callable it calls between units of work: with (done, total), or with the part it
has just finished where that is what a caller draws (a length's score, a training's step). To stop the work, the
callable raises: `Stop` for a request (the app's task layer raises its Cancelled, a Stop), anything else for a
fault. An entry whose finished part is worth keeping (the length evaluation's scored lengths) catches Stop and
returns that part, marked as stopped; every other entry lets it pass, so a stopped call returns nothing. Nothing
is polled: the work stops at the next report, which each entry makes often enough to answer a Cancel at once.
"""

from __future__ import annotations


class Stop(Exception):
    """Raised from a progress callback: stop after the unit of work just reported."""
