/**
 * A record's JSON as a transcript log keeps it in memory: without the `"seq"` and `"sessionId"` of its
 * header, which the log knows (the seq from the record's place, the session id its own). An idle
 * session's transcript is most of what the session costs, and those two fields are a fifth of a short
 * record. The header is the one `stampRecords` writes: `{"id":…,"seq":…,"at":…,"sessionId":…,"revision":…,`.
 */

/** What marks a text kept whole (its header was not the usual one): JSON.parse skips the space. */
const WHOLE = " ";

/**
 * The text to keep for `json`, the record with this `seq` in the log of `sessionId`: the compact form
 * when {@link expandRecordText} gives `json` back exactly, else `json` whole (marked).
 */
export function compactRecordText(json: string, seq: number, sessionId: string): string {
  const seqPart = `,"seq":${seq}`;
  const sessionPart = `,"sessionId":${JSON.stringify(sessionId)}`;
  // The id is a JSON string, in which every quote is escaped: the first `","seq":` ends it.
  const afterId = json.indexOf('","seq":') + 1;
  const session = afterId > 0 ? json.indexOf(',"sessionId":', afterId) : -1;
  if (
    session > 0 &&
    json.startsWith(seqPart, afterId) &&
    json.startsWith(',"at":', afterId + seqPart.length) &&
    json.startsWith(`${sessionPart},"revision":`, session)
  ) {
    // join() copies into one flat string: slices or a `+` would keep the whole JSON alive beneath.
    const compact = [
      json.slice(0, afterId),
      json.slice(afterId + seqPart.length, session),
      json.slice(session + sessionPart.length),
    ].join("");
    if (expandRecordText(compact, seq, sessionId) === json) return compact;
  }
  return WHOLE + json;
}

/** The record's JSON from what {@link compactRecordText} kept (JSON.parse reads either). */
export function expandRecordText(text: string, seq: number, sessionId: string): string {
  if (text.startsWith(WHOLE)) return text;
  const afterId = text.indexOf('","at":') + 1;
  const revision = afterId > 0 ? text.indexOf(',"revision":', afterId) : -1;
  if (revision < 0) return text;
  return `${text.slice(0, afterId)},"seq":${seq}${text.slice(afterId, revision)},"sessionId":${JSON.stringify(sessionId)}${text.slice(revision)}`;
}
