/**
 * The victim of the deliveries crash test (file-delivery-retention.test.ts):
 *
 *   node delivery-crash-writer.mjs DIR KEEP
 *
 * Opens a FileDeliveryLog on DIR with `keep` KEEP and appends to one session forever, one delivery at a
 * time, printing `ack <messageId>` once each append has resolved (stdout to a pipe is synchronous on
 * Linux, so a printed ack has left the process). With a small KEEP a compaction follows every few
 * appends, so a SIGKILL often lands inside one.
 */
import { FileDeliveryLog } from "../../src/adapters/jsonl/file-delivery-log.js";

const [dir, keepArg] = process.argv.slice(2);
if (!dir || !keepArg) throw new Error("usage: delivery-crash-writer.ts DIR KEEP");
const log = new FileDeliveryLog(dir, { keep: Number(keepArg) });
process.stdout.write("ready\n");
for (let n = 0; ; n++) {
  const record = await log.append("web:crash", {
    kind: "reply",
    text: `delivery ${n} ${"x".repeat(n % 200)}`,
  });
  process.stdout.write(`ack ${record.messageId}\n`);
}
