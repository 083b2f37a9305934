// Hanabi: the fireworks and tokens, every hand (the others' cards face up, yours as what the
// clues told you), the discards, and the controls for exactly the legal actions: play or
// discard one of your cards, or clue a teammate about a colour or a rank.
import type { HanabiAction, HanabiCardView, HanabiSeenCard, HanabiView } from "../client";
import { seatName } from "./names";
import "./hanabi.css";
import type { TableProps } from "./types";

export function HanabiTable(props: TableProps<HanabiView, HanabiAction>) {
  const { view, you, players, toMove } = props;
  // your teammates in turn order after you, then you; a spectator sees the seats in order
  const start = you === null ? 0 : you + 1;
  const seats = Array.from({ length: view.seats }, (_, index) => (start + index) % view.seats);
  return (
    <div class="hanabi" data-testid="game-table">
      <Board view={view} />
      <div class="hands">
        {seats.map((seat) => (
          <Hand
            key={seat}
            {...props}
            seat={seat}
            name={seatName(players, seat)}
            moving={toMove.includes(seat)}
            mine={seat === you}
          />
        ))}
      </div>
      <Pile title="Discards" cards={view.discards} suits={view.suits} testId="discards" />
      {view.undrawn && <Pile title="Left in the deck" cards={view.undrawn} suits={view.suits} />}
    </div>
  );
}

function Board({ view }: { view: HanabiView }) {
  return (
    <section class="board">
      <div class="fireworks" data-testid="fireworks">
        {view.suits.map((suit) => (
          <span
            key={suit}
            class={`card suit-${suit}`}
            role="img"
            aria-label={`${suit} firework at ${view.fireworks[suit] || 0}`}
            title={`${suit} firework`}
          >
            {view.fireworks[suit] || "·"}
          </span>
        ))}
      </div>
      <dl class="counters">
        <dt>Clue tokens</dt>
        <dd data-testid="clue-tokens">{view.clue_tokens}</dd>
        <dt>Fuses burned</dt>
        <dd data-testid="fuses">{view.fuses_burned}</dd>
        <dt>Deck</dt>
        <dd data-testid="deck-size">{view.deck_size}</dd>
        <dt>Score</dt>
        <dd data-testid="score">{view.score}</dd>
        {view.turns_left !== null && (
          <>
            <dt>Turns left</dt>
            <dd>{view.turns_left}</dd>
          </>
        )}
      </dl>
      {view.end_reason && <p class="end">Game over: {view.end_reason.replaceAll("_", " ")}</p>}
    </section>
  );
}

function Hand(
  props: TableProps<HanabiView, HanabiAction> & {
    seat: number;
    name: string;
    moving: boolean;
    mine: boolean;
  },
) {
  const { view, actions, seat, mine, submit, busy } = props;
  const offered = (wanted: (action: HanabiAction) => boolean) => actions.find(wanted);
  return (
    <section
      class={`hand${props.moving ? " moving" : ""}`}
      data-testid={mine ? "my-hand" : `hand-${seat}`}
    >
      <h3>
        {props.name}
        {mine && " (you)"}
      </h3>
      <div class="cards">
        {(view.hands[seat] ?? []).map((card, index) => {
          const play = offered(
            (action) => action.type === "PlayCard" && action.card === card.order,
          );
          const discard = offered(
            (action) => action.type === "DiscardCard" && action.card === card.order,
          );
          return (
            <div key={card.order} class="slot">
              <CardFace card={card} />
              <Knowledge card={card} />
              {(play || discard) && (
                <div class="card-actions">
                  {play && (
                    <button
                      data-action={JSON.stringify(play)}
                      aria-label={`Play card ${index + 1}`}
                      disabled={busy}
                      onClick={() => void submit(play)}
                    >
                      Play
                    </button>
                  )}
                  {discard && (
                    <button
                      data-action={JSON.stringify(discard)}
                      aria-label={`Discard card ${index + 1}`}
                      disabled={busy}
                      onClick={() => void submit(discard)}
                    >
                      Discard
                    </button>
                  )}
                </div>
              )}
            </div>
          );
        })}
      </div>
      {!mine && <Clues {...props} />}
    </section>
  );
}

/** The clues you may give this seat: one button per colour and rank the legal actions list. */
function Clues(props: TableProps<HanabiView, HanabiAction> & { seat: number; name: string }) {
  const clues = props.actions.filter(
    (action) =>
      (action.type === "GiveColourClue" || action.type === "GiveRankClue") &&
      action.target === props.seat,
  );
  if (clues.length === 0) return null;
  return (
    <div class="clues" data-testid={`clues-${props.seat}`}>
      Clue:{" "}
      {clues.map((clue) => {
        const told =
          clue.type === "GiveColourClue"
            ? clue.colour
            : clue.type === "GiveRankClue"
              ? clue.rank
              : "";
        return (
          <button
            key={`${clue.type}-${told}`}
            class={clue.type === "GiveColourClue" ? `clue suit-${told}` : "clue"}
            title={`Tell ${props.name} about their ${told}s`}
            data-action={JSON.stringify(clue)}
            disabled={props.busy}
            onClick={() => void props.submit(clue)}
          >
            {told}
          </button>
        );
      })}
    </div>
  );
}

function CardFace({ card }: { card: HanabiSeenCard }) {
  if (card.suit == null || card.rank == null) {
    return (
      <span class="card unknown" role="img" aria-label="unknown card">
        ?
      </span>
    );
  }
  return (
    <span
      class={`card suit-${card.suit}`}
      role="img"
      aria-label={`${card.suit} ${card.rank}`}
      title={`${card.suit} ${card.rank}`}
    >
      {card.rank}
    </span>
  );
}

/** What the clues said of a card: the colours and ranks it is, and, once a clue ruled some out,
 * those it may still be. */
function Knowledge({ card }: { card: HanabiCardView }) {
  const told = [...card.clued_colours, ...card.clued_ranks.map(String)];
  const colourClued = card.clued_colours.length + card.excluded_colours.length > 0;
  const rankClued = card.clued_ranks.length + card.excluded_ranks.length > 0;
  if (!colourClued && !rankClued) return null;
  return (
    <div class="knowledge" data-testid="knowledge">
      {told.length > 0 && <span class="told">{told.join(" ")}</span>}
      <span class="possible" title="what it may still be">
        {colourClued &&
          card.possible_suits.map((suit) => (
            <i key={suit} class={`dot suit-${suit}`} title={suit} />
          ))}{" "}
        {rankClued && card.possible_ranks.join(" ")}
      </span>
    </div>
  );
}

function Pile(props: { title: string; cards: HanabiSeenCard[]; suits: string[]; testId?: string }) {
  const place = (card: HanabiSeenCard) =>
    props.suits.indexOf(card.suit ?? "") * 10 + (card.rank ?? 0);
  const sorted = [...props.cards].sort((a, b) => place(a) - place(b));
  return (
    <section class="pile" data-testid={props.testId}>
      <h3>
        {props.title} ({props.cards.length})
      </h3>
      <div class="cards small">
        {sorted.map((card) => (
          <CardFace key={card.order} card={card} />
        ))}
      </div>
    </section>
  );
}
