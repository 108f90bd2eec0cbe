// The "API keys" dialog: list, create (the key is shown once, with a copy button) and revoke the
// personal keys that let other clients (an OpenAI-compatible chat app, an MCP client, a script) act
// as the signed-in user. Keys are made from this session only: the server refuses it with a key.

import { clear, h } from "./dom.js";
import { formatDate, t } from "./i18n.js";

const LIFETIMES = [null, 30, 90, 365]; // days; null: never expires

export class KeysDialog {
  constructor(dialog, api) {
    this.dialog = dialog;
    this.api = api;
    this.list = dialog.querySelector(".key-list");
    this.form = dialog.querySelector("form.key-form");
    this.created = dialog.querySelector(".key-created");
    this.error = dialog.querySelector(".form-error");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create();
    });
    dialog.querySelector(".dialog-close").addEventListener("click", () => dialog.close());
  }

  async open() {
    const expiry = this.form.elements.expires; // in the language chosen now
    clear(expiry);
    for (const days of LIFETIMES) {
      expiry.append(h("option", { value: days ?? "" }, days ? t("keyExpiresIn", { days }) : t("keyNeverExpires")));
    }
    clear(this.created);
    this.error.textContent = "";
    this.dialog.showModal();
    this.form.elements.name.focus();
    await this.refresh();
  }

  async refresh() {
    try {
      this.render(await this.api.json("/api-keys"));
    } catch (error) {
      this.error.textContent = error.detail || String(error);
    }
  }

  render(keys) {
    clear(this.list);
    if (!keys.length) {
      this.list.append(h("li", { class: "muted" }, t("noKeys")));
      return;
    }
    for (const key of keys) {
      const facts = [t("keyCreated", { date: formatDate(key.created_at) })];
      facts.push(key.last_used_at ? t("keyUsed", { date: formatDate(key.last_used_at) }) : t("keyNeverUsed"));
      if (key.expires_at) facts.push(t("keyExpires", { date: formatDate(key.expires_at) }));
      this.list.append(
        h(
          "li",
          { class: "key-row", dataset: { id: key.id } },
          h("span", { class: "key-name" }, key.name),
          h("code", { class: "key-prefix" }, `${key.prefix}…`),
          h("span", { class: "muted key-facts" }, facts.join(" · ")),
          h("button", { type: "button", class: "link-button", onclick: () => this.revoke(key) }, t("revokeKey")),
        ),
      );
    }
  }

  async create() {
    const { name, expires } = this.form.elements;
    this.error.textContent = "";
    const body = { name: name.value.trim() };
    if (expires.value) body.expires_in_days = Number(expires.value);
    try {
      const key = await this.api.json("/api-keys", { method: "POST", body });
      name.value = "";
      this.showCreated(key.key);
      await this.refresh();
    } catch (error) {
      this.error.textContent = error.detail || String(error);
    }
  }

  showCreated(secret) {
    clear(this.created);
    const field = h("input", { class: "key-secret", readonly: true, value: secret, "aria-label": t("newKey") });
    const copy = h("button", { type: "button" }, t("copy"));
    copy.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(secret);
        copy.textContent = t("copied");
      } catch {
        document.execCommand?.("copy");
      }
    });
    this.created.append(h("p", { role: "status" }, t("keyShownOnce")), h("div", { class: "key-secret-row" }, field, copy));
    field.select();
  }

  async revoke(key) {
    if (!window.confirm(t("revokeConfirm", { name: key.name }))) return;
    try {
      await this.api.json(`/api-keys/${key.id}`, { method: "DELETE" });
    } catch (error) {
      this.error.textContent = error.detail || String(error);
    }
    await this.refresh();
  }
}
