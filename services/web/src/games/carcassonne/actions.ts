// The caller's legal Carcassonne actions, sorted for the table's controls. Nothing here makes
// a move: every control sends one of the listed action objects unchanged.
import type { CarcassonneAction } from "../../client";

export type PlaceTile = Extract<CarcassonneAction, { type: "PlaceTile" }>;
export type CarryOut = Extract<CarcassonneAction, { type: "CarryOutMessage" }>;

/** One square the drawn tile may go on: per legal rotation, the listed placements (no
 * follower, and a follower on each spot that is free). */
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

/** The listed placement on ``square`` turned ``rotation`` with ``follower`` (null: none). */
export function placementWith(
  square: Square,
  rotation: number,
  follower: number | null,
): PlaceTile | null {
  return (square.byRotation.get(rotation) ?? []).find((a) => followerOf(a) === follower) ?? null;
}

/** The rotation ``step`` places after ``rotation`` in ``square``'s listed ones (wrapping round;
 * a negative step goes back). */
export function nextRotation(square: Square, rotation: number, step: number): number {
  const list = square.rotations;
  const at = (((list.indexOf(rotation) + step) % list.length) + list.length) % list.length;
  return list[at] ?? rotation;
}
