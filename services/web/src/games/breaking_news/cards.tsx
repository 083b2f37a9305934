// Breaking News's cards face up: an object card with its symbols and points, an element card
// with its symbol, its word in the display language and its coloured edges (or face down).
import type { BreakingNewsElementCard, BreakingNewsObjectCard } from "../../client/types.gen";
import { plural } from "../cardtable";
import { elementWord } from "./words";

const SYMBOL_ICON: Record<string, string> = {
  person: "☺",
  animal: "♞",
  place: "⌂",
  vehicle: "✈",
  food: "☕",
  weather: "☁",
  thing: "⚷",
};

export function ObjectFace(props: { object: BreakingNewsObjectCard; highlight?: boolean }) {
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

export function ElementFace(props: {
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
