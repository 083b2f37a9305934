"""Matches: the event log of each match, its snapshot, and the moves that extend it.

The match service holds no game code. States are opaque bytes from the rules service; the
``matches`` row caches the fold of the stream and guards appends by version, so a move commits
only on top of the version it was decided on.
"""

from services.match.creation import MatchCreation
from services.match.moves import MatchMoves
from services.match.reads import MatchReads
from services.match.seats import SeatChanges


class Matches(MatchCreation, MatchReads, MatchMoves, SeatChanges):
    """Creates matches, serves them as each seat may see them, and records moves.

    Its parts, one module each, share ``MatchStore`` (``store.py``): the cached snapshots
    (``snapshot.py``) and what each change publishes.
    """
