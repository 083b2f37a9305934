// The story's stopwatch as this page sees it: when the page saw the news called, and the
// seconds since then with what a story told now would earn.
import { useEffect, useRef, useState } from "preact/hooks";

/** When this page saw the news called at ``calledAt`` (by this browser's monotonic clock, never
 * compared with the server's), or null: no call, or one already made when the page first showed
 * it (a reload, a replay), whose clock has run for a time nobody here knows. */
export function useCallSeenAt(calledAt: number | null): number | null {
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
export function StoryClock(props: { seenAt: number | null }) {
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
