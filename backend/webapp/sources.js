// The source panel: one cited source in full — title, heading path, the passage, its document (or web
// page), the retrieval features that chose it ("why this source"), and a stale badge when the
// document changed after the answer (a "deleted" one, without the erased passage, when it was deleted). Escape or the close button returns focus to the chip.

import { clear, h, safeUrl } from "./dom.js";
import { formatDate, t } from "./i18n.js";
import { hostOf, placeText, sourceTitle, staleText } from "./render.js";

// Shown in this order; scores in [0, 1] get a bar.
const FEATURES = [
  ["final_score", "score"],
  ["rerank_score", "score"],
  ["similarity", "score"],
  ["keyword_coverage", "score"],
  ["rrf_score", "number"],
  ["vector_rank", "rank"],
  ["full_text_rank", "rank"],
  ["full_text_score", "number"],
  ["seed_score", "number"],
];

export class SourcePanel {
  /** el: the <aside>; api: for the document record; authMode: "none" links the raw record too. */
  constructor(el, api, authMode) {
    this.el = el;
    this.body = el.querySelector(".panel-body");
    this.api = api;
    this.authMode = authMode;
    this.trigger = null;
    this.current = null;
    el.querySelector(".panel-close").addEventListener("click", () => this.close());
    el.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        this.close();
      }
    });
  }

  get isOpen() {
    return !this.el.hidden;
  }

  open(source, trigger) {
    this.trigger = trigger;
    this.current = source;
    this.render();
    this.el.hidden = false;
    document.body.classList.add("panel-open");
    this.el.querySelector("h2").focus();
  }

  close() {
    if (this.el.hidden) return;
    this.el.hidden = true;
    this.current = null;
    document.body.classList.remove("panel-open");
    if (this.trigger?.isConnected) this.trigger.focus();
  }

  render() {
    const s = this.current;
    if (!s) return;
    // h() drops the null parts (no stale badge, no heading); a plain append() would print "null".
    const content = h(
      "div",
      {},
      h(
        "header",
        { class: "panel-head" },
        h("span", { class: "cite static", "aria-hidden": "true" }, String(s.n)),
        h("h2", { id: "source-title", tabindex: "-1" }, sourceTitle(s)),
      ),
      h(
        "div",
        { class: "badges" },
        s.stale ? h("span", { class: "badge stale" }, staleText(s)) : null,
        s.kind === "web" ? h("span", { class: "badge web" }, t("web_badge")) : null,
        h("span", { class: `badge ${s.cited ? "cited" : "uncited"}` }, s.cited ? t("cited") : t("notCited")),
      ),
      s.stale && !s.deleted ? h("p", { class: "stale-hint" }, t("staleHint")) : null,
      s.heading ? section(t("headingPath"), h("p", { class: "heading-path" }, s.heading.split(" > ").join(" › "))) : null,
      placeText(s.provenance) ? section(t("place"), h("p", { class: "place" }, placeText(s.provenance))) : null,
      // A deleted document's passage was erased: say so where the passage was.
      s.deleted
        ? section(t("snippet"), h("p", { class: "deleted-hint" }, t("deletedHint")))
        : section(t("snippet"), h("blockquote", { class: "snippet" }, s.snippet || "")),
      s.deleted ? null : this.contextSection(s),
      s.kind === "web" ? webPage(s) : s.deleted ? null : this.documentSection(s),
      why(s.why || {}),
    );
    clear(this.body).append(content);
  }

  /** The passage highlighted inside the document's text around it (GET /documents/{id}/text), for a
   * source that says where it is and whose document has not changed since. Hidden until it loads. */
  contextSection(s) {
    const p = s.provenance;
    if (!p || !s.document_id || s.stale || !Number.isInteger(p.char_start) || !Number.isInteger(p.char_end)) {
      return null;
    }
    const quote = h("blockquote", { class: "in-context" });
    const el = section(t("inContext"), quote);
    el.hidden = true;
    this.loadContext(s, el, quote);
    return el;
  }

  async loadContext(s, el, quote) {
    const { char_start: start, char_end: end } = s.provenance;
    try {
      const url = `/documents/${encodeURIComponent(s.document_id)}/text?start=${start}&end=${end}&around=300`;
      const w = await this.api.json(url);
      if (this.current !== s) return;
      quote.append(
        h("span", { class: "context" }, (w.start > 0 ? "…" : "") + w.text.slice(0, w.passage_start)),
        h("mark", {}, w.text.slice(w.passage_start, w.passage_end)),
        h("span", { class: "context" }, w.text.slice(w.passage_end) + "…"),
      );
      el.hidden = false;
    } catch {
      // nothing to add: the document may be gone or unreadable now, and the passage is shown above
    }
  }

  documentSection(s) {
    const details = h("p", { class: "doc-meta" });
    const link =
      this.authMode === "none" && s.document_id
        ? h("a", { href: `/documents/${encodeURIComponent(s.document_id)}`, target: "_blank", rel: "noopener" }, t("openDocument"))
        : null;
    const el = section(t("document"), h("p", { class: "doc-id" }, s.external_id || s.document_id || ""), details, link);
    if (s.document_id) this.loadDocument(s, details);
    return el;
  }

  async loadDocument(s, target) {
    try {
      const doc = await this.api.json(`/documents/${encodeURIComponent(s.document_id)}`);
      if (this.current !== s) return;
      const meta = t("documentMeta", { chunks: doc.chunk_count, updated: formatDate(doc.updated_at) });
      // The source is worth a mention when it says more than the id ("wikipedia", a URL).
      target.textContent = doc.source && doc.source !== doc.external_id ? `${doc.source} · ${meta}` : meta;
    } catch (error) {
      if (this.current !== s) return;
      target.textContent = error.status === 404 ? t("documentGone") : String(error.detail || error.message);
    }
  }
}

