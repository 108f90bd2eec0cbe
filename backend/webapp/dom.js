// A small element builder: every piece of text becomes a text node, never HTML. Answers quote
// documents and web pages, so nothing they contain may be parsed as markup.

// Attributes a browser follows or loads. Defence in depth: the server already drops web results
// whose URL is not http(s), but an address that reaches the page anyway (an old stored source, a
// bug) is never set unless it is http(s) or relative to this page: no javascript:, data:, file:.
const URL_ATTRIBUTES = new Set(["href", "src", "action", "formaction", "xlink:href"]);

/** `value` when it is an http(s) address or one relative to this page (#/c/..., /documents/...), else null. */
export function safeUrl(value) {
  const text = String(value ?? "");
  try {
    const { protocol } = new URL(text, window.location.href);
    return protocol === "http:" || protocol === "https:" ? text : null;
  } catch {
    return null;
  }
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (URL_ATTRIBUTES.has(key.toLowerCase()) && safeUrl(value) === null) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2).toLowerCase(), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** Run `action`; a failure shows its message (the API's detail) in `errorElement`, cleared first. */
export async function attempt(errorElement, action) {
  errorElement.textContent = "";
  try {
    await action();
  } catch (error) {
    errorElement.textContent = error.detail || String(error);
  }
}
