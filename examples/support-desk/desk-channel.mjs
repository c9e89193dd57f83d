// A custom channel: the desk's chat widget. It numbers its messages per session and hands each send to
// the transport it wraps (the platform's API in production, the kit's recording channel in tests).
export class DeskChannel {
  #count = new Map();
  constructor(transport) {
    this.transport = transport;
  }
  async send(message) {
    const next = (this.#count.get(message.session) ?? 0) + 1;
    this.#count.set(message.session, next);
    const receipt = await this.transport.send(message);
    return { ...receipt, widgetIndex: next };
  }
}
