import type { ToolDefinition } from "../../src/ports/tool.js";
export declare const stubbornLookup: ToolDefinition;
declare const tools: ToolDefinition[];
export default tools;
