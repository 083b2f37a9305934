// Hanabi: the variant, the fireworks and tokens, every hand (the others' cards face up, yours
// as what the clues told you), the clue history, the discards, and the controls for exactly
// the legal actions: play or discard one of your cards, or clue a teammate about a colour or a
// rank. A spectator sees every hand as the clues told it: faces stay hidden while the match
// runs, since a player could otherwise watch their own cards from a spectator's page.
import type {
  HanabiAction,
  HanabiCardView,
  HanabiClueRecord,
  HanabiSeenCard,
  HanabiView,
} from "../client";
import { capitalised, seatName, whoName } from "./names";
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
      <WhyHidden view={view} you={you} />
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
      <ClueHistory clues={view.clues} players={players} you={you} />
      <Pile title="Discards" cards={view.discards} suits={view.suits} testId="discards" />
      {view.undrawn && <Pile title="Left in the deck" cards={view.undrawn} suits={view.suits} />}
    </div>
  );
}

/** Each suit's symbol, so that cards are told apart by more than their colour. */
const SUIT_SYMBOLS: Record<string, string> = {
  red: "♥",
  yellow: "★",
  green: "♣",
  blue: "♦",
  white: "○",
  multicolour: "✱",
};

function symbol(suit: string): string {
  return SUIT_SYMBOLS[suit] ?? suit.charAt(0).toUpperCase();
}

function Board({ view }: { view: HanabiView }) {
  return (
    <section class="board">
      <p class="variant" data-testid="variant">
        <strong>Rules:</strong> {view.variant.join(" · ")}
      </p>
      <div class="fireworks" data-testid="fireworks">
        {view.suits.map((suit) => (
          <span
            key={suit}
            class={`card suit-${suit}`}
            role="img"
            aria-label={`${suit} firework at ${view.fireworks[suit] || 0}`}
            title={`${suit} firework`}
          >
            <i class="symbol" aria-hidden="true">
              {symbol(suit)}
            </i>
            {view.fireworks[suit] || "·"}
          </span>
        ))}
      </div>
      <dl class="counters">
        <Counter label="Clue tokens" value={view.clue_tokens} testId="clue-tokens" />
        <Counter label="Fuses burned" value={view.fuses_burned} testId="fuses" />
        <Counter label="Deck" value={view.deck_size} testId="deck-size" />
        <Counter label="Score" value={view.score} testId="score" />
        {view.turns_left !== null && <Counter label="Turns left" value={view.turns_left} />}
      </dl>
      {view.end_reason && <p class="end">Game over: {view.end_reason.replaceAll("_", " ")}</p>}
    </section>
  );
}

/** One counter of the board, its label above its value (a pair wraps as one). */
function Counter(props: { label: string; value: number; testId?: string }) {
  return (
    <div>
      <dt>{props.label}</dt>
      <dd data-testid={props.testId}>{props.value}</dd>
    </div>
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
            <div key={card.order} class="slot" data-order={card.order}>
              <span class="slot-number" title="its place in the hand, as clues name it">
                {index + 1}
              </span>
              <CardFace card={card} />
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
              <Knowledge card={card} />
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
            {clue.type === "GiveColourClue" && (
              <i class="symbol" aria-hidden="true">
                {symbol(clue.colour)}{" "}
              </i>
            )}
            {told}
          </button>
        );
      })}
    </div>
  );
}

function CardFace({ card }: { card: HanabiSeenCard | HanabiCardView }) {
  if (card.suit == null || card.rank == null) return <HiddenFace card={card} />;
  return (
    <span
      class={`card suit-${card.suit}`}
      role="img"
      aria-label={`${card.suit} ${card.rank}`}
      title={`${card.suit} ${card.rank}`}
    >
      <i class="symbol" aria-hidden="true">
        {symbol(card.suit)}
      </i>
      {card.rank}
    </span>
  );
}

/** A card whose face the viewer may not see, drawn as far as the clues told it: the suit once
 * only one is left, the rank once a clue named it. */
