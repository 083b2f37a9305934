// What the lobby's create form may send, from the catalogue: the options whose requirements
// hold (`requires`) and the numbers of players the chosen options allow
// (`players_requirements`: Carcassonne's sixth seat needs a sixth colour).
import type { CreateTable, GameInfo, GameOption } from "../client";

/** An option's value as its field holds it: absent means the game's default. */
export type Chosen = NonNullable<CreateTable["options"]>;
/** Options at values, as the catalogue states a requirement. */
type Settings = Record<string, unknown>;

/** Whether every option of `settings` has its value (chosen, else the default). */
function settingsHold(settings: Settings, game: GameInfo, chosen: Chosen): boolean {
  return Object.entries(settings).every(([name, wanted]) => {
    const option = game.options.find((candidate) => candidate.name === name);
    return (chosen[name] ?? option?.default) === wanted;
  });
}

/** Options at values in the titles a person reads ("The Messengers and no Inns & Cathedrals"). */
function settingsText(settings: Settings, game: GameInfo): string {
  const parts = Object.entries(settings).map(([name, wanted]) => {
    const title = game.options.find((candidate) => candidate.name === name)?.title ?? name;
    return typeof wanted === "boolean" ? (wanted ? title : `no ${title}`) : `${title} ${wanted}`;
  });
  return parts.join(" and ");
}

/** Whether every option `option` requires has its value. */
export function requirementsMet(option: GameOption, game: GameInfo, chosen: Chosen): boolean {
  return settingsHold(option.requires ?? {}, game, chosen);
}

/** What a dependent option waits for, in the titles a person reads. */
export function requirementText(option: GameOption, game: GameInfo): string {
  return `needs ${settingsText(option.requires ?? {}, game)}`;
}

/** The options to send: those chosen whose requirements hold (an option whose requirement was
 * turned off again is not sent, as the form disables it). */
export function optionsToSend(game: GameInfo, chosen: Chosen): Chosen {
  return Object.fromEntries(
    Object.entries(chosen).filter(([name]) => {
      const option = game.options.find((candidate) => candidate.name === name);
      return option !== undefined && requirementsMet(option, game, chosen);
    }),
  );
}

/** The numbers of players the game takes only with options not chosen. */
function playersWanting(game: GameInfo, chosen: Chosen) {
  return (game.players_requirements ?? []).filter(
    (requirement) =>
      !requirement.requires_any.some((settings) => settingsHold(settings, game, chosen)),
  );
}

/** The most players the chosen options allow: below the fewest still wanting options (a seat
 * count is a range, without holes). */
export function maxSeats(game: GameInfo, chosen: Chosen): number {
  const wanting = playersWanting(game, chosen).map((requirement) => requirement.players);
  return Math.min(game.max_players, ...wanting.map((players) => players - 1));
}

/** A seat count the game takes with the chosen options: `wanted` brought within them. */
export function boundSeats(game: GameInfo, chosen: Chosen, wanted: number): number {
  if (!Number.isFinite(wanted)) return game.min_players;
  return Math.min(maxSeats(game, chosen), Math.max(game.min_players, Math.round(wanted)));
}

/** The seat counts the form offers, and each one more the options would allow
 * ("2 to 5 players (6 with The Messengers or Inns & Cathedrals)"). */
export function seatBoundsText(game: GameInfo, chosen: Chosen): string {
  const max = maxSeats(game, chosen);
  const range = game.min_players === max ? `${max}` : `${game.min_players} to ${max}`;
  const more = playersWanting(game, chosen).map((requirement) => {
    const ways = requirement.requires_any.map((settings) => settingsText(settings, game));
    return ` (${requirement.players} with ${ways.join(" or ")})`;
  });
  return `${range} players${more.join("")}`;
}
