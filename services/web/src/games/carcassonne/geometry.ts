// Carcassonne tile pictures, built from the game's own tile data (seeds/carcassonne/tiles.json,
// bundled at build time: static game data, not a server API).
//
// Every tile is described unrotated, north up, as in tiles.json: each side has three ports
// (Nw N Ne En E Es Se S Sw Ws W Wn, clockwise from the north-west corner). A city owns all
// three ports of each side it reaches, a road the centre port of each side it reaches, a field
// the ports of its area, a cloister none. From that this module draws simple shapes in a
// 100 x 100 box (SVG coordinates: y grows downwards): a city as a cap, corner, band, U or
// the whole square by the set of sides it owns; a road as a straight or curved band between
// side centres, or from one side centre to the middle; a cloister as a building in the middle.
// Fields are what is left; a small grid flood-fill (roads, cities and cloisters as walls,
// every field growing from its own ports) finds each field's area, so that each feature gets a
// follower spot that lies inside it ("anchor"), and each pennant a place inside its city.
// A field with no ports (enclosed by cities) gets the open cells no other field reached. The
// expansions' marks get places of their own: an inn beside its road, a cathedral and a goods
// symbol inside their city, clear of the follower's spot.
import innsJson from "../../../../../seeds/carcassonne/inns_cathedrals.json";
import tilesJson from "../../../../../seeds/carcassonne/tiles.json";
import tradersJson from "../../../../../seeds/carcassonne/traders_builders.json";

export type FeatureKind = "city" | "road" | "field" | "cloister";

export interface FeatureData {
  kind: FeatureKind;
  ports?: string[];
  pennant?: boolean;
  cities?: number[];
  /** Inns & Cathedrals: a road's inn, a city's cathedral. */
  inn?: boolean;
  cathedral?: boolean;
  /** Traders & Builders: a city's goods symbol. */
  goods?: Good;
}

/** Traders & Builders' goods, in the order the engine counts them (tiles.GOODS). */
export const GOODS = ["wine", "grain", "cloth"] as const;
export type Good = (typeof GOODS)[number];

export interface TileData {
  letter: string;
  count: number;
  description: string;
  features: FeatureData[];
}

interface TilesFile {
  start_tile: string;
  ports: string[];
  tiles: TileData[];
}

const DATA = tilesJson as unknown as TilesFile;
/** The expansions' land tiles, described like the base tiles (letters IA.., TA..). */
const INNS = (innsJson as unknown as { tiles: TileData[] }).tiles;
const TRADERS = (tradersJson as unknown as { tiles: TileData[] }).tiles;
const PORT_NAMES: readonly string[] = DATA.ports;
export const TILES: ReadonlyMap<string, TileData> = new Map(
  [...DATA.tiles, ...INNS, ...TRADERS].map((t) => [t.letter, t]),
);

/** The tiles in a match: the base game's, and each expansion's it plays. */
export function totalTiles(innsCathedrals: boolean, tradersBuilders: boolean): number {
  const sets = [DATA.tiles, innsCathedrals ? INNS : [], tradersBuilders ? TRADERS : []];
  return sets.flat().reduce((sum, t) => sum + t.count, 0);
}

export type Pt = readonly [number, number];

/** What to draw for a feature (in the tile's unrotated 100 x 100 box). */
export interface FeatureShape {
  index: number;
  kind: FeatureKind;
  /** city: the outline; cloister: the building's outline. */
  polygon?: Pt[];
  /** road: its centre line. */
  line?: Pt[];
  /** Where a follower on this feature stands. */
  anchor: Pt;
  /** city with a pennant: where the pennant is drawn. */
  pennant?: Pt;
  /** road with an inn: where the inn stands, beside the road. */
  inn?: Pt;
  /** city with a cathedral: where it stands. */
  cathedral?: Pt;
  /** city with goods: the good and where its symbol is drawn. */
  goods?: { good: Good; at: Pt };
}

