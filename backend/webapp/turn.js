// One turn: the question sent to POST /chat (or /research), its events drawn as they arrive.

import { ApiError } from "./api.js";
import { t } from "./i18n.js";
import { loadConversations } from "./conversations.js";
import { errorText } from "./render.js";
import { applyResearchEvent, newResearch } from "./research.js";
import { announce, asError, renderMessages, scheduleRender, setBusy, state, ui, updateCounter } from "./view.js";

export async function send(text) {
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
    route: data.diagnostics?.route ?? data.diagnostics?.evidence?.route,
    turn: data.diagnostics?.turn,
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

