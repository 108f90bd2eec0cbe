// The page's state and the shared view helpers: the message list, the busy state, the counter, the
// live region. The other modules (conversations.js, turn.js, app.js) change state and call these.

import { ApiError } from "./api.js";
import { clear } from "./dom.js";
import { t } from "./i18n.js";
import { renderMessage } from "./render.js";

export const $ = (selector) => document.querySelector(selector);

export const state = {
  config: null,
  auth: null,
  api: null,
  panel: null,
  keys: null, // the API keys dialog, made when first opened
  collectionsDialog: null, // made when first opened
  documentsDialog: null, // made when first opened
  collections: [], // the caller's team collections (GET /collections)
  conversations: [],
  conversationId: null,
  messages: [],
  controller: null, // the running turn's AbortController
};

export const ui = {
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
  scopeSelect: $("#scope-select"),
  research: $("#research-option"),
  researchToggle: $("#research-toggle"),
  live: $("#live"),
  status: $("#status"),
  menu: $("#menu-toggle"),
  sidebar: $("#sidebar"),
};

export const actions = {
  openSource: (_message, source, trigger) => state.panel.open(source, trigger),
  pickClarify: (title) => {
    ui.input.value = t("clarifyPick", { title });
    updateCounter();
    ui.input.focus();
  },
};

// Deltas arrive faster than frames: at most one redraw per frame.
let queuedFrame = 0;
export function scheduleRender() {
  if (!queuedFrame) queuedFrame = requestAnimationFrame(renderMessages);
}

export function renderMessages() {
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

export function setBusy(controller) {
  state.controller = controller;
  ui.send.textContent = controller ? t("stop") : t("send");
  ui.send.dataset.i18n = controller ? "stop" : "send";
  ui.status.textContent = controller ? t("thinking") : "";
}

export function updateCounter() {
  const max = state.config?.max_message_chars ?? Infinity;
  const count = [...ui.input.value.trim()].length;
  ui.counter.textContent = count > max * 0.8 ? (count > max ? t("tooLong", { count, max }) : `${count} / ${max}`) : "";
  ui.counter.classList.toggle("over", count > max);
  ui.input.style.height = "auto";
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

export function announce(text) {
  ui.live.textContent = "";
  setTimeout(() => (ui.live.textContent = text), 50);
}

export function showFatal(error) {
  ui.shell.hidden = false;
  ui.empty.hidden = true;
  clear(ui.messages).append(renderMessage({ role: "error", error: asError(error) }, actions));
}

export function closeDrawer() {
  document.body.classList.remove("drawer-open");
  ui.menu.setAttribute("aria-expanded", "false");
}

export function asError(error) {
  if (error instanceof ApiError) return { status: error.status, detail: error.detail, requestId: error.requestId };
  return { status: 0, detail: String(error.message || error) };
}

