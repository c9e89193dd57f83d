/**
 * The guard against creep: the figures of the last recorded run (bench/recorded-figures.json), shown
 * beside each new figure, and a loud warning when a watched figure got worse by more than its margin.
 * The file changes only with `npm run bench -- --record`, never as a side effect of a plain run.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

type Figures = Record<string, number | string>;

/** What the file holds: when it was recorded, the load then, and the numeric figures by bench title. */
export interface RecordedFigures {
  recordedAt: string;
  node: string;
  loadAverage: string;
  benches: Record<string, Record<string, number>>;
}

/**
 * Figures whose creep is called out: ratios measured in one run (or a heap size), so a noisy machine
 * moves them little. `worse` says which way is worse; `margin` is how much worse (a fraction) is flagged.
 */
export const WATCHED: ReadonlyArray<{ key: string; worse: "higher" | "lower"; margin: number }> = [
  { key: "firstCall.liveSession.timesFloor", worse: "higher", margin: 0.2 },
  { key: "idle.bytesPerSession", worse: "higher", margin: 0.2 },
];

export function loadRecorded(path: string): RecordedFigures | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as RecordedFigures;
}

/** `(was 12.3, +8%)` beside a numeric figure that was recorded; "" otherwise. */
export function besideRecorded(value: number | string, recorded: number | undefined): string {
  if (typeof value !== "number" || recorded === undefined) return "";
  const change =
    recorded === 0
      ? ""
      : `, ${value >= recorded ? "+" : ""}${Math.round((100 * (value - recorded)) / Math.abs(recorded))}%`;
  return `  (was ${recorded}${change})`;
}

/** The watched figures of `figures` that are worse than recorded by more than their margin. */
export function creepOf(figures: Figures, recorded: Record<string, number> | undefined): string[] {
  const found: string[] = [];
  if (!recorded) return found;
  for (const { key, worse, margin } of WATCHED) {
    const value = figures[key];
    const before = recorded[key];
    if (typeof value !== "number" || before === undefined || before === 0) continue;
    const change = (value - before) / Math.abs(before);
    if (worse === "higher" ? change > margin : change < -margin) {
      found.push(
        `${key} is ${value}, was ${before} (${Math.round(100 * change)}%, allowed ${100 * margin}%)`,
      );
    }
  }
  return found;
}

/** Writes this run's numeric figures over the recorded ones of the benches that ran. */
export function record(
  path: string,
  previous: RecordedFigures | undefined,
  run: Omit<RecordedFigures, "benches">,
  ran: Record<string, Figures>,
): void {
  const benches: Record<string, Record<string, number>> = { ...(previous?.benches ?? {}) };
  for (const [title, figures] of Object.entries(ran)) {
    const numbers: Record<string, number> = {};
    for (const [key, value] of Object.entries(figures)) if (typeof value === "number") numbers[key] = value;
    benches[title] = numbers;
  }
  writeFileSync(path, `${JSON.stringify({ ...run, benches }, null, 2)}\n`);
}
