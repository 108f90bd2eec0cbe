"""The WhereBuilder's rules: time expressions (Chinese and English) against a fixed clock, language,
file type, quality and tags, and the text left to search (issue 15, item 2)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from backend.where.builder import WhereBuilder, strip_phrases
from backend.where.rules import Vocabulary, infer_rules
from backend.where.time_phrases import find_time

SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW = datetime(2025, 6, 18, 15, 30, tzinfo=SHANGHAI)  # a Wednesday
VOCABULARY = Vocabulary(
    {
        "tags": ["发票", "电子发票", "sql", "报销"],
        "lang": ["zh", "en"],
        "content_type": ["text/markdown", "application/pdf"],
    }
)


def day(text: str) -> str:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI).isoformat()


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("近一周的发票", "近一周", "2025-06-11T15:30", None),
        ("最近三天的会议", "最近三天", "2025-06-15T15:30", None),
        ("过去两个月的合同", "过去两个月", "2025-04-18T15:30", None),
        ("近半年的报告", "近半年", "2024-12-18T15:30", None),
        ("三天内提交的申请", "三天内", "2025-06-15T15:30", None),
        ("上个月的报销流程", "上个月", "2025-05-01", "2025-06-01"),
        ("本月的会议纪要", "本月", "2025-06-01", "2025-07-01"),
        ("上周的周报", "上周", "2025-06-09", "2025-06-16"),
        ("昨天的通知", "昨天", "2025-06-17", "2025-06-18"),
        ("去年的年报", "去年", "2024-01-01", "2025-01-01"),
        ("今年发布的政策", "今年", "2025-01-01", "2026-01-01"),
        ("上季度的销售数据", "上季度", "2025-01-01", "2025-04-01"),
        ("2023年的财报", "2023年", "2023-01-01", "2024-01-01"),
        ("2023年5月的会议", "2023年5月", "2023-05-01", "2023-06-01"),
        ("2023年5月3日的通知", "2023年5月3日", "2023-05-03", "2023-05-04"),
        ("2023年上半年的数据", "2023年上半年", "2023-01-01", "2023-07-01"),
        ("2021年到2023年的数据", "2021年到2023年", "2021-01-01", "2024-01-01"),
        ("2023年以来的文件", "2023年以来", "2023-01-01", None),
        ("2024年以前的规定", "2024年以前", None, "2024-01-01"),
        ("2023-05-01的公告", "2023-05-01", "2023-05-01", "2023-05-02"),
        ("invoices from last week", "from last week", "2025-06-09", "2025-06-16"),
        ("reports from the past 3 days", "from the past 3 days", "2025-06-15T15:30", None),
        ("notes in the last week", "in the last week", "2025-06-11T15:30", None),
        ("what was filed last month", "last month", "2025-05-01", "2025-06-01"),
        ("reports since March", "since March", "2025-03-01", None),
        ("budget since September", "since September", "2024-09-01", None),  # the latest September begun
        ("papers in 2023", "in 2023", "2023-01-01", "2024-01-01"),
        ("anything before 2024", "before 2024", None, "2024-01-01"),
        ("contracts after 2022", "after 2022", "2023-01-01", None),
        ("since May 2024", "since May 2024", "2024-05-01", None),
        ("sales between 2021 and 2023", "between 2021 and 2023", "2021-01-01", "2024-01-01"),
        ("this year's plan", "this year's", "2025-01-01", "2026-01-01"),
    ],
)
def test_time_expressions(question, phrase, start, end):
    match = find_time(question, NOW)
    assert match is not None
    assert match.phrase == phrase
    assert match.start == (datetime.fromisoformat(day(start)) if start else None)
    assert match.end == (datetime.fromisoformat(day(end)) if end else None)
    assert question[match.span[0] : match.span[1]] == phrase


@pytest.mark.parametrize(
    "question", ["前三名是谁", "in marketing", "3月15日是什么节日", "近年来的变化", "the top 3 results"]
)
def test_words_that_are_not_a_time_range_set_none(question):
    assert find_time(question, NOW) is None


@pytest.mark.parametrize(
    ("question", "field"),
    [
        ("上周更新的文档", "updated_at"),
        ("docs modified in the past week", "updated_at"),
        ("上周的文档", "created_at"),
    ],
)
def test_changes_and_updates_filter_updated_at(question, field):
    match = find_time(question, NOW)
    assert match is not None
    assert match.field == field


def rules(question: str) -> dict:
    return {i.field: i.condition for i in infer_rules(question, NOW, VOCABULARY, high_quality_min=0.8)}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("关于差旅的英文资料", {"lang": {"$eq": "en"}}),
        ("只看中文的内容", {"lang": {"$eq": "zh"}}),
        ("English documents about refunds", {"lang": {"$eq": "en"}}),
        ("papers in English only about RRF", {"lang": {"$eq": "en"}}),
        ("用英文回答：什么是RRF", {}),  # the answer's language, not the documents'
        ("summarise the refund policy in English", {}),
        ("PDF文件里的规定", {"content_type": {"$eq": "application/pdf"}}),
        ("视频资料", {}),  # no document has a media_type: no filter that can only find nothing
        ("质量>=0.8的资料", {"quality_score": {"$gte": 0.8}}),
        ("质量大于90%的资料", {"quality_score": {"$gt": 0.9}}),
        ("quality at least 0.75 notes", {"quality_score": {"$gte": 0.75}}),
        ("高质量的规定", {"quality_score": {"$gte": 0.8}}),
        ("电子发票怎么开", {"tags": {"$contains": "电子发票"}}),  # the longer tag, not also 发票
        ("发票和报销", {"tags": {"$in": ["发票", "报销"]}}),
        ("#差旅 住宿标准", {"tags": {"$contains": ["差旅"]}}),  # explicit: even an unknown tag
        ("关键词：预算 怎么编", {"keyphrases": {"$contains": ["预算"]}}),
        ("how does hybrid_search build its SQL", {"tags": {"$contains": "sql"}}),
        ("what is a sqlite file", {}),  # a tag inside a word is not a mention
    ],
)
def test_rules(question, expected):
    assert rules(question) == expected


def test_one_question_gives_one_condition_per_field():
    found = rules("近一周关于电子发票的英文资料，高质量的")
    assert set(found) == {"created_at", "lang", "tags", "quality_score"}


@pytest.mark.parametrize(
    ("question", "spans", "expected"),
    [
        ("去年的发票报销流程", [(0, 2)], "发票报销流程"),
        ("关于报销的英文资料", [(5, 7)], "关于报销的 资料"),
        ("invoices from last week", [(9, 23)], "invoices"),
        ("最近一周的资料", [(0, 4)], "资料"),
        ("上个月", [(0, 3)], "上个月"),  # nothing searchable left: the question as it was
    ],
)
def test_strip_phrases(question, spans, expected):
    assert strip_phrases(question, spans) == expected


def builder(settings, *, validate=lambda f: f, vocabulary=VOCABULARY):
    return WhereBuilder(settings, lambda identity: vocabulary, validate, clock=lambda: NOW)


def test_plan_user_filters_win_anywhere_in_their_tree(settings):
    from backend.auth import LOCAL_IDENTITY

    user = {"$or": [{"lang": "zh"}, {"source": "wiki"}]}
    plan = builder(settings).plan("去年的英文资料", user, infer=True, identity=LOCAL_IDENTITY)
    assert [i.field for i in plan.overridden] == ["lang"]
    assert [i.field for i in plan.applied] == ["created_at"]
    assert plan.effective == {**user, "created_at": plan.applied[0].condition}
    assert plan.query == "资料"  # an overridden phrase still only scoped the question


def test_plan_reports_what_the_filter_compiler_refuses_and_keeps_those_words(settings):
    from backend.auth import LOCAL_IDENTITY
    from backend.errors import InvalidInput

    def equality_only(filters):
        if any(isinstance(v, dict) and len(v) > 1 for v in filters.values()):
            raise InvalidInput("give exactly one operator")

    plan = builder(settings, validate=equality_only).plan(
        "去年的英文资料", None, infer=True, identity=LOCAL_IDENTITY
    )
    assert [(i.field, why) for i, why in plan.ignored] == [("created_at", "give exactly one operator")]
    assert plan.effective == {"lang": {"$eq": "en"}}
    assert plan.query == "去年的 资料"


def test_plan_without_infer_reads_nothing(settings):
    from backend.auth import LOCAL_IDENTITY

    def no_vocabulary(identity):
        raise AssertionError("the vocabulary is not read without infer_filters")

    plan = WhereBuilder(settings, no_vocabulary, lambda f: f).plan(
        "去年的英文资料", {"lang": "zh"}, infer=False, identity=LOCAL_IDENTITY
    )
    assert plan.method == "none"
    assert plan.effective == {"lang": "zh"}
    assert plan.query == "去年的英文资料"


def test_implicit_tags_can_be_switched_off_but_explicit_ones_stay(settings):
    from backend.auth import LOCAL_IDENTITY

    off = settings.model_copy(update={"where_infer_tags": False})
    plan = builder(off).plan("电子发票 #报销", None, infer=True, identity=LOCAL_IDENTITY)
    assert plan.inferred == {"tags": {"$contains": ["报销"]}}
    plan = builder(off).plan("电子发票怎么开", None, infer=True, identity=LOCAL_IDENTITY)
    assert plan.inferred == {}


def test_calendar_words_follow_the_configured_time_zone(settings):
    from backend.auth import LOCAL_IDENTITY

    utc_evening = datetime(2025, 6, 30, 20, 0, tzinfo=ZoneInfo("UTC"))  # already July 1 in Shanghai
    zoned = settings.model_copy(update={"where_timezone": "Asia/Shanghai"})
    plan = WhereBuilder(zoned, lambda i: VOCABULARY, lambda f: f, clock=lambda: utc_evening).plan(
        "本月的资料", None, infer=True, identity=LOCAL_IDENTITY
    )
    assert plan.inferred == {
        "created_at": {"$gte": "2025-07-01T00:00:00+08:00", "$lt": "2025-08-01T00:00:00+08:00"}
    }
