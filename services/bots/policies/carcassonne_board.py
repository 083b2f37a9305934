"""The Carcassonne bot's board model: the view's tiles, features, open ends and followers, and
the expected worth of each placement on it for one seat (see ``carcassonne``)."""

from __future__ import annotations

from typing import Any

from services.bots.policies.carcassonne_track import lands_dark
from services.rules.games.carcassonne.public import (
    CITY,
    CLOISTER,
    COUNTS,
    EDGES,
    FIELD,
    FITS,
    LETTERS,
    NO_EDGE,
    PORT_SEG,
    ROAD,
    SEG_CITIES,
    SEG_KIND,
    SEG_PENNANT,
    SEG_SIDES,
    TILE_INDEX,
)

View = dict[str, Any]
Action = dict[str, Any]

_STEP = (1, 256, -1, -256)
"""Square offsets to the N, E, S and W neighbours (squares coded as the engine does)."""
_STEPS = frozenset(_STEP)
AROUND = (1, 257, 256, 255, -1, -257, -256, -255)
_BACK = tuple(3 * ((side + 2) % 4) for side in range(4))
"""First port of the neighbour's side facing back across side ``side``."""

FOLLOWER_WORTH = 5.0
"""What a follower in hand is worth at most (points), before scaling by turns and supply."""
SLOW_RETURN = 0.5
"""Share of a follower's worth lost while it waits on a feature that does complete later."""
TURN_FACTOR = 1.5
"""Draws that may fill a square, per own draw (other players also lay tiles next to it)."""
FILL_CAP = 0.95
"""No square is ever sure to be filled."""
FARM_OPEN_CITY = 0.6
"""Discount on an unfinished city's chance to complete, as counted for a farm."""
MESSAGE_WORTH = 2.5
"""Expected worth of drawing a message (its 2 points at least, sometimes more)."""


def square_of(x: int, y: int) -> int:
    return ((x + 128) << 8) | (y + 128)


class Feature:
    """One connected road, city, field or cloister of the board."""

    __slots__ = ("kind", "tiles", "pennants", "ends", "squares", "owners", "links")

    def __init__(self, kind: int, seats: int) -> None:
        self.kind = kind
        self.tiles: set[int] = set()
        self.pennants = 0
        self.ends = 0
        """Unmatched sides (city and road)."""
        self.squares: set[int] = set()
        """The empty squares its open ends face."""
        self.owners = [0] * seats
        self.links: set[int] = set()
        """A field's cities, a city's fields (roots)."""


