// The events any match may hold about its seats and clocks, whatever the game: timeouts,
// bots taking over, players leaving or coming back, a forfeit.
import type {
  BotTookOver,
  ClockUpdated,
  MatchForfeited,
  PlayerLeft,
  PlayerReseated,
  TurnTimedOut,
} from "../client";
import { seatName } from "../games/names";
import { names } from "./words";

export type HostingEvent =
  ClockUpdated | TurnTimedOut | PlayerLeft | BotTookOver | PlayerReseated | MatchForfeited;

const AFTER_TIMEOUT: Record<TurnTimedOut["policy"], string> = {
  bot: "a bot plays for them from now on",
  forfeit: "the match is forfeited",
  pass: "the turn passes",
};
const AFTER_LEAVING: Record<PlayerLeft["policy"], string> = {
  abandon: "the match is abandoned",
  bot: "a bot plays for them from now on",
};

export function sayHosting(event: HostingEvent, players: string[]): string {
  const name = (seat: number) => seatName(players, seat);
  switch (event.type) {
    case "ClockUpdated":
      return clocks(event, players);
    case "TurnTimedOut":
      return `${name(event.seat)} ran out of time: ${AFTER_TIMEOUT[event.policy]}`;
    case "PlayerLeft":
      return `${event.player || name(event.seat)} left the match: ${AFTER_LEAVING[event.policy]}`;
    case "BotTookOver":
      return `The bot ${event.bot} now plays for ${name(event.seat)}, who ${
        event.reason === "left" ? "left" : "ran out of time"
      }`;
    case "PlayerReseated":
      return event.from_bot
        ? `${event.player} is back as player ${event.seat + 1}, in place of the bot ${event.from_bot}`
        : `${event.player} now plays as player ${event.seat + 1}`;
    case "MatchForfeited":
      return `The match ended early: ${names(players, event.seats)} ${
        event.reason === "timeout" ? "ran out of time" : "left"
      }`;
  }
}

/** Who just used how long, and whose clock runs now. */
function clocks(event: ClockUpdated, players: string[]): string {
  const running =
    event.on_clock.length === 0
      ? "no clock runs"
      : `the clock runs for ${names(players, event.on_clock)}`;
  if (event.moved === null) return `Clocks set: ${running}`;
  const took = event.used_ms === null ? "" : ` in ${(event.used_ms / 1000).toFixed(1)} s`;
  return `${seatName(players, event.moved)} moved${took}; ${running}`;
}
