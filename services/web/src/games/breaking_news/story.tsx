// A story: composed inside one of the listed actions' shapes (only its text is the player's,
// checked for the words the engine wants), and a told story in the record and the vote.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type {
  BreakingNewsAction,
  BreakingNewsElementCard,
  BreakingNewsStory,
} from "../../client/types.gen";
import { whoName } from "../names";
import type { StoryAction } from "./actions";
import { elementWord, LANGUAGE_NAME, wordNeeds } from "./words";

const MAX_STORY_CHARS = 2000;

/** The language variant a story starts in: the one in the language the cards are shown in,
 * else the player's own, else the first listed. */
function defaultVariant(variants: StoryAction[], display: string, home: string | null): number {
  for (const language of [display, home]) {
    const index = variants.findIndex((variant) => variant.language === language);
    if (language !== null && index >= 0) return index;
  }
  return 0;
}

/** A variant's name in the language select, marked when telling it earns the bonus. */
function variantName(variant: StoryAction, earnsBonus: boolean): string {
  if (!variant.language) return "not declared";
  const name = LANGUAGE_NAME[variant.language] ?? variant.language;
  return earnsBonus ? `${name} (+1 foreign language)` : name;
}

/** Compose a story inside the shape of one of the listed actions (language variants of the
 * same news): only the text is the player's; the chain, the object, the language are listed. */
export function StoryEditor(props: {
  variants: StoryAction[];
  cards: number[];
  lookup: Map<number, BreakingNewsElementCard>;
  display: string;
  /** The player's own language, when the view tells it. */
  home: string | null;
  /** Whether a story in another language than ``home`` earns a point more. */
  foreignBonus: boolean;
  busy: boolean;
  submit: (action: BreakingNewsAction) => Promise<void>;
  label: string;
}) {
  const { variants, cards, lookup, display, home, busy } = props;
  const [story, setStory] = useState("");
  // Until the player picks a variant, it follows the display language.
  const [picked, setPicked] = useState<number | null>(null);
  const variantIndex = picked ?? defaultVariant(variants, display, home);
  const variant = variants[Math.min(variantIndex, variants.length - 1)];
  const language = variant.language ?? null;
  const earnsBonus = (option: StoryAction) =>
    props.foreignBonus && home !== null && !!option.language && option.language !== home;
  const needs = wordNeeds(cards, lookup, language, display, story);
  const missing = needs.filter((need) => !need.found);
  const tooLong = story.length > MAX_STORY_CHARS;
  const ready = story.trim().length > 0 && missing.length === 0 && !tooLong;
  return (
    <div class="bn-story-editor" data-testid="story-editor">
      {variants.length > 1 ? (
        <label>
          Language of the story:{" "}
          <select
            data-testid="story-language"
            value={String(variantIndex)}
            onChange={(event) => setPicked(Number((event.target as HTMLSelectElement).value))}
          >
            {variants.map((option, index) => (
              <option key={index} value={String(index)}>
                {variantName(option, earnsBonus(option))}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      <div class="bn-needs">
        Your story must contain{language ? ` (in ${LANGUAGE_NAME[language] ?? language})` : ""}:
        {needs.map((need) => (
          <span
            key={need.card}
            class={`bn-need ${need.found ? "bn-found" : ""}`}
            data-testid="required-word"
            data-word={need.shown}
            data-words={need.words.join("|")}
            title={need.words.length > 1 ? `any of: ${need.words.join(", ")}` : need.words[0]}
          >
            {need.found ? "✓ " : ""}
            {need.shown}
            {need.words.length > 1 ? (
              <small> ({need.words.filter((w) => w !== need.shown).join(" / ")})</small>
            ) : null}
          </span>
        ))}
      </div>
      <textarea
        class="bn-story-input"
        data-testid="story-input"
        aria-label="Your story"
        rows={4}
        maxLength={MAX_STORY_CHARS}
        placeholder="Tell the news…"
        value={story}
        onInput={(event) => setStory((event.target as HTMLTextAreaElement).value)}
      />
      <div class="bn-story-buttons">
        <button
          type="button"
          class="ct-action"
          data-testid="plain-story"
          disabled={busy}
          onClick={() => setStory(variant.story)}
          title="Fill in the plain headline the server suggests"
        >
          Use a plain headline
        </button>
        <button
          type="button"
          class="ct-action ct-primary"
          data-testid="submit-story"
          data-action={JSON.stringify(variant)}
          disabled={busy || !ready}
          onClick={() => void props.submit({ ...variant, story })}
        >
          {props.label}
        </button>
      </div>
      {!ready && story.trim() ? (
        <div class="bn-story-problem" role="status">
          {tooLong
            ? `At most ${MAX_STORY_CHARS} characters.`
            : `Still missing: ${missing.map((need) => need.shown).join(", ")}`}
        </div>
      ) : null}
    </div>
  );
}

function storyWords(
  story: BreakingNewsStory,
  lookup: Map<number, BreakingNewsElementCard>,
  display: string,
): string {
  return story.cards
    .map((card) => {
      const element = lookup.get(card);
      return element
        ? elementWord(
            element,
            story.language && story.language in element.words ? story.language : display,
          )
        : `#${card}`;
    })
    .join(", ");
}

export function StoryRecord(props: {
  story: BreakingNewsStory;
  index: number;
  /** "story" in the record of told stories (the browser tests count them), else "vote-story". */
  testid: string;
  players: string[];
  you: number | null;
  lookup: Map<number, BreakingNewsElementCard>;
  display: string;
  onHover?: (cards: number[] | null) => void;
  children?: ComponentChildren;
}) {
  const { story, you } = props;
  return (
    <li
      class="bn-story"
      data-testid={props.testid}
      data-index={props.index}
      onMouseEnter={props.onHover ? () => props.onHover?.(story.cards) : undefined}
      onMouseLeave={props.onHover ? () => props.onHover?.(null) : undefined}
    >
      <div class="bn-story-head">
        <strong>{whoName(props.players, story.seat, you)}</strong> completed object #{story.object}{" "}
        with {storyWords(story, props.lookup, props.display)}: <strong>+{story.points}</strong>
        {story.language ? (
          <span> · told in {LANGUAGE_NAME[story.language] ?? story.language}</span>
        ) : null}
        {story.duration_ms !== null ? (
          <span> · {(story.duration_ms / 1000).toFixed(1)} s</span>
        ) : null}
      </div>
      <blockquote class="bn-story-text">{story.story}</blockquote>
      {props.children}
    </li>
  );
}
