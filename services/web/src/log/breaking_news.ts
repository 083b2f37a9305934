// Breaking News' log: draws, placements, called news and completed objects with their stories,
// as players say them. Element cards are said by where they went, not by number.
import type { BreakingNewsEvent } from "../client";
import { seatName } from "../games/names";
import { sayHosting } from "./hosting";
import { counted, names, standings, won } from "./words";

const FINAL_ROUNDS: Record<string, string> = {
  objects_completed: "enough objects are completed",
  deck_empty: "the element deck is empty",
};

/** Says each event in turn, keeping whose each completed story is (a vote names a story by
 * its place among them). */
export function breakingNewsTeller(players: string[]): (event: BreakingNewsEvent) => string {
  const storytellers: number[] = [];
  return (event) => {
    if (event.type === "ObjectCompleted") storytellers.push(event.seat);
    return sayBreakingNews(event, storytellers, players);
  };
}

function sayBreakingNews(
  event: BreakingNewsEvent,
  storytellers: number[],
  players: string[],
): string {
  const name = (seat: number) => seatName(players, seat);
  switch (event.type) {
    case "DecksShuffled":
      return `The decks were shuffled: ${counted(event.element_cards, "element card")}, ${counted(event.object_cards, "object card")}`;
    case "StartingCardPlaced":
      return `${name(event.seat)}'s starting card was laid out at (${event.x}, ${event.y})`;
    case "StartingCardSetAside":
      return "An element card fitted nowhere to start and went under the deck";
    case "ElementDrawn":
      return `${name(event.seat)} drew an element card`;
    case "ObjectDrawn":
      return `${name(event.seat)} drew an object card`;
    case "ObjectOpened":
      return "An object card was laid open beside the deck";
    case "CardPlaced":
      return `${name(event.seat)} placed an element card at (${event.x}, ${event.y})`;
    case "HandReturned":
      return `${name(event.seat)} passed, putting ${counted(event.count, "card")} under the deck`;
    case "BreakingNewsCalled":
      return `${name(event.seat)} called breaking news!`;
    case "StoryInterrupted":
      return `${name(event.reported_by)} heard ${name(event.seat)} fall silent: the story ends unfinished`;
    case "ObjectCompleted":
      return `${name(event.seat)} completed an object for ${counted(event.points, "point")}: “${event.story}”`;
    case "CardTurnedFaceDown":
      return "The middle card of the chain was turned face down";
    case "FinalRoundStarted":
      return `The final round began, ${FINAL_ROUNDS[event.reason] ?? event.reason.replaceAll("_", " ")}: everyone but ${name(event.seat)} has one more turn`;
    case "TurnEnded":
      return `${name(event.seat)} ended their turn`;
    case "VotingOpened":
      return `${names(players, event.tied)} are tied: ${names(players, event.voters)} vote for the most interesting story`;
    case "VoteCast": {
      const teller = storytellers[event.story];
      const story = teller === undefined ? `story ${event.story + 1}` : `${name(teller)}'s story`;
      return `${name(event.seat)} voted for ${story}`;
    }
    case "GameEnded":
      return `The game is over: ${standings(players, event.scores)}; ${won(players, event.winners)}`;
    default:
      return sayHosting(event, players);
  }
}
