// The Dingo Ate the Baby: the ranches, your hand, the day's target and piles, the scores, and
// one control per legal action the API listed (never a move it did not list).
import { useState } from "preact/hooks";
import type { DingoAction, DingoCard, DingoRanchView, DingoView } from "../client/types.gen";
import type { TableProps } from "./types";
import {
  ActionButton,
  Fact,
  groupBy,
  listed,
  ScoreTable,
  Section,
  SpectatingNote,
  StatusAndResult,
  turnLine,
} from "./cardtable";
import { capitalised, seatName, whoName } from "./names";
import "./dingo.css";

const VERB: Record<string, string> = {
  scare: "scares",
  chase: "chases",
  destroy: "destroys",
  eat: "eats",
  stomp: "stomps",
};

/** "blue lion (5)" */
function cardLabel(card: DingoCard): string {
  return `${card.colour} ${card.kind} (${card.value})`;
}

/** What a card's effect does, as the view describes it. */
function effectText(card: DingoCard): string {
  if (card.guards_left) return "guards the card to its left";
  if (!card.keyword || card.removes.length === 0) return "no effect";
  return `${VERB[card.keyword] ?? card.keyword} a ${card.removes.join(" or a ")}`;
}

/** "your ranch" for the caller's own, else "<name>'s ranch". */
function ranchName(players: string[], seat: number, you: number | null): string {
  return seat === you ? "your ranch" : `${seatName(players, seat)}'s ranch`;
}

function CardFace(props: {
  card: DingoCard;
  protectedCard?: boolean;
  guarded?: boolean;
  hit?: boolean;
  small?: boolean;
}) {
  const { card } = props;
  const classes = [
    "dg-card",
    `dg-colour-${card.colour}`,
    props.small ? "dg-small" : "",
    props.hit ? "dg-hit" : "",
    props.protectedCard ? "dg-protected" : "",
  ].join(" ");
  return (
    <div
      class={classes}
      data-testid="dingo-card"
      data-card={card.id}
      title={`${card.id}: ${effectText(card)}`}
    >
      <div class="dg-card-top">
        <span class="dg-colour-name">{card.colour}</span>
        <span class="dg-value">{card.value}</span>
      </div>
      <div class="dg-kind">{card.kind}</div>
      {props.small ? null : <div class="dg-effect">{effectText(card)}</div>}
      {props.protectedCard || props.guarded ? (
        <div class="dg-marks">
          {props.protectedCard ? (
            <span title="protected: no effect removes it">◆ protected</span>
          ) : null}
          {props.guarded ? <span title="guarded by the moon to its right">☾ guarded</span> : null}
        </div>
      ) : null}
    </div>
  );
}

function Ranch(props: {
  ranch: DingoRanchView;
  view: DingoView;
  players: string[];
  you: number | null;
  toMove: number[];
  hover: Hover | null;
}) {
  const { ranch, view, players, you, hover } = props;
  const over = ranch.value > view.target;
  const mine = ranch.seat === you;
  const dropHere = hover !== null && hover.ranch === ranch.seat;
  return (
    <div
      class={`dg-ranch ${mine ? "dg-mine" : ""} ${dropHere ? "dg-drop" : ""} ${props.toMove.includes(ranch.seat) ? "dg-moving" : ""}`}
      data-testid="ranch"
      data-seat={ranch.seat}
    >
      <div class="dg-ranch-head">
        <span
          class={`dg-swatch dg-colour-${ranch.starting_colour}`}
          title={`starting colour ${ranch.starting_colour}`}
        />
        <strong>{mine ? "Your ranch" : ranchName(players, ranch.seat, you)}</strong>
        <span
          class={`dg-ranch-value ${over ? "dg-over" : "dg-within"}`}
          title="ranch value / today's target"
        >
          {ranch.value} / {view.target}
          {over ? " over!" : ""}
        </span>
      </div>
      <div class="dg-ranch-cards">
        {ranch.cards.map((card) => (
          <CardFace
            key={card.id}
            card={card}
            protectedCard={card.id === ranch.protected}
            guarded={ranch.moon_guarded.includes(card.id)}
            hit={hover !== null && hover.target === card.id}
          />
        ))}
      </div>
      <div class="dg-open-colours">
        Opponents may play:{" "}
        {ranch.open_colours.map((colour) => (
          <span key={colour} class={`dg-chip dg-colour-${colour}`}>
            {colour}
          </span>
        ))}
      </div>
    </div>
  );
}

