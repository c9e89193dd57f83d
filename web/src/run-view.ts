/** What the page shows of the selected session's running turn. */
export interface RunView {
  runId: string;
  value: unknown;
  status: string;
  tool?: { name: string; cancellable?: boolean };
  call?: number;
  recheckReason?: string;
}

/** `turn.running` (how GET /v1/sessions names a state) as a state value. */
export function stateValueOf(name: string): unknown {
  const parts = name.split(".");
  return parts.reduceRight<unknown>(
    (inner, part) => (inner === undefined ? part : { [part]: inner }),
    undefined,
  );
}