class Board:
    """The board of the view and the evaluation of placements on it for seat ``me``."""

    def __init__(self, view: View, me: int) -> None:
        seats = view["seats"]
        self.seats = seats
        self.me = me
        self.messengers: list[int] | None = None
        """This seat's two figures with The Messengers, else None."""
        weight = -min(1.0, 1.5 / (seats - 1)) if seats > 1 else 0.0
        self.weights = [1.0 if seat == me else weight for seat in range(seats)]
        codes: dict[int, int] = {}
        ordinal: dict[int, int] = {}
        order: list[tuple[int, int]] = []
        placed = [0] * len(LETTERS)
        for index, tile in enumerate(view["board"]):
            letter = TILE_INDEX[tile["tile"]]
            code = (letter << 2) + tile["rotation"]
            square = square_of(tile["x"], tile["y"])
            codes[square] = code
            ordinal[square] = index
            order.append((square, code))
            placed[letter] += 1
        self.codes = codes
        self.ordinal = ordinal
        self.order = order

        parent = list(range(8 * len(order)))

        def find(node: int) -> int:
            while parent[node] != node:
                parent[node] = parent[parent[node]]
                node = parent[node]
            return node

        for index, (square, code) in enumerate(order):
            ports = PORT_SEG[code]
            for side in (0, 1):
                other = ordinal.get(square + _STEP[side])
                if other is None:
                    continue
                their = PORT_SEG[order[other][1]]
                back = _BACK[side]
                for k in range(3):
                    a = find(8 * index + ports[3 * side + k])
                    b = find(8 * other + their[back + 2 - k])
                    if a != b:
                        parent[a] = b

        root = [0] * (8 * len(order))
        feats: dict[int, Feature] = {}
        cloisters: dict[int, int] = {}
        for index, (square, code) in enumerate(order):
            tile = code >> 2
            kinds = SEG_KIND[tile]
            pennants = SEG_PENNANT[tile]
            for seg, kind in enumerate(kinds):
                node = 8 * index + seg
                top = find(node)
                root[node] = top
                feature = feats.get(top)
                if feature is None:
                    feature = feats[top] = Feature(kind, seats)
                feature.tiles.add(index)
                feature.pennants += pennants[seg]
                if kind == CLOISTER:
                    cloisters[square] = top
            ports = PORT_SEG[code]
            for side in range(4):
                beyond = square + _STEP[side]
                if beyond in codes:
                    continue
                seg = ports[3 * side + 1]
                if kinds[seg] <= ROAD:
                    feature = feats[root[8 * index + seg]]
                    feature.ends += 1
                    feature.squares.add(beyond)
            for seg, cities in enumerate(SEG_CITIES[tile]):
                if cities:
                    field = root[8 * index + seg]
                    for city in cities:
                        town = root[8 * index + city]
                        feats[field].links.add(town)
                        feats[town].links.add(field)
        self.root = root
        self.feats = feats
        self.cloisters = cloisters

        self.mine: list[tuple[int, dict]] = []
        """This seat's followers: (feature root, the view's follower)."""
        for follower in view["followers"]:
            index = ordinal[square_of(follower["x"], follower["y"])]
            top = root[8 * index + follower["spot"]]
            feats[top].owners[follower["seat"]] += 1
            if follower["seat"] == me:
                self.mine.append((top, follower))

        drawn = view.get("tile")
        if drawn is not None:
            placed[TILE_INDEX[drawn]] += 1
        self.remaining = [max(0, count - used) for count, used in zip(COUNTS, placed, strict=True)]
        self.total = sum(self.remaining)
        left = max(0, view.get("tiles_left", 0))
        self.draws = min(float(left), left / seats * TURN_FACTOR)
        supply = view["supply"][me]
        own_turns = left / seats
        self.follower_worth = (
            FOLLOWER_WORTH * own_turns / (own_turns + 3.0 * supply) if own_turns > 0 else 0.0
        )
        self.fill_cache: dict[int, float] = {}
        self.key_cache: dict[int, int] = {}
        self.p_cache: dict[int, float] = {}
        self.before: dict[int, float] = {}
        for top, feature in feats.items():
            if any(feature.owners):
                self.before[top] = self._current_value(top, feature)

    # ------------------------------------------------------------------ squares

    def key(self, square: int, extra: int = -1, extra_code: int = 0) -> int:
        """The requirement key of an empty square (with ``extra_code`` laid on ``extra``)."""
        if extra < 0 or square - extra not in _STEPS:
            key = self.key_cache.get(square)
            if key is None:
                key = self.key_cache[square] = self._key(square, -1, 0)
            return key
        return self._key(square, extra, extra_code)

    def _key(self, square: int, extra: int, extra_code: int) -> int:
        codes = self.codes
        key = 0
        for side in range(4):
            beyond = square + _STEP[side]
            code = extra_code if beyond == extra else codes.get(beyond)
            edge = NO_EDGE if code is None else EDGES[code][(side + 2) % 4]
            key |= edge << (2 * side)
        return key

    def fill(self, key: int) -> float:
        """The chance that a square with requirement ``key`` gets a tile before the end."""
        chance = self.fill_cache.get(key)
        if chance is None:
            if not self.total or not self.draws:
                chance = 0.0
            else:
                fits = sum(
                    count for tile, count in enumerate(self.remaining) if count and FITS[tile][key]
                )
                share = fits / self.total
                chance = min(FILL_CAP, 1.0 - (1.0 - share) ** self.draws) if share else 0.0
            self.fill_cache[key] = chance
        return chance

    def completion(self, squares: set[int], extra: int = -1, extra_code: int = 0) -> float:
        """Chance that every square of ``squares`` is filled (``extra_code`` on ``extra``)."""
        chance = 1.0
        near = {extra + step for step in _STEP} if extra >= 0 else ()
        for square in squares:
            if square in near:
                chance *= self.fill(self._key(square, extra, extra_code))
            else:
                chance *= self.fill(self.key(square))
            if not chance:
                break
        return chance

    def city_chance(self, top: int) -> float:
        """What an existing city is worth to a farm: 1 if complete, else its discounted
        chance to complete."""
        chance = self.p_cache.get(top)
        if chance is None:
            feature = self.feats[top]
            if not feature.ends:
                chance = 1.0
            else:
                chance = FARM_OPEN_CITY * self.completion(feature.squares)
            self.p_cache[top] = chance
        return chance

    # ------------------------------------------------------------------ values

    def _share(self, owners: list[int]) -> float:
        """Sum of the weights of the seats with the majority (0 without followers)."""
        most = max(owners)
        if not most:
            return 0.0
        weights = self.weights
        return sum(weights[seat] for seat, count in enumerate(owners) if count == most)

    def value(
        self, kind: int, tiles: int, pennants: int, ends: int, chance: float, owners: list[int]
    ) -> float:
        """Expected worth of a road or city, weighted by seat, less the tie-up of our own
        followers."""
        share = self._share(owners)
        if not share and not owners[self.me]:
            return 0.0
        unfinished = tiles if kind == ROAD else tiles + pennants
        full = unfinished if kind == ROAD else 2 * unfinished
        if not ends:
            return full * share
        worth = (chance * full + (1.0 - chance) * unfinished) * share
        mine = owners[self.me]
        if mine:
            worth -= self.follower_worth * (1.0 - chance + SLOW_RETURN * chance) * mine
        return worth

    def farm_value(self, cities: float, owners: list[int]) -> float:
        worth = 3.0 * cities * self._share(owners)
        return worth - self.follower_worth * owners[self.me]

    def cloister_value(
        self, square: int, owners: list[int], extra: int = -1, extra_code: int = 0
    ) -> float:
        codes = self.codes
        near = 1
        expected = 0.0
        chance = 1.0
        for step in AROUND:
            around = square + step
            if around in codes or around == extra:
                near += 1
            else:
                fill = self.fill(self.key(around, extra, extra_code))
                expected += fill
                chance *= fill
        share = self._share(owners)
        if near == 9:
            return 9.0 * share
        worth = (near + expected) * share
        mine = owners[self.me]
        if mine:
            worth -= self.follower_worth * (1.0 - chance + SLOW_RETURN * chance) * mine
        return worth

    def _current_value(self, top: int, feature: Feature) -> float:
        kind = feature.kind
        if kind == FIELD:
            cities = sum(self.city_chance(town) for town in feature.links)
            return self.farm_value(cities, feature.owners)
        if kind == CLOISTER:
            return self.cloister_value(self.order[top >> 3][0], feature.owners)
        chance = self.completion(feature.squares) if feature.ends else 1.0
        return self.value(
            kind, len(feature.tiles), feature.pennants, feature.ends, chance, feature.owners
        )

    # ------------------------------------------------------------------ placements

    def evaluate(self, square: int, code: int, spots: list[int | None]) -> dict[int | None, float]:
        """The worth of laying ``code`` on ``square`` with each follower choice of ``spots``."""
        tile = code >> 2
        kinds = SEG_KIND[tile]
        ports = PORT_SEG[code]
        count = len(kinds)
        ordinal = self.ordinal
        codes = self.codes
        root = self.root
        feats = self.feats
        me = self.me
        seats = self.seats

        joined: list[set[int] | None] = [None] * count
        links = [0] * count
        open_squares: list[list[int]] = [[] for _ in range(count)]
        for side in range(4):
            beyond = square + _STEP[side]
            centre = ports[3 * side + 1]
            other = ordinal.get(beyond)
            if other is None:
                if kinds[centre] <= ROAD:
                    open_squares[centre].append(beyond)
                continue
            their = PORT_SEG[codes[beyond]]
            back = _BACK[side]
            base = 8 * other
            for k in range(3):
                seg = ports[3 * side + k]
                top = root[base + their[back + 2 - k]]
                found = joined[seg]
                if found is None:
                    joined[seg] = {top}
                else:
                    found.add(top)
            if kinds[centre] <= ROAD:
                links[centre] += 1

        group = list(range(count))

        def find(seg: int) -> int:
            while group[seg] != seg:
                seg = group[seg]
            return seg

        first: dict[int, int] = {}
        for seg in range(count):
            for top in joined[seg] or ():
                seen = first.get(top)
                if seen is None:
                    first[top] = seg
                else:
                    a, b = find(seen), find(seg)
                    if a != b:
                        group[a] = b
        members: dict[int, list[int]] = {}
        for seg in range(count):
            members.setdefault(find(seg), []).append(seg)

        total = 0.0
        variants: dict[int | None, float] = {}
        city_after: dict[int, float] = {}
        """Per group of this tile's city features: its worth to a farm."""
        city_of_root: dict[int, int] = {}
        """Existing city roots merged into a group of this tile."""
        my_points: list[int] = []
        fields: list[tuple[int, list[int], set[int]]] = []
        pennant = SEG_PENNANT[tile]
        sides = SEG_SIDES[tile]

        for rep, segs in members.items():
            kind = kinds[segs[0]]
            tops: set[int] = set()
            for seg in segs:
                if joined[seg]:
                    tops |= joined[seg]  # type: ignore[operator]
            if kind == FIELD:
                fields.append((rep, segs, tops))
                continue
            if kind == CLOISTER:
                spot = segs[0]
                if spot in spots:
                    owners = [0] * seats
                    owners[me] = 1
                    variants[spot] = self.cloister_value(square, owners, square, code)
                continue
            owners = [0] * seats
            ends = 0
            pennants = 0
            reach: set[int] = set()
            tiles_seen: set[int] = set()
            before = 0.0
            for top in tops:
                feature = feats[top]
                for seat, held in enumerate(feature.owners):
                    owners[seat] += held
                ends += feature.ends
                pennants += feature.pennants
                reach |= feature.squares
                if len(tops) > 1:
                    tiles_seen |= feature.tiles
                else:
                    tiles_seen = feature.tiles
                before += self.before.get(top, 0.0)
            tiles = len(tiles_seen) + 1
            for seg in segs:
                ends += sides[seg] - 2 * links[seg]
                pennants += pennant[seg]
                reach.update(open_squares[seg])
            reach.discard(square)
            chance = self.completion(reach, square, code) if ends else 1.0
            after = self.value(kind, tiles, pennants, ends, chance, owners)
            total += after - before
            if kind == CITY:
                worth = 1.0 if not ends else FARM_OPEN_CITY * chance
                city_after[rep] = worth
                for top in tops:
                    city_of_root[top] = rep
            most = max(owners)
            if not ends and most and owners[me] == most:
                my_points.append(tiles if kind == ROAD else 2 * (tiles + pennants))
            for spot in segs:
                if spot in spots:
                    owners[me] += 1
                    variants[spot] = self.value(kind, tiles, pennants, ends, chance, owners) - after
                    owners[me] -= 1
                    if not ends and not most:
                        # completed with our own new follower: scored at once
                        my_points.append(tiles if kind == ROAD else 2 * (tiles + pennants))

        # farms: the fields this tile joins, and those touching a city it changes
        touched: set[int] = set()
        for _rep, _segs, tops in fields:
            touched |= tops
        for top in city_of_root:
            for field in feats[top].links:
                if field not in touched and any(feats[field].owners):
                    feature = feats[field]
                    cities = sum(
                        (
                            city_after[city_of_root[town]]
                            if town in city_of_root
                            else self.city_chance(town)
                        )
                        for town in _distinct_towns(feature.links, city_of_root)
                    )
                    total += self.farm_value(cities, feature.owners) - self.before.get(field, 0.0)
                    touched.add(field)
        city_segs = SEG_CITIES[tile]
        for _rep, segs, tops in fields:
            owners = [0] * seats
            before = 0.0
            towns_old: set[int] = set()
            for top in tops:
                feature = feats[top]
                for seat, held in enumerate(feature.owners):
                    owners[seat] += held
                before += self.before.get(top, 0.0)
                towns_old |= feature.links
            spot_here = [spot for spot in segs if spot in spots]
            if not any(owners) and not spot_here:
                continue
            cities = 0.0
            counted: set[int] = set()
            for town in towns_old:
                rep = city_of_root.get(town)
                if rep is None:
                    cities += self.city_chance(town)
                elif rep not in counted:
                    counted.add(rep)
                    cities += city_after[rep]
            for seg in segs:
                for city in city_segs[seg]:
                    rep = find(city)
                    if rep not in counted:
                        counted.add(rep)
                        cities += city_after.get(rep, 0.0)
            after = self.farm_value(cities, owners) if any(owners) else 0.0
            total += after - before
            for spot in spot_here:
                owners[me] += 1
                variants[spot] = self.farm_value(cities, owners) - after
                owners[me] -= 1

        # cloisters around the square
        cloisters = self.cloisters
        if cloisters:
            for step in AROUND:
                monk = cloisters.get(square + step)
                if monk is not None:
                    feature = feats[monk]
                    if any(feature.owners):
                        around = square + step
                        after = self.cloister_value(around, feature.owners, square, code)
                        total += after - self.before.get(monk, 0.0)
                        if feature.owners[me] and all(
                            around + near in codes or around + near == square for near in AROUND
                        ):
                            my_points.append(9)

        if self.messengers is not None and my_points:
            if lands_dark(self.messengers, my_points):
                total += MESSAGE_WORTH
        values: dict[int | None, float] = {None: total}
        for spot in spots:
            if spot is not None:
                values[spot] = total + variants.get(spot, 0.0)
        return values


def _distinct_towns(towns: set[int], merged: dict[int, int]) -> list[int]:
    """Each city once: roots merged into one group of the new tile count once."""
    seen: set[int] = set()
    result = []
    for town in towns:
        rep = merged.get(town)
        if rep is None:
            result.append(town)
        elif rep not in seen:
            seen.add(rep)
            result.append(town)
    return result
