// The backend's HTTP API as the page uses it: JSON calls and Server-Sent Event streams, with the
// access token attached, one retry after a refreshed token, and errors as ApiError (status + detail).

export class ApiError extends Error {
  constructor(status, detail, requestId = null) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.requestId = requestId;
  }
}

export class Api {
  /** auth: null (AUTH_MODE=none) or a SupabaseAuth; onSignedOut: called when no token works. */
  constructor({ auth = null, onSignedOut = () => {} } = {}) {
    this.auth = auth;
    this.onSignedOut = onSignedOut;
  }

  async json(path, options = {}) {
    const response = await this.#fetch(path, options);
    if (response.status === 204) return null;
    return response.json();
  }

  /** POST `body` with stream=true; yields {type, data} events until the stream ends. */
  async *stream(path, body, { signal } = {}) {
    const response = await this.#fetch(path, {
      method: "POST",
      body: { ...body, stream: true },
      signal,
      accept: "text/event-stream",
    });
    yield* readEvents(response);
  }

  /** GET an event stream (a job's progress): fetch, not EventSource, which cannot send the token. */
  async *events(path, { signal } = {}) {
    yield* readEvents(await this.#fetch(path, { signal, accept: "text/event-stream" }));
  }

  async #fetch(path, { method = "GET", body, signal, accept = "application/json" } = {}, retried = false) {
    const headers = { Accept: accept };
    const form = body instanceof FormData; // a file upload: the browser writes its multipart header
    if (body !== undefined && !form) headers["Content-Type"] = "application/json";
    if (this.auth) {
      const token = await this.auth.accessToken({ forceRefresh: retried });
      if (!token) {
        this.onSignedOut();
        throw new ApiError(401, "signed out");
      }
      headers.Authorization = `Bearer ${token}`;
    }
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined || form ? body : JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new ApiError(0, String(error.message || error));
    }
    if (response.status === 401 && this.auth && !retried) {
      return this.#fetch(path, { method, body, signal, accept }, true); // a token revoked or rotated early
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }
}

async function errorOf(response) {
  const requestId = response.headers.get("X-Request-ID");
  let detail = response.statusText || `HTTP ${response.status}`;
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
    return new ApiError(response.status, detail, body.request_id ?? requestId);
  } catch {
    return new ApiError(response.status, detail, requestId);
  }
}

/** Parse a text/event-stream body: `event:` and `data:` lines, blank-line separated; comments skipped. */
async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = parseBlock(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (event) yield event;
      }
    }
  } finally {
    reader.cancel().catch(() => {}); // a consumer that stops early (Stop, a new chat) closes the stream
  }
}

function parseBlock(block) {
  let type = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // a heartbeat comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") type = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try {
    return { type, data: JSON.parse(data.join("\n")) };
  } catch {
    return { type, data: { text: data.join("\n") } };
  }
}