export interface TileShape {
  features: FeatureShape[];
  /** Three or more roads end in the middle: a junction (a small village) is drawn there. */
  junction: boolean;
  /** Where two fields meet with no road or city between them (a few expansion tiles split a
   * field so): the line drawn between them, as an SVG path. */
  hedge: string;
}

// ------------------------------------------------------------------ ports and sides

/** The index 0..11 of a port name, clockwise from the north-west corner as tiles.json lists
 * them: the side (N E S W = 0..3) is ``index / 3`` rounded down, the place along it
 * ``index % 3``. */
function portIndex(name: string): number {
  const index = PORT_NAMES.indexOf(name);
  if (index < 0) throw new Error(`unknown port ${name}`);
  return index;
}

const SIDE_MID: readonly Pt[] = [
  [50, 0],
  [100, 50],
  [50, 100],
  [0, 50],
];

/** A point just inside the tile at port ``p`` (0..11, clockwise from the north-west corner). */
function portPoint(p: number, inset: number): Pt {
  const side = Math.floor(p / 3);
  const along = [20, 50, 80][p % 3] ?? 50;
  switch (side) {
    case 0:
      return [along, inset];
    case 1:
      return [100 - inset, along];
    case 2:
      return [100 - along, 100 - inset];
    default:
      return [inset, 100 - along];
  }
}

/** Turn a point of the unrotated box ``quarter`` clockwise quarter turns about the middle. */
function rotatePoint(point: Pt, quarter: number): Pt {
  let [x, y] = point;
  for (let i = 0; i < ((quarter % 4) + 4) % 4; i++) [x, y] = [100 - y, x];
  return [x, y];
}

function rotateAll(points: Pt[], quarter: number): Pt[] {
  return points.map((p) => rotatePoint(p, quarter));
}

/** Points of the quadratic Bézier a -> b with control c (``steps`` segments, a excluded). */
function quad(a: Pt, c: Pt, b: Pt, steps = 14): Pt[] {
  const out: Pt[] = [];
  for (let i = 1; i <= steps; i++) {
    const t = i / steps;
    const u = 1 - t;
    out.push([
      u * u * a[0] + 2 * u * t * c[0] + t * t * b[0],
      u * u * a[1] + 2 * u * t * c[1] + t * t * b[1],
    ]);
  }
  return out;
}

// ------------------------------------------------------------------ city outlines

/** The outline of a city owning ``sides`` (a set of N E S W = 0..3), unrotated. Canonical
 * shapes for {N}, {N, E}, {N, S}, {W, N, E} turned to the set asked for. */
function cityPolygon(sides: Set<number>): Pt[] {
  const canon: Array<[number[], () => Pt[]]> = [
    [[0], () => [[0, 0], [100, 0], ...quad([100, 0], [50, 50], [0, 0])]],
    [[0, 1], () => [[0, 0], [100, 0], [100, 100], ...quad([100, 100], [38, 62], [0, 0])]],
    [
      [0, 2],
      () => [
        [0, 0],
        [100, 0],
        ...quad([100, 0], [62, 50], [100, 100]),
        [0, 100],
        ...quad([0, 100], [38, 50], [0, 0]),
      ],
    ],
    [[3, 0, 1], () => [[0, 0], [100, 0], [100, 100], ...quad([100, 100], [50, 30], [0, 100])]],
  ];
  if (sides.size === 4)
    return [
      [0, 0],
      [100, 0],
      [100, 100],
      [0, 100],
    ];
  for (const [canonSides, make] of canon) {
    if (canonSides.length !== sides.size) continue;
    for (let q = 0; q < 4; q++) {
      if (canonSides.every((s) => sides.has((s + q) % 4))) return rotateAll(make(), q);
    }
  }
  // A city reaches at least one side, and the shapes above, turned, cover every set of sides.
  throw new Error(`no city outline for sides ${[...sides].join(",")}`);
}

