// The table of element cards as a grid (north up), with the chosen card's listed spots to place
// it and, while no card is chosen, where some card of the hand fits.
import type { BreakingNewsElementCard, BreakingNewsTableCard } from "../../client/types.gen";
import type { PlaceAction } from "./actions";
import { ElementFace } from "./cards";
import { elementWord } from "./words";

export function Grid(props: {
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
