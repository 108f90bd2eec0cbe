// Supabase Auth through its plain REST API (no SDK, no build step): password sign-in, refresh, sign-out.
// The session lives in localStorage, as supabase-js keeps it; the API receives only the access token.

const STORAGE_KEY = "pgrag.session";
const REFRESH_MARGIN_S = 60; // refresh a token this close to its expiry before using it

export class AuthError extends Error {}

export class SupabaseAuth {
  constructor(url, anonKey) {
    this.base = `${url.replace(/\/+$/, "")}/auth/v1`;
    this.anonKey = anonKey;
    this.session = load();
  }

  get user() {
    return this.session?.user ?? null;
  }

  async signIn(email, password) {
    this.session = await this.#token("password", { email, password });
    save(this.session);
    return this.session.user;
  }

  /** A valid access token (refreshed when near expiry), or null when signed out or refresh failed. */
  async accessToken({ forceRefresh = false } = {}) {
    if (!this.session) return null;
    const now = Date.now() / 1000;
    if (forceRefresh || (this.session.expires_at ?? 0) - REFRESH_MARGIN_S <= now) {
      try {
        this.session = await this.#token("refresh_token", { refresh_token: this.session.refresh_token });
        save(this.session);
      } catch {
        this.forget();
        return null;
      }
    }
    return this.session.access_token;
  }

  async signOut() {
    const token = this.session?.access_token;
    this.forget();
    if (!token) return;
    // Best effort: the server revokes the refresh token; signed out locally either way.
    await fetch(`${this.base}/logout`, {
      method: "POST",
      headers: { apikey: this.anonKey, Authorization: `Bearer ${token}` },
    }).catch(() => {});
  }

  forget() {
    this.session = null;
    localStorage.removeItem(STORAGE_KEY);
  }

  async #token(grantType, body) {
    let response;
    try {
      response = await fetch(`${this.base}/token?grant_type=${grantType}`, {
        method: "POST",
        headers: { apikey: this.anonKey, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (error) {
      throw new AuthError(String(error.message || error));
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok || !data.access_token) {
      // GoTrue answers {error, error_description} or {code, msg} depending on its version.
      throw new AuthError(data.error_description || data.msg || data.message || `HTTP ${response.status}`);
    }
    const expiresAt = data.expires_at ?? Math.floor(Date.now() / 1000) + (data.expires_in ?? 3600);
    return { ...data, expires_at: expiresAt };
  }
}

function load() {
  try {
    const session = JSON.parse(localStorage.getItem(STORAGE_KEY) || "null");
    return session?.access_token ? session : null;
  } catch {
    return null;
  }
}

function save(session) {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(session));
}
