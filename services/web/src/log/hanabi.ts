// Hanabi's log: plays, discards and clues as players say them, cards by their slot in the hand
// (1 from the left, as the table shows a hand: oldest card first), which the log keeps by
// folding the deal, the draws and the cards that left each hand. A card's face is said only
// when the event carries it (a player's own draws do not).
import type { HanabiEvent } from "../client";
import { seatName } from "../games/names";
import { sayHosting } from "./hosting";
import { counted, listed } from "./words";

/** Each seat's hand: the orders of its cards, left to right. */
type Hands = number[][];

const ENDINGS: Record<string, string> = {
  perfect: "every firework is complete",
  strike_out: "the third fuse burned",
  deck_out: "the deck ran out and the last round is over",
};

/** Says each event in turn, keeping the hands its slots are counted in. */
export function hanabiTeller(players: string[]): (event: HanabiEvent) => string {
  let hands: Hands = [];
  return (event) => {
    const line = sayHanabi(event, hands, players);
    hands = foldHands(hands, event);
    return line;
  };
}

function sayHanabi(event: HanabiEvent, hands: Hands, players: string[]): string {
  const name = (seat: number) => seatName(players, seat);
  switch (event.type) {
    case "CardsDealt":
      return `The cards were dealt: ${counted(event.hands[0]?.length ?? 0, "card")} each, ${counted(event.deck_size, "card")} left in the deck`;
    case "ClueGiven": {
      const about = event.colour ? `${event.colour} cards` : `${event.rank}s`;
      const touched = slotsOf(hands[event.target], event.touched);
      return `${name(event.seat)} clued ${name(event.target)}'s ${about}: ${touched}`;
    }
    case "CardPlayed":
      return `${name(event.seat)} played ${event.suit} ${event.rank}${from(hands[event.seat], event.card)}`;
    case "CardMisplayed":
      return `${name(event.seat)} misplayed ${event.suit} ${event.rank}${from(hands[event.seat], event.card)}`;
    case "FuseBurned":
      return `A fuse burned (${event.fuses_burned} of 3)`;
    case "CardDiscarded":
      return `${name(event.seat)} discarded ${event.suit} ${event.rank}${from(hands[event.seat], event.card)}`;
    case "CardDrawn":
      return event.suit && event.rank !== null && event.rank !== undefined
        ? `${name(event.seat)} drew ${event.suit} ${event.rank}`
        : `${name(event.seat)} drew a card`;
    case "GameEnded":
      return `The game ended, ${ENDINGS[event.reason] ?? event.reason.replaceAll("_", " ")}: score ${event.score}`;
    default:
      return sayHosting(event, players);
  }
}

/** The slots (1 from the left) of the touched cards: "slots 2 and 4", "no card". */
function slotsOf(hand: number[] | undefined, touched: number[]): string {
  if (touched.length === 0) return "no card";
  const slots = touched.map((order) => (hand?.indexOf(order) ?? -1) + 1);
  if (slots.some((slot) => slot === 0)) return counted(touched.length, "card");
  const sorted = slots.sort((a, b) => a - b).map(String);
  return `${sorted.length === 1 ? "slot" : "slots"} ${listed(sorted)}`;
}

/** " from slot 3", or nothing when the hand is not known. */
function from(hand: number[] | undefined, order: number): string {
  const slot = (hand?.indexOf(order) ?? -1) + 1;
  return slot === 0 ? "" : ` from slot ${slot}`;
}

/** The hands after `event`: dealt, a card gone from one, a card drawn to its right end. */
function foldHands(hands: Hands, event: HanabiEvent): Hands {
  switch (event.type) {
    case "CardsDealt":
      return event.hands.map((hand) => hand.map((card) => card.order));
    case "CardPlayed":
    case "CardMisplayed":
    case "CardDiscarded":
      return hands.map((hand, seat) =>
        seat === event.seat ? hand.filter((order) => order !== event.card) : hand,
      );
    case "CardDrawn":
      return hands.map((hand, seat) => (seat === event.seat ? [...hand, event.card] : hand));
    default:
      return hands;
  }
}
