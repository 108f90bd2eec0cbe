"""bench.research --web --multihop: two-hop questions whose second part needs the first part's answer,
built from the development sets (they hold no natural bridges).

A bridge pairs a question Q1 of one passage whose gold answer A is a short name (Q1 asks who / which
X / where) with a question Q2 of another article that names A. The two-hop question asks Q1 (its
subject named, as in web_set.py) and then Q2 with A replaced by the pointing words a reader would
use for "the thing just asked for" (哪一地區 -> 該地區, 谁 -> 此人): "梵語：陸特和漢斯雷頓開創了哪一
地區對梵語的學術研究？該地區最大的河流是哪一條河？". Only A makes the second hop searchable, so the
run must carry the first hop's answer into the second hop's search. Q2's article is preferred when
its title is A itself (the bridge entity's own page), then when it names A in its question.
Pages: every passage of the sets used (drcd-dev and cmrc2018-dev, Chinese, behind the Bocha fake),
so each hop has to find its page among all the others.
"""

from __future__ import annotations

import re
from pathlib import Path

from backend.text.answers import question_type
from bench.answers.scoring import load_answers, sample_ids
from bench.common.beir import DatasetsMissing
from bench.research.web_set import WebCompound, WebPart, WebSet, _corpus, _named, _page, _qrels, _queries

MULTIHOP_SETS = ("drcd-dev", "cmrc2018-dev")
MAX_BRIDGE_CHARS = 8
MAX_GOLD_CHARS = 20
_ASKED = re.compile(r"哪(?:一)?(?:个|個|家|座|支|所|条|條|部|本|首|种|種|项|項)?([\u4e00-\u9fff]{1,2})")
_WHO = re.compile(r"谁|誰|哪位|哪一位|什么人|什麼人")
_NOT_NOUNS = frozenset("是年天月里裡儿兒个個些")


def pointing_words(q1: str, traditional: bool) -> str | None:
    """The words standing for Q1's answer in Q2 ("該地區", "此人"), or None when Q1 names no kind."""
    if _WHO.search(q1):
        return "此人"
    found = _ASKED.search(q1)
    if not found or found.group(1)[0] in _NOT_NOUNS:
        return None
    noun = found.group(1)
    return ("該" if traditional else "该") + noun


def build_multihop_set(datasets_dir: Path, count: int, seed: str) -> WebSet:
    """`count` two-hop questions (and the fake web that answers them)."""
    for name in MULTIHOP_SETS:
        if not (datasets_dir / name / "answers.jsonl").is_file():
            raise DatasetsMissing(
                f"bench.research --web --multihop needs {datasets_dir / name} "
                "(pass --datasets-dir, or set BENCH_DATASETS_DIR)"
            )
    compounds: list[WebCompound] = []
    pages = []
    for name in MULTIHOP_SETS:
        folder = datasets_dir / name
        docs = _corpus(folder / "corpus.jsonl")
        pages += [_page(d, "zh", "bocha") for d in docs.values()]
        compounds += _bridges(name, folder, docs, seed)
    picked = [compounds[i] for i in _interleave(compounds, seed)][:count]
    return WebSet(picked, pages, [])


def _interleave(compounds: list[WebCompound], seed: str) -> list[int]:
    return [int(i) for i in sample_ids([str(i) for i in range(len(compounds))], None, seed)]


def _bridges(name: str, folder: Path, docs: dict[str, dict[str, str]], seed: str) -> list[WebCompound]:
    answers = load_answers(folder / "answers.jsonl")
    texts, qrels = _queries(folder / "queries.jsonl"), _qrels(folder / "qrels.tsv")
    traditional = name.startswith("drcd")
    ids = [q for q in texts if q in answers and qrels.get(q) in docs]
    used_docs: set[str] = set()
    used_answers: set[str] = set()
    out: list[WebCompound] = []
    for q1 in sample_ids(ids, None, seed):
        doc1 = docs[qrels[q1]]
        bridge = answers[q1][0].strip()
        words = pointing_words(texts[q1], traditional)
        if (
            words is None
            or question_type(texts[q1]) not in ("who", "entity")
            or not 2 <= len(bridge) <= MAX_BRIDGE_CHARS
            or re.search(r"[\d\W_]", bridge)
            or bridge in texts[q1]
            or bridge in doc1["title"]
            or bridge in used_answers
            or doc1["_id"] in used_docs
        ):
            continue
        second = _second_hop(bridge, doc1, docs, ids, texts, qrels, answers, used_docs)
        if second is None:
            continue
        q2, doc2 = second
        used_docs |= {doc1["_id"], doc2["_id"]}
        used_answers.add(bridge)
        page1, page2 = _page(doc1, "zh", "bocha"), _page(doc2, "zh", "bocha")
        hop1 = _named(texts[q1], page1.title, "zh")
        hop2 = texts[q2].replace(bridge, words, 1).strip()
        if not hop2.endswith(("?", "？")):
            hop2 += "？"
        parts = [
            WebPart("zh", q1, hop1, answers[q1], page1.path),
            WebPart("zh", q2, hop2, answers[q2], page2.path),
        ]
        out.append(WebCompound(hop1 + hop2, parts, bridge=bridge))
    return out


def _second_hop(
    bridge: str,
    doc1: dict[str, str],
    docs: dict[str, dict[str, str]],
    ids: list[str],
    texts: dict[str, str],
    qrels: dict[str, str],
    answers: dict[str, list[str]],
    used_docs: set[str],
) -> tuple[str, dict[str, str]] | None:
    """A question of another article that names `bridge` once and asks one fact not holding it; the
    bridge entity's own article first."""
    options = []
    for q2 in ids:
        doc2 = docs[qrels[q2]]
        gold = answers[q2][0]
        if (
            doc2["title"] == doc1["title"]
            or doc2["_id"] in used_docs
            or texts[q2].count(bridge) != 1
            or bridge in gold
            or len(gold) > MAX_GOLD_CHARS
            or question_type(texts[q2]) is None
        ):
            continue
        options.append((doc2["title"] != bridge, q2, doc2))
    if not options:
        return None
    _, q2, doc2 = min(options, key=lambda o: (o[0], o[1]))
    return q2, doc2
