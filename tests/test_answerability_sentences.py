"""Sentence-level evidence (issue 26 item 2, policy v5): the question's answer type (多少 / 何时 / 谁 /
哪里; how many / when / who / where) against what the best-matching sentences of a passage hold, and
the question's terms within one sentence — so a passage on the topic that lacks the asked number is
told from the one that holds it."""

from __future__ import annotations

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.confidence.answerability import document_evidence, features
from backend.confidence.answerability_policy import SENTENCE_FEATURES, AnswerabilityPolicy
from backend.confidence.assess import assess, load_score_policy
from backend.confidence.sentences import question_type, sentence_evidence, sentence_types, split_sentences
from backend.search.types import SearchRequest
from backend.text import query_terms


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("数据库连接池多大？", "number"),
        ("每个文档最多几条结果？", "number"),
        ("蓍所生长的地区海拔约是多少米？", "number"),
        ("How many people lived in Warsaw in 1900?", "number"),
        ("How much does it cost?", "number"),
        ("哪座堡垒是1964年重建的？", None),  # 哪座 asks for a thing, its 1964 is the question's own
        ("诺曼人在哪一年征服了英格兰？", "date"),  # 哪一年 before 几: a date, not a number
        ("史特拉斯堡於幾世紀人口成長三倍?", "date"),
        ("喝半斤白酒什么时候可以开车？", "date"),
        ("When was the plastome discovered?", "date"),
        ("In what year did the Normans conquer England?", "date"),
        ("谁写的 pgrag？", "person"),
        ("該漫畫是由誰創作的？", "person"),
        ("Who wrote Hamlet?", "person"),
        ("尤金袋鼠分布在哪里？", "place"),
        ("他出生于哪个国家？", "place"),
        ("Where is the Rhine?", "place"),
        ("Which country hosted the games?", "place"),
        ("HNSW 是干什么的？", None),
        ("几乎所有人都喜欢什么？", None),  # 几乎 is "almost", not 几
        ("What does rrf_k do?", None),
    ],
)
def test_the_question_type_is_read_off_its_question_words(question, expected):
    assert question_type(question) == expected


def test_a_sentence_holds_a_number_a_date_or_a_name_other_than_the_question_words():
    assert "number" in sentence_types("连接池最多保持 20 个连接。")
    assert "number" in sentence_types("东犬灯塔总高为六十四英尺。")  # Chinese numerals
    assert "number" not in sentence_types("这是一种很好的方法，十分重要。")  # 一种 / 十分 are words
    assert "date" in sentence_types("1066年，诺曼人征服了英格兰。")
    assert "date" in sentence_types("In 1066 the Normans conquered England.")
    assert "date" not in sentence_types("The Normans conquered England.")
    assert "person" in sentence_types("The play was written by William Shakespeare.")
    assert "person" in sentence_types("让-皮埃尔·巴利冈是法国政治家。")
    assert "place" in sentence_types("尤金袋鼠分布在澳大利亚南部的岛屿。")
    assert split_sentences("第一句。第二句！Third one. Fourth?") == (
        "第一句。",
        "第二句!",
        "Third one.",
        "Fourth?",
    )


def test_the_sentence_with_the_question_terms_must_hold_the_asked_type_not_just_any_sentence():
    weights = {"连接池": 3.0, "大小": 2.0}
    terms = list(weights)
    near_miss = ["连接池的大小由配置决定，调大之前先看数据库的负载。部署共有 3 个步骤。"]
    answer = ["连接池的大小默认是 20 个连接。部署共有 3 个步骤。"]
    missing = sentence_evidence(near_miss, weights, "number", terms)
    held = sentence_evidence(answer, weights, "number", terms)
    assert held.answer_type == 1.0
    assert missing.answer_type == 0.0
    assert missing.sentence_coverage == held.sentence_coverage == 1.0
    assert held.answer_sentence == 1.0
    assert missing.answer_sentence == 0.0
    # The question's own number is no answer to it.
    own = sentence_evidence(
        ["1900年华沙的人口普查开始了。"], {"1900": 2.0, "华沙": 2.0}, "number", ["1900", "华沙"]
    )
    assert own.answer_type == 0.0
    # An untyped question is never held against a passage.
    assert sentence_evidence(near_miss, weights, None, terms).answer_type == 1.0


def test_the_terms_spread_over_sentences_cover_less_than_in_one_sentence():
    weights = {"诺曼人": 2.0, "征服": 1.0, "英格兰": 1.0}
    spread = sentence_evidence(["诺曼人来自法国北部。后来英格兰被征服。"], weights, None, list(weights))
    together = sentence_evidence(["1066年诺曼人征服了英格兰。"], weights, None, list(weights))
    assert together.sentence_coverage == 1.0
    assert spread.sentence_coverage == pytest.approx(0.5)


def test_sentence_features_are_computed_only_for_a_policy_that_weighs_them():
    doc_without = document_evidence([_chunk("连接池的大小默认是 20 个连接。")], ["连接池", "大小"], None)[0]
    assert doc_without.sentences is None
    values = features(doc_without, None)
    assert values["answer_type"] == 1.0
    assert values["sentence_coverage"] == 0.0
    with_question = document_evidence(
        [_chunk("连接池的大小默认是 20 个连接。")], ["连接池", "大小"], None, "连接池多大？"
    )[0]
    assert with_question.sentences is not None
    assert with_question.sentences.asked == "number"
    assert set(SENTENCE_FEATURES) <= set(features(with_question, None))