// ------------------------------------------------------------------ flood-filling fields

const GRID = 50; // cells per side; a cell is 2 x 2 units
const CELL = 100 / GRID;
const ROAD_HALF = 5.5;

function insidePolygon(p: Pt, poly: Pt[]): boolean {
  let inside = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i] as Pt;
    const [xj, yj] = poly[j] as Pt;
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi)
      inside = !inside;
  }
  return inside;
}

function distToSegment(p: Pt, a: Pt, b: Pt): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const len = dx * dx + dy * dy;
  const t =
    len === 0 ? 0 : Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len));
  return Math.hypot(p[0] - (a[0] + t * dx), p[1] - (a[1] + t * dy));
}

function nearLine(p: Pt, line: Pt[], within: number): boolean {
  for (let i = 1; i < line.length; i++)
    if (distToSegment(p, line[i - 1] as Pt, line[i] as Pt) <= within) return true;
  return false;
}

function cellCentre(i: number): Pt {
  return [((i % GRID) + 0.5) * CELL, (Math.floor(i / GRID) + 0.5) * CELL];
}

function cellAt(p: Pt): number {
  const cx = Math.min(GRID - 1, Math.max(0, Math.floor(p[0] / CELL)));
  const cy = Math.min(GRID - 1, Math.max(0, Math.floor(p[1] / CELL)));
  return cy * GRID + cx;
}

/** Per cell, the distance (in cells, 4-neighbour steps) to the nearest cell outside ``inside``
 * or to the tile's border. */
function depth(inside: (i: number) => boolean): Int32Array {
  const dist = new Int32Array(GRID * GRID).fill(-1);
  const queue: number[] = [];
  for (let i = 0; i < GRID * GRID; i++) {
    const x = i % GRID;
    const y = Math.floor(i / GRID);
    if (!inside(i)) {
      dist[i] = 0;
      queue.push(i);
    } else if (x === 0 || y === 0 || x === GRID - 1 || y === GRID - 1) {
      dist[i] = 1;
      queue.push(i);
    }
  }
  for (let head = 0; head < queue.length; head++) {
    const i = queue[head] as number;
    for (const j of neighbours(i)) {
      if (dist[j] === -1) {
        dist[j] = (dist[i] as number) + 1;
        queue.push(j);
      }
    }
  }
  return dist;
}

function neighbours(i: number): number[] {
  const x = i % GRID;
  const y = Math.floor(i / GRID);
  const out: number[] = [];
  if (x > 0) out.push(i - 1);
  if (x < GRID - 1) out.push(i + 1);
  if (y > 0) out.push(i - GRID);
  if (y < GRID - 1) out.push(i + GRID);
  return out;
}

/** The deepest cell of a region (ties: the one nearest ``prefer``), as a point: deep enough
 * counts as ``enough`` cells from the region's edge. */
function deepest(
  region: (i: number) => boolean,
  prefer: Pt,
  avoid: Pt[] = [],
  avoidWithin = 0,
  enough = 6,
): Pt | null {
  const dist = depth(region);
  let best = -1;
  let bestScore = -Infinity;
  for (let i = 0; i < GRID * GRID; i++) {
    if (!region(i)) continue;
    const c = cellCentre(i);
    if (avoid.some((a) => Math.hypot(a[0] - c[0], a[1] - c[1]) < avoidWithin)) continue;
    // Deep enough for a marker (about 12 units) counts fully; beyond that, stay near ``prefer``.
    const d = Math.min(dist[i] as number, enough);
    const score = d * 100 - Math.hypot(c[0] - prefer[0], c[1] - prefer[1]);
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  }
  return best < 0 ? null : cellCentre(best);
}

// ------------------------------------------------------------------ a whole tile

