import { FileDeliveryLog } from "../../src/adapters/jsonl/file-delivery-log.js";
import { MemoryDeliveryLog } from "../../src/ports/delivery-log.js";
import { deliveryLogContract } from "../support/delivery-log-contract.js";
import { useTempDir } from "../support/temp-dir.js";

const dir = useTempDir("tiller-delivery-contract");

deliveryLogContract({
  name: "memory",
  durable: false,
  open: async (options) => new MemoryDeliveryLog(options),
});
deliveryLogContract({
  name: "file",
  durable: true,
  open: async (options) => new FileDeliveryLog(dir.path, options),
});
