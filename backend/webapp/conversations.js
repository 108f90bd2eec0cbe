// The conversation list, and which conversation the page shows (the address says: #/c/<id>).

import { clear, h } from "./dom.js";
import { formatDate, t } from "./i18n.js";
import { errorText } from "./render.js";
import { announce, asError, closeDrawer, renderMessages, state, ui } from "./view.js";

export async function loadConversations() {
  try {
    state.conversations = await state.api.json("/conversations?limit=100");
  } catch (error) {
    if (error.status !== 401) announce(errorText(error));
  }
  renderConversations();
}

export function renderConversations() {
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
export async function route(force = false) {
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

export function newChat() {
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
    turn: meta.turn,
    level: meta.confidence?.confidence_level,
    clarify: meta.clarify,
  };
}

