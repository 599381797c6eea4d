/** Problem type of a request that got no answer (connection refused, dropped). */
export const TRANSPORT_ERROR = "urn:context-compactor:client:transport-error";
/** Problem type of a request that timed out. */
export const TIMEOUT_ERROR = "urn:context-compactor:client:timeout";
/** Problem type of a 2xx answer that is not what the API contract promises. */
export const UNEXPECTED_RESPONSE = "urn:context-compactor:client:unexpected-response";

export interface ProblemDetails {
  status: number;
  title: string;
  detail: string;
  type: string;
  body: Record<string, unknown>;
  method: string;
  url: string;
  requestId: string | null;
}

/**
 * Every failure of the client: the RFC 9457 problem details of the service's answer, or
 * `status` 0 with `TRANSPORT_ERROR` / `TIMEOUT_ERROR` when no answer arrived (the
 * underlying error is the `cause`).
 */
export class CompactorAPIError extends Error implements ProblemDetails {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly type: string;
  /** The whole problem+json object (`body.errors` lists a 422's invalid fields). */
  readonly body: Record<string, unknown>;
  readonly method: string;
  readonly url: string;
  readonly requestId: string | null;

  constructor(problem: ProblemDetails, options?: { cause?: unknown }) {
    const status = problem.status ? `${problem.status} ` : "";
    super(`${status}${problem.title}: ${problem.detail} (${problem.method} ${problem.url})`, options);
    this.name = "CompactorAPIError";
    this.status = problem.status;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.body = problem.body;
    this.method = problem.method;
    this.url = problem.url;
    this.requestId = problem.requestId;
  }
}

const DETAIL_CHARS = 500;

function snippet(text: string): string {
  const flat = text.split(/\s+/).filter(Boolean).join(" ");
  return flat.length <= DETAIL_CHARS ? flat : `${flat.slice(0, DETAIL_CHARS)}…`;
}

/** A non-2xx answer as the error, reading problem+json when the body is JSON. */
export async function errorFromResponse(
  response: Response,
  method: string,
  url: string,
): Promise<CompactorAPIError> {
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    const decoded: unknown = JSON.parse(text);
    if (decoded !== null && typeof decoded === "object" && !Array.isArray(decoded)) {
      body = decoded as Record<string, unknown>;
    }
  } catch {
    // not JSON: a proxy's error page; keep the start of its text below
  }
  const title = typeof body.title === "string" ? body.title : response.statusText || "HTTP error";
  const detail =
    typeof body.detail === "string"
      ? body.detail
      : snippet(body.detail === undefined ? text : JSON.stringify(body.detail));
  return new CompactorAPIError({
    status: response.status,
    title,
    detail: detail || "(empty answer)",
    type: typeof body.type === "string" ? body.type : "about:blank",
    body,
    method,
    url,
    requestId: response.headers.get("x-request-id"),
  });
}

/** No answer arrived: status 0, the failure as the detail. */
export function errorFromTransport(error: unknown, method: string, url: string): CompactorAPIError {
  const timedOut =
    error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
  const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause : error) : null;
  return new CompactorAPIError(
    {
      status: 0,
      title: timedOut ? "Timed out" : "Connection failed",
      detail: reason ? `${reason.name}: ${reason.message}` : String(error),
      type: timedOut ? TIMEOUT_ERROR : TRANSPORT_ERROR,
      body: {},
      method,
      url,
      requestId: null,
    },
    { cause: error },
  );
}

/** A 2xx answer whose body is not what the contract promises. */
export function unexpectedResponse(
  response: Response,
  problem: string,
  method: string,
  url: string,
): CompactorAPIError {
  return new CompactorAPIError({
    status: response.status,
    title: "Unexpected response",
    detail: `${problem}; the server may be a different version than this client`,
    type: UNEXPECTED_RESPONSE,
    body: {},
    method,
    url,
    requestId: response.headers.get("x-request-id"),
  });
}
