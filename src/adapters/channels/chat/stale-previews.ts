import { ChannelSendError, errorMessage } from "../../../errors.js";
import type { Logger } from "../../../logger.js";
import {
  DISCARDED_PREVIEW_TEXT,
  type EditTarget,
  PREVIEW_DELIVERY_PREFIX,
  type ReconcileResult,
} from "../../../ports/channel.js";
import type { LedgerEntry, SendLedger } from "./send-ledger.js";

/**
 * Records what an edit the platform took means for the ledger. A preview edited to the discarded text
 * needs no cleanup any more. A final that replaced a preview (its own deliveryId on the edit target)
 * was delivered by that edit: one durable line says so and settles the preview, so a restart neither
 * posts that final again nor discards the message that now shows it.
 */
export async function recordEdit(
  ledger: SendLedger,
  target: EditTarget,
  text: string,
  now: number,
): Promise<void> {
  const id = target.deliveryId;
  if (!id) return;
  if (id.startsWith(PREVIEW_DELIVERY_PREFIX)) {
    if (text === DISCARDED_PREVIEW_TEXT && ledger.get(id)) await ledger.settle?.(id);
    return;
  }
  const preview = ledger
    .list?.()
    .find(
      (entry) =>
        entry.deliveryId.startsWith(PREVIEW_DELIVERY_PREFIX) &&
        entry.session === target.session &&
        entry.messageIds?.[0] === target.messageId,
    );
  await ledger.edited?.(id, target.session, now, target.messageId, preview?.deliveryId);
}

/**
 * The previews an earlier process left in the ledger: read when the channel is made, before this
 * process sends anything, so a preview of this process is never taken for a stale one.
 */
export function stalePreviews(ledger: SendLedger): LedgerEntry[] {
  return (ledger.list?.() ?? []).filter((entry) => entry.deliveryId.startsWith(PREVIEW_DELIVERY_PREFIX));
}

/**
 * After a restart, before new messages are taken: every preview an earlier process showed and never
 * replaced with its final (it died mid-stream) is edited to the discarded text, so no stale draft
 * stands looking like an answer; the re-run turn answers in a message of its own. A preview whose
 * first send never came back is looked up with `reconcile` where the platform can tell. A preview that
 * cannot be edited for good (deleted) is settled; one that fails for now is tried at the next start.
 * Resolves with the number of previews discarded.
 */
export async function discardStalePreviews(
  ledger: SendLedger,
  stale: readonly LedgerEntry[],
  edit: (target: EditTarget, text: string) => Promise<unknown>,
  logger: Logger,
  reconcile?: (deliveryId: string) => Promise<ReconcileResult>,
): Promise<number> {
  let discarded = 0;
  for (const entry of stale) {
    // Settled since it was read (a later start already discarded it): nothing to do.
    if (!ledger.get(entry.deliveryId)) continue;
    let messageId = entry.messageIds?.[0];
    if (!messageId && reconcile) {
      const found = await reconcile(entry.deliveryId).catch(() => undefined);
      if (found?.delivered) messageId = found.messageId;
      else if (found && !found.delivered) {
        await ledger.settle?.(entry.deliveryId);
        continue;
      }
    }
    if (!messageId) continue;
    try {
      await edit({ session: entry.session, messageId, deliveryId: entry.deliveryId }, DISCARDED_PREVIEW_TEXT);
      if (ledger.get(entry.deliveryId)) await ledger.settle?.(entry.deliveryId);
      discarded++;
    } catch (error) {
      const permanent = error instanceof ChannelSendError && error.permanent;
      logger.warn(
        { session: entry.session, deliveryId: entry.deliveryId, error: errorMessage(error) },
        "preview.discardFailed",
      );
      if (permanent) await ledger.settle?.(entry.deliveryId);
    }
  }
  return discarded;
}
