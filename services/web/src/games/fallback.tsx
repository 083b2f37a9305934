// The generic table: the view as readable JSON and each legal action as a button labelled by
// its JSON. Plain, but it offers exactly what the server lists.
import type { TableProps } from "./types";

export function FallbackTable({ view, actions, submit, busy }: TableProps<unknown, unknown>) {
  return (
    <div class="fallback-table" data-testid="game-table">
      <pre class="view">{JSON.stringify(view, null, 2)}</pre>
      {actions.length > 0 && (
        <ul class="actions">
          {actions.map((action, index) => (
            <li key={index}>
              <button disabled={busy} onClick={() => void submit(action)}>
                {JSON.stringify(action)}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
