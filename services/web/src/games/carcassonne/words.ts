// Carcassonne's pieces and places in words, for the table's controls and tooltips.
import { compass, featureKind, spotPoint } from "./geometry";

export const KIND_WORDS: Record<string, string> = {
  city: "city (knight)",
  road: "road (thief)",
  cloister: "cloister (monk)",
  field: "field (farmer)",
};

/** A follower spot of the drawn tile in words: the feature and where it lies on the tile
 * ("field (farmer), south-west"). */
export function spotLabel(letter: string, rotation: number, spot: number): string {
  const kind = featureKind(letter, spot);
  const what = (kind && KIND_WORDS[kind]) ?? `spot ${spot}`;
  return `${what}, ${compass(spotPoint(letter, rotation, spot))}`;
}

/** A follower on the board as message 8's choice: ``x,y,spot``. */
export function targetKey(x: number, y: number, spot: number): string {
  return `${x},${y},${spot}`;
}
