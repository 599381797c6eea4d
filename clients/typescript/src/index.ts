export { CompactorClient, OPERATION_METHODS } from "./client.js";
export type {
  AppendOptions,
  ClientOptions,
  Page,
  SearchOptions,
  StartCompactionIn,
  WaitOptions,
} from "./client.js";
export {
  CompactorAPIError,
  TIMEOUT_ERROR,
  TRANSPORT_ERROR,
  UNEXPECTED_RESPONSE,
} from "./errors.js";
export type { ProblemDetails } from "./errors.js";
export type * from "./types.js";
