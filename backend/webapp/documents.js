// The "Documents" dialog: upload by drag and drop or the file picker into one's own documents or a
// team collection one edits, each file's progress followed on the job's event stream; the list of
// the chosen place's documents, with re-ingest (a new version of a document's file) and delete.
// Uploads are background jobs (POST /documents/upload?background=true, then GET its events_url): the
// dialog also shows one's recent jobs (a reload during a long upload finds it still moving) and
// cancels the files of a job still waiting in the queue (DELETE /ingest/jobs/{id}).

import { attempt, clear, h } from "./dom.js";
import { formatDate, t } from "./i18n.js";
import { announce, state } from "./view.js";

const EDITS = new Set(["editor", "admin"]);
const RECENT_JOBS = 10; // earlier uploads shown when the dialog first opens

/** Queue files as one background job (into a collection, or one's own); the 202's answer. */
export async function submitUpload(api, files, collectionId = null, externalId = null) {
  const body = new FormData();
  for (const file of files) body.append("files", file);
  if (collectionId) body.append("collection_id", collectionId);
  if (externalId) body.append("external_id", externalId); // one file: a new version of that document
  return api.json("/documents/upload?background=true", { method: "POST", body });
}

/** Follow a job's events, onJob(job) at each, until it is done; the job at its end (read once more
 * if the stream broke first). */
export async function followJob(api, accepted, onJob = () => {}) {
  for await (const event of api.events(accepted.events_url)) {
    if (event.type === "error") throw Object.assign(new Error(event.data.detail), { detail: event.data.detail });
    if (event.type !== "job") continue;
    onJob(event.data);
    if (event.data.status === "done") return event.data;
  }
  const job = await api.json(accepted.status_url);
  onJob(job);
  return job;
}

export class DocumentsDialog {
  /** onChange: called after a job ends or a document is deleted (the page's library count). */
  constructor(dialog, api, { onChange = () => {} } = {}) {
    this.dialog = dialog;
    this.api = api;
    this.onChange = onChange;
    this.target = dialog.querySelector(".upload-target");
    this.uploads = dialog.querySelector(".upload-list");
    this.list = dialog.querySelector(".document-list");
    this.error = dialog.querySelector(".form-error");
    this.reingestInput = dialog.querySelector(".reingest-input");
    this.reingesting = null; // the document a picked file is a new version of
    this.rows = new Map(); // file id -> its upload row (a job followed twice draws one row per file)
    this.jobsShown = false; // the recent jobs are listed once, at the first open
    dialog.querySelector(".dialog-close").addEventListener("click", () => dialog.close());
    this.target.addEventListener("change", () => this.#attempt(() => this.refresh()));
    const input = dialog.querySelector(".file-input");
    input.addEventListener("change", () => {
      const files = [...input.files];
      input.value = ""; // the same file picked again is a new upload
      this.#attempt(() => this.upload(files));
    });
    this.reingestInput.addEventListener("change", () => {
      const [file] = this.reingestInput.files;
      this.reingestInput.value = "";
      if (file && this.reingesting) this.#attempt(() => this.reingest(this.reingesting, file));
    });
    this.#wireDrop(dialog.querySelector(".drop-zone"));
  }

  #wireDrop(zone) {
    zone.addEventListener("dragover", (event) => {
      event.preventDefault(); // allows the drop
      zone.classList.add("over");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("over");
      const files = [...(event.dataTransfer?.files ?? [])];
      if (files.length) this.#attempt(() => this.upload(files));
    });
  }

