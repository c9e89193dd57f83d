/** Subagent sessions (`<parent>:sub:<n>`) listed under their parent. */

export interface SessionNode {
  key: string;
  /** The subagent sessions of this session, in number order. */
  children: string[];
}

const CHILD = /^(.*):sub:(\d+)$/;

/**
 * Groups session keys so that each subagent session sits under its parent when the parent is listed
 * too (a child whose parent is not listed stays at the top level); other keys keep their order.
 *
 * @example
 * ```ts
 * sessionTree(["web:1", "web:1:sub:2", "web:2", "web:1:sub:1"]);
 * // [{ key: "web:1", children: ["web:1:sub:1", "web:1:sub:2"] }, { key: "web:2", children: [] }]
 * ```
 */
export function sessionTree(keys: readonly string[]): SessionNode[] {
  const present = new Set(keys);
  const nodes = new Map<string, SessionNode>();
  const top: SessionNode[] = [];
  const parentOf = (key: string): string | undefined => {
    const match = CHILD.exec(key);
    return match && present.has(match[1]!) ? match[1] : undefined;
  };
  for (const key of keys) {
    if (parentOf(key) !== undefined) continue;
    const node = { key, children: [] };
    nodes.set(key, node);
    top.push(node);
  }
  for (const key of keys) {
    let parent = parentOf(key);
    if (parent === undefined) continue;
    // A subagent of a subagent sits under the outermost listed session.
    while (parent !== undefined && !nodes.has(parent)) parent = parentOf(parent);
    nodes.get(parent!)?.children.push(key);
  }
  const number = (key: string) => Number(CHILD.exec(key)?.[2] ?? 0);
  for (const node of top)
    node.children.sort((a, b) => a.length - b.length || number(a) - number(b) || (a < b ? -1 : 1));
  return top;
}
