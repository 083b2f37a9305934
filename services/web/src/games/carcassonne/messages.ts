// The Messengers' message cards and track, from seeds/carcassonne/messages.json (static game
// data bundled at build time).
import messagesJson from "../../../../../seeds/carcassonne/messages.json";

interface MessageCard {
  number: number;
  title: string;
  effect: string;
  feature?: string;
  points_each?: number;
  instead_points: number;
  text: string;
}

interface MessagesFile {
  track_spaces: number;
  dark_space_every: number;
  messages: MessageCard[];
}

const DATA = messagesJson as unknown as MessagesFile;

export const TRACK_SPACES = DATA.track_spaces;
const DARK_EVERY = DATA.dark_space_every;

export function messageCard(number: number): MessageCard | null {
  return DATA.messages.find((m) => m.number === number) ?? null;
}

export function isDark(points: number): boolean {
  return points % DARK_EVERY === 0;
}

const FIGURE_NAMES = ["scoring figure", "messenger"];

/** A figure's name ("scoring figure", "messenger"); ``short``: its first word. */
export function figureName(figure: number, short = false): string {
  const name = FIGURE_NAMES[figure];
  if (!name) return `figure ${figure}`;
  return short ? (name.split(" ")[0] ?? name) : name;
}
