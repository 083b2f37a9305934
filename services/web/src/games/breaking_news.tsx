// Breaking News: the table of element cards, your hand and objects, the open objects, the news
// and its story, the stopwatch, the vote and the scores. Every control sends an action the API
// listed; only a story's text is the player's own (checked here for the words the engine wants).
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type {
  BreakingNewsAction,
  BreakingNewsElementCard,
  BreakingNewsObjectCard,
  BreakingNewsStory,
  BreakingNewsTableCard,
  BreakingNewsView,
} from "../client/types.gen";
import type { TableProps } from "./types";
import {
  ActionButton,
  Fact,
  groupBy,
  listed,
  plural,
  ScoreTable,
  Section,
  SpectatingNote,
  StatusAndResult,
  turnLine,
} from "./cardtable";
import { whoName } from "./names";
import "./breaking_news.css";

type Listed<Type extends BreakingNewsAction["type"]> = Extract<BreakingNewsAction, { type: Type }>;
type PlaceAction = Listed<"PlaceCard">;
type StoryAction = Listed<"CompleteObject" | "TellStory">;

const SYMBOL_ICON: Record<string, string> = {
  person: "☺",
  animal: "♞",
  place: "⌂",
  vehicle: "✈",
  food: "☕",
  weather: "☁",
  thing: "⚷",
};

const LANGUAGE_NAME: Record<string, string> = { de: "Deutsch", it: "Italiano", en: "English" };
const MAX_STORY_CHARS = 2000;