function buildShape(tile: TileData): TileShape {
  const features: FeatureShape[] = [];
  const singleRoads = tile.features.filter(
    (f) => f.kind === "road" && (f.ports ?? []).length === 1,
  ).length;
  const hasCloister = tile.features.some((f) => f.kind === "cloister");
  const junction = singleRoads >= 3 || (singleRoads === 2 && !hasCloister);
  const cities: Pt[][] = [];
  const roads: Pt[][] = [];
  let cloister: Pt[] | null = null;
  // A road that ends at a city (no cloister or junction in the middle) runs on to the city's
  // edge nearest the middle, unless the middle is in a city already.
  const cityOutlines = tile.features
    .filter((f) => f.kind === "city")
    .map((f) => cityPolygon(new Set(centreSidesOf(f))));
  const cityEnd =
    hasCloister || junction || cityOutlines.some((poly) => insidePolygon([50, 50], poly))
      ? null
      : nearestVertex(cityOutlines.flat(), [50, 50]);

  tile.features.forEach((feature, index) => {
    const centreSides = centreSidesOf(feature);
    if (feature.kind === "city") {
      const polygon = cityPolygon(new Set(centreSides));
      cities.push(polygon);
      features.push({ index, kind: "city", polygon, anchor: [50, 50] });
    } else if (feature.kind === "road") {
      let line: Pt[];
      const [a, b] = centreSides;
      if (a === undefined) {
        line = [[50, 50]];
      } else if (b === undefined && cityEnd) {
        line = [SIDE_MID[a] as Pt, ...quad(SIDE_MID[a] as Pt, [50, 50], cityEnd)];
      } else if (b === undefined) {
        line = [SIDE_MID[a] as Pt, [50, 50]];
      } else if ((a + 2) % 4 === b) {
        line = [SIDE_MID[a] as Pt, SIDE_MID[b] as Pt];
      } else {
        line = [SIDE_MID[a] as Pt, ...quad(SIDE_MID[a] as Pt, [50, 50], SIDE_MID[b] as Pt)];
      }
      roads.push(line);
      features.push({ index, kind: "road", line, anchor: [50, 50] });
    } else if (feature.kind === "cloister") {
      cloister = [
        [35, 38],
        [50, 26],
        [65, 38],
        [65, 68],
        [35, 68],
      ];
      features.push({ index, kind: "cloister", polygon: cloister, anchor: [50, 52] });
    } else {
      features.push({ index, kind: "field", anchor: [50, 50] });
    }
  });

  // What each cell is: a wall (city, road, cloister) or open field.
  const wall = new Uint8Array(GRID * GRID);
  const cityOf = new Int16Array(GRID * GRID).fill(-1);
  for (let i = 0; i < GRID * GRID; i++) {
    const c = cellCentre(i);
    features.forEach((f) => {
      if (f.kind === "city" && f.polygon && insidePolygon(c, f.polygon)) {
        wall[i] = 1;
        if (cityOf[i] === -1) cityOf[i] = f.index;
      } else if (
        f.kind === "road" &&
        f.line &&
        f.line.length > 1 &&
        nearLine(c, f.line, ROAD_HALF)
      ) {
        wall[i] = 1;
      }
    });
    if (cloister && insidePolygon(c, cloister)) wall[i] = 1;
    if (junction && Math.hypot(c[0] - 50, c[1] - 50) < 10) wall[i] = 1;
  }

  // Fields: grow every field from its own ports through open cells, nearest first.
  const owner = new Int16Array(GRID * GRID).fill(-1);
  let frontier: number[] = [];
  features.forEach((f) => {
    if (f.kind !== "field") return;
    const ports = (tile.features[f.index]?.ports ?? []).map(portIndex);
    for (const p of ports) {
      for (let inset = 1; inset < 40; inset += CELL) {
        const cell = cellAt(portPoint(p, inset));
        if (!wall[cell]) {
          if (owner[cell] === -1) {
            owner[cell] = f.index;
            frontier.push(cell);
          }
          break;
        }
      }
    }
  });
  while (frontier.length) {
    const next: number[] = [];
    for (const i of frontier) {
      for (const j of neighbours(i)) {
        if (!wall[j] && owner[j] === -1) {
          owner[j] = owner[i] as number;
          next.push(j);
        }
      }
    }
    frontier = next;
  }
  // A field with no ports lies between cities: it is the open ground no other field reached.
  const enclosed = features.find(
    (f) => f.kind === "field" && !tile.features[f.index]?.ports?.length,
  );
  if (enclosed) {
    for (let i = 0; i < GRID * GRID; i++)
      if (!wall[i] && owner[i] === -1) owner[i] = enclosed.index;
  }

  const taken: Pt[] = [];
  // Cloisters and roads first: their spots are fixed by the drawing.
  for (const f of features) {
    if (f.kind === "road" && f.line) {
      const line = f.line;
      if (line.length === 2 && (line[1] as Pt)[0] === 50 && (line[1] as Pt)[1] === 50) {
        // from a side to the middle: a little short of halfway in from the side (clear of a
        // junction or a cloister)
        const [a, b] = line as [Pt, Pt];
        f.anchor = [a[0] + (b[0] - a[0]) * 0.45, a[1] + (b[1] - a[1]) * 0.45];
      } else {
        f.anchor = line[Math.floor(line.length / 2)] ?? [50, 50];
        if (line.length === 2)
          f.anchor = [
            ((line[0] as Pt)[0] + (line[1] as Pt)[0]) / 2,
            ((line[0] as Pt)[1] + (line[1] as Pt)[1]) / 2,
          ];
      }
      taken.push(f.anchor);
    } else if (f.kind === "cloister") {
      taken.push(f.anchor);
    }
  }
  for (const f of features) {
    if (f.kind === "city") {
      const mine = (i: number) => cityOf[i] === f.index;
      const centre = areaCentre(mine);
      f.anchor = deepest(mine, centre, taken, 14) ?? deepest(mine, centre) ?? centre;
      taken.push(f.anchor);
      const data = tile.features[f.index];
      const marks: Pt[] = [f.anchor];
      // a cathedral or goods keeps 30 units clear of a follower on the city's spot if it can
      const place = (clear = 22) => {
        const at =
          deepest(mine, centre, marks, clear, 8) ??
          deepest(mine, centre, marks, 22, 8) ??
          deepest(mine, centre, marks, 12) ??
          f.anchor;
        marks.push(at);
        return at;
      };
      if (data?.cathedral) f.cathedral = place(30);
      if (data?.pennant) f.pennant = place();
      if (data?.goods) f.goods = { good: data.goods, at: place(30) };
    }
  }
  for (const f of features) {
    if (f.kind === "road" && f.line && tile.features[f.index]?.inn) {
      f.inn = beside(f.line, (p) => !wall[cellAt(p)]);
    }
  }
  for (const f of features) {
    if (f.kind === "field") {
      const mine = (i: number) => owner[i] === f.index;
      const prefer = areaCentre(mine);
      f.anchor = deepest(mine, prefer, taken, 16) ?? deepest(mine, prefer) ?? prefer;
      taken.push(f.anchor);
    }
  }
  return { features, junction, hedge: hedgeBetween(owner) };
}

