"""How a caller stops a long computation in core_model: one convention for every entry.

A long entry takes `progress`, a callable it calls between units of work: with (done, total), or with the part it
has just finished where that is what a caller draws (a length's score, a training's step). To stop the work, the
callable raises: `Stop` from a notebook or a script, the app's task layer its own Cancelled. No entry catches
what its progress raises, so a stopped call returns nothing; what it had finished is what it reported (a length
curve's points). Nothing is polled: the work stops at the next report, which each entry makes often enough to
answer a Cancel at once.
"""

from __future__ import annotations


class Stop(Exception):
    """Raised from a progress callback: stop after the unit of work just reported."""
