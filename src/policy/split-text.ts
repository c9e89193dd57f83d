/**
 * Splits a text longer than a channel's `maxLength` into parts that each fit: at paragraph breaks
 * first, then sentence ends, then spaces, and only a word longer than a whole part is cut inside. Parts
 * keep their order and, joined, hold every non-space character of the text.
 *
 * @example
 * ```ts
 * splitText("One.\n\nTwo.", 6); // ["One.", "Two."]
 * splitText("short", 4096);     // ["short"]
 * ```
 */
export function splitText(text: string, maxLength: number): string[] {
  const limit = Math.max(1, Math.floor(maxLength));
  if (text.length <= limit) return [text];
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const cut = cutAt(rest, limit);
    const head = rest.slice(0, cut).trimEnd();
    if (head) parts.push(head);
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}

/** Where the first part of `text` ends: the last boundary of the strongest kind within `limit`. */
function cutAt(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  for (const boundary of [/\n\s*\n/g, /[.!?…][)"'»”’]*\s/g, /\s/g]) {
    let best = -1;
    for (const match of window.matchAll(boundary)) {
      // The boundary's own spaces are dropped, so a part fits when its text before them does.
      const end = match.index + match[0].length;
      if (text.slice(0, end).trimEnd().length <= limit) best = end;
    }
    // A cut in the first tenth would leave a tiny part: a weaker boundary further on is better.
    if (best > limit / 10) return best;
  }
  return limit;
}
