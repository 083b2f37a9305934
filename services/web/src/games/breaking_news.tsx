// Breaking News: the table of element cards (breaking_news/grid.tsx, the cards' faces in
// cards.tsx), your hand and objects, the open objects, the news and its story (story.tsx, the
// words it must contain in words.ts), the stopwatch (clock.tsx), the vote and the scores. Every
// control sends an action the API listed; only a story's text is the player's own (checked for
// the words the engine wants).
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type {
  BreakingNewsAction,
  BreakingNewsElementCard,
  BreakingNewsObjectCard,
  BreakingNewsStory,
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
import type { StoryAction } from "./breaking_news/actions";
import { ObjectFace, ElementFace } from "./breaking_news/cards";
import { StoryClock, useCallSeenAt } from "./breaking_news/clock";
import { Grid } from "./breaking_news/grid";
import { StoryEditor, StoryRecord } from "./breaking_news/story";
import { elementWord, LANGUAGE_NAME } from "./breaking_news/words";
import { whoName } from "./names";
import "./breaking_news.css";

const PHASE_TEXT: Record<string, string> = {
  play: "place a card or pass",
  news: "breaking news? complete an object or end the turn",
  story: "a story is being told",
  vote: "vote for the most interesting story",
  over: "game over",
};

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
