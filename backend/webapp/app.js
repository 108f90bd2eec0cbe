// The chat page: wiring between the API, the conversation list, the message list and the source panel.
// State lives here; render.js, sources.js and research.js turn it into DOM.

import { Api, ApiError } from "./api.js";
import { AuthError, SupabaseAuth } from "./auth.js";
import { clear, h } from "./dom.js";
import { applyStatic, formatDate, lang, setLang, t } from "./i18n.js";
import { applyResearchEvent, newResearch } from "./research.js";
import { errorText, renderMessage } from "./render.js";
import { SourcePanel } from "./sources.js";

const EXAMPLES = ["三阶段检索分别做什么？", "引用是怎么保存的？", "How do I tune hybrid_search?"];
const $ = (selector) => document.querySelector(selector);

const state = {
  config: null,
  auth: null,
  api: null,
  panel: null,
  conversations: [],
  conversationId: null,
  messages: [],
  controller: null, // the running turn's AbortController
};

const ui = {
  shell: $("#shell"),
  signin: $("#signin"),
  signinForm: $("#signin-form"),
  signinError: $("#signin-error"),
  user: $("#user"),
  signOut: $("#sign-out"),
  list: $("#conversation-list"),
  messages: $("#messages"),
  empty: $("#empty"),
  form: $("#composer"),
  input: $("#composer-input"),
  counter: $("#char-count"),
  send: $("#send"),
  web: $("#web-option"),
  webSelect: $("#web-select"),
  research: $("#research-option"),
  researchToggle: $("#research-toggle"),
  live: $("#live"),
  status: $("#status"),
  menu: $("#menu-toggle"),
  sidebar: $("#sidebar"),
};

const actions = {
  openSource: (_message, source, trigger) => state.panel.open(source, trigger),
  pickClarify: (title) => {
    ui.input.value = t("clarifyPick", { title });
    updateCounter();
    ui.input.focus();
  },
};

// --- start-up and sign-in --------------------------------------------------------------------------

async function boot() {
  applyStatic();
  wireStaticControls();
  try {
    state.config = await new Api().json("/client-config");
  } catch (error) {
    showFatal(error);
    return;
  }
  const { auth_mode: mode, supabase_url: url, supabase_anon_key: key, features } = state.config;
  if (mode === "supabase") state.auth = url && key ? new SupabaseAuth(url, key) : null;
  state.api = new Api({ auth: state.auth, onSignedOut: () => showSignIn(t("sessionExpired")) });
  state.panel = new SourcePanel($("#source-panel"), state.api, mode);
  ui.web.hidden = !features.web;
  ui.research.hidden = !features.research;
  if (mode === "supabase" && !state.auth) return showSignIn(t("signInUnconfigured"), { disabled: true });
  if (mode === "supabase" && !state.auth.user) return showSignIn();
  await start();
}

async function start() {
  ui.signin.hidden = true;
  ui.shell.hidden = false;
  const email = state.auth?.user?.email;
  ui.user.textContent = email || "";
  ui.signOut.hidden = !state.auth;
  await Promise.all([loadConversations(), showLibrarySize()]);
  await route(true);
  ui.input.focus();
}

function showSignIn(message = "", { disabled = false } = {}) {
  state.controller?.abort();
  ui.shell.hidden = true;
  ui.signin.hidden = false;
  ui.signinError.textContent = message;
  for (const el of ui.signinForm.elements) el.disabled = disabled;
  if (!disabled) ui.signinForm.elements.email.focus();
}

async function signIn(event) {
  event.preventDefault();
  const { email, password } = ui.signinForm.elements;
  ui.signinError.textContent = t("signingIn");
  try {
    await state.auth.signIn(email.value.trim(), password.value);
    password.value = "";
    ui.signinError.textContent = "";
    await start();
  } catch (error) {
    const detail = error instanceof AuthError ? error.message : String(error);
    ui.signinError.textContent = t("signInFailed", { detail });
    password.focus();
  }
}

async function signOut() {
  await state.auth.signOut();
  state.conversations = [];
  state.messages = [];
  state.conversationId = null;
  history.replaceState(null, "", "/");
  showSignIn();
}

// --- conversations ---------------------------------------------------------------------------------