  #attempt(action) {
    return attempt(this.error, action);
  }

  async open() {
    this.#renderTargets();
    this.dialog.showModal();
    await this.#attempt(() => this.refresh());
    if (!this.jobsShown) {
      this.jobsShown = true;
      await this.#attempt(() => this.showRecentJobs());
    }
  }

  /** One's recent jobs, newest first, below any upload of this page; those not done are followed. */
  async showRecentJobs() {
    const jobs = (await this.api.json(`/ingest/jobs?limit=${RECENT_JOBS}`)).items;
    for (const job of jobs) {
      const accepted = { job_id: job.id, status_url: `/ingest/jobs/${job.id}`, events_url: `/ingest/jobs/${job.id}/events` };
      for (const file of job.files) if (!this.rows.has(file.id)) this.uploads.append(this.#uploadRow(file, accepted));
      if (job.status !== "done") this.#attempt(() => this.#follow(accepted));
    }
  }

  /** One's own documents, then the collections one may add to (the picker's scope, if one of them). */
  #renderTargets() {
    const chosen = this.target.value || document.querySelector("#scope-select")?.value || "";
    clear(this.target).append(h("option", { value: "" }, t("myDocuments")));
    for (const c of state.collections.filter((c) => EDITS.has(c.role))) this.target.append(h("option", { value: c.id }, c.name));
    this.target.value = [...this.target.options].some((o) => o.value === chosen) ? chosen : "";
  }

  async refresh() {
    const id = this.target.value;
    const query = id ? `collection_id=${encodeURIComponent(id)}` : "mine=true"; // one's own, not the shared corpus
    const docs = (await this.api.json(`/documents?${query}&limit=200`)).items;
    clear(this.list);
    if (!docs.length) this.list.append(h("li", { class: "muted" }, t("noDocuments")));
    for (const d of docs) this.list.append(this.#documentRow(d));
  }

  #documentRow(d) {
    const title = d.title || d.external_id;
    return h(
      "li",
      { class: "key-row document-row", dataset: { id: d.id } },
      h("span", { class: "key-name" }, title),
      h("span", { class: "key-facts muted" }, t("documentFacts", { chunks: d.chunk_count, date: formatDate(d.updated_at) })),
      h("button", { type: "button", class: "link-button", "aria-label": t("reingestLabel", { title }), onclick: () => this.#pickReingest(d) }, t("reingest")),
      h("button", { type: "button", class: "link-button", "aria-label": t("deleteLabel", { title }), onclick: () => this.#attempt(() => this.remove(d, title)) }, t("deleteDocument")),
    );
  }

  #pickReingest(d) {
    this.reingesting = d;
    this.reingestInput.click();
  }

  /** A new version of a document's file, sent with the document's external_id: the document is updated
   * in place (same id, so answers citing it say "changed since", not "deleted"); if the new version
   * fails, the old one stays as it was. */
  async reingest(d, file) {
    await this.upload([file], d.collection_id, { externalId: d.external_id });
  }

  async remove(d, title) {
    if (!confirm(t("deleteConfirm", { title }))) return;
    await this.api.json(`/documents/${d.id}`, { method: "DELETE" });
    await this.refresh();
    this.onChange();
  }

  /** Queue the files as one background job, then draw each file's progress until the job ends. */
  async upload(files, collectionId = this.target.value, { externalId = null } = {}) {
    if (!files.length) return;
    const accepted = await submitUpload(this.api, files, collectionId, externalId);
    const fresh = { chunks_done: 0, chunks_total: null, error: null, outcome: null };
    for (const file of [...accepted.files].reverse()) this.uploads.prepend(this.#uploadRow({ ...file, ...fresh }, accepted));
    return this.#follow(accepted);
  }

  /** Draw a job's files at each of its events until it ends; the document list follows. */
  async #follow(accepted) {
    try {
      const job = await followJob(this.api, accepted, (job) => this.#drawJob(job));
      announce(t("uploadsDone", { done: job.counts.done ?? 0, failed: job.counts.failed ?? 0 }));
      return job;
    } finally {
      await this.refresh();
      this.onChange();
    }
  }

  #drawJob(job) {
    for (const file of job.files) if (this.rows.has(file.id)) this.#drawFile(this.rows.get(file.id), file);
  }

  /** Cancel what of the job is still queued (a file being ingested finishes); its rows say so. */
  async cancel(accepted) {
    this.#drawJob(await this.api.json(accepted.status_url, { method: "DELETE" }));
  }

  #uploadRow(file, accepted) {
    const cancel = h("button", { type: "button", class: "link-button upload-cancel", "aria-label": t("cancelUploadLabel", { name: file.filename }), onclick: () => this.#attempt(() => this.cancel(accepted)) }, t("cancelUpload"));
    const row = h("li", { class: "key-row upload-row", dataset: { file: file.id } }, h("span", { class: "key-name" }, file.filename), h("span", { class: "upload-status" }), h("progress", { max: 1, value: 0 }), h("span", { class: "upload-detail muted" }), cancel);
    this.rows.set(file.id, row);
    this.#drawFile(row, file);
    return row;
  }

  #drawFile(row, file) {
    row.dataset.status = file.status;
    row.querySelector(".upload-cancel").hidden = file.status !== "queued";
    const outcome = file.outcome?.documents?.[0]?.status;
    row.querySelector(".upload-status").textContent = t(`file_${file.status}`) + (outcome ? ` · ${t(`outcome_${outcome}`)}` : "");
    const progress = row.querySelector("progress");
    if (file.chunks_total) {
      progress.max = file.chunks_total;
      progress.value = file.chunks_done;
    } else if (file.status === "done") progress.value = progress.max; // nothing to embed (unchanged)
    else if (file.status !== "queued") progress.removeAttribute("value"); // parsing: indeterminate
    progress.hidden = file.status === "failed" || file.status === "cancelled";
    const detail = row.querySelector(".upload-detail");
    detail.className = file.error ? "upload-detail upload-error" : "upload-detail muted";
    detail.textContent = file.error ?? (file.chunks_total ? t("chunksProgress", { done: file.chunks_done, total: file.chunks_total }) : "");
  }
}
