import type { Channel, DeliveryReceipt, OutboundMessage } from "../../src/ports/channel.js";
export declare class DeskChannel implements Channel {
  constructor(transport: Channel);
  send(message: OutboundMessage): Promise<DeliveryReceipt>;
}