async function loadConversations() {
  try {
    state.conversations = await state.api.json("/conversations?limit=100");
  } catch (error) {
    if (error.status !== 401) announce(errorText(error));
  }
  renderConversations();
}

function renderConversations() {
  clear(ui.list);
  if (!state.conversations.length) {
    ui.list.append(h("li", { class: "muted" }, t("noConversations")));
    return;
  }
  for (const c of state.conversations) {
    const current = c.id === state.conversationId;
    ui.list.append(
      h(
        "li",
        {},
        h(
          "a",
          { href: `#/c/${c.id}`, "aria-current": current ? "page" : null, onclick: () => closeDrawer() },
          h("span", { class: "conv-title" }, c.title || t("untitled")),
          h("span", { class: "conv-date" }, formatDate(c.updated_at)),
        ),
      ),
    );
  }
}

/** Show the conversation the address names (#/c/<id>), or a new chat. */
async function route(force = false) {
  const match = /^#\/c\/([0-9a-f-]{36})$/i.exec(location.hash);
  const id = match ? match[1] : null;
  if (!force && id !== null && id === state.conversationId) return; // popstate and hashchange both fire
  state.controller?.abort();
  state.panel.close();
  state.conversationId = id;
  state.messages = [];
  renderConversations();
  if (id) {
    try {
      const stored = await state.api.json(`/conversations/${id}/messages`);
      state.messages = stored.map(fromStored);
    } catch (error) {
      state.messages = [{ role: "error", error: asError(error) }];
    }
  }
  renderMessages();
}

function newChat() {
  closeDrawer();
  history.pushState(null, "", location.pathname);
  route(true).then(() => ui.input.focus());
}

function fromStored(m) {
  if (m.role !== "assistant") return { role: m.role, content: m.content };
  const meta = m.metadata || {};
  return {
    role: "assistant",
    id: m.id,
    content: m.content,
    sources: m.sources || [],
    route: meta.route,
    level: meta.confidence?.confidence_level,
    clarify: meta.clarify,
  };
}

// --- a turn ----------------------------------------------------------------------------------------

async function send(text) {
  const question = text.trim();
  if (!question || state.controller) return;
  const research = !ui.research.hidden && ui.researchToggle.checked;
  const user = { role: "user", content: question };
  const answer = { role: "assistant", content: "", sources: [], pending: true, statusText: t("thinking") };
  if (research) answer.research = newResearch();
  state.messages.push(user, answer);
  ui.input.value = "";
  updateCounter();
  renderMessages();
  const controller = new AbortController();
  setBusy(controller);
  const web = { auto: "auto", on: true, off: false }[ui.webSelect.value] ?? "auto";
  const body = research
    ? { question, conversation_id: state.conversationId, web }
    : { message: question, conversation_id: state.conversationId, web };
  try {
    for await (const event of state.api.stream(research ? "/research" : "/chat", body, { signal: controller.signal })) {
      onEvent(answer, event);
    }
    if (answer.pending) throw new ApiError(0, t("streamEnded"));
  } catch (error) {
    answer.pending = false;
    if (error.name === "AbortError") {
      answer.content = `${answer.content}${answer.content ? "\n\n" : ""}${t("stopped")}`;
    } else {
      if (!answer.content) state.messages.splice(state.messages.indexOf(answer), 1);
      state.messages.push({ role: "error", error: asError(error) });
      if (!ui.input.value) ui.input.value = question; // a refused question is there to be edited
      updateCounter();
      announce(errorText(asError(error)));
    }
    renderMessages();
  } finally {
    setBusy(null);
  }
}

function onEvent(answer, { type, data }) {
  if (type === "delta") {
    answer.content += data.text || "";
    ui.status.textContent = t("writing");
    scheduleRender();
  } else if (type === "done") {
    finish(answer, data);
  } else if (type === "error") {
    throw new ApiError(data.status ?? 500, data.detail || "error", data.request_id);
  } else if (answer.research) {
    applyResearchEvent(answer.research, type, data);
    answer.statusText = type === "writing" ? t("researchWriting") : answer.statusText;
    scheduleRender();
  }
}