const PHASE_TEXT: Record<string, string> = {
  play: "place a card or pass",
  news: "breaking news? complete an object or end the turn",
  story: "a story is being told",
  vote: "vote for the most interesting story",
  over: "game over",
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
function wordNeeds(
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

function elementWord(card: BreakingNewsElementCard, language: string): string {
  return card.words[language] ?? Object.values(card.words)[0] ?? `#${card.card}`;
}

function ObjectFace(props: { object: BreakingNewsObjectCard; highlight?: boolean }) {
  const { object } = props;
  return (
    <div
      class={`bn-object ${props.highlight ? "bn-highlight" : ""}`}
      data-testid="object-card"
      data-object={object.object}
    >
      <div class="bn-object-head">
        <span>Object #{object.object}</span>
        <span class="bn-points" title="points">
          {plural(object.points, "pt")}
        </span>
      </div>
      <div class="bn-object-symbols">
        {object.symbols.map((symbol) => (
          <span key={symbol} class="bn-symbol" title={symbol}>
            <span aria-hidden="true">{SYMBOL_ICON[symbol] ?? "•"}</span> {symbol}
          </span>
        ))}
      </div>
    </div>
  );
}

function ElementFace(props: {
  card: BreakingNewsElementCard;
  language: string;
  faceDown?: boolean;
  classes?: string;
}) {
  const { card, language } = props;
  if (props.faceDown) {
    return (
      <div
        class={`bn-element bn-face-down ${props.classes ?? ""}`}
        data-testid="table-card"
        data-card={card.card}
        title="face down"
      >
        <span aria-hidden="true">▦</span>
      </div>
    );
  }
  const style = {
    borderTopColor: `var(--bn-${card.edges.north ?? "grey"})`,
    borderRightColor: `var(--bn-${card.edges.east ?? "grey"})`,
    borderBottomColor: `var(--bn-${card.edges.south ?? "grey"})`,
    borderLeftColor: `var(--bn-${card.edges.west ?? "grey"})`,
  };
  const word = elementWord(card, language);
  const all = Object.entries(card.words)
    .map(([lang, word]) => `${lang}: ${word}`)
    .join(", ");
  return (
    <div
      class={`bn-element ${props.classes ?? ""}`}
      style={style}
      data-card={card.card}
      title={`#${card.card} ${card.symbol} (${all}); edges N ${card.edges.north}, E ${card.edges.east}, S ${card.edges.south}, W ${card.edges.west}`}
    >
      <span class="bn-element-symbol" aria-hidden="true">
        {SYMBOL_ICON[card.symbol] ?? "•"}
      </span>
      <span class={`bn-element-word ${word.length > 9 ? "bn-long" : ""}`} lang={language}>
        {word}
      </span>
      <span class="bn-element-kind">{card.symbol}</span>
    </div>
  );
}

function Grid(props: {
  table: BreakingNewsTableCard[];
  language: string;
  /** The chosen card's spots; none while no card is chosen. */
  slots: PlaceAction[];
  /** Where some card of the hand fits, shown only while no card is chosen. */
  hints: { x: number; y: number }[];
  highlight: Set<number>;
  played: number | null;
  busy: boolean;
  selected: BreakingNewsElementCard | null;
  onPlace: (action: PlaceAction) => void;
}) {
  const { table, slots, hints } = props;
  const xs = [...table.map((c) => c.x), ...slots.map((s) => s.x), ...hints.map((h) => h.x)];
  const ys = [...table.map((c) => c.y), ...slots.map((s) => s.y), ...hints.map((h) => h.y)];
  if (xs.length === 0) return <div class="ct-note">The table is empty.</div>;
  const minX = Math.min(...xs);
  const maxX = Math.max(...xs);
  const minY = Math.min(...ys);
  const maxY = Math.max(...ys);
  const place = (x: number, y: number) => ({
    gridColumn: `${x - minX + 1}`,
    gridRow: `${maxY - y + 1}`,
  });
  return (
    <div class="bn-grid-scroll" data-testid="bn-grid">
      <div
        class="bn-grid"
        style={{
          gridTemplateColumns: `repeat(${maxX - minX + 1}, var(--bn-cell))`,
          gridTemplateRows: `repeat(${maxY - minY + 1}, var(--bn-cell))`,
        }}
      >
        {table.map((entry) => {
          const classes = [
            props.highlight.has(entry.card.card) ? "bn-chain" : "",
            props.played === entry.card.card ? "bn-played" : "",
          ].join(" ");
          return (
            <div
              key={`c${entry.card.card}`}
              class="bn-cell"
              style={place(entry.x, entry.y)}
              data-x={entry.x}
              data-y={entry.y}
            >
              <ElementFace
                card={entry.card}
                language={props.language}
                faceDown={entry.face_down}
                classes={classes}
              />
            </div>
          );
        })}
        {hints.map((hint) => (
          <div
            key={`h${hint.x},${hint.y}`}
            class="bn-cell bn-hint"
            style={place(hint.x, hint.y)}
            aria-hidden="true"
          />
        ))}
        {slots.map((slot) => (
          <div key={`s${slot.x},${slot.y}`} class="bn-cell" style={place(slot.x, slot.y)}>
            <button
              type="button"
              class="bn-slot"
              data-testid="slot"
              data-x={slot.x}
              data-y={slot.y}
              data-action={JSON.stringify(slot)}
              disabled={props.busy}
              aria-label={`Place ${props.selected ? elementWord(props.selected, props.language) : `card ${slot.card}`} at (${slot.x}, ${slot.y})`}
              title={`Place here (${slot.x}, ${slot.y})`}
              onClick={() => props.onPlace(slot)}
            >
              +
            </button>
          </div>
        ))}
      </div>
    </div>
  );
}

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
function StoryEditor(props: {
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

/** When this page saw the news called at ``calledAt`` (by this browser's monotonic clock, never
 * compared with the server's), or null: no call, or one already made when the page first showed
 * it (a reload, a replay), whose clock has run for a time nobody here knows. */
function useCallSeenAt(calledAt: number | null): number | null {
  const atMount = useRef(calledAt);
  const [seen, setSeen] = useState<{ calledAt: number; at: number } | null>(null);
  useEffect(() => {
    if (calledAt !== null && calledAt !== atMount.current) {
      setSeen({ calledAt, at: performance.now() });
    }
  }, [calledAt]);
  return seen !== null && seen.calledAt === calledAt ? seen.at : null;
}

/** The story's clock: the seconds since this page saw the call and what a story told now would
 * earn; only that it runs when the page did not see the call (``seenAt`` null). */
function StoryClock(props: { seenAt: number | null }) {
  const { seenAt } = props;
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    if (seenAt === null) return undefined;
    setNow(performance.now());
    const timer = setInterval(() => setNow(performance.now()), 250);
    return () => clearInterval(timer);
  }, [seenAt]);
  if (seenAt === null) {
    return (
      <div class="bn-clock" data-testid="story-clock" title="the server times the story">
        The clock is running
      </div>
    );
  }
  // whole seconds, and the verdict on them, so the note never contradicts the count shown
  const seconds = Math.floor(Math.max(0, now - seenAt) / 1000);
  const verdict = seconds < 15 ? " (under 15 s: −1)" : seconds > 30 ? " (over 30 s: +1)" : "";
  return (
    <div
      class="bn-clock"
      data-testid="story-clock"
      title="since the call reached this page (the server times the story itself)"
    >
      {seconds} s{verdict}
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

function StoryRecord(props: {
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

export function BreakingNewsTable(props: TableProps<BreakingNewsView, BreakingNewsAction>) {
  const { view, actions, you, players, toMove, submit, busy } = props;
  const homeLanguage = (you !== null && view.home_languages?.[you]) || null;
  const [display, setDisplay] = useState<string>(
    homeLanguage && homeLanguage in LANGUAGE_NAME ? homeLanguage : "en",
  );
  const [selected, setSelected] = useState<number | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);
  const [hoverCards, setHoverCards] = useState<number[] | null>(null);
  // A choice belongs to its turn and phase (not to the version: a clock event must not wipe a
  // story being typed); a hover may outlive its control (a tap, a button that went away).
  useEffect(() => {
    setSelected(null);
    setChosen(null);
    setHoverCards(null);
  }, [view.turns, view.phase]);
  const over = view.phase === "over";
  const callSeenAt = useCallSeenAt(view.called_news?.called_at_ms ?? null);
  // The match page times the story for its seats and its spectators alike; a replay stepping
  // across a call would otherwise start a clock of its own.
  const liveCallSeenAt = props.live ? callSeenAt : null;

  // Every element card on view (table and hand), by id, for words and symbols.
  const lookup = new Map<number, BreakingNewsElementCard>();
  for (const entry of view.table) lookup.set(entry.card.card, entry.card);
  for (const card of view.hand ?? []) lookup.set(card.card, card);

  const placements = listed(actions, "PlaceCard");
  const pass = actions.find((action) => action.type === "PassTurn");
  const endTurn = actions.find((action) => action.type === "EndTurn");
  const silence = actions.find((action) => action.type === "ReportSilence");
  const calls = listed(actions, "CallBreakingNews");
  const tells = listed(actions, "TellStory");
  const votes = listed(actions, "VoteForStory");
  // Your turn to place a card: the pass is listed then, even when no card fits.
  const placing = view.phase === "play" && pass !== undefined;

  const placeable = new Set(placements.map((action) => action.card));
  const selectedCard = selected !== null && placeable.has(selected) ? selected : null;
  const slots =
    selectedCard === null ? [] : placements.filter((action) => action.card === selectedCard);
  const hintKeys = new Map<string, { x: number; y: number }>();
  if (selectedCard === null)
    for (const action of placements)
      hintKeys.set(`${action.x},${action.y}`, { x: action.x, y: action.y });

  // The news on offer: each (object, chain) once, with its listed language variants.
  const news = groupBy(
    listed(actions, "CompleteObject"),
    (action) => `${action.object}:${action.cards.join(",")}`,
  );
  const chosenKey = chosen !== null && news.has(chosen) ? chosen : null;
  const chosenNews = chosenKey !== null ? news.get(chosenKey)! : null;

  const objectsById = new Map<number, BreakingNewsObjectCard>();
  for (const object of view.open_objects) objectsById.set(object.object, object);
  for (const object of view.objects ?? []) objectsById.set(object.object, object);

  const highlight = new Set<number>(
    hoverCards ?? chosenNews?.[0].cards ?? view.called_news?.cards ?? [],
  );

  // The cards' words in the display language (the id for a card not on view).
  const wordsOf = (cards: number[]): string[] =>
    cards.map((id) => {
      const element = lookup.get(id);
      return element ? elementWord(element, display) : `#${id}`;
    });

  const storyRecord = (
    story: BreakingNewsStory,
    index: number,
    testid: string,
    children?: ComponentChildren,
  ) => (
    <StoryRecord
      key={index}
      story={story}
      index={index}
      testid={testid}
      players={players}
      you={you}
      lookup={lookup}
      display={display}
      onHover={setHoverCards}
    >
      {children}
    </StoryRecord>
  );

  const storyEditor = (key: string, variants: StoryAction[], cards: number[], label: string) => (
    <StoryEditor
      key={key}
      variants={variants}
      cards={cards}
      lookup={lookup}
      display={display}
      home={homeLanguage}
      foreignBonus={view.foreign_language_bonus}
      busy={busy}
      submit={submit}
      label={label}
    />
  );

  const newsLabel = (object: number, cards: number[]): string => {
    const card = objectsById.get(object);
    const words = wordsOf(cards);
    const where = view.objects?.some((own) => own.object === object) ? "your" : "open";
    return `Object #${object} (${where}${card ? `: ${card.symbols.join(" · ")}, ${plural(card.points, "pt")}` : ""}) with ${words.join(", ")}`;
  };

  const teller = view.phase === "story" && view.called_news ? view.called_news.seat : null;
  const status = over
    ? ""
    : teller !== null
      ? `${teller === you ? "You are" : `${whoName(players, teller, you)} is`} telling the news; anyone may report silence`
      : turnLine(players, toMove, you);

  return (
    <div
      class="ct-table bn-table"
      data-testid="breaking-news-table"
      data-game="breaking_news"
      data-phase={view.phase}
    >
      <div class="ct-facts">
        <Fact label="Phase" testid="bn-phase">
          {PHASE_TEXT[view.phase] ?? view.phase}
        </Fact>
        <Fact label="Turn">{view.turns + (over ? 0 : 1)}</Fact>
        {view.turns_left !== null ? (
          <Fact label="Final round" testid="bn-turns-left">
            {plural(view.turns_left, "turn")} left
          </Fact>
        ) : null}
        <Fact label="Element deck">{view.element_deck_size}</Fact>
        <Fact label="Object deck">{view.object_deck_size}</Fact>
        <Fact label="Mode">{view.mode}</Fact>
        <Fact label="Tie-break">{view.tiebreak === "vote" ? "vote" : "objects in hand"}</Fact>
        {view.stopwatch ? <Fact label="Stopwatch">on (&lt;15 s −1, &gt;30 s +1)</Fact> : null}
        {view.foreign_language_bonus ? (
          <Fact label="Language bonus">+1 foreign language</Fact>
        ) : null}
        <Fact label="Words in">
          <select
            aria-label="Show the cards' words in"
            data-testid="display-language"
            value={display}
            onChange={(event) => setDisplay((event.target as HTMLSelectElement).value)}
          >
            {Object.entries(LANGUAGE_NAME).map(([code, name]) => (
              <option key={code} value={code}>
                {name}
              </option>
            ))}
          </select>
        </Fact>
      </div>

      <StatusAndResult
        seats={props}
        status={status}
        over={over}
        winners={view.winners}
        scores={view.scores}
        reason={view.end_reason}
        extra={
          view.tiebreak_used.length ? (
            <div class="ct-final-reason">
              Tie broken by: {view.tiebreak_used.join(", then ").replace(/_/g, " ")}
            </div>
          ) : null
        }
      />

      <Section title="Journalists" class="bn-players">
        <ScoreTable
          seats={props}
          scores={view.scores}
          columns={[
            { label: "Score" },
            { label: "Done", title: "objects completed" },
            { label: "Hand", title: "element cards in hand" },
            { label: "Objects", title: "object cards in hand" },
            ...(view.home_languages ? [{ label: "Lang.", title: "home language" }] : []),
          ]}
          cells={(seat) => (
            <>
              <td>{view.completed[seat] ?? 0}</td>
              <td title="element cards in hand">{view.hand_sizes[seat] ?? 0}</td>
              <td title="object cards in hand">{view.object_hand_sizes[seat] ?? 0}</td>
              {view.home_languages ? <td>{view.home_languages[seat] ?? ""}</td> : null}
            </>
          )}
        />
      </Section>

      <div class="bn-main">
        <Section title="The table" class="bn-table-section">
          <Grid
            table={view.table}
            language={display}
            slots={slots}
            hints={[...hintKeys.values()]}
            highlight={highlight}
            played={view.played_card}
            busy={busy}
            selected={selectedCard !== null ? (lookup.get(selectedCard) ?? null) : null}
            onPlace={(action) => {
              setSelected(null);
              void submit(action);
            }}
          />
          <div class="bn-legend">
            Cards are never rotated; touching edges must match. N is up.
            {selectedCard !== null
              ? " Click a + to place the chosen card."
              : placements.length
                ? " Choose a card from your hand."
                : ""}
          </div>
        </Section>

        <div class="bn-side">
          <Section title="Open objects" class="bn-open-objects">
            <div class="bn-objects">
              {view.open_objects.length ? (
                view.open_objects.map((object) => (
                  <ObjectFace key={object.object} object={object} />
                ))
              ) : (
                <div class="ct-note">None</div>
              )}
            </div>
          </Section>
          {view.objects ? (
            <Section title="Your objects" class="bn-own-objects">
              <div class="bn-objects">
                {view.objects.length ? (
                  view.objects.map((object) => <ObjectFace key={object.object} object={object} />)
                ) : (
                  <div class="ct-note">None yet (a card touching two or more draws one)</div>
                )}
              </div>
            </Section>
          ) : null}
        </div>
      </div>

      {view.hand ? (
        <Section title="Your hand" class="bn-hand" testid="hand">
          <div class="bn-hand-cards">
            {view.hand.map((card) => {
              const canPlace = placeable.has(card.card);
              return (
                <button
                  key={card.card}
                  type="button"
                  class={`bn-hand-card ${selectedCard === card.card ? "bn-selected" : ""} ${
                    placing && !canPlace ? "bn-unplayable" : ""
                  }`}
                  data-testid="hand-card"
                  data-card={card.card}
                  data-placeable={canPlace ? "true" : "false"}
                  aria-pressed={selectedCard === card.card}
                  disabled={!canPlace || busy}
                  title={
                    canPlace
                      ? "Choose this card, then a + on the table"
                      : placing
                        ? "It fits nowhere now"
                        : undefined
                  }
                  onClick={() => setSelected(selectedCard === card.card ? null : card.card)}
                >
                  <ElementFace card={card} language={display} />
                </button>
              );
            })}
          </div>
          {pass ? (
            <div class="bn-row">
              <ActionButton
                action={pass}
                busy={busy}
                onChoose={() => void submit(pass)}
                className="bn-pass"
              >
                Pass: put your hand under the deck and draw three
              </ActionButton>
            </div>
          ) : null}
        </Section>
      ) : (
        <SpectatingNote you={you} over={over} />
      )}

      {news.size || endTurn || calls.length ? (
        <Section title="Breaking News?" class="bn-news" testid="news">
          {news.size ? (
            <div class="bn-news-list">
              {[...news.entries()].map(([key, group]) => (
                <button
                  key={key}
                  type="button"
                  class={`ct-action bn-news-choice ${chosenKey === key ? "bn-selected" : ""}`}
                  data-testid="news-choice"
                  aria-pressed={chosenKey === key}
                  disabled={busy}
                  onClick={() => {
                    setHoverCards(null);
                    setChosen(chosenKey === key ? null : key);
                  }}
                  onMouseEnter={() => setHoverCards(group[0].cards)}
                  onMouseLeave={() => setHoverCards(null)}
                >
                  {newsLabel(group[0].object, group[0].cards)}
                </button>
              ))}
            </div>
          ) : null}
          {chosenNews && chosenKey
            ? storyEditor(chosenKey, chosenNews, chosenNews[0].cards, "Publish the story")
            : null}
          {calls.map((call) => (
            <ActionButton
              key={`${call.object}:${call.cards.join(",")}`}
              action={call}
              busy={busy}
              className="bn-call"
              onChoose={() => {
                setHoverCards(null);
                void submit(call);
              }}
              onHover={(on) => setHoverCards(on ? call.cards : null)}
            >
              Call Breaking News: {newsLabel(call.object, call.cards)} (the clock starts)
            </ActionButton>
          ))}
          {endTurn ? (
            <div class="bn-row">
              <ActionButton action={endTurn} busy={busy} onChoose={() => void submit(endTurn)}>
                End the turn without news
              </ActionButton>
            </div>
          ) : null}
        </Section>
      ) : null}

      {view.phase === "story" && view.called_news ? (
        <Section title="On air" class="bn-on-air" testid="on-air">
          <div class="bn-on-air-head">
            <ObjectFace object={view.called_news.object} highlight />
            <div>
              <div>
                <strong>{whoName(players, view.called_news.seat, you)}</strong>{" "}
                {view.called_news.seat === you ? "are" : "is"} telling the news of{" "}
                {wordsOf(view.called_news.cards).join(", ")}.
              </div>
              <StoryClock seenAt={liveCallSeenAt} />
            </div>
          </div>
          {tells.length
            ? storyEditor(
                `tell:${view.called_news.called_at_ms}`,
                tells,
                view.called_news.cards,
                "Stop the clock: tell it",
              )
            : null}
          {silence ? (
            <div class="bn-row">
              <ActionButton
                action={silence}
                busy={busy}
                onChoose={() => void submit(silence)}
                className="bn-silence"
              >
                {view.called_news.seat === you
                  ? "I fell silent (end my story)"
                  : "Report silence (more than 3 s)"}
              </ActionButton>
            </div>
          ) : null}
        </Section>
      ) : null}

      {view.phase === "vote" && view.voting ? (
        <Section title="The vote" class="bn-vote" testid="vote">
          <div>
            A tie: {view.voting.voters.map((seat) => whoName(players, seat, you)).join(", ")} vote
            for the most interesting story. Votes cast: {Object.keys(view.voting.votes).length} of{" "}
            {view.voting.voters.length}.
          </div>
          <ol class="bn-stories">
            {view.voting.stories.map((index) => {
              const story = view.stories[index];
              const vote = votes.find((action) => action.story === index);
              if (!story) return null;
              return storyRecord(
                story,
                index,
                "vote-story",
                vote ? (
                  <ActionButton
                    action={vote}
                    busy={busy}
                    onChoose={() => {
                      setHoverCards(null);
                      void submit(vote);
                    }}
                    className="ct-primary"
                  >
                    Vote for this story
                  </ActionButton>
                ) : null,
              );
            })}
          </ol>
        </Section>
      ) : null}

      <Section title={`Stories (${view.stories.length})`} class="bn-record" testid="stories">
        {view.stories.length ? (
          <ol class="bn-stories">
            {view.stories.map((story, index) => storyRecord(story, index, "story"))}
          </ol>
        ) : (
          <div class="ct-note">No news yet.</div>
        )}
      </Section>
    </div>
  );
}
