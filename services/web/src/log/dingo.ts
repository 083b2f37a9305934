// The Dingo Ate the Baby's log: cards by colour, kind and value ("red baby (1)", as the table
// shows them), ranches by their owner, each day's roll and scores.
import type { DingoEvent } from "../client";
import { seatName } from "../games/names";
import { sayHosting } from "./hosting";
import { counted, listed, standings, won } from "./words";

/** What each removal keyword did to the card it removed. */
const REMOVED: Record<string, string> = {
  scare: "scared away",
  chase: "chased away",
  destroy: "destroyed",
  eat: "ate",
  stomp: "stomped on",
};
const DAY_ENDS: Record<string, string> = {
  discard_limit: "the discard pile is full",
  draw_pile_empty: "the draw pile ran out",
};

export function sayDingo(event: DingoEvent, players: string[]): string {
  const name = (seat: number) => seatName(players, seat);
  /** A ranch as the mover says it: their own, or its owner's. */
  const ranch = (seat: number, mover: number) =>
    seat === mover ? "their own ranch" : `${name(seat)}'s ranch`;
  switch (event.type) {
    case "GameStarted":
      return `The game began: first to ${counted(event.target_score, "point")}, ${name(event.first_player)} starts`;
    case "DayDealt": {
      const hand = event.hand ? `; your hand: ${listed(event.hand.map(card))}` : "";
      return `Day ${event.day} began: the die rolled ${event.roll}, each ranch aims at ${event.target}, ${name(event.start_player)} starts${hand}`;
    }
    case "CardPlayed":
      return `${name(event.seat)} played ${card(event.card)} on ${ranch(event.ranch, event.seat)}`;
    case "CardRemoved":
      return `${name(event.seat)}'s card ${REMOVED[event.keyword] ?? "removed"} ${card(event.card)} on ${ranch(event.ranch, event.seat)}`;
    case "ProtectedCardDestroyed":
      return `${name(event.seat)} destroyed their protected card, ${card(event.card)}`;
    case "CardDiscarded":
      return `${name(event.seat)} discarded ${card(event.card)}`;
    case "TurnEnded": {
      const drawn = event.cards ? `: ${listed(event.cards.map(card))}` : "";
      return `${name(event.seat)} drew ${counted(event.drawn, "card")}${drawn}`;
    }
    case "DayEnded":
      return `Day ${event.day} ended, ${DAY_ENDS[event.reason] ?? event.reason.replaceAll("_", " ")}: points ${standings(players, event.points)}; totals ${standings(players, event.totals)}`;
    case "GameEnded":
      return `The game is over: ${standings(players, event.totals)}; ${won(players, event.winners)}`;
    default:
      return sayHosting(event, players);
  }
}

/** "red baby (1)" from the card's id "red-baby-1". */
function card(id: string): string {
  const parts = id.split("-");
  const value = parts.pop();
  const colour = parts.shift();
  return `${colour} ${parts.join(" ")} (${value})`;
}
