// The words every game's log lines are made of: a seat as its player's name, lists and
// standings as a person says them.
import { seatName } from "../games/names";

/** "Ada", "Ada and Bob", "Ada, Bob and Carol" ("nobody" for none). */
export function listed(items: string[]): string {
  if (items.length === 0) return "nobody";
  if (items.length === 1) return items[0] ?? "";
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** The seats' names, listed. */
export function names(players: string[], seats: number[]): string {
  return listed(seats.map((seat) => seatName(players, seat)));
}

/** "Ada 12, Bob 9": each seat's name with its figure. */
export function standings(players: string[], figures: number[]): string {
  return figures.map((figure, seat) => `${seatName(players, seat)} ${figure}`).join(", ");
}

/** "1 card", "3 cards". */
export function counted(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** The winners of a finished game, in a clause: "Ada won", "Ada and Bob share the win". */
export function won(players: string[], winners: number[]): string {
  if (winners.length === 0) return "nobody won";
  return winners.length === 1
    ? `${names(players, winners)} won`
    : `${names(players, winners)} share the win`;
}
