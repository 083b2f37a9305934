"""The Carcassonne bot's board model: the view's tiles, features, open ends and followers, and
the expected worth of each placement on it for one seat (see ``carcassonne``)."""

from __future__ import annotations

from typing import Any

from services.bots.policies.carcassonne_feature import (
    AROUND,
    BACK,
    SPECIAL,
    STEP,
    STEPS,
    Feature,
    distinct_towns,
    feature_points,
    joins,
    square_of,
)
from services.bots.policies.carcassonne_pieces import (
    BUILDER,
    FARM_PER_CITY,
    FOLLOWER,
    LARGE,
    PIG,
    PIG_PER_CITY,
    TURN_WORTH,
    Extras,
    builder_value,
    goods_gain,
    large_bonus,
    pig_value,
)
from services.bots.policies.carcassonne_track import lands_dark
from services.rules.games.carcassonne.public import (
    CITY,
    CLOISTER,
    EDGES,
    FIELD,
    FITS,
    LETTERS,
    NO_EDGE,
    PORT_SEG,
    ROAD,
    SEG_CITIES,
    SEG_GOODS,
    SEG_KIND,
    SEG_PENNANT,
    SEG_SIDES,
    TILE_INDEX,
    box_counts,
)

View = dict[str, Any]
Action = dict[str, Any]
Choice = tuple[int | None, str]
"""A piece choice on a placement: the spot (None: no piece) and the piece."""

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


