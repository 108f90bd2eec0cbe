"""Follow-up rewriting: the query sent to retrieval must name the entity, not point at it."""

from __future__ import annotations

import pytest

from backend.chat.conversations import PreviousAnswer
from backend.chat.rewrite import Rewrite, clean_completion, rewrite_followup
from backend.errors import ProviderError
from backend.llm import LLM, ExtractiveLLM, Turn
from backend.testing import ScriptedLLM

KANGAROO_CHAT = [
    Turn("user", "尤金袋鼠分布在哪些地区？"),
    Turn("assistant", "尤金袋鼠分布在澳洲南部岛屿及西岸地区。[1]"),
]
PANTHERS_CHAT = [
    Turn("user", "Who founded the Panthers?"),
    Turn("assistant", "Jerry Richardson founded the team [1]."),
]


def test_first_message_is_used_as_is_without_asking_the_llm() -> None:
    llm = ScriptedLLM(completions=["should not be used"])
    assert rewrite_followup("  它是什么？ ", [], llm) == Rewrite("它是什么？", "unchanged")
    assert llm.complete_calls == []


def test_llm_rewrite_sees_the_conversation_and_is_cleaned() -> None:
    llm = ScriptedLLM(completions=["Sure! Here is the query: 尤金袋鼠的作者是谁？"])
    assert rewrite_followup("那它的作者是谁？", KANGAROO_CHAT, llm) == Rewrite("尤金袋鼠的作者是谁？", "llm")
    prompt = llm.complete_calls[0].prompt
    assert "User: 尤金袋鼠分布在哪些地区？" in prompt
    assert "Last message: 那它的作者是谁？" in prompt


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('"When was the Carolina Panthers founded?"', "When was the Carolina Panthers founded?"),
        ("Sure!\n\nRewritten query:\n**尤金袋鼠的作者是谁？**", "尤金袋鼠的作者是谁？"),
        ("```\n尤金袋鼠吃什么\n```", "尤金袋鼠吃什么"),
        ("查询：「尤金袋鼠的天敌」\n解释：把“它”换成了尤金袋鼠。", "尤金袋鼠的天敌"),
        ("- Query: Panthers stadium", "Panthers stadium"),
        ("《三体》的作者是谁？", "《三体》的作者是谁？"),
        ("Python: what is the GIL?", "Python: what is the GIL?"),
        ("   \n ", None),
        ("x" * 400, None),
    ],
)
def test_model_output_is_reduced_to_the_query(completion: str, expected: str | None) -> None:
    assert clean_completion(completion, "那它的作者是谁？") == expected


@pytest.mark.parametrize(
    "llm",
    [
        ExtractiveLLM(),  # cannot complete
        ScriptedLLM(completions=[ProviderError("Gemini is down")]),
        ScriptedLLM(completions=["Here is the rewritten query:"]),
        ScriptedLLM(completions=["尤金袋鼠" * 100]),
    ],
    ids=["no-llm", "provider-error", "empty-output", "absurdly-long"],
)
def test_heuristic_replaces_the_chinese_pronoun_with_the_entity(llm: LLM) -> None:
    rewrite = rewrite_followup("那它的作者是谁？", KANGAROO_CHAT, llm)
    assert rewrite == Rewrite("尤金袋鼠的作者是谁？", "heuristic")


def test_heuristic_names_the_english_entity() -> None:
    rewrite = rewrite_followup("When was it founded?", PANTHERS_CHAT, ExtractiveLLM())
    assert rewrite == Rewrite("When was Panthers founded?", "heuristic")


def test_heuristic_prepends_the_entity_to_a_short_follow_up() -> None:
    rewrite = rewrite_followup("作者是谁？", KANGAROO_CHAT, ExtractiveLLM())
    assert rewrite == Rewrite("尤金袋鼠 作者是谁？", "heuristic")


def test_heuristic_takes_the_entity_of_the_latest_topic() -> None:
    chat = [*KANGAROO_CHAT, Turn("user", "树袋熊呢？"), Turn("assistant", "树袋熊分布在澳洲东部。[2]")]
    assert rewrite_followup("它吃什么？", chat, ExtractiveLLM()).query == "树袋熊吃什么？"


def test_heuristic_skips_earlier_follow_ups_when_finding_the_entity() -> None:
    chat = [*KANGAROO_CHAT, Turn("user", "它吃什么？"), Turn("assistant", "以草为食。[2]")]
    assert rewrite_followup("它的天敌呢？", chat, ExtractiveLLM()).query == "尤金袋鼠的天敌呢？"


@pytest.mark.parametrize(
    ("message", "chat"),
    [
        ("澳大利亚的国土面积和人口是多少？", KANGAROO_CHAT),
        ("尤金袋鼠的天敌是什么？", KANGAROO_CHAT),
        ("其他袋鼠的寿命有多长", KANGAROO_CHAT),
        ("Who founded Microsoft?", PANTHERS_CHAT),
    ],
)
def test_self_contained_messages_stay_unchanged(message: str, chat: list[Turn]) -> None:
    assert rewrite_followup(message, chat, ExtractiveLLM()) == Rewrite(message, "unchanged")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("为什么？", "尤金袋鼠分布在哪些地区？ 为什么？"),
        ("那第二个呢？", "尤金袋鼠分布在哪些地区？ 那第二个呢？"),
        ("what about it?", "尤金袋鼠分布在哪些地区？ what about it?"),
        ("and the second one?", "尤金袋鼠分布在哪些地区？ and the second one?"),
    ],
)
def test_an_ellipsis_is_searched_after_the_previous_question(message, expected) -> None:
    rewrite = rewrite_followup(message, KANGAROO_CHAT, ExtractiveLLM())
    assert rewrite == Rewrite(expected, "ellipsis")


def test_the_previous_answers_document_is_the_subject_of_a_pronoun() -> None:
    chat = [Turn("user", "文革期间，马飚从事什么工作？"), Turn("assistant", "马飚在农村插队劳动[1]。")]
    previous = PreviousAnswer(
        content="马飚在农村插队劳动[1]。",
        sources=[{"n": 1, "kind": "local", "title": "马飚", "cited": True}],
        query="文革期间，马飚从事什么工作？",
    )
    assert (
        rewrite_followup("它毕业于哪所大学？", chat, ExtractiveLLM(), previous).query
        == "马飚毕业于哪所大学？"
    )
    # Without the answer's sources, the question's leading noun (the old, only, rule) is all there is.
    assert rewrite_followup("它毕业于哪所大学？", chat, ExtractiveLLM()).query == "文革毕业于哪所大学？"