interface Hover {
  ranch: number;
  target: string | null;
}

/** Find which ranch holds a card (for describing an effect's target). */
function ownerOf(view: DingoView, id: string): DingoRanchView | undefined {
  return view.ranches.find((ranch) => ranch.cards.some((card) => card.id === id));
}

function cardById(view: DingoView, id: string): DingoCard | undefined {
  for (const ranch of view.ranches) {
    const found = ranch.cards.find((card) => card.id === id);
    if (found) return found;
  }
  return view.hand?.find((card) => card.id === id);
}

/** The listed actions for one hand card, grouped into "onto this ranch (+ destroy)" rows. */
function HandCardControls(props: {
  card: DingoCard;
  actions: DingoAction[];
  view: DingoView;
  players: string[];
  you: number | null;
  busy: boolean;
  submit: (action: DingoAction) => Promise<void>;
  setHover: (hover: Hover | null) => void;
}) {
  const { card, view, players, you, busy, submit, setHover } = props;
  const discards = listed(props.actions, "DiscardCard").filter((action) => action.card === card.id);
  const plays = listed(props.actions, "PlayCard").filter((action) => action.card === card.id);
  const groups = groupBy(plays, (play) => `${play.ranch}|${play.destroy_protected ? 1 : 0}`);
  if (discards.length === 0 && plays.length === 0) return null;
  const own = you === null ? undefined : view.ranches[you];
  const protectedCard = own ? cardById(view, own.protected) : undefined;
  return (
    <div class="dg-controls" data-testid="card-controls" data-card={card.id}>
      {[...groups.entries()].map(([key, group]) => {
        const first = group[0];
        const onto = `Onto ${ranchName(players, first.ranch, you)}`;
        const destroy = first.destroy_protected
          ? ` and destroy your protected ${protectedCard ? cardLabel(protectedCard) : "card"}`
          : "";
        return (
          <div class="dg-control-row" key={key}>
            <div class="dg-control-label">
              {onto}
              {destroy}:
            </div>
            <div class="dg-control-buttons">
              {group.map((play) => {
                const target = play.target ?? null;
                let text: string;
                if (target === null) {
                  text = card.keyword ? "play, no effect" : "play";
                } else {
                  const hit = cardById(view, target);
                  const owner = ownerOf(view, target);
                  const where = owner ? ` on ${ranchName(players, owner.seat, you)}` : "";
                  text = `play, ${card.keyword ?? "remove"} ${hit ? cardLabel(hit) : target}${where}`;
                }
                return (
                  <ActionButton
                    key={`${target}`}
                    action={play}
                    busy={busy}
                    className={target === null ? "" : "dg-effect-button"}
                    title={`${capitalised(text)} (${card.id} onto ${ranchName(players, play.ranch, you)})`}
                    onChoose={() => {
                      setHover(null);
                      void submit(play);
                    }}
                    onHover={(on) => setHover(on ? { ranch: play.ranch, target } : null)}
                  >
                    {capitalised(text)}
                  </ActionButton>
                );
              })}
            </div>
          </div>
        );
      })}
      {discards.map((discard) => (
        <div class="dg-control-row" key="discard">
          <ActionButton
            action={discard}
            busy={busy}
            className="dg-discard-button"
            onChoose={() => {
              setHover(null);
              void submit(discard);
            }}
          >
            Discard it (draw a new card)
          </ActionButton>
        </div>
      ))}
    </div>
  );
}