class Board:
    """The board of the view and the evaluation of placements on it for seat ``me``."""

    def __init__(self, view: View, me: int) -> None:
        seats = view["seats"]
        self.seats = seats
        self.me = me
        self.messengers: list[int] | None = None
        """This seat's two figures with The Messengers, else None."""
        self.extras = Extras(view, me)
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
                other = ordinal.get(square + STEP[side])
                if other is None:
                    continue
                their = PORT_SEG[order[other][1]]
                back = BACK[side]
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
            special = SPECIAL[tile]
            goods = SEG_GOODS[tile]
            for seg, kind in enumerate(kinds):
                node = 8 * index + seg
                top = find(node)
                root[node] = top
                feature = feats.get(top)
                if feature is None:
                    feature = feats[top] = Feature(kind, seats)
                feature.tiles.add(index)
                feature.pennants += pennants[seg]
                feature.special += special[seg]
                if goods[seg] >= 0:
                    feature.goods[goods[seg]] += 1
                if kind == CLOISTER:
                    cloisters[square] = top
            ports = PORT_SEG[code]
            for side in range(4):
                beyond = square + STEP[side]
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
            top = self.root_at(follower)
            large = follower.get("large", False)
            feats[top].owners[follower["seat"]] += 2 if large else 1
            if follower["seat"] == me:
                self.mine.append((top, follower))
                feats[top].large += large
        self.builder = -1
        """The root of the feature of this seat's builder (-1: none on the board)."""
        for piece in self.extras.on_board:
            top = self.root_at(piece)
            if piece["piece"] == "pig":
                feats[top].pigs.add(piece["seat"])
            elif piece["seat"] == me:
                self.builder = top

        drawn = view.get("tile")
        if drawn is not None:
            placed[TILE_INDEX[drawn]] += 1
        counts = box_counts(self.extras.expansions)
        self.remaining = [max(0, count - used) for count, used in zip(counts, placed, strict=True)]
        self.total = sum(self.remaining)
        self.left = left = max(0, view.get("tiles_left", 0))
        self.draws = min(float(left), left / seats * TURN_FACTOR)
        supply = view["supply"][me]
        self.own_turns = own_turns = left / seats
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

    def root_at(self, piece: dict) -> int:
        """The feature root under a follower or piece of the view."""
        index = self.ordinal[square_of(piece["x"], piece["y"])]
        return self.root[8 * index + piece["spot"]]

    # ------------------------------------------------------------------ squares

    def key(self, square: int, extra: int = -1, extra_code: int = 0) -> int:
        """The requirement key of an empty square (with ``extra_code`` laid on ``extra``)."""
        if extra < 0 or square - extra not in STEPS:
            key = self.key_cache.get(square)
            if key is None:
                key = self.key_cache[square] = self._key(square, -1, 0)
            return key
        return self._key(square, extra, extra_code)

    def _key(self, square: int, extra: int, extra_code: int) -> int:
        codes = self.codes
        key = 0
        for side in range(4):
            beyond = square + STEP[side]
            code = extra_code if beyond == extra else codes.get(beyond)
            edge = NO_EDGE if code is None else EDGES[code][(side + 2) % 4]
            key |= edge << (2 * side)
        return key

    def share(self, key: int) -> float:
        """The share of the remaining tiles that fit a square with requirement ``key``."""
        if not self.total:
            return 0.0
        fits = sum(count for tile, count in enumerate(self.remaining) if count and FITS[tile][key])
        return fits / self.total

    def fill(self, key: int, squares: int = 1) -> float:
        """The chance that a square with requirement ``key`` gets a tile before the end, when
        ``squares`` squares share the draws."""
        cached = key | squares << 8
        chance = self.fill_cache.get(cached)
        if chance is None:
            share = self.share(key) if self.draws else 0.0
            draws = self.draws / squares
            chance = min(FILL_CAP, 1.0 - (1.0 - share) ** draws) if share else 0.0
            self.fill_cache[cached] = chance
        return chance

    def completion(self, squares: set[int], extra: int = -1, extra_code: int = 0) -> float:
        """Chance that every square of ``squares`` is filled (``extra_code`` on ``extra``): each
        needs a tile of the draws left, which they share."""
        count = len(squares)
        if count > self.left:
            return 0.0
        chance = 1.0
        near = {extra + step for step in STEP} if extra >= 0 else ()
        for square in squares:
            if square in near:
                chance *= self.fill(self._key(square, extra, extra_code), count)
            else:
                chance *= self.fill(self.key(square), count)
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
        self,
        kind: int,
        tiles: int,
        pennants: int,
        ends: int,
        chance: float,
        owners: list[int],
        special: int = 0,
        large: int = 0,
    ) -> float:
        """Expected worth of a road or city (``special``: with an inn or cathedral), weighted
        by seat, less the tie-up of our own followers (``large`` of them our large follower,
        which ``owners`` counts twice)."""
        share = self._share(owners)
        if not share and not owners[self.me]:
            return 0.0
        unfinished, full = feature_points(kind, tiles, pennants, special)
        if not ends:
            return full * share
        worth = (chance * full + (1.0 - chance) * unfinished) * share
        mine = owners[self.me] - large
        if mine:
            worth -= self.follower_worth * (1.0 - chance + SLOW_RETURN * chance) * mine
        return worth

    def farm_value(
        self, cities: float, owners: list[int], pigs: set[int] | tuple = (), large: int = 0
    ) -> float:
        """A farm's worth: 3 per city to the seats with the most farmers, 1 more to each of
        them with a pig there."""
        worth = FARM_PER_CITY * cities * self._share(owners)
        most = max(owners)
        for seat in pigs:
            if most and owners[seat] == most:
                worth += PIG_PER_CITY * cities * self.weights[seat]
        return worth - self.follower_worth * (owners[self.me] - large)

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
        mine = min(1, owners[self.me])
        if mine:
            worth -= self.follower_worth * (1.0 - chance + SLOW_RETURN * chance) * mine
        return worth

    def _current_value(self, top: int, feature: Feature) -> float:
        kind = feature.kind
        if kind == FIELD:
            cities = sum(self.city_chance(town) for town in feature.links)
            return self.farm_value(cities, feature.owners, feature.pigs, feature.large)
        if kind == CLOISTER:
            return self.cloister_value(self.order[top >> 3][0], feature.owners)
        chance = self.completion(feature.squares) if feature.ends else 1.0
        tiles = len(feature.tiles)
        return self.value(
            kind,
            tiles,
            feature.pennants,
            feature.ends,
            chance,
            feature.owners,
            feature.special,
            feature.large,
        )

    # ------------------------------------------------------------------ placements

    def evaluate(
        self, square: int, code: int, choices: dict[int, tuple[str, ...]]
    ) -> dict[Choice, float]:
        """The worth of laying ``code`` on ``square`` with no piece, and with each piece of
        ``choices`` (spot: the pieces that may stand there)."""
        tile = code >> 2
        kinds = SEG_KIND[tile]
        codes = self.codes
        feats = self.feats
        me = self.me
        seats = self.seats
        joined, links, open_squares, members, find = joins(self, square, code)

        total = 0.0
        variants: dict[Choice, float] = {}
        city_after: dict[int, float] = {}
        """Per group of this tile's city features: its worth to a farm."""
        city_of_root: dict[int, int] = {}
        """Existing city roots merged into a group of this tile."""
        my_points: list[int] = []
        fields: list[tuple[int, list[int], set[int]]] = []
        pennant = SEG_PENNANT[tile]
        sides = SEG_SIDES[tile]
        special_of = SPECIAL[tile]
        goods_of = SEG_GOODS[tile]
        building = not self.extras.builder_turn

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
                for piece in choices.get(spot, ()):
                    owners = [0] * seats
                    owners[me] = 1
                    worth = self.cloister_value(square, owners, square, code)
                    if piece == LARGE:
                        worth += large_bonus(self, 0.0)  # a cloister is never contested
                    variants[spot, piece] = worth
                continue
            owners = [0] * seats
            ends = pennants = special = large = 0
            goods = [0, 0, 0]
            reach: set[int] = set()
            tiles_seen: set[int] = set()
            before = 0.0
            for top in tops:
                feature = feats[top]
                for seat, held in enumerate(feature.owners):
                    owners[seat] += held
                ends += feature.ends
                pennants += feature.pennants
                special += feature.special
                large += feature.large
                for good, symbols in enumerate(feature.goods):
                    goods[good] += symbols
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
                special += special_of[seg]
                if goods_of[seg] >= 0:
                    goods[goods_of[seg]] += 1
                reach.update(open_squares[seg])
            reach.discard(square)
            chance = self.completion(reach, square, code) if ends else 1.0
            shape = (kind, tiles, pennants, ends, chance)
            after = self.value(*shape, owners, special, large)
            total += after - before
            if self.builder in tops and building and self.draws:
                total += TURN_WORTH  # our builder's road or city: a second tile now
            if kind == CITY:
                worth = 1.0 if not ends else FARM_OPEN_CITY * chance
                city_after[rep] = worth
                for top in tops:
                    city_of_root[top] = rep
                if not ends and any(goods):
                    total += goods_gain(self, goods)
            most = max(owners)
            points = feature_points(kind, tiles, pennants, special)[1]
            if not ends and most and owners[me] == most:
                my_points.append(points)
            for spot in segs:
                for piece in choices.get(spot, ()):
                    if piece == BUILDER:
                        variants[spot, piece] = builder_value(self, reach, square, code)
                        continue
                    extra = 2 if piece == LARGE else 1
                    owners[me] += extra
                    worth = self.value(*shape, owners, special, large + extra - 1) - after
                    owners[me] -= extra
                    if piece == LARGE and ends:
                        unfinished, full = feature_points(kind, tiles, pennants, special)
                        worth += large_bonus(self, chance * full + (1.0 - chance) * unfinished)
                    elif piece == LARGE:
                        worth += large_bonus(self, 0.0)
                    variants[spot, piece] = worth
                if spot in choices and not ends and not most:
                    my_points.append(points)  # completed with our own new follower: scored now

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
                        for town in distinct_towns(feature.links, city_of_root)
                    )
                    after = self.farm_value(cities, feature.owners, feature.pigs, feature.large)
                    total += after - self.before.get(field, 0.0)
                    touched.add(field)
        city_segs = SEG_CITIES[tile]
        for _rep, segs, tops in fields:
            owners = [0] * seats
            before = 0.0
            large = 0
            pigs: set[int] = set()
            towns_old: set[int] = set()
            for top in tops:
                feature = feats[top]
                for seat, held in enumerate(feature.owners):
                    owners[seat] += held
                before += self.before.get(top, 0.0)
                towns_old |= feature.links
                large += feature.large
                pigs |= feature.pigs
            spot_here = [spot for spot in segs if spot in choices]
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
            after = self.farm_value(cities, owners, pigs, large) if any(owners) else 0.0
            total += after - before
            for spot in spot_here:
                for piece in choices[spot]:
                    if piece == PIG:
                        variants[spot, piece] = pig_value(self, cities, owners)
                        continue
                    extra = 2 if piece == LARGE else 1
                    owners[me] += extra
                    worth = self.farm_value(cities, owners, pigs, large + extra - 1) - after
                    owners[me] -= extra
                    if piece == LARGE:
                        worth += large_bonus(self, FARM_PER_CITY * cities)
                    variants[spot, piece] = worth

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
        values: dict[Choice, float] = {(None, FOLLOWER): total}
        for spot, pieces in choices.items():
            for piece in pieces:
                values[spot, piece] = total + variants.get((spot, piece), 0.0)
        return values