/** The cell edges where two fields' cells meet, as one SVG path. */
function hedgeBetween(owner: Int16Array): string {
  let path = "";
  for (let i = 0; i < GRID * GRID; i++) {
    const mine = owner[i] as number;
    if (mine < 0) continue;
    const [x, y] = [(i % GRID) * CELL, Math.floor(i / GRID) * CELL];
    const right = i % GRID < GRID - 1 ? (owner[i + 1] as number) : -1;
    const below = i + GRID < GRID * GRID ? (owner[i + GRID] as number) : -1;
    if (right >= 0 && right !== mine) path += `M${x + CELL},${y}v${CELL}`;
    if (below >= 0 && below !== mine) path += `M${x},${y + CELL}h${CELL}`;
  }
  return path;
}

/** The sides (N E S W = 0..3) whose centre port a feature owns. */
function centreSidesOf(feature: FeatureData): number[] {
  const ports = (feature.ports ?? []).map(portIndex);
  return ports.filter((p) => p % 3 === 1).map((p) => (p - 1) / 3);
}

function nearestVertex(points: Pt[], to: Pt): Pt | null {
  let best: Pt | null = null;
  for (const p of points)
    if (
      !best ||
      Math.hypot(p[0] - to[0], p[1] - to[1]) < Math.hypot(best[0] - to[0], best[1] - to[1])
    )
      best = p;
  return best;
}

