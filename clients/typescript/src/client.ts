import {
  CompactorAPIError,
  errorFromResponse,
  errorFromTransport,
  TIMEOUT_ERROR,
  unexpectedResponse,
} from "./errors.js";
import type {
  AppendIn,
  AppendOut,
  CompactIn,
  CompactionJobOut,
  CompactionListOut,
  CompactOut,
  ContextOut,
  EstimateIn,
  EstimateOut,
  ForkIn,
  HealthOut,
  Operation,
  PrepareIn,
  PrepareOut,
  ReadyOut,
  RevertOut,
  SearchOut,
  SessionCompactIn,
  SessionCostOut,
  SessionIn,
  SessionListOut,
  SessionOut,
  SessionPatchIn,
  SettingsChangeListOut,
  SystemPromptIn,
  SystemPromptOut,
  TenantCostOut,
  TranscriptOut,
} from "./types.js";

export interface ClientOptions {
  /** Sent as `Authorization: Bearer …` when the service has `COMPACTOR_API_KEYS`. */
  apiKey?: string;
  /** Per request, in milliseconds (default 180 000: a model summarizer may take 120 s). */
  timeoutMs?: number;
  /** The fetch to send with (a proxy agent, a test double); default: the global fetch. */
  fetch?: typeof fetch;
}

export interface Page {
  offset?: number;
  limit?: number;
}

export interface SearchOptions {
  /** At most this many hits (1–100, default 10). */
  limit?: number;
  /** Only entries compaction folded away. */
  foldedOnly?: boolean;
}

export interface AppendOptions {
  /** The same key with the same batch appends nothing and answers the same. */
  idempotencyKey?: string;
}

export interface WaitOptions {
  /** Between two reads of the job, in milliseconds (default 500). */
  pollIntervalMs?: number;
  /** Give up after this many milliseconds (status 0, `TIMEOUT_ERROR`); default: never. */
  timeoutMs?: number;
  /** Told of every answer while waiting (a progress bar reads `job.progress`). */
  onProgress?: (job: CompactionJobOut) => void;
}

/** Compaction parameters of a job (`dry_run` is answered inline, never as a job). */
export type StartCompactionIn = Omit<SessionCompactIn, "dry_run">;

const FINISHED_STATES: ReadonlySet<string> = new Set(["done", "failed", "abandoned"]);
const DEFAULT_POLL_INTERVAL_MS = 500;

type Query = Record<string, number | string | boolean | undefined>;

interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
  /** A body sent as is (an export bundle), instead of `body` as JSON. */
  raw?: { bytes: Uint8Array; contentType: string };
  query?: Query;
  headers?: Record<string, string>;
  answer: "json" | "text" | "bytes" | "none";
}

const DEFAULT_TIMEOUT_MS = 180_000;

/**
 * The client method of each REST operation. Typed by the generated `Operation` union: a
 * new operation in openapi/openapi.json fails the build until it is listed here.
 */
export const OPERATION_METHODS: Record<Operation, keyof CompactorClient> = {
  "GET /healthz": "healthz",
  "GET /readyz": "readyz",
  "GET /metrics": "metrics",
  "POST /estimate": "estimate",
  "POST /compact": "compact",
  "POST /context/system": "assembleSystemPrompt",
  "POST /sessions": "createSession",
  "GET /sessions": "listSessions",
  "GET /sessions/{session_id}": "getSession",
  "DELETE /sessions/{session_id}": "deleteSession",
  "POST /sessions/{session_id}/messages": "appendMessages",
  "GET /sessions/{session_id}/transcript": "transcript",
  "GET /sessions/{session_id}/context": "context",
  "POST /sessions/{session_id}/prepare": "prepare",
  "POST /sessions/{session_id}/compact": "compactSession",
  "GET /sessions/{session_id}/compactions": "compactions",
  "GET /sessions/{session_id}/jobs/{job_id}": "compactionJob",
  "GET /sessions/{session_id}/search": "search",
  "POST /sessions/{session_id}/compactions/{compaction_id}/revert": "revert",
  "POST /sessions/{session_id}/fork": "fork",
  "PATCH /sessions/{session_id}": "updateSession",
  "GET /sessions/{session_id}/changes": "settingsChanges",
  "GET /sessions/{session_id}/export": "exportSession",
  "POST /sessions/import": "importSession",
  "GET /sessions/{session_id}/cost": "cost",
  "GET /cost": "tenantCost",
};

