"""The conversation benchmark's follow-up pairs and fixed lists (issue 26): pure functions, no model."""

from __future__ import annotations

import json
from pathlib import Path

from backend import PROJECT_ROOT
from bench.conversation.lists import DEMO_QUESTIONS, SMALL_TALK
from bench.conversation.pairs import build_pairs, chinese_pronoun, english_pronoun, replace_title
from bench.routing.split import ingested_half, load_split


def test_an_english_title_becomes_the_pronoun_in_the_form_its_position_needs():
    assert replace_title("When did Victoria enact its constitution?", "Victoria_(Australia)", "it") == (
        "When did it enact its constitution?"
    )
    assert replace_title("Which party is strongest in Victoria's north?", "Victoria_(Australia)", "it") == (
        "Which party is strongest in its north?"
    )
    assert (
        replace_title("Who did the Normans team up with?", "Normans", "they") == "Who did they team up with?"
    )
    assert replace_title("Who defeated the Normans?", "Normans", "they") == "Who defeated them?"
    assert replace_title("Nikola Tesla was born where?", "Nikola_Tesla", "he") == "He was born where?"
    assert replace_title("Where was Edison born?", "Nikola_Tesla", "he") is None


def test_a_chinese_title_is_replaced_only_where_it_stands_as_a_name():
    assert replace_title("为什么放线菌酮不适合用于人体？", "放线菌酮", "它") == "为什么它不适合用于人体？"
    assert replace_title("高英是哪位皇帝的皇后？", "高英", "她") == "她是哪位皇帝的皇后？"
    assert (
        replace_title("為什麼會有簡化儒略日這個定義出現？", "儒略日", "它") is None
    )  # part of a longer name


def test_the_pronoun_follows_the_paragraph():
    assert chinese_pronoun("高英是北魏宣武帝的皇后。她出身高句丽，她的父亲是高偃。") == "她"
    assert chinese_pronoun("其他国家也种植这种树，其他地区没有。") == "它"  # 其他 is not 他
    assert chinese_pronoun("他是作家。他写了三本书。") == "他"
    assert (
        english_pronoun("Nikola_Tesla", "He was born in Smiljan. His father was a priest. He moved.") == "he"
    )
    assert english_pronoun("Steam_engine", "It uses steam. He improved its design.") == "it"
    assert english_pronoun("Huguenots", "They were French Protestants.") == "they"


def test_a_pair_is_two_questions_about_one_ingested_paragraph_the_second_naming_its_title(tmp_path: Path):
    title = next(f"猴面包树{i}" for i in range(100) if ingested_half(f"猴面包树{i}"))
    other = next(f"放线菌酮{i}" for i in range(100) if not ingested_half(f"放线菌酮{i}"))
    corpus = [
        {"_id": "p1", "title": title, "text": "它的果实很长，约三十厘米。"},
        {"_id": "p2", "title": title, "text": "只有一个问题的段落。"},
        {"_id": "p3", "title": other, "text": "不在入库的一半。"},
    ]
    questions = [
        ("q1", "果实有多长？", "p1", ["三十厘米"]),
        ("q2", f"非洲的{title}果实的长度约是多少厘米？", "p1", ["三十厘米"]),
        ("q3", f"{title}是什么？", "p1", ["树"]),
        ("q4", f"{title}有几个问题？", "p2", ["一个"]),
        ("q5", f"{other}是什么？", "p3", ["药"]),
        ("q6", f"{other}怎么用？", "p3", ["药"]),
    ]
    root = tmp_path / "s"
    root.mkdir()
    rows = lambda items: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items)  # noqa: E731
    (root / "corpus.jsonl").write_text(rows(corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text(
        rows({"_id": q, "text": t} for q, t, _, _ in questions), encoding="utf-8"
    )
    (root / "answers.jsonl").write_text(
        rows({"_id": q, "answers": a} for q, _, _, a in questions), encoding="utf-8"
    )
    qrels = "".join(f"{q}\t{g}\t1\n" for q, _, g, _ in questions)
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    pairs = build_pairs(load_split("s", tmp_path))
    assert len(pairs) == 1  # p2 has one question, p3's article is not ingested
    pair = pairs[0]
    assert pair.turn2.qid == "q2"
    assert pair.turn1.qid == "q3"  # another question about p1, naming the title: it sets the subject
    assert pair.followup == "非洲的它果实的长度约是多少厘米？"
    assert pair.pronoun == "它"


def test_the_small_talk_list_covers_both_languages_and_each_kind_of_message():
    langs = [lang for lang, _ in SMALL_TALK]
    assert len(SMALL_TALK) >= 16
    assert langs.count("zh") >= 8
    assert langs.count("en") >= 8
    messages = " ".join(m.lower() for _, m in SMALL_TALK)
    for word in (
        "你好",
        "谢谢",
        "再见",
        "你是谁",
        "你能做什么",
        "hello",
        "thank",
        "bye",
        "who are you",
        "what can you do",
    ):
        assert word in messages


def test_every_demo_question_is_answered_by_the_file_it_names():
    assert len(DEMO_QUESTIONS) == 20
    asked = {q.text for q in DEMO_QUESTIONS}
    issue = {
        "如何调 rrf_k？",
        "每个文档最多几条结果？",
        "HNSW 是干什么的？",
        "怎么扩容？",
        "谁写的 pgrag？",
        "数据库连接池多大？",
    }
    assert issue <= asked
    for q in DEMO_QUESTIONS:
        text = (PROJECT_ROOT / "demo" / "corpus" / q.source).read_text(encoding="utf-8").casefold()
        assert any(a.casefold() in text for a in q.answers), q.text
