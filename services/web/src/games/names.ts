// Who a seat is, in words: the names every game's table uses (no styles, so any table may
// import it).

/** A seat's display name: the player's name as the match lists it, else "Seat n". */
export function seatName(players: string[], seat: number): string {
  const name = players[seat];
  return name && name.trim() ? name : `Seat ${seat + 1}`;
}

/** "you" for the caller's own seat, else the seat's name. */
export function whoName(players: string[], seat: number, you: number | null): string {
  return seat === you ? "you" : seatName(players, seat);
}

/** The seats' names joined with "and" ("nobody" for none). */
export function listNames(players: string[], seats: number[], you: number | null): string {
  return seats.map((seat) => whoName(players, seat, you)).join(" and ") || "nobody";
}

/** The text with its first letter in upper case, to begin a sentence. */
export function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
