// Messages as the page shows them: user questions, answers with [n] citation chips, confidence and
// route, a clarify prompt, the cited sources (or related documents), errors with their request id.

import { h } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { renderResearch } from "./research.js";

/** actions: openSource(message, source, trigger), pickClarify(title). */
export function renderMessage(msg, actions) {
  if (msg.role === "user") {
    return h("li", { class: "msg user" }, h("span", { class: "sr-only" }, `${t("you")}: `), h("div", { class: "bubble" }, msg.content));
  }
  if (msg.role === "error") {
    return h("li", { class: "msg error", role: "alert" }, h("div", { class: "bubble" }, errorText(msg.error)));
  }
  const byNumber = new Map((msg.sources || []).map((s) => [s.n, s]));
  const cite = (n) => {
    const source = byNumber.get(n);
    if (!source) return h("span", { class: "cite pending", "aria-hidden": "true" }, String(n));
    return chip(msg, source, actions);
  };
  const body = msg.content
    ? renderMarkdown(msg.content, cite)
    : h("p", { class: "typing" }, msg.statusText || t("thinking"));
  return h(
    "li",
    { class: `msg assistant${msg.pending ? " pending" : ""}`, "aria-busy": msg.pending ? "true" : null, dataset: { id: msg.id || "" } },
    h("span", { class: "sr-only" }, `${t("assistant")}: `),
    msg.research ? renderResearch(msg.research) : null,
    h("div", { class: "bubble answer" }, body),
    msg.pending ? null : [meta(msg), clarify(msg, actions), sourceList(msg, actions)],
  );
}

function chip(msg, source, actions) {
  const classes = ["cite", source.kind === "web" ? "web" : "", source.stale ? "stale" : "", source.deleted ? "deleted" : ""].filter(Boolean);
  return h(
    "button",
    {
      type: "button",
      class: classes.join(" "),
      "aria-label": t("sourceN", { n: source.n, title: sourceTitle(source) }),
      dataset: { n: source.n },
      onclick: (event) => actions.openSource(msg, source, event.currentTarget),
    },
    String(source.n),
  );
}

function meta(msg) {
  const badges = [];
  if (msg.level) badges.push(h("span", { class: `badge level-${msg.level}` }, t("confidence", { level: t(`level_${msg.level}`) })));
  if (msg.route) badges.push(h("span", { class: `badge route route-${msg.route}` }, t(`route_${msg.route}`)));
  if (msg.turn === "followup") badges.push(h("span", { class: "badge turn turn-followup" }, t("turn_followup")));
  return badges.length ? h("div", { class: "meta" }, badges) : null;
}

function clarify(msg, actions) {
  if (msg.route !== "clarify" && !msg.clarify) return null;
  const titles = [...new Set((msg.sources || []).filter((s) => !s.deleted).map((s) => s.title).filter(Boolean))].slice(0, 3);
  if (!titles.length) return null;
  return h(
    "div",
    { class: "clarify" },
    h("p", {}, t("clarifyHint")),
    h("div", { class: "choices" }, titles.map((title) => h("button", { type: "button", onclick: () => actions.pickClarify(title) }, title))),
  );
}

function sourceList(msg, actions) {
  const sources = msg.sources || [];
  const cited = sources.filter((s) => s.cited);
  const related = msg.route === "not_in_documents" ? sources.filter((s) => !s.cited) : [];
  const shown = cited.length ? cited : related;
  if (!shown.length) return null;
  return h(
    "section",
    { class: "sources", "aria-label": cited.length ? t("sources") : t("related") },
    h("h3", {}, cited.length ? t("sources") : t("related")),
    h(
      "ol",
      {},
      shown.map((s) =>
        h(
          "li",
          {},
          chip(msg, s, actions),
          h("span", { class: "source-title" }, sourceTitle(s)),
          s.heading ? h("span", { class: "source-heading" }, s.heading.split(" > ").join(" › ")) : null,
          placeText(s.provenance) ? h("span", { class: "source-place" }, placeText(s.provenance)) : null,
          s.kind === "web" ? h("span", { class: "badge web" }, hostOf(s.url)) : null,
          s.stale ? h("span", { class: "badge stale" }, staleText(s)) : null,
        ),
      ),
    ),
  );
}

export function staleText(source) {
  if (source.deleted) return t("deleted");
  return source.stale_reason === "document deleted" ? t("stale_deleted") : t("stale");
}

// A deleted document's source keeps its number but not its title (erased with the document).
export function sourceTitle(source) {
  return source.deleted ? t("deletedTitle") : source.title || t("untitled");
}

export function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url || "";
  }
}

export function errorText(error) {
  const text =
    error.status === 0
      ? t("networkError", { detail: error.detail })
      : t("error", { status: error.status, detail: error.detail });
  return error.requestId ? `${text} (${t("requestId", { id: error.requestId })})` : text;
}

/** Where a passage is in its file ("p. 12", "slide 4", "sheet 2, rows 10–20"), in the page's language. */
export function placeText(p) {
  if (!p) return "";
  const part = (start, end, one, many) =>
    start == null ? null : end == null || end === start ? t(one, { n: start }) : t(many, { a: start, b: end });
  return [
    part(p.page_start, p.page_end, "placePage", "placePages"),
    part(p.slide_start, p.slide_end, "placeSlide", "placeSlides"),
    part(p.sheet_start, p.sheet_end, "placeSheet", "placeSheets"),
    part(p.row_start, p.row_end, "placeRow", "placeRows"),
    part(p.chapter_start, p.chapter_end, "placeChapter", "placeChapters"),
  ]
    .filter(Boolean)
    .join(t("placeSeparator"));
}