export function DingoTable(props: TableProps<DingoView, DingoAction>) {
  const { view, actions, you, players, toMove, submit, busy } = props;
  const [hover, setHover] = useState<Hover | null>(null);
  const over = view.end_reason !== null && view.end_reason !== undefined;
  const destroy = actions.find((action) => action.type === "DestroyProtected");
  const own = you !== null ? view.ranches[you] : undefined;
  const ownProtected = own ? cardById(view, own.protected) : undefined;
  const status = over ? "" : turnLine(players, toMove, you);

  return (
    <div class="ct-table dg-table" data-testid="dingo-table" data-game="dingo">
      <div class="ct-facts">
        <Fact label="Day" testid="dingo-day">
          {view.day}
          {view.tie_break_day ? " (tie-break day)" : ""}
        </Fact>
        <Fact label="Target" testid="dingo-target" title="today's d10 roll + 10">
          {view.target} <small>(rolled {view.roll})</small>
        </Fact>
        <Fact label="Discard pile" title="the day ends when the discard pile is full">
          {view.discards.length} / {view.discard_limit}
        </Fact>
        <Fact label="Draw pile">{view.draw_pile}</Fact>
        <Fact
          label="Game to"
          title={`the game ends on the day a total passes ${view.target_score}`}
        >
          more than {view.target_score}
        </Fact>
        <Fact label="Tie">{view.tiebreak === "extra_day" ? "extra day" : "shared win"}</Fact>
      </div>

      <StatusAndResult
        seats={props}
        status={status}
        over={over}
        winners={view.winners ?? []}
        scores={view.totals}
        reason={view.end_reason}
      />

      <Section title="Players" class="dg-players">
        <ScoreTable
          seats={props}
          scores={view.totals}
          columns={[{ label: "Total" }, { label: "Ranch" }, { label: "Hand" }]}
          nameExtra={(seat) =>
            seat === view.start_player ? (
              <span title="start player of the day"> (starts)</span>
            ) : null
          }
          cells={(seat) => (
            <>
              <td>{view.ranches[seat]?.value ?? 0}</td>
              <td title="cards in hand">{view.hand_sizes[seat] ?? 0}</td>
            </>
          )}
        />
        {view.last_day ? (
          <div class="dg-last-day" data-testid="last-day">
            Day {view.last_day.day} (target {view.last_day.target},{" "}
            {view.last_day.reason === "discard_limit" ? "discard pile full" : "draw pile empty"}):{" "}
            {view.last_day.values.map((value, seat) => (
              <span key={seat} class="dg-last-day-seat">
                {whoName(players, seat, you)} {value}
                {value > view.last_day!.target ? " (over)" : ""} → +{view.last_day!.points[seat]}
              </span>
            ))}
          </div>
        ) : null}
      </Section>

      <Section title="Ranches" class="dg-ranches">
        <div class="dg-ranch-list">
          {view.ranches.map((ranch) => (
            <Ranch
              key={ranch.seat}
              ranch={ranch}
              view={view}
              players={players}
              you={you}
              toMove={toMove}
              hover={hover}
            />
          ))}
        </div>
      </Section>

      {view.hand ? (
        <Section
          title={actions.length ? "Your hand: choose a move" : "Your hand"}
          class="dg-hand"
          testid="hand"
        >
          <div class="dg-hand-cards">
            {view.hand.map((card) => (
              <div class={`dg-hand-slot ${actions.length ? "dg-with-controls" : ""}`} key={card.id}>
                <CardFace card={card} />
                <HandCardControls
                  card={card}
                  actions={actions}
                  view={view}
                  players={players}
                  you={you}
                  busy={busy}
                  submit={submit}
                  setHover={setHover}
                />
              </div>
            ))}
          </div>
          {destroy ? (
            <div class="dg-control-row">
              <ActionButton
                action={destroy}
                busy={busy}
                className="dg-destroy-button"
                onChoose={() => {
                  setHover(null);
                  void submit(destroy);
                }}
                onHover={(on) =>
                  setHover(
                    on && you !== null ? { ranch: you, target: own?.protected ?? null } : null,
                  )
                }
              >
                Destroy your protected {ownProtected ? cardLabel(ownProtected) : "card"} (keep your
                hand)
              </ActionButton>
            </div>
          ) : null}
        </Section>
      ) : (
        <SpectatingNote you={you} over={over} />
      )}

      {view.hands ? (
        <Section title="All hands" class="dg-all-hands">
          {view.hands.map((hand, seat) => (
            <div key={seat} class="dg-revealed">
              <span>{whoName(players, seat, you)}:</span>
              {hand.map((card) => (
                <CardFace key={card.id} card={card} small />
              ))}
            </div>
          ))}
        </Section>
      ) : null}

      <Section
        title={`Discard pile (${view.discards.length} / ${view.discard_limit})`}
        class="dg-discards"
      >
        {view.discards.length === 0 ? (
          <div class="ct-note">Empty</div>
        ) : (
          <div class="dg-discard-cards">
            {view.discards.map((card) => (
              <CardFace key={card.id} card={card} small />
            ))}
          </div>
        )}
      </Section>
    </div>
  );
}
