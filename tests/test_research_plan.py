"""Plans without a model (the clauses of the question) and the cleaning of a model's plan."""

from __future__ import annotations

import dataclasses

import pytest

from backend.config import Settings
from backend.research.heuristic_plan import heuristic_plan
from backend.research.plan import sections_from_json
from backend.research.presets import preset


def questions(question: str, max_sections: int = 4) -> list[str]:
    plan = heuristic_plan(question, max_sections=max_sections, queries_per_section=2)
    return [s.question for s in plan.sections]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # one question is one section (Occam's razor)
        ("苹果和香蕉哪个更甜？", ["苹果和香蕉哪个更甜？"]),
        ("How long is the Rhine?", ["How long is the Rhine?"]),
        # each thing asked is a section, joiners dropped
        ("黑豹队的防守丢了多少分？另外，考拉每天睡多久？", ["黑豹队的防守丢了多少分？", "考拉每天睡多久？"]),
        ("三阶段检索分别做什么？引用是怎么校验的？", ["三阶段检索分别做什么？", "引用是怎么校验的？"]),
        (
            "How long is the Rhine, and what is its largest tributary?",
            ["How long is the Rhine?", "what is Rhine's largest tributary?"],
        ),
        # Traditional Chinese interrogatives (DRCD), and sentences that ask by their question mark alone
        (
            "小高句麗這一政權被記錄在誰的作品？圜丘壇於何年建成？",
            ["小高句麗這一政權被記錄在誰的作品？", "圜丘壇於何年建成？"],
        ),
        (
            "Where are most working children working? What is DECnet?",
            ["Where are most working children working?", "What is DECnet?"],
        ),
        ("背景：我在研究考拉。考拉吃什么？", ["背景:我在研究考拉 考拉吃什么？"]),
        # a clause that opens on a pronoun gets the entity it refers to (it is researched on its own);
        # one that names its referent first keeps its words
        ("贾里德·艾伦是谁？他效力于哪支球队？", ["贾里德·艾伦是谁？", "贾里德效力于哪支球队？"]),
        (
            "文祿·慶長之役是誰策動的?路易九世在其任期的哪一個階段法國的經濟尤其繁榮？",
            ["文祿·慶長之役是誰策動的？", "路易九世在其任期的哪一個階段法國的經濟尤其繁榮？"],
        ),
    ],
)
def test_the_heuristic_plan_has_a_section_per_thing_asked(question, expected):
    assert questions(question) == expected


def test_more_parts_than_sections_join_the_last_section_instead_of_being_dropped():
    parts = questions("考拉吃什么？袋鼠住在哪里？熊猫有多重？老虎跑多快？", max_sections=3)
    assert len(parts) == 3
    assert "熊猫" in parts[2]
    assert "老虎" in parts[2]


def test_each_section_searches_its_question_then_its_keywords():
    plan = heuristic_plan("黑豹队的防守丢了多少分？", max_sections=4, queries_per_section=2)
    assert plan.method == "heuristic"
    (section,) = plan.sections
    assert section.queries[0] == section.question
    assert "防守" in section.queries[1]
    assert "？" not in section.queries[1]


def test_a_models_plan_is_cleaned_deduplicated_and_capped():
    lite = dataclasses.replace(preset("lite", Settings(_env_file=None)), max_sections=3)  # 2 queries each
    value = {
        "sections": [
            {
                "title": "**防守**",
                "question": "1. 黑豹队的防守丢了多少分？",
                "queries": ["查询：黑豹队 失分", "x"],
            },
            {"title": "重复", "question": "黑豹队的防守丢了多少分", "queries": []},
            {"title": "", "question": "", "queries": ["考拉"]},
            "not a section",
            {"title": "考拉", "question": "考拉每天睡多久？", "queries": ["考拉 睡眠", "考拉 作息", "考拉"]},
            {"title": "熊猫", "question": "熊猫吃什么？", "queries": []},
            {"title": "老虎", "question": "老虎跑多快？", "queries": []},
        ]
    }
    sections = sections_from_json(value, lite)
    assert [s.title for s in sections] == ["防守", "考拉", "熊猫"]
    assert sections[0].queries == ["黑豹队的防守丢了多少分？", "黑豹队 失分"]
    assert sections[1].queries == ["考拉每天睡多久？", "考拉 睡眠"]
    assert sections_from_json({"sections": "two"}, lite) == []


def test_each_heuristic_section_names_the_engine_the_routing_rule_picks():
    plan = heuristic_plan(
        "嫦娥六号带回了多少克月球背面样品？How tall is Mount Kilimanjaro?",
        max_sections=4,
        queries_per_section=2,
    )
    assert [s.engine for s in plan.sections] == ["bocha", "serper"]
    assert plan.sections[0].engine_reason == "rule: Chinese -> bocha"
    assert plan.sections[0].as_dict()["engine"] == "bocha"


@pytest.mark.parametrize(
    ("engine", "expected", "reason"),
    [
        ("serper", "serper", "the plan's model chose it"),
        (" Baike ", "baike", "the plan's model chose it"),
        ("google", "bocha", "unknown engine 'google'"),  # not a known engine: the rule's
        (None, "bocha", "named no engine"),
        (["bocha"], "bocha", "unknown engine"),  # malformed: a list
        (7, "bocha", "unknown engine"),
        ("both", "bocha", "unknown engine 'both'"),  # the seed forbids "both": one engine per section
    ],
)
def test_a_models_engine_is_kept_when_known_else_the_rule_decides(engine, expected, reason):
    lite = preset("lite", Settings(_env_file=None))
    item = {"title": "熊猫", "question": "大熊猫每天吃多少竹子？", "queries": ["大熊猫 竹子"]}
    if engine is not None:
        item["engine"] = engine
    (section,) = sections_from_json({"sections": [item]}, lite)
    assert section.engine == expected
    assert reason in (section.engine_reason or "")


def test_a_bilingual_need_becomes_a_sub_question_per_language_engine():
    plan = heuristic_plan("请结合中英文资料说明都江堰是谁修建的？", max_sections=4, queries_per_section=2)
    assert [s.engine for s in plan.sections] == ["bocha", "serper"]
    assert plan.sections[0].question == plan.sections[1].question
    assert "bilingual" in (plan.sections[1].engine_reason or "")
    one = heuristic_plan("请结合中英文资料说明都江堰是谁修建的？", max_sections=1, queries_per_section=2)
    assert len(one.sections) == 1  # Occam's cap still holds
    assert len(heuristic_plan("都江堰是谁修建的？", max_sections=4, queries_per_section=2).sections) == 1
