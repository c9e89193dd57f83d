import { describe, expect, it } from "vitest";
import { splitText } from "../../../../src/adapters/channels/chat/split-text.js";

describe("splitText", () => {
  it("keeps a text within the limit whole", () => {
    expect(splitText("short", 4096)).toEqual(["short"]);
  });

  it("cuts at a paragraph, then a sentence, then a word, never over the limit", () => {
    const paragraphs = `${"a".repeat(3000)}\n\n${"b".repeat(3000)}`;
    expect(splitText(paragraphs, 4096)).toEqual(["a".repeat(3000), "b".repeat(3000)]);
    const sentences = `${"x".repeat(2500)}. ${"y".repeat(2500)}.`;
    expect(splitText(sentences, 4096)).toEqual([`${"x".repeat(2500)}.`, `${"y".repeat(2500)}.`]);
    const words = "word ".repeat(2000).trim();
    const parts = splitText(words, 4096);
    expect(parts.every((part) => part.length <= 4096 && !part.startsWith(" ") && !part.endsWith(" "))).toBe(
      true,
    );
    expect(parts.join(" ")).toBe(words);
  });

  it("cuts a text without spaces hard, never inside a surrogate pair", () => {
    const emoji = "😀".repeat(3000);
    const parts = splitText(emoji, 4095);
    expect(parts.every((part) => part.length <= 4095 && !/[\uD800-\uDBFF]$/.test(part))).toBe(true);
    expect(parts.join("")).toBe(emoji);
  });
});
