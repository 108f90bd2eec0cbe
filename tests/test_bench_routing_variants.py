"""The routing benchmark's question variants (issue 26) are built as documented: pure functions, no model."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.common import DATASETS_DIR
from bench.routing.keywords import keyword_query
from bench.routing.plan import build_variants
from bench.routing.plots import histogram, svg
from bench.routing.split import ingested_half, load_split
from bench.routing.variants import NotParallel, cross_lingual, load_native, near_miss


def write_set(
    root: Path, name: str, corpus: list[dict], questions: list[tuple[str, str, str, list[str]]]
) -> None:
    """A BEIR folder: corpus rows, and (qid, text, gold paragraph id, answers) per question."""
    path = root / name
    path.mkdir(parents=True)
    lines = lambda rows: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)  # noqa: E731
    (path / "corpus.jsonl").write_text(lines(corpus), encoding="utf-8")
    (path / "queries.jsonl").write_text(
        lines({"_id": q, "text": t} for q, t, _, _ in questions), encoding="utf-8"
    )
    (path / "answers.jsonl").write_text(
        lines({"_id": q, "answers": a} for q, _, _, a in questions), encoding="utf-8"
    )
    qrels = "".join(f"{q}\t{g}\t1\n" for q, _, g, _ in questions if g)
    (path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")


def titles(ingested: bool, n: int) -> list[str]:
    """n article titles that fall in the ingested half (or in the other one)."""
    found: list[str] = []
    i = 0
    while len(found) < n:
        title = f"Article {i}"
        if ingested_half(title) == ingested:
            found.append(title)
        i += 1
    return found


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- keyword questions ----------------------------------------------------------------------------


def test_a_keyword_question_keeps_two_to_four_content_words_and_no_question_word():
    assert keyword_query("When was the British Nationality Act passed?") == "British Nationality Act passed"
    zh = keyword_query("哪座堡垒是1964年重建的？")
    assert zh == "堡垒 1964 重建"  # 哪座 is a question word, 年 a lone character, the year stays
    for question in ("黑豹队的防守丢了多少分？", "How many points did the Panthers defense surrender?"):
        cut = keyword_query(question)
        assert cut is not None
        words = cut.split()
        assert 2 <= len(words) <= 4
        assert not {"多少", "how", "many", "did", "the"} & {w.lower() for w in words}


def test_a_chinese_keyword_question_keeps_its_three_rarest_words_in_question_order():
    question = "让-皮埃尔·巴利冈是哪国的政治家和社会党议员？"
    cut = keyword_query(question)
    assert cut is not None
    words = cut.split()
    assert len(words) == 3
    assert [question.index(w) for w in words] == sorted(question.index(w) for w in words)


def test_a_question_of_question_words_has_no_keyword_version():
    assert keyword_query("What is it?") is None
    assert keyword_query("怎么办？") is None


# --- cross-lingual pairs --------------------------------------------------------------------------


def parallel_sets(root: Path, *, break_gold: bool = False) -> None:
    kept, other = titles(True, 1)[0], titles(False, 1)[0]
    corpus = [{"_id": "p1", "title": kept, "text": "..."}, {"_id": "p2", "title": other, "text": "..."}]
    write_set(root, "en", corpus, [("q1", "Who won?", "p1", ["Denver"]), ("q2", "Where?", "p2", ["Paris"])])
    gold = "p2" if break_gold else "p1"
    write_set(root, "zh", corpus, [("q1", "谁赢了？", gold, ["丹佛"]), ("q2", "在哪里？", "p2", ["巴黎"])])


def test_cross_lingual_asks_one_sets_questions_of_the_others_corpus_with_its_gold_strings(tmp_path):
    parallel_sets(tmp_path)
    en, zh = load_split("en", tmp_path), load_split("zh", tmp_path)
    asked = cross_lingual(zh, en)
    assert asked.ingested_rows == en.ingested_rows
    assert [(q.text, q.answerable, q.answers) for q in asked.questions] == [
        ("谁赢了？", True, ("Denver",)),  # an extractive reply quotes the English passage
        ("在哪里？", False, ("Paris",)),
    ]


def test_cross_lingual_refuses_sets_that_are_not_parallel(tmp_path):
    parallel_sets(tmp_path, break_gold=True)
    with pytest.raises(NotParallel, match="1 questions differ"):
        cross_lingual(load_split("zh", tmp_path), load_split("en", tmp_path))


def test_the_xquad_development_sets_are_parallel():
    root = DATASETS_DIR
    if not (root / "xquad-zh-dev").is_dir() or not (root / "xquad-en-dev").is_dir():
        pytest.skip("development sets not on this machine")
    asked = cross_lingual(load_split("xquad-zh-dev", root), load_split("xquad-en-dev", root))
    assert len(asked.questions) == 583


# --- near misses ----------------------------------------------------------------------------------


def test_a_near_miss_removes_every_other_paragraph_of_an_article_and_keeps_the_rest(tmp_path):
    long_article, single, unused = titles(True, 2)[0], titles(True, 2)[1], titles(False, 1)[0]
    ids = ["a1", "a2", "a3"]
    corpus = [{"_id": i, "title": long_article, "text": f"paragraph {i} says {i}-fact"} for i in ids]
    corpus += [{"_id": "s1", "title": single, "text": "alone"}, {"_id": "u1", "title": unused, "text": "x"}]
    questions = [(f"q{i}", f"about {i}?", i, [f"{i}-fact"]) for i in ids]
    questions += [("qs", "single?", "s1", ["alone"]), ("qu", "unused?", "u1", ["x"])]
    write_set(tmp_path, "s", corpus, questions)
    nm = near_miss(load_split("s", tmp_path))
    ordered = sorted(ids, key=sha)
    assert nm.removed == {ordered[1]}  # positions 2, 4, ... in sha256 order: the first always stays
    assert [r["_id"] for r in nm.split.ingested_rows] == [i for i in ids if i != ordered[1]] + ["s1"]
    labels = {q.qid: q.answerable for q in nm.split.questions}
    # one-paragraph articles and the other half have no near miss: their questions are not asked
    assert labels == {f"q{i}": i != ordered[1] for i in ids}
    assert nm.answer_elsewhere == 0


def test_a_removed_paragraphs_question_is_left_out_when_a_kept_paragraph_holds_its_answer(tmp_path):
    article = titles(True, 1)[0]
    corpus = [{"_id": i, "title": article, "text": "both say 1964 and more"} for i in ("a1", "a2")]
    write_set(tmp_path, "s", corpus, [(f"q{i}", "when?", i, ["1964"]) for i in ("a1", "a2")])
    nm = near_miss(load_split("s", tmp_path))
    assert nm.answer_elsewhere == 1
    assert [q.answerable for q in nm.split.questions] == [True]


# --- real search queries with native labels -------------------------------------------------------


def native_set(root: Path, *, in_order: bool = True) -> None:
    corpus = [{"_id": f"p{i}", "title": "", "text": f"passage {i}"} for i in range(6)]
    if not in_order:
        corpus.reverse()
    labels = [1, 0, 0, 1, 1, 0]
    write_set(
        root,
        "native",
        corpus,
        [(f"q{i}", f"query {i}", f"p{i}" if a else "", ["x"] if a else []) for i, a in enumerate(labels)],
    )
    tsv = "".join(f"q{i}\t{a}\n" for i, a in enumerate(labels))
    (root / "native" / "answerable.tsv").write_text("query-id\tanswerable\n" + tsv, encoding="utf-8")


def test_native_labels_come_from_answerable_tsv_and_a_sample_is_a_prefix_with_its_passages(tmp_path):
    native_set(tmp_path)
    whole = load_native("native", tmp_path)
    assert [q.answerable for q in whole.questions] == [True, False, False, True, True, False]
    assert whole.questions[1].gold_doc == ""  # unanswerable: no gold paragraph
    two_each = load_native("native", tmp_path, 2)
    assert [q.qid for q in two_each.questions] == ["q0", "q1", "q2", "q3"]
    assert [r["_id"] for r in two_each.ingested_rows] == ["p0", "p1", "p2", "p3"]


def test_a_native_sample_refuses_a_corpus_not_in_query_order(tmp_path):
    native_set(tmp_path, in_order=False)
    with pytest.raises(ValueError, match="not in query order"):
        load_native("native", tmp_path, 1)


def test_a_set_with_native_labels_is_only_a_native_variant(tmp_path):
    native_set(tmp_path)
    parallel_sets(tmp_path)
    variants = build_variants(["monolingual", "native", "mixed"], ["en", "native", "zh"], tmp_path, 0)
    assert [(v.kind, v.key) for v in variants] == [
        ("monolingual", "en"),
        ("monolingual", "zh"),
        ("mixed", "combined"),
        ("native", "native.native"),
    ]
    xlang = build_variants(["xlang"], ["en", "zh"], tmp_path, 0)
    assert xlang == []  # only the declared parallel pairs (xquad-zh-dev / xquad-en-dev)


# --- plots ----------------------------------------------------------------------------------------


def test_a_histogram_is_the_share_of_scores_per_bin_with_one_in_the_last_bin():
    assert histogram([0.0, 0.01, 0.5, 1.0], bins=4) == [0.5, 0.0, 0.25, 0.25]


def test_the_score_plot_is_an_svg_with_one_outline_per_side_and_panel():
    scores = {"answerable": [0.9, 0.95], "unanswerable": [0.1, 0.4]}
    text = svg("mono", [("a (AUROC 1.000)", scores), ("b", scores)], {"T_low": 0.6})
    root = ET.fromstring(text)
    paths = root.findall("{http://www.w3.org/2000/svg}path")
    assert len(paths) == 4
    assert "a (AUROC 1.000)" in text
    assert "T_low" in text
