import type { App } from "@slack/bolt";

type ProcessEvent = App["processEvent"];
type ReceiverEvent = Parameters<ProcessEvent>[0];

/**
 * In Socket Mode, Bolt acknowledges an event the moment it arrives, before any listener ran; a crash
 * before Tiller stored the message would then lose it, since Slack does not send an acknowledged
 * envelope again. This holds the acknowledgement until every listener finished (the message is
 * stored, or known to be a duplicate). A listener that fails leaves the envelope unacknowledged, so
 * Slack delivers it again, as the Events API's 500 makes it do.
 */
export function ackAfterHandled(app: App): void {
  const process: ProcessEvent = app.processEvent.bind(app);
  app.processEvent = async (event: ReceiverEvent) => {
    let requested: { response: unknown } | undefined;
    await process({
      ...event,
      ack: async (response?: unknown) => {
        requested = { response };
      },
    } as ReceiverEvent);
    if (requested) await (event.ack as (response?: unknown) => Promise<void>)(requested.response);
  };
}
