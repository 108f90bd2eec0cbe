"""HTML to readable text: paragraphs kept, headings as markdown '#' lines, no markup or page chrome."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

_DROPPED = "script, style, nav, noscript, template, svg, iframe, object"
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure "
    "footer form header hr main ol p section summary table tbody tfoot thead tr ul".split()
)
_CELLS = frozenset({"td", "th"})
_SPACE = re.compile(r"\s+")
_FENCE = re.compile(r"`{3,}")
# Web pages only (html_to_article_text); ingestion keeps a document's header, footer and forms.
_CHROME = "footer, aside, form, dialog, button, select"
_ARTICLE_SELECTORS = (
    "article",
    "main",
    "[role=main]",
    "[itemprop=articleBody]",
    ".mw-parser-output",  # MediaWiki
    ".lemma-content, .lemma_content, .main-content",  # Chinese encyclopaedias
    "#content, .content, .post-content, .entry-content, .article-content",
)
_MIN_ARTICLE_CHARS = 200
_NAME_PARTS = re.compile(r"[\s_-]+")
_NOISE_WORDS = frozenset(
    """sidebar recommend recommended recommendation related comment comments breadcrumb breadcrumbs
    share sharing social copyright advert advertisement ads ad banner cookie cookies popup modal newsletter
    subscribe toolbar menu navbar pagination footer header""".split()
)


def html_to_text(html: str) -> tuple[str | None, str]:
    """The page title (<title>, else the first <h1>) and its readable text, headings as '#' lines."""
    tree = LexborHTMLParser(html)
    title = _title_of(tree)
    for node in tree.css(_DROPPED):
        node.decompose()
    root = tree.body or tree.root
    return title, _render(root) if root is not None else ""


def html_to_article_text(html: str) -> tuple[str | None, str]:
    """Like html_to_text, for a page fetched from the web (seed: multi-agent-research.md, URL deep read):
    the article body when the page marks one, and no page chrome (header, footer, aside, form, nav,
    or blocks whose class/id names a sidebar, comments, share buttons, ads ...)."""
    tree = LexborHTMLParser(html)
    title = _title_of(tree)
    for node in tree.css(_DROPPED):
        node.decompose()
    body = tree.body or tree.root
    if body is None:
        return title, ""
    article = _article_root(tree)
    if article is not None:
        text = _render_clean(article, _CHROME)  # an article's own <header> holds its title: kept
        if len(text) >= _MIN_ARTICLE_CHARS:
            return title, text
    return title, _render_clean(body, _CHROME + ", header")


def _render_clean(root: LexborNode, chrome: str) -> str:
    for node in root.css(chrome):
        node.decompose()
    total = len(root.text())
    for node in root.css("[class], [id]"):
        # A block holding most of the text is the content whatever its name ("main-with-sidebar").
        if node.mem_id != root.mem_id and _is_noise(node) and len(node.text()) * 2 < total:
            node.decompose()
    return _render(root)


def _title_of(tree: LexborHTMLParser) -> str | None:
    return _text_of(tree.css_first("title")) or _text_of(tree.css_first("h1")) or None


def _article_root(tree: LexborHTMLParser) -> LexborNode | None:
    """The first element the page marks as its main content, when it holds enough text."""
    for selector in _ARTICLE_SELECTORS:
        node = tree.css_first(selector)
        if node is not None and len(_text_of(node)) >= _MIN_ARTICLE_CHARS:
            return node
    return None


def _is_noise(node: LexborNode) -> bool:
    """A block named (class or id) like page furniture; never one that holds the article's headings."""
    names = " ".join(v or "" for k, v in node.attributes.items() if k in ("class", "id")).lower()
    words = set(_NAME_PARTS.split(names))
    return bool(words & _NOISE_WORDS) and node.css_first("h1, article, main") is None


def _text_of(node: LexborNode | None) -> str:
    return _SPACE.sub(" ", node.text()).strip() if node is not None else ""


def _render(root: LexborNode) -> str:
    """Depth-first walk with an explicit stack (deeply nested pages would exhaust recursion)."""
    out: list[str] = []
    stack: list[LexborNode | str] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif item.is_text_node:
            out.append(_SPACE.sub(" ", item.text_content or ""))
        elif item.is_element_node:
            before, after, descend = _wrap(item)
            out.append(before)
            if descend:
                stack.append(after)
                stack.extend(reversed(list(item.iter(include_text=True))))
            else:
                out.append(after)
    return _tidy("".join(out))


def _tidy(text: str) -> str:
    """Strip the lines of prose, keep indentation inside code fences, fold blank-line runs."""
    lines: list[str] = []
    fence = ""
    for line in text.split("\n"):
        bare = line.strip()
        if fence:
            lines.append(line.rstrip())
            fence = "" if bare == fence else fence
        else:
            lines.append(_SPACE.sub(" ", bare))
            fence = bare if _FENCE.fullmatch(bare) else ""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _wrap(node: LexborNode) -> tuple[str, str, bool]:
    """What to emit before and after an element, and whether to walk into its children."""
    tag = node.tag or ""
    if tag in _HEADINGS:
        text = _text_of(node)
        return (f"\n\n{'#' * _HEADINGS[tag]} {text}\n\n" if text else ""), "", False
    if tag == "pre":
        code = (node.text() or "").strip("\n")
        # A fence longer than any backtick run inside the code, so the code cannot close it.
        fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", code)), default=0))
        return (f"\n\n{fence}\n{code}\n{fence}\n\n" if code.strip() else ""), "", False
    if tag == "br":
        return "\n", "", False
    if tag == "li":
        return "\n- ", "", True
    if tag in _CELLS:
        return "", " ", True
    if tag in _BLOCKS:
        return "\n\n", "\n\n", True
    return "", "", True
