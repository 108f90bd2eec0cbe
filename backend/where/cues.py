"""Whether a time phrase in a question is about the documents' dates or about their content.

"2019年诺贝尔奖得主是谁?" and "What happened in March 1998?" ask about the world in 2019 or 1998, not
for documents written then. So a year, month, day or quarter (and a word that often means "nowadays",
今天 / today) filters the documents' dates only when the question ties it to them (`document_cue`):
- a document word it qualifies: "2023年的财务报告", "2023年第三季度的销售报告", "the 2023 reports",
  "reports from 2021–2023", "papers in 2023";
- a verb that only documents undergo: "2023年上传的", "uploaded in March", "archived last year";
- a verb that documents undergo among others (发布, 写, 更新, published, written, updated ...) with a
  document word in the same clause: "2023年发布的通知", "documents published in 2023" — but not
  "苹果2007年发布的手机" or "1948年发表论文…" (no 的: a main verb, not a document's description);
- an explicit scoping word right before it: "只看2022年的", "limited to 2023".
Relative periods that only make sense as scope (上周, 上个月, 今年以来, last week, year to date) need
no cue; where_time marks which ones those are.
"""

from __future__ import annotations

import re

_ZH_NOUNS = (
    "文档|文檔|文件|资料|資料|报告|報告|纪要|紀要|邮件|郵件|笔记|筆記|周报|週報|月报|月報|年报|年報|日报|"
    "日報|季报|季報|财报|財報|通知|公告|论文|論文|文章|文献|文獻|简报|簡報|总结|總結|会议记录|會議記錄|"
    "备忘录|備忘錄|附件|档案|檔案|手册|手冊|稿件|草稿|合同|PDF|pdf|Word|PPT|ppt|幻灯片|幻燈片|表格|网页|網頁"
)
_ZH_LANGS = "英文|中文|英语|英語|汉语|漢語|简体中文|繁体中文|簡體中文|繁體中文"
# Only documents are uploaded or archived: enough on their own.
_ZH_FILE_VERBS = "上传|上傳|归档|歸檔|入库|入庫|录入|錄入|存档|存檔|导入|導入"
# Documents are published or written, and so are phones and novels: these need a document word too.
_ZH_VERBS = (
    "发布|發布|發佈|撰写|撰寫|编写|編寫|写|寫|更新|创建|創建|整理|修改|编辑|編輯|起草|提交|发送|發送|"
    "收到|发表|發表|签署|簽署"
)
_ZH_SCOPING = (
    "只看|仅看|僅看|仅限|僅限|限于|限於|限定在|限定|筛选|篩選|只搜|只查|只找|只检索|范围是|范围为|範圍是"
)
_EN_NOUNS = (
    r"documents?|docs?|files?|reports?|papers?|articles?|notes|memos?|meeting\s+minutes|e-?mails?|slides?|"
    r"decks?|presentations?|spreadsheets?|pdfs?|manuals?|contracts?|invoices?|newsletters?|announcements?|"
    r"drafts?|uploads?|attachments?|write-?ups?|summaries|filings?|transcripts?"
)
_EN_FILE_VERBS = r"uploaded|archived|ingested|imported|indexed"
_EN_VERBS = (
    r"published|written|wrote|created|updated|modified|edited|revised|sent|received|drafted|issued|"
    r"released|posted|dated|authored|shared|submitted"
)
# Not "only" or "just": "only in 2015 did they win", "just before 1990" are about the content.
_EN_SCOPING = r"limit(?:ed)?\s+to|restrict(?:ed)?\s+to|filter(?:ed)?\s+(?:to|by|on)|scoped?\s+to"

_BREAK = re.compile(r"[，,。；;：:！!？?\n]")
_ZH_NOUN = re.compile(_ZH_NOUNS)
_EN_NOUN = re.compile(rf"\b(?:{_EN_NOUNS})\b", re.IGNORECASE)
# After the phrase: 的 + up to four characters + a document word, or 关于X的 + a document word.
_ZH_QUALIFIES = re.compile(
    rf"^(?:期间|期間|内|內|里|裡|中|间|間)?(?:的[^的\s]{{0,4}}?|(?:关于|有关|關於|有關)[^的]{{1,8}}的[^的\s]{{0,4}}?"
    rf"|(?:{_ZH_LANGS})版?)?"
    rf"(?P<cue>{_ZH_NOUNS})"
)
_ZH_VERB_AFTER = re.compile(
    rf"^(?:期间|期間|内|內)?(?:由|被|在)?[^的\s]{{0,5}}?(?:(?P<file>{_ZH_FILE_VERBS})|(?P<verb>{_ZH_VERBS})的)"
)
_ZH_BEFORE = re.compile(
    rf"(?:(?P<file>{_ZH_FILE_VERBS})(?:于|於|在|自)?|(?P<verb>{_ZH_VERBS})(?:于|於|在|自)"
    rf"|(?P<scope>{_ZH_SCOPING})(?:从|從|自|在|于|於)?)\s*$"
)
_EN_QUALIFIES = re.compile(rf"^(?:'s)?\s+(?:[\w-]+\s+){{0,2}}?(?P<cue>{_EN_NOUNS})\b", re.IGNORECASE)
_EN_BEFORE = re.compile(
    rf"\b(?:(?P<file>{_EN_FILE_VERBS})|(?P<verb>{_EN_VERBS})|(?P<scope>{_EN_SCOPING}))"
    r"(?:\s+(?:back|on|in|during|since|before|after|from|between))?\s*$",
    re.IGNORECASE,
)
_EN_NOUN_BEFORE = re.compile(rf"\b(?P<cue>{_EN_NOUNS})(?:\s+[\w-]+){{0,2}}?\s*$", re.IGNORECASE)


def document_cue(text: str, span: tuple[int, int]) -> str | None:
    """The words that tie the time phrase at `span` to the documents' dates, or None: it is about
    the content. Only the phrase's clause counts (up to a comma or question mark)."""
    before, after = _clause(text, span)
    clause = before + text[span[0] : span[1]] + after
    for pattern in (_ZH_QUALIFIES, _EN_QUALIFIES):  # the phrase qualifies a document word
        if m := pattern.search(after):
            return m["cue"]
    has_noun = bool(_ZH_NOUN.search(clause) or _EN_NOUN.search(clause))
    for m in (_ZH_VERB_AFTER.search(after), _ZH_BEFORE.search(before), _EN_BEFORE.search(before)):
        found = m.groupdict() if m else {}
        if found.get("file") or found.get("scope"):
            return found.get("file") or found.get("scope")
        if found.get("verb") and has_noun:
            return found["verb"]
    m = _EN_NOUN_BEFORE.search(before)  # "reports from 2021–2023", "papers in 2023"
    return m["cue"] if m else None


def _clause(text: str, span: tuple[int, int]) -> tuple[str, str]:
    """The text of the phrase's clause before and after it."""
    start = max((m.end() for m in _BREAK.finditer(text, 0, span[0])), default=0)
    stop = _BREAK.search(text, span[1])
    return text[start : span[0]], text[span[1] : stop.start() if stop else len(text)]
