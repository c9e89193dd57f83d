/**
 * The testing kit: model-based tests for gateway authors. Enumerate a machine's paths, replay each
 * through the real gateway on a simulated clock, and check the runtime's invariants on every event.
 *
 * @example
 * ```ts
 * import { describe, it } from "vitest";
 * import { machinePaths, testPaths } from "tiller-gateway/testing";
 * describe("run paths", () => testPaths(it, machinePaths("run", { config: { staleReplyRecheck: { maxPasses: 1 } } })));
 * ```
 */

export type {
  CommitmentEvent,
  CommitmentInput,
  CommitmentOutput,
  ReviewOutput,
  SendInput,
  SendOutput,
} from "../machines/commitment.types.js";
export type {
  CallModelInput,
  CallModelOutput,
  RunEvent,
  RunInput,
  RunOutput,
  RunToolInput,
  RunToolOutput,
} from "../machines/run.machine.js";
export type { DeliverInput, DeliverOutput, SessionEvent, SessionInput } from "../machines/session.types.js";
export type { CheckedResult, Expectation, RecordedStates } from "../scenario/check-expectations.js";
export { checkExpectations } from "../scenario/check-expectations.js";
export type { ScenarioExpect } from "../scenario/expect-schema.js";
export { commitmentPathScenario } from "./commitment-path-scenario.js";
export { PATH_COMMITMENT } from "./commitment-path-stimuli.js";
export {
  createTestGateway,
  InvariantError,
  type TestGateway,
  type TestGatewayOptions,
} from "./create-test-gateway.js";
export {
  chunk,
  type FakeOpenAIOptions,
  type FakeOpenAIServer,
  type FakeReply,
  type FakeRequest,
  type FakeStep,
  type FakeToolCall,
  gate,
  startFakeOpenAI,
  textStream,
  toolCallStream,
  usageChunk,
} from "./fake-openai.js";
export {
  InvariantMonitor,
  type InvariantMonitorOptions,
  type InvariantViolation,
} from "./invariant-monitor.js";
export {
  MACHINE_NAMES,
  type MachineName,
  type MachinePath,
  type MachinePathsOptions,
  machinePaths,
} from "./machine-paths.js";
export { type ReplayOptions, type ReplayResult, replayPath, scenarioForPath } from "./replay-path.js";
export { runPathScenario, type ScenarioFile } from "./run-path-scenario.js";
export { argumentsFor, schemaArbitrary, UnsupportedSchemaError } from "./schema-arguments.js";
export { sessionPathScenario, UnrealizablePathError } from "./session-path-scenario.js";
export { type PathTestContext, type TestFunction, testPaths } from "./test-paths.js";
export { withYourTools } from "./with-your-tools.js";
