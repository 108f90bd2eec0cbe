// Team collections on the page: the picker beside the question box (the conversation's scope, stored
// with it by the server), and the "Collections" dialog: create one, see a collection's documents,
// upload into it (editors), manage its members (admins). The server decides every permission; the
// page only hides what the caller's role cannot do, and shows the server's message when it refuses.

import { followJob, submitUpload } from "./documents.js";
import { attempt, clear, h } from "./dom.js";
import { formatDate, t } from "./i18n.js";
import { state, ui } from "./view.js";

const ROLES = ["viewer", "editor", "admin"];
const RANK = { viewer: 1, editor: 2, admin: 3 };

/** The collections the caller is a member of, into state and the picker. */
export async function loadCollections() {
  try {
    state.collections = (await state.api.json("/collections")).items;
  } catch {
    state.collections = [];
  }
  renderPicker();
}

export function renderPicker() {
  const select = ui.scopeSelect;
  const chosen = select.value;
  clear(select);
  select.append(h("option", { value: "" }, t("scopeAll")));
  for (const c of state.collections) select.append(h("option", { value: c.id }, c.name));
  select.value = state.collections.some((c) => c.id === chosen) ? chosen : "";
}

/** The scope a turn searches: the picked collection's id in a list, or null (everything). */
export function chosenCollections() {
  return ui.scopeSelect.value ? [ui.scopeSelect.value] : null;
}

/** Show the scope stored with a conversation (null: everything). */
export function showScope(collections) {
  const id = collections?.[0] ?? "";
  ui.scopeSelect.value = state.collections.some((c) => c.id === id) ? id : "";
}

export class CollectionsDialog {
  constructor(dialog, api) {
    this.dialog = dialog;
    this.api = api;
    this.list = dialog.querySelector(".collection-list");
    this.detail = dialog.querySelector(".collection-detail");
    this.error = dialog.querySelector(".form-error");
    this.current = null;
    dialog.querySelector(".dialog-close").addEventListener("click", () => dialog.close());
    this.#onSubmit(".collection-form", (form) => this.create(form));
    this.#onSubmit(".upload-form", (form) => this.upload(form));
    this.#onSubmit(".member-form", (form) => this.addMember(form));
  }

  #onSubmit(selector, action) {
    const form = this.dialog.querySelector(selector);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      await this.#attempt(() => action(form));
    });
  }

  #attempt(action) {
    return attempt(this.error, action);
  }

  async open() {
    this.error.textContent = "";
    const roles = this.dialog.querySelector(".member-form").elements.role;
    clear(roles);
    for (const role of ROLES) roles.append(h("option", { value: role }, t(`role_${role}`)));
    this.dialog.showModal();
    await this.#attempt(() => this.refresh());
  }

  async refresh() {
    await loadCollections();
    clear(this.list);
    if (!state.collections.length) this.list.append(h("li", { class: "muted" }, t("noCollections")));
    for (const c of state.collections) {
      this.list.append(
        h(
          "li",
          { class: "key-row", dataset: { id: c.id } },
          h("button", { type: "button", class: "link-button key-name", onclick: () => this.#attempt(() => this.show(c.id)) }, c.name),
          h("span", { class: "key-facts muted" }, t("collectionFacts", { role: t(`role_${c.role}`), documents: c.document_count, members: c.member_count })),
        ),
      );
    }
    if (this.current) await this.show(this.current.id);
  }

  async create(form) {
    const created = await this.api.json("/collections", { method: "POST", body: { name: form.elements.name.value.trim() } });
    form.reset();
    await this.refresh();
    await this.show(created.id);
  }

  async show(id) {
    const [collection, page] = await Promise.all([
      this.api.json(`/collections/${id}`),
      this.api.json(`/documents?collection_id=${encodeURIComponent(id)}&limit=200`),
    ]);
    this.current = collection;
    this.detail.hidden = false;
    this.detail.querySelector(".collection-name").textContent = collection.name;
    this.detail.querySelector(".collection-role").textContent = t("yourRole", { role: t(`role_${collection.role}`) });
    const docs = clear(this.detail.querySelector(".collection-documents"));
    if (!page.items.length) docs.append(h("li", { class: "muted" }, t("noDocuments")));
    for (const d of page.items) {
      docs.append(h("li", { class: "key-row" }, h("span", { class: "key-name" }, d.title || d.external_id), h("span", { class: "key-facts muted" }, formatDate(d.updated_at))));
    }
    this.detail.querySelector(".upload-form").hidden = RANK[collection.role] < RANK.editor;
    const admin = RANK[collection.role] >= RANK.admin;
    this.detail.querySelector(".members").hidden = !admin;
    if (admin) this.#renderMembers(collection);
  }

  #renderMembers(collection) {
    const list = clear(this.detail.querySelector(".member-list"));
    for (const m of collection.members) {
      const select = h("select", { "aria-label": t("role"), disabled: m.owner }, ...ROLES.map((r) => h("option", { value: r }, t(`role_${r}`))));
      select.value = m.role;
      select.addEventListener("change", () => this.#attempt(() => this.#putMember(m.user_id, select.value)));
      const remove = h("button", { type: "button", class: "link-button", hidden: m.owner, onclick: () => this.#attempt(() => this.#removeMember(m.user_id)) }, t("remove"));
      list.append(h("li", { class: "key-row member-row", dataset: { user: m.user_id } }, h("span", { class: "key-name member-id" }, m.owner ? t("ownerMember", { id: m.user_id }) : m.user_id), select, remove));
    }
  }

  async #putMember(userId, role) {
    await this.api.json(`/collections/${this.current.id}/members/${userId}`, { method: "PUT", body: { role } });
    await this.show(this.current.id);
  }

  async #removeMember(userId) {
    await this.api.json(`/collections/${this.current.id}/members/${userId}`, { method: "DELETE" });
    await this.show(this.current.id);
  }

  async addMember(form) {
    await this.#putMember(form.elements.user_id.value.trim().toLowerCase(), form.elements.role.value);
    form.reset();
  }

  /** A background job, as the Documents dialog's (which also draws each file's progress). */
  async upload(form) {
    const accepted = await submitUpload(this.api, form.elements.files.files, this.current.id);
    form.reset();
    const job = await followJob(this.api, accepted);
    const failed = job.files.filter((f) => f.status === "failed");
    if (failed.length) this.error.textContent = failed.map((f) => `${f.filename}: ${f.error}`).join("; ");
    await this.refresh();
  }
}
