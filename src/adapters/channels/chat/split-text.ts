/**
 * Cuts `text` into parts of at most `max` characters (UTF-16 units, as the platforms count), at a
 * paragraph break where one fits, else a sentence end, else a space, else hard (never inside a
 * surrogate pair). Joining the parts with what was cut at gives back the text, less that whitespace.
 *
 * @example
 * ```ts
 * splitText("a".repeat(5000), 4096).map((part) => part.length); // [4096, 904]
 * ```
 */
export function splitText(text: string, max: number): string[] {
  if (max < 2) throw new RangeError(`splitText: max must be at least 2, received ${max}`);
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const cut = cutPoint(rest, max);
    const part = rest.slice(0, cut).trimEnd();
    if (part.length > 0) parts.push(part);
    rest = rest.slice(cut).replace(/^\s+/, "");
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

function cutPoint(text: string, max: number): number {
  const window = text.slice(0, max + 1);
  // A boundary in the first half would make many tiny parts: only take one past it.
  const floor = Math.floor(max / 2);
  const paragraph = window.lastIndexOf("\n\n");
  if (paragraph >= floor) return paragraph;
  let sentence = -1;
  for (const match of window.matchAll(/[.!?…。](?=\s)/g)) sentence = match.index + 1;
  if (sentence >= floor && sentence <= max) return sentence;
  const space = Math.max(window.lastIndexOf(" "), window.lastIndexOf("\n"));
  if (space >= floor) return space;
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}