def test_v5_weighs_the_sentence_features_and_reports_them():
    v5 = load_score_policy("v5")
    assert isinstance(v5, AnswerabilityPolicy)
    assert set(v5.weights) & set(SENTENCE_FEATURES)
    assert "leave_one_group_out" in (v5.calibration or {})
    terms = query_terms("连接池多大？")
    result = assess([_chunk("连接池的大小默认是 20 个连接。")], v5, terms=terms, question="连接池多大？")
    assert result["top_parents"][0]["features"]["question_type"] == "number"
    assert result["top_parents"][0]["features"]["answer_type_held"] is True


# --- end to end: a real search (local model, shipped v5) over a near miss and the passage with the number ---

BACKGROUND = [
    ("koala", "考拉", "考拉以桉树叶为食，每天睡眠时间很长，生活在澳大利亚东部的森林里。"),
    ("hnsw", "HNSW 索引", "HNSW 是一种近似最近邻索引，建索引比 IVFFlat 慢，查询更快，召回更稳定。"),
    ("deploy", "部署", "部署时先创建数据库，再执行迁移，最后启动服务并检查健康检查接口。"),
]
NEAR_MISS = (
    "pool-tuning",
    "连接池调优",
    "连接池的大小默认由部署者按数据库的负载决定。调大连接池之前，先观察数据库的负载和慢查询日志。",
)
WITH_NUMBER = (
    "pool-size",
    "连接池大小",
    "连接池的大小默认是 20 个连接。调大连接池之前，先观察数据库的负载。",
)
QUESTION = "连接池的大小默认是多少？"


@pytest.fixture(scope="module")
def local_model():
    from backend.config import Settings
    from backend.embeddings import LocalEmbedder

    return LocalEmbedder(Settings(_env_file=None))


def test_through_a_real_search_the_near_miss_without_the_number_scores_below_the_passage_with_it(
    make_services, local_model
):
    """The answer type read by a real search: the near miss (same topic, every question term, no
    number) is held to lack the asked number and scores below the passage that has it, the best
    document. Not asserted, because v5 does not do it: refusing the near miss (alone it scores 0.99 and
    is answered; next to the passage with the number the two compete and the route is clarify) — the
    fitted weights of the sentence features are small (docs/routing.md, "policy v5")."""
    from backend.confidence.policy import POLICIES_DIR
    from tests.factories import loaded_document

    services = make_services(embedder=local_model, score_policy_version="v5", score_policies_dir=POLICIES_DIR)
    docs = [*BACKGROUND, NEAR_MISS, WITH_NUMBER]
    services.ingestion.ingest([loaded_document(e, text, title) for e, title, text in docs], identity=None)
    result = services.retrieval.search(SearchRequest(query=QUESTION), identity=LOCAL_IDENTITY)
    confidence = result.confidence
    by_title = {p["title"]: p for p in confidence["top_parents"]}
    near, answer = by_title["连接池调优"], by_title["连接池大小"]
    assert near["features"]["question_type"] == answer["features"]["question_type"] == "number"
    assert near["features"]["comparable_coverage"] == answer["features"]["comparable_coverage"] == 1.0
    assert near["features"]["answer_type_held"] is False
    assert near["features"]["answer_sentence"] == 0.0
    assert answer["features"]["answer_type_held"] is True
    assert answer["features"]["answer_sentence"] == 1.0
    assert answer["overall_score"] > near["overall_score"]
    assert confidence["best_parent_id"] == answer["parent_id"]


def _chunk(text: str, doc: str = "d1"):
    from dataclasses import dataclass, field

    @dataclass
    class Chunk:
        chunk_id: int
        document_id: str
        content: str
        similarity: float | None = 0.9
        vector_rank: int | None = 1
        full_text_rank: int | None = 1
        content_tokens: str = ""
        title: str = ""
        rrf_score: float | None = None
        heading_path: list[str] = field(default_factory=list)
        final_score: float = 0.0

    return Chunk(1, doc, text, content_tokens=" ".join(query_terms(text)))


def test_stored_searches_get_their_chunks_whole_text_back_for_the_sentence_features(tmp_path):
    from bench.routing.fit import top_features
    from bench.routing.records import (
        Candidate,
        QuestionRecord,
        SearchRecord,
        load_records,
        save_chunk_texts,
        save_records,
    )

    text = "连接池的大小默认是 20 个连接。调大之前先看负载。"
    terms = query_terms(QUESTION)
    stored = Candidate(7, "d1", "pool-size", "连接池大小", [], 0.9, 1, 1, 0.03, 0.0, 1.0, "", "", "zh")
    record = QuestionRecord("s", "q1", QUESTION, True, "pool-size", terms, {}, {}, 1)
    record.searches = {"default": SearchRecord(15, [stored], {})}
    path = tmp_path / "s.records.jsonl.gz"
    save_records(path, [record])
    (without,) = load_records(path)  # a run before the chunk texts were kept: no sentence evidence
    assert without.searches["default"].candidates[0].text == ""
    assert top_features(without)["answer_type"] == 0.0
    save_chunk_texts(tmp_path / "s.chunks.json.gz", {7: text})
    (loaded,) = load_records(path)
    assert loaded.searches["default"].candidates[0].text == text
    assert top_features(loaded)["answer_type"] == 1.0
    assert top_features(loaded)["sentence_coverage"] == 1.0