function finish(answer, data) {
  if (answer.research) applyResearchEvent(answer.research, "done", data);
  Object.assign(answer, {
    pending: false,
    id: data.message_id,
    content: data.answer ?? data.report ?? answer.content,
    sources: data.sources || [],
    route: data.diagnostics?.evidence?.route,
    level: data.diagnostics?.confidence?.confidence_level,
    clarify: data.diagnostics?.clarify,
  });
  if (data.conversation_id && data.conversation_id !== state.conversationId) {
    state.conversationId = data.conversation_id;
    history.replaceState(null, "", `#/c/${data.conversation_id}`);
  }
  renderMessages();
  announce(t("answerReady"));
  loadConversations();
}

function asError(error) {
  if (error instanceof ApiError) return { status: error.status, detail: error.detail, requestId: error.requestId };
  return { status: 0, detail: String(error.message || error) };
}

// --- rendering -------------------------------------------------------------------------------------

// Deltas arrive faster than frames: at most one redraw per frame.
let queuedFrame = 0;
function scheduleRender() {
  if (!queuedFrame) queuedFrame = requestAnimationFrame(renderMessages);
}

function renderMessages() {
  // A redraw now makes a queued one redundant; it would only replace what a user is about to click.
  cancelAnimationFrame(queuedFrame);
  queuedFrame = 0;
  const list = ui.messages;
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  clear(list);
  ui.empty.hidden = state.messages.length > 0;
  for (const message of state.messages) list.append(renderMessage(message, actions));
  if (nearBottom || state.controller) list.scrollTop = list.scrollHeight;
}

function setBusy(controller) {
  state.controller = controller;
  ui.send.textContent = controller ? t("stop") : t("send");
  ui.send.dataset.i18n = controller ? "stop" : "send";
  ui.status.textContent = controller ? t("thinking") : "";
}

function updateCounter() {
  const max = state.config?.max_message_chars ?? Infinity;
  const count = [...ui.input.value.trim()].length;
  ui.counter.textContent = count > max * 0.8 ? (count > max ? t("tooLong", { count, max }) : `${count} / ${max}`) : "";
  ui.counter.classList.toggle("over", count > max);
  ui.input.style.height = "auto";
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

async function showLibrarySize() {
  const target = $("#library");
  try {
    const page = await state.api.json("/documents?limit=1");
    target.textContent = t("library", { count: page.total });
    target.dataset.count = page.total;
  } catch {
    target.textContent = "";
  }
}

function renderExamples() {
  const list = $("#examples");
  clear(list);
  for (const text of EXAMPLES) list.append(h("li", {}, h("button", { type: "button", onclick: () => send(text) }, text)));
}

function announce(text) {
  ui.live.textContent = "";
  setTimeout(() => (ui.live.textContent = text), 50);
}

function showFatal(error) {
  ui.shell.hidden = false;
  ui.empty.hidden = true;
  clear(ui.messages).append(renderMessage({ role: "error", error: asError(error) }, actions));
}

// --- controls --------------------------------------------------------------------------------------

function closeDrawer() {
  document.body.classList.remove("drawer-open");
  ui.menu.setAttribute("aria-expanded", "false");
}

function wireStaticControls() {
  renderExamples();
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (state.controller) state.controller.abort();
    else send(ui.input.value);
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault(); // Enter sends; Shift+Enter (and an IME's Enter) writes
      ui.form.requestSubmit();
    }
  });
  ui.input.addEventListener("input", updateCounter);
  $("#new-chat").addEventListener("click", newChat);
  $("#lang-toggle").addEventListener("click", () => {
    setLang(lang() === "zh" ? "en" : "zh");
    renderExamples();
    renderConversations();
    renderMessages();
    state.panel?.render();
    setBusy(state.controller);
    updateCounter();
    if (state.api && !ui.shell.hidden) showLibrarySize();
  });
  ui.signinForm.addEventListener("submit", signIn);
  ui.signOut.addEventListener("click", signOut);
  ui.menu.addEventListener("click", () => {
    const open = document.body.classList.toggle("drawer-open");
    ui.menu.setAttribute("aria-expanded", String(open));
    if (open) $("#new-chat").focus();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (state.panel?.isOpen) state.panel.close();
    else if (document.body.classList.contains("drawer-open")) {
      closeDrawer();
      ui.menu.focus();
    }
  });
  window.addEventListener("hashchange", () => route());
  window.addEventListener("popstate", () => route());
}

boot();