function section(title, ...content) {
  return h("section", { class: "panel-section" }, h("h3", {}, title), content);
}

function webPage(s) {
  // Only an http(s) address is a link; anything else (javascript:, data:) is shown as text.
  const href = safeUrl(s.url);
  return section(
    t("webPage"),
    h("p", {}, href ? h("a", { href, target: "_blank", rel: "noopener noreferrer" }, s.url) : h("span", { class: "url" }, s.url)),
    h("p", { class: "doc-meta" }, t("fetchedAt", { when: formatDate(s.fetched_at), provider: s.provider || hostOf(s.url) })),
  );
}

function why(features) {
  const rows = FEATURES.filter(([key]) => key in features).map(([key, kind]) => feature(t(`feat_${key}`), features[key], kind));
  const contributions = Object.entries(features.contributions || {});
  return h(
    "section",
    { class: "panel-section why" },
    h("h3", {}, t("why")),
    h("p", { class: "hint" }, t("whyHint")),
    h("dl", {}, rows),
    contributions.length
      ? [h("h4", {}, t("contributions")), h("dl", {}, contributions.map(([k, v]) => feature(k.replace(/_/g, " "), v, "number")))]
      : null,
  );
}

function feature(label, value, kind) {
  let shown;
  if (value === null || value === undefined) shown = h("span", { class: "muted" }, t("notFound"));
  else if (kind === "rank") shown = `#${value}`;
  else {
    const number = Number(value);
    shown = !Number.isFinite(number)
      ? String(value)
      : Math.abs(number) >= 1e4
        ? number.toExponential(2)
        : number.toFixed(kind === "score" ? 3 : 4);
    if (kind === "score" && number >= 0 && number <= 1) {
      shown = [h("meter", { min: 0, max: 1, value: number, "aria-hidden": "true" }), " ", shown];
    }
  }
  return [h("dt", {}, label), h("dd", {}, shown)];
}
