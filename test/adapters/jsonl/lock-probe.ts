/**
 * A second process for the directory-lock tests: `node --import tsx test/adapters/jsonl/lock-probe.ts DIR try`
 * prints `{"ok":true}` or `{"ok":false,"code":...}`; `... DIR hold` takes the lock, prints "held" and
 * keeps it until stdin closes (or it is killed).
 */
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { TillerError } from "../../../src/errors.js";

const [dir, mode = "try"] = process.argv.slice(2);
if (!dir) throw new Error("usage: lock-probe.ts DIR try|hold");

try {
  const store = await JsonlStore.openDir({ dir });
  if (mode === "hold") {
    process.stdout.write("held\n");
    process.stdin.resume();
    await new Promise((resolve) => process.stdin.on("end", resolve));
  } else process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
  await store.close();
} catch (error) {
  const code = error instanceof TillerError ? error.code : String(error);
  process.stdout.write(`${JSON.stringify({ ok: false, code })}\n`);
}