function sessionPath(sessionId: string, suffix = ""): string {
  if (!sessionId) throw new TypeError("sessionId must not be empty");
  return `/sessions/${encodeURIComponent(sessionId)}${suffix}`;
}

/** Client of a context-compactor service; every failure is a `CompactorAPIError`. */
export class CompactorClient {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async #send<T>(call: Call): Promise<T> {
    let url = this.baseUrl + call.path;
    const query = Object.entries(call.query ?? {}).filter(([, v]) => v !== undefined);
    if (query.length > 0) {
      url += `?${new URLSearchParams(query.map(([k, v]) => [k, String(v)])).toString()}`;
    }
    const headers: Record<string, string> = {
      accept: "application/json, application/problem+json",
      ...call.headers,
    };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    if (call.body !== undefined) headers["content-type"] = "application/json";
    if (call.raw !== undefined) headers["content-type"] = call.raw.contentType;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: call.method,
        headers,
        body:
          call.raw !== undefined
            ? // A bundle is an ordinary (ArrayBuffer-backed) byte array, never a shared one.
              (call.raw.bytes as Uint8Array<ArrayBuffer>)
            : call.body === undefined
              ? undefined
              : JSON.stringify(call.body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      throw errorFromTransport(error, call.method, url);
    }
    if (!response.ok) throw await errorFromResponse(response, call.method, url);
    if (call.answer === "none") return undefined as T;
    if (call.answer === "text") return (await response.text()) as T;
    if (call.answer === "bytes") return new Uint8Array(await response.arrayBuffer()) as T;
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw unexpectedResponse(response, "the answer is not JSON", call.method, url);
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      throw unexpectedResponse(response, "the answer is not a JSON object", call.method, url);
    }
    return body as T;
  }

  /** GET /healthz: the process is up. */
  healthz(): Promise<HealthOut> {
    return this.#send({ method: "GET", path: "/healthz", answer: "json" });
  }

  /** GET /readyz: tokenizers and database ready (a 503 rejects). */
  readyz(): Promise<ReadyOut> {
    return this.#send({ method: "GET", path: "/readyz", answer: "json" });
  }

  /** GET /metrics: Prometheus text. */
  metrics(): Promise<string> {
    return this.#send({ method: "GET", path: "/metrics", answer: "text" });
  }

  /** POST /estimate: count a history's tokens and say whether to compact. */
  estimate(body: EstimateIn): Promise<EstimateOut> {
    return this.#send({ method: "POST", path: "/estimate", body, answer: "json" });
  }

  /** POST /compact: fold the older part of a history into one summary message. */
  compact(body: CompactIn): Promise<CompactOut> {
    return this.#send({ method: "POST", path: "/compact", body, answer: "json" });
  }

  /** POST /context/system: assemble the system prompt for an agent working in `cwd`. */
  assembleSystemPrompt(body: SystemPromptIn): Promise<SystemPromptOut> {
    return this.#send({ method: "POST", path: "/context/system", body, answer: "json" });
  }

  /** POST /sessions: a new session with its model, format, system, tools, settings. */
  createSession(body: SessionIn = {}): Promise<SessionOut> {
    return this.#send({ method: "POST", path: "/sessions", body, answer: "json" });
  }

  /** GET /sessions: the caller's sessions, newest first. */
  listSessions(page: Page = {}): Promise<SessionListOut> {
    return this.#send({ method: "GET", path: "/sessions", query: { ...page }, answer: "json" });
  }

  /** GET /sessions/{id}. */
  getSession(sessionId: string): Promise<SessionOut> {
    return this.#send({ method: "GET", path: sessionPath(sessionId), answer: "json" });
  }

  /** DELETE /sessions/{id}, with its transcript and compactions. */
  deleteSession(sessionId: string): Promise<void> {
    return this.#send({ method: "DELETE", path: sessionPath(sessionId), answer: "none" });
  }

  /** POST /sessions/{id}/messages; a repeated `idempotencyKey` appends nothing. */
  appendMessages(
    sessionId: string,
    body: AppendIn,
    options: AppendOptions = {},
  ): Promise<AppendOut> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
    const path = sessionPath(sessionId, "/messages");
    return this.#send({ method: "POST", path, body, headers, answer: "json" });
  }

  /** GET /sessions/{id}/transcript: the original messages, as received. */
  transcript(sessionId: string, page: Page = {}): Promise<TranscriptOut> {
    const path = sessionPath(sessionId, "/transcript");
    return this.#send({ method: "GET", path, query: { ...page }, answer: "json" });
  }

  /** GET /sessions/{id}/context: what to send now, with its estimate. */
  context(sessionId: string): Promise<ContextOut> {
    const path = sessionPath(sessionId, "/context");
    return this.#send({ method: "GET", path, answer: "json" });
  }

  /**
   * POST /sessions/{id}/prepare: the before-turn hook (compacts when over the threshold);
   * with `{ dry_run: true }`, what it would do, writing nothing.
   */
  prepare(sessionId: string, body?: PrepareIn): Promise<PrepareOut> {
    const path = sessionPath(sessionId, "/prepare");
    return this.#send({ method: "POST", path, body, answer: "json" });
  }

  /** POST /sessions/{id}/compact: compact now; 409 when there is nothing to compact. */
  compactSession(sessionId: string, body: SessionCompactIn = {}): Promise<PrepareOut> {
    const path = sessionPath(sessionId, "/compact");
    return this.#send({ method: "POST", path, body, answer: "json" });
  }

  /**
   * POST /sessions/{id}/compact with `Prefer: respond-async`: the compaction as a job in
   * the service's background, answered (202) before the summary is written.
   */
  async startCompaction(
    sessionId: string,
    body: StartCompactionIn = {},
  ): Promise<CompactionJobOut> {
    const path = sessionPath(sessionId, "/compact");
    const headers = { prefer: "respond-async" };
    const job = await this.#send<CompactionJobOut>({
      method: "POST",
      path,
      body,
      headers,
      answer: "json",
    });
    if (typeof job.state !== "string") {
      // A service that ignored the preference answered the compaction itself.
      throw new CompactorAPIError({
        status: 200,
        title: "Unexpected response",
        detail: "the service answered inline, not with a job (202)",
        type: "urn:context-compactor:client:unexpected-response",
        body: job as unknown as Record<string, unknown>,
        method: "POST",
        url: this.baseUrl + path,
        requestId: null,
      });
    }
    return job;
  }

  /** GET /sessions/{id}/jobs/{job}: its state, progress, and record or problem. */
  compactionJob(sessionId: string, jobId: string): Promise<CompactionJobOut> {
    if (!jobId) throw new TypeError("jobId must not be empty");
    const path = sessionPath(sessionId, `/jobs/${encodeURIComponent(jobId)}`);
    return this.#send({ method: "GET", path, answer: "json" });
  }

  /**
   * Polls `job` until it finishes: the done job, with its `compaction`; rejects with a
   * `CompactorAPIError` carrying the job's problem when it failed or was abandoned, or
   * status 0 (`TIMEOUT_ERROR`) when `timeoutMs` passes first.
   */
  async waitForJob(job: CompactionJobOut, options: WaitOptions = {}): Promise<CompactionJobOut> {
    const interval = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    const url = `${this.baseUrl}${sessionPath(job.session_id, `/jobs/${job.id}`)}`;
    let current = job;
    while (!FINISHED_STATES.has(current.state)) {
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new CompactorAPIError({
          status: 0,
          title: "Still running",
          detail: `compaction job ${job.id} did not finish within ${options.timeoutMs} ms`,
          type: TIMEOUT_ERROR,
          body: {},
          method: "GET",
          url,
          requestId: null,
        });
      }
      await new Promise((done) => setTimeout(done, interval));
      current = await this.compactionJob(job.session_id, job.id);
      options.onProgress?.(current);
    }
    const problem = current.problem;
    if (current.state !== "done" && problem) {
      throw new CompactorAPIError({
        status: problem.status,
        title: problem.title,
        detail: problem.detail,
        type: problem.type ?? "about:blank",
        body: problem as unknown as Record<string, unknown>,
        method: "GET",
        url,
        requestId: null,
      });
    }
    return current;
  }

  /** GET /sessions/{id}/compactions: every compaction record, oldest first. */
  compactions(sessionId: string): Promise<CompactionListOut> {
    const path = sessionPath(sessionId, "/compactions");
    return this.#send({ method: "GET", path, answer: "json" });
  }

  /** GET /sessions/{id}/search: transcript entries by full text, folded ones included. */
  search(sessionId: string, q: string, options: SearchOptions = {}): Promise<SearchOut> {
    const path = sessionPath(sessionId, "/search");
    const query: Query = { q, limit: options.limit };
    if (options.foldedOnly) query.folded_only = "true";
    return this.#send({ method: "GET", path, query, answer: "json" });
  }

  /** POST /sessions/{id}/compactions/{cid}/revert: the context before it, as a new record. */
  revert(sessionId: string, compactionId: string): Promise<RevertOut> {
    if (!compactionId) throw new TypeError("compactionId must not be empty");
    const path = sessionPath(sessionId, `/compactions/${encodeURIComponent(compactionId)}/revert`);
    return this.#send({ method: "POST", path, answer: "json" });
  }

  /** POST /sessions/{id}/fork: a new session from entries 0..at_seq. */
  fork(sessionId: string, body: ForkIn): Promise<SessionOut> {
    const path = sessionPath(sessionId, "/fork");
    return this.#send({ method: "POST", path, body, answer: "json" });
  }

  /** PATCH /sessions/{id}: change its settings (null: back to the default); recorded. */
  updateSession(sessionId: string, body: SessionPatchIn): Promise<SessionOut> {
    return this.#send({ method: "PATCH", path: sessionPath(sessionId), body, answer: "json" });
  }

  /** GET /sessions/{id}/changes: every recorded settings change, oldest first. */
  settingsChanges(sessionId: string): Promise<SettingsChangeListOut> {
    const path = sessionPath(sessionId, "/changes");
    return this.#send({ method: "GET", path, answer: "json" });
  }

  /** GET /sessions/{id}/export: the JSON Lines bundle, as bytes. */
  exportSession(sessionId: string): Promise<Uint8Array> {
    const path = sessionPath(sessionId, "/export");
    return this.#send({ method: "GET", path, answer: "bytes" });
  }

  /** POST /sessions/import: a new session from a bundle (422 when cut or altered). */
  importSession(bundle: Uint8Array): Promise<SessionOut> {
    const raw = { bytes: bundle, contentType: "application/x-ndjson" };
    return this.#send({ method: "POST", path: "/sessions/import", raw, answer: "json" });
  }

  /** GET /sessions/{id}/cost: tokens and dollars by kind, the summarizer's share, and what
   * the same requests would have cost uncompacted (SPEC §15). */
  cost(sessionId: string): Promise<SessionCostOut> {
    const path = sessionPath(sessionId, "/cost");
    return this.#send({ method: "GET", path, answer: "json" });
  }

  /** GET /cost: what the caller's tenant was billed, by source, API and model. */
  tenantCost(): Promise<TenantCostOut> {
    return this.#send({ method: "GET", path: "/cost", answer: "json" });
  }
}
