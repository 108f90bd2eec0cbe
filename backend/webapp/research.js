// Deep-research progress (POST /research with stream=true): the plan's sections and what each is
// doing, updated from the events plan, section_started, search, evidence, sufficiency, section_done,
// writing; `done` carries the report (Markdown citing [n]) and its sources.

import { h } from "./dom.js";
import { t } from "./i18n.js";

export function newResearch() {
  return { sections: [], phase: "plan", partialReasons: [] };
}

/** Apply one progress event to `state` (mutates it). */
export function applyResearchEvent(state, type, data) {
  const section = (index) => {
    let s = state.sections.find((x) => x.index === index);
    if (!s) {
      s = { index, title: "", status: "waiting", detail: "" };
      state.sections.push(s);
    }
    return s;
  };
  if (type === "plan") {
    state.sections = (data.sections || []).map((s, i) => ({
      index: s.index ?? i,
      title: s.title || s.question || "",
      status: "waiting",
      detail: "",
    }));
    state.phase = "research";
  } else if (type === "section_started") {
    Object.assign(section(data.section), { status: "active", title: data.title || section(data.section).title });
  } else if (type === "search") {
    Object.assign(section(data.section), { status: "active", detail: t("researchSearching", { query: data.query }) });
  } else if (type === "evidence") {
    section(data.section).detail = t("researchEvidence", { pool: data.pool ?? 0, relevant: data.relevant ?? 0 });
  } else if (type === "sufficiency") {
    section(data.section).detail = data.sufficient
      ? t("researchSufficient")
      : t("researchInsufficient", { missing: data.missing || data.reason || "…" });
  } else if (type === "section_done") {
    Object.assign(section(data.section), { status: "done", detail: t("researchDone", { pool: data.pool ?? 0 }) });
  } else if (type === "writing") {
    state.phase = "writing";
  } else if (type === "done") {
    state.phase = "done";
    state.partialReasons = data.partial ? data.partial_reasons || [] : [];
  }
}

export function renderResearch(state) {
  const items = state.sections.map((s) =>
    h(
      "li",
      { class: `research-step ${s.status}` },
      h("span", { class: "step-title" }, s.title),
      h("span", { class: "step-detail" }, s.detail || (s.status === "waiting" ? t("researchWaiting") : "")),
    ),
  );
  return h(
    "details",
    { class: "research", open: state.phase !== "done" },
    h("summary", {}, t("researchPlan"), state.phase === "writing" ? ` — ${t("researchWriting")}` : ""),
    h("ol", {}, items),
    state.partialReasons.length
      ? h("p", { class: "partial" }, t("researchPartial", { reasons: state.partialReasons.join(", ") }))
      : null,
  );
}
