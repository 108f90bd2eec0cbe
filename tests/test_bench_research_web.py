"""The web-only research benchmark's question set (bench/research/web_set.py), from a tiny dataset:
every part's gold page is served only by the engine the routing rule names for it."""

from __future__ import annotations

import json

import pytest

from backend.web.routing import classify
from bench.common.beir import DatasetsMissing
from bench.research.web_set import EN_SET, ZH_SET, build_web_set


def _lines(rows):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _dataset(root, name, docs, questions):
    folder = root / name
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(_lines(docs), encoding="utf-8")
    queries = _lines({"_id": q, "text": t} for q, t, _, _ in questions)
    (folder / "queries.jsonl").write_text(queries, encoding="utf-8")
    answers = _lines({"_id": q, "answers": [a]} for q, _, a, _ in questions)
    (folder / "answers.jsonl").write_text(answers, encoding="utf-8")
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, _, _, d in questions)
    (folder / "qrels.tsv").write_text(qrels, encoding="utf-8")


def test_each_part_is_behind_the_engine_its_kind_is_routed_to(tmp_path):
    zh_docs = [
        {"_id": f"z{k}", "title": title, "text": f"{title}是一种事物，第{k}段。"}
        for k, title in enumerate(["泡泡战士", "猴面包树", "牡蒿", "都江堰", "李晨 (演员)", "天生三桥"])
    ]
    en_docs = [{"_id": f"e{k}", "title": f"Topic_{k}", "text": f"Topic {k} text."} for k in range(4)]
    zh_q = [(f"zq{k}", "生命数耗完即算为什么？", "踢爆", f"z{k}") for k in range(6)]
    en_q = [(f"eq{k}", "What is it?", "x", f"e{k}") for k in range(4)]
    _dataset(tmp_path, ZH_SET, zh_docs, zh_q)
    _dataset(tmp_path, EN_SET, en_docs, en_q)
    web_set = build_web_set(tmp_path, 4, "t")
    assert len(web_set.compounds) >= 2
    paths = {p.path: p for p in web_set.pages}
    entries = {e.path for e in web_set.entries}
    for compound in web_set.compounds:
        for part in compound.parts:
            assert part.question in compound.text
            assert classify(part.question)[1][0] == part.engine  # the rule names the expected engine
            if part.kind == "entity":
                assert part.gold_path in entries
                assert part.gold_path not in paths  # Baike only
            else:
                assert paths[part.gold_path].engines == (part.engine,)
                assert paths[part.gold_path].title.split(" ")[0] in part.question  # names its subject


def test_single_questions_ask_one_thing_each_in_turn_chinese_and_english(tmp_path):
    titles = ["泡泡战士", "猴面包树", "牡蒿", "都江堰", "李晨 (演员)", "天生三桥", "长江 (河流)", "黄河 (湖)"]
    zh_docs = [{"_id": f"z{k}", "title": t, "text": f"{t}是事物，第{k}段。"} for k, t in enumerate(titles)]
    en_docs = [{"_id": f"e{k}", "title": f"Topic_{k}", "text": f"Topic {k} text."} for k in range(3)]
    _dataset(tmp_path, ZH_SET, zh_docs, [(f"zq{k}", "它是什么？", "事物", f"z{k}") for k in range(8)])
    _dataset(tmp_path, EN_SET, en_docs, [(f"eq{k}", "What is it?", "x", f"e{k}") for k in range(3)])
    web_set = build_web_set(tmp_path, 4, "t", single=True)
    assert [[p.kind for p in c.parts] for c in web_set.compounds] == [["zh"], ["en"], ["zh"], ["en"]]
    assert all(c.parts[0].question in c.text for c in web_set.compounds)


def test_missing_datasets_are_named(tmp_path):
    with pytest.raises(DatasetsMissing, match=ZH_SET):
        build_web_set(tmp_path, 4, "t")
