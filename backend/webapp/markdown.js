// Just enough Markdown for answers and research reports (headings, lists, code, bold), built as DOM
// nodes, with [n] citation markers turned into chips by the caller's `cite(n)`.

import { h } from "./dom.js";

const INLINE = /(\*\*[^*\n]+\*\*|`[^`\n]+`|\[\d+\])/g;

/** Block-level elements for `text`; `cite(n)` returns the node that stands for marker [n]. */
export function renderMarkdown(text, cite) {
  const blocks = [];
  const lines = (text || "").replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  let list = null;
  const flushParagraph = () => {
    if (paragraph.length) blocks.push(h("p", {}, inline(paragraph.join("\n"), cite)));
    paragraph = [];
  };
  const flushList = () => {
    if (list) blocks.push(list);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flushParagraph();
      flushList();
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      blocks.push(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    const bullet = /^\s*(?:[-*•]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (heading) {
      flushParagraph();
      flushList();
      blocks.push(h(`h${Math.min(heading[1].length + 2, 6)}`, {}, inline(heading[2], cite)));
    } else if (bullet) {
      flushParagraph();
      const tag = bullet[1] ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        flushList();
        list = h(tag);
      }
      list.append(h("li", {}, inline(bullet[2], cite)));
    } else if (!line.trim()) {
      flushParagraph();
      flushList();
    } else {
      flushList();
      paragraph.push(line);
    }
  }
  flushParagraph();
  flushList();
  return blocks;
}

function inline(text, cite) {
  return text.split(INLINE).map((part) => {
    if (/^\*\*[^*]+\*\*$/.test(part)) return h("strong", {}, part.slice(2, -2));
    if (/^`[^`]+`$/.test(part)) return h("code", {}, part.slice(1, -1));
    const marker = /^\[(\d+)\]$/.exec(part);
    if (marker) return cite(Number(marker[1]));
    return part;
  });
}