/** A place for an inn beside a road: a third of the way along it, 14 units to one side (the
 * side that is ``open``, tried left first), kept inside the tile. */
function beside(line: Pt[], open: (p: Pt) => boolean): Pt {
  const i = Math.max(1, Math.round((line.length - 1) / 3));
  const a = line[i - 1] as Pt;
  const b = line[i] as Pt;
  const length = Math.hypot(b[0] - a[0], b[1] - a[1]) || 1;
  const normal: Pt = [-(b[1] - a[1]) / length, (b[0] - a[0]) / length];
  const at = line.length === 2 ? [a[0] + (b[0] - a[0]) / 3, a[1] + (b[1] - a[1]) / 3] : a;
  const clamp = (v: number) => Math.min(88, Math.max(12, v));
  const sides = [1, -1].map((k): Pt => [
    clamp(at[0] + k * 14 * normal[0]),
    clamp(at[1] + k * 14 * normal[1]),
  ]);
  return sides.find(open) ?? (sides[0] as Pt);
}

/** The centre of a region's area (the tile's middle for an empty region). */
function areaCentre(region: (i: number) => boolean): Pt {
  let x = 0;
  let y = 0;
  let n = 0;
  for (let i = 0; i < GRID * GRID; i++) {
    if (!region(i)) continue;
    const c = cellCentre(i);
    x += c[0];
    y += c[1];
    n++;
  }
  return n ? [x / n, y / n] : [50, 50];
}

const shapes = new Map<string, TileShape>();

/** The drawing of a tile letter (unrotated), computed once per letter. */
export function tileShape(letter: string): TileShape | null {
  let shape = shapes.get(letter);
  if (!shape) {
    const tile = TILES.get(letter);
    if (!tile) return null;
    shape = buildShape(tile);
    shapes.set(letter, shape);
  }
  return shape;
}

/** Where a follower on feature ``spot`` of ``letter`` turned ``rotation`` stands, in the
 * tile's 100 x 100 box on the board. */
export function spotPoint(letter: string, rotation: number, spot: number): Pt {
  const feature = tileShape(letter)?.features[spot];
  return rotatePoint(feature?.anchor ?? [50, 50], rotation);
}

const COMPASS = [
  "north",
  "north-east",
  "east",
  "south-east",
  "south",
  "south-west",
  "west",
  "north-west",
];

/** Where a point of a tile's 100 x 100 box lies, as a compass word (north is up): "centre"
 * near the middle. */
export function compass(point: Pt): string {
  const dx = point[0] - 50;
  const dy = point[1] - 50;
  if (Math.hypot(dx, dy) < 12) return "centre";
  const eighth = Math.round(Math.atan2(dx, -dy) / (Math.PI / 4));
  return COMPASS[((eighth % 8) + 8) % 8] ?? "centre";
}

export function featureKind(letter: string, spot: number): FeatureKind | null {
  return TILES.get(letter)?.features[spot]?.kind ?? null;
}

export function pathOf(points: readonly Pt[], close: boolean): string {
  return (
    points.map((p, i) => `${i ? "L" : "M"}${p[0].toFixed(1)},${p[1].toFixed(1)}`).join("") +
    (close ? "Z" : "")
  );
}