function HiddenFace({ card }: { card: HanabiSeenCard | HanabiCardView }) {
  const told = "possible_suits" in card ? card : null;
  const suit = told && told.possible_suits.length === 1 ? told.possible_suits[0] : null;
  const rank = told && told.possible_ranks.length === 1 ? told.possible_ranks[0] : null;
  const known = [suit, rank].filter((part) => part !== null).join(" ");
  return (
    <span
      class={`card hidden ${suit ? `suit-${suit}` : "unknown"}`}
      role="img"
      aria-label={known ? `hidden card, clued ${known}` : "hidden card"}
      title={known ? `hidden: the clues tell ${known}` : "hidden: no clue tells what it is yet"}
    >
      {suit && (
        <i class="symbol" aria-hidden="true">
          {symbol(suit)}
        </i>
      )}
      {rank ?? "?"}
    </span>
  );
}

/** Why some faces are hidden: your own cards always, every hand for a spectator until the end. */
function WhyHidden({ view, you }: { view: HanabiView; you: number | null }) {
  if (view.end_reason) return null;
  return (
    <p class="why-hidden" data-testid="why-hidden">
      {you === null
        ? "Spectators see no card face while the match runs (a player could otherwise watch " +
          "their own cards here): each card shows what the clues told its holder."
        : "You never see your own cards: each shows what the clues told you."}
    </p>
  );
}

/** Every clue so far, newest first: who told whom what, and which of their cards it touched. */
function ClueHistory(props: {
  clues: HanabiClueRecord[] | null;
  players: string[];
  you: number | null;
}) {
  const { clues, players, you } = props;
  if (clues === null) {
    return (
      <section class="clue-history" data-testid="clue-history">
        <h3>Clues</h3>
        <p class="none">This match began before the clue history was kept: the log has them.</p>
      </section>
    );
  }
  return (
    <section class="clue-history" data-testid="clue-history">
      <h3>Clues ({clues.length})</h3>
      {clues.length === 0 ? (
        <p class="none">No clue given yet.</p>
      ) : (
        <ol reversed>
          {[...clues].reverse().map((clue) => (
            <li key={clue.turn} data-testid="clue-record">
              <span class="turn">Turn {clue.turn + 1}:</span> {clueWords(clue, players, you)}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function clueWords(clue: HanabiClueRecord, players: string[], you: number | null): string {
  const what =
    clue.colour != null ? `${symbol(clue.colour)} ${clue.colour}` : `${clue.rank ?? "?"}s`;
  const where =
    clue.slots.length === 0
      ? "no card"
      : `card${clue.slots.length > 1 ? "s" : ""} ${clue.slots.join(", ")}`;
  const giver = capitalised(whoName(players, clue.seat, you));
  return `${giver} clued ${whoName(players, clue.target, you)}: ${what} on ${where}`;
}

/** What the clues said of a card: the colours and ranks it is, those it is not, and, once a
 * clue ruled some out, those it may still be. */
function Knowledge({ card }: { card: HanabiCardView }) {
  const told = [...card.clued_colours.map(symbolled), ...card.clued_ranks.map(String)];
  const not = [...card.excluded_colours.map(symbolled), ...card.excluded_ranks.map(String)];
  const colourClued = card.clued_colours.length + card.excluded_colours.length > 0;
  const rankClued = card.clued_ranks.length + card.excluded_ranks.length > 0;
  if (!colourClued && !rankClued) return null;
  return (
    <div class="knowledge" data-testid="knowledge">
      {told.length > 0 && <span class="told">{told.join(" ")}</span>}
      {not.length > 0 && <span class="not">not {not.join(" ")}</span>}
      <span class="possible" title="what it may still be">
        {colourClued &&
          card.possible_suits.map((suit) => (
            <i key={suit} class={`dot suit-${suit}`} title={suit}>
              {symbol(suit)}
            </i>
          ))}{" "}
        {rankClued && card.possible_ranks.join(" ")}
      </span>
    </div>
  );
}

function symbolled(suit: string): string {
  return `${symbol(suit)} ${suit}`;
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
