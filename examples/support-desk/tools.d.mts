import type { ToolDefinition } from "../../src/ports/tool.js";
export declare const warehouse: { find(order: string, options?: { signal?: AbortSignal }): Promise<unknown> };
export declare const lookupOrder: ToolDefinition;
export declare const refund: ToolDefinition;
declare const tools: ToolDefinition[];
export default tools;
