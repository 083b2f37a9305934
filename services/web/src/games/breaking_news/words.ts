// The element cards' words in their languages, and which of them a story must contain, compared
// as the engine compares them.
import type { BreakingNewsElementCard } from "../../client/types.gen";

export const LANGUAGE_NAME: Record<string, string> = {
  de: "Deutsch",
  it: "Italiano",
  en: "English",
};

/** The form the engine compares stories and words in: NFC, case-folded, single spaces. */
function normaliseText(text: string): string {
  return text
    .normalize("NFC")
    .toLowerCase()
    .replace(/ß/g, "ss")
    .replace(/ς/g, "σ")
    .split(/\s+/)
    .filter((part) => part.length > 0)
    .join(" ");
}

interface WordNeed {
  card: number;
  /** The words that count: one (the declared language's) or every language's. */
  words: string[];
  /** The word shown first (the one a player would most likely type). */
  shown: string;
  found: boolean;
}

/** Which word of each chain card the story needs, as the engine checks it. */
export function wordNeeds(
  cards: number[],
  lookup: Map<number, BreakingNewsElementCard>,
  language: string | null,
  display: string,
  story: string,
): WordNeed[] {
  const text = normaliseText(story);
  return cards.map((card) => {
    const element = lookup.get(card);
    const all = element ? element.words : {};
    let words: string[];
    if (language !== null && language in all) words = [all[language]];
    else words = Object.values(all);
    const shown =
      language !== null && language in all
        ? all[language]
        : (all[display] ?? words[0] ?? `card ${card}`);
    const found = words.some((word) => text.includes(normaliseText(word)));
    return { card, words, shown, found };
  });
}

export function elementWord(card: BreakingNewsElementCard, language: string): string {
  return card.words[language] ?? Object.values(card.words)[0] ?? `#${card.card}`;
}
