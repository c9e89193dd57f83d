/** A tiny element builder: `h("div", { class: "x" }, child, "text")`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `17:04:05.120` for a clock value in ms (a simulated clock starts at 0, so small values read as +ms). */
export function clockTime(at: number): string {
  if (at < 86_400_000) return `+${(at / 1000).toFixed(3)}s`;
  return `${wallTime(at)}.${pad(new Date(at).getMilliseconds(), 3)}`;
}

/** `17:04:05`: the page writes every time of day on the 24-hour clock, whatever the browser's locale. */
export function wallTime(at: number): string {
  const date = new Date(at);
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
