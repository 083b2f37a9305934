// The caller's legal Carcassonne actions, sorted for the table's controls. Nothing here makes
// a move: every control sends one of the listed action objects unchanged.
import type { CarcassonneAction } from "../../client";

export type PlaceTile = Extract<CarcassonneAction, { type: "PlaceTile" }>;
export type CarryOut = Extract<CarcassonneAction, { type: "CarryOutMessage" }>;

/** One square the drawn tile may go on: per legal rotation, the listed placements (no
 * follower, and a follower on each spot that is free; with the expansions, the large
 * follower, builder or pig on each spot listed for them). */
export interface Square {
  x: number;
  y: number;
  key: string;
  rotations: number[];
  byRotation: Map<number, PlaceTile[]>;
}

export interface Sorted {
  squares: Map<string, Square>;
  figures: Extract<CarcassonneAction, { type: "ChooseFigure" }>[];
  carryOut: CarryOut[];
  takePoints: Extract<CarcassonneAction, { type: "TakeMessagePoints" }>[];
  preferences: Extract<CarcassonneAction, { type: "SetScoringPreference" }>[];
}

export function squareKey(x: number, y: number): string {
  return `${x},${y}`;
}

export function followerOf(action: PlaceTile): number | null {
  return action.follower ?? null;
}

/** The piece a placement puts on its spot ("follower" when it names none). */
export function pieceOf(action: PlaceTile): Piece {
  return action.piece ?? "follower";
}

export type Piece = NonNullable<PlaceTile["piece"]>;

/** The pieces in the order the table offers them. */
export const PIECES: readonly Piece[] = ["follower", "large_follower", "builder", "pig"];

/** A piece on a spot of the drawn tile, as the table's selection holds it. */
export interface Choice {
  spot: number;
  piece: Piece;
}

/** The spots and pieces listed among ``placements``, in the order of PIECES then spots. */
export function choicesOf(placements: readonly PlaceTile[]): Choice[] {
  const choices = placements.flatMap((a) => {
    const spot = followerOf(a);
    return spot === null ? [] : [{ spot, piece: pieceOf(a) }];
  });
  const rank = (c: Choice) => PIECES.indexOf(c.piece) * 100 + c.spot;
  return choices.sort((a, b) => rank(a) - rank(b));
}

/** After ``current`` on ``spot``, the next listed piece there (a click on a spot of the board
 * steps through them), or null after the last: none. */
export function nextChoice(
  choices: readonly Choice[],
  spot: number,
  current: Choice | null,
): Choice | null {
  const here = choices.filter((c) => c.spot === spot);
  if (!current || current.spot !== spot) return here[0] ?? null;
  const at = here.findIndex((c) => c.piece === current.piece);
  return here[at + 1] ?? null;
}

export function sortActions(actions: readonly CarcassonneAction[]): Sorted {
  const sorted: Sorted = {
    squares: new Map(),
    figures: [],
    carryOut: [],
    takePoints: [],
    preferences: [],
  };
  for (const action of actions) {
    switch (action.type) {
      case "PlaceTile": {
        const key = squareKey(action.x, action.y);
        let square = sorted.squares.get(key);
        if (!square) {
          square = { x: action.x, y: action.y, key, rotations: [], byRotation: new Map() };
          sorted.squares.set(key, square);
        }
        let list = square.byRotation.get(action.rotation);
        if (!list) {
          list = [];
          square.byRotation.set(action.rotation, list);
          square.rotations.push(action.rotation);
        }
        list.push(action);
        break;
      }
      case "ChooseFigure":
        sorted.figures.push(action);
        break;
      case "CarryOutMessage":
        sorted.carryOut.push(action);
        break;
      case "TakeMessagePoints":
        sorted.takePoints.push(action);
        break;
      case "SetScoringPreference":
        sorted.preferences.push(action);
        break;
    }
  }
  for (const square of sorted.squares.values()) square.rotations.sort((a, b) => a - b);
  return sorted;
}

/** The listed placement on ``square`` turned ``rotation`` with ``choice`` (null: no piece). */
export function placementWith(
  square: Square,
  rotation: number,
  choice: Choice | null,
): PlaceTile | null {
  const matches = (a: PlaceTile) =>
    choice === null
      ? followerOf(a) === null
      : followerOf(a) === choice.spot && pieceOf(a) === choice.piece;
  return (square.byRotation.get(rotation) ?? []).find(matches) ?? null;
}

/** The rotation ``step`` places after ``rotation`` in ``square``'s listed ones (wrapping round;
 * a negative step goes back). */
export function nextRotation(square: Square, rotation: number, step: number): number {
  const list = square.rotations;
  const at = (((list.indexOf(rotation) + step) % list.length) + list.length) % list.length;
  return list[at] ?? rotation;
}
