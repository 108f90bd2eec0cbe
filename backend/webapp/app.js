// The chat page: start-up, sign-in, and the controls' wiring. State and the shared view helpers are
// in view.js, the conversation list in conversations.js, a turn in turn.js.

import { Api } from "./api.js";
import { AuthError, SupabaseAuth } from "./auth.js";
import { CollectionsDialog, loadCollections, renderPicker } from "./collections.js";
import { loadConversations, newChat, renderConversations, route } from "./conversations.js";
import { DocumentsDialog } from "./documents.js";
import { clear, h } from "./dom.js";
import { applyStatic, lang, setLang, t } from "./i18n.js";
import { KeysDialog } from "./keys.js";
import { SourcePanel } from "./sources.js";
import { send } from "./turn.js";
import { $, closeDrawer, renderMessages, setBusy, showFatal, state, ui, updateCounter } from "./view.js";

const EXAMPLES = ["三阶段检索分别做什么？", "引用是怎么保存的？", "How do I tune hybrid_search?"];

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
  await Promise.all([loadConversations(), loadCollections(), showLibrarySize()]);
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

/** After an upload or a delete: the library's size and the collections' document counts. */
function onLibraryChange() {
  showLibrarySize();
  loadCollections();
}

function renderExamples() {
  const list = $("#examples");
  clear(list);
  for (const text of EXAMPLES) list.append(h("li", {}, h("button", { type: "button", onclick: () => send(text) }, text)));
}

// --- controls --------------------------------------------------------------------------------------

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
    renderPicker();
    renderMessages();
    state.panel?.render();
    setBusy(state.controller);
    updateCounter();
    if (state.api && !ui.shell.hidden) showLibrarySize();
  });
  ui.signinForm.addEventListener("submit", signIn);
  ui.signOut.addEventListener("click", signOut);
  $("#collections-open").addEventListener("click", () => {
    state.collectionsDialog ??= new CollectionsDialog($("#collections-dialog"), state.api);
    state.collectionsDialog.open();
  });
  $("#documents-open").addEventListener("click", () => {
    state.documentsDialog ??= new DocumentsDialog($("#documents-dialog"), state.api, { onChange: onLibraryChange });
    state.documentsDialog.open();
  });
  $("#keys-open").addEventListener("click", () => {
    state.keys ??= new KeysDialog($("#keys-dialog"), state.api);
    state.keys.open();
  });
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
