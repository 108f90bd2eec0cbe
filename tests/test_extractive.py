"""The extractive generator: which sentence it quotes, how it cuts a long one, how many it quotes."""

from __future__ import annotations

import re

import pytest

from backend.llm import ExtractiveLLM, SourceText
from backend.llm.extractive import SHORT_CHARS
from backend.llm.question_types import AnswerType, answer_type, offers
from backend.llm.sentences import split_sentences
from backend.llm.spans import quote_window


def answer(question: str, sources: list[SourceText]) -> str:
    return "".join(ExtractiveLLM().answer(question, sources))


def pieces(text: str) -> list[str]:
    """The quoted pieces of an answer, each ending at its [n] marker."""
    return re.findall(r".+?\[\d+\]", text)


# --- sentences ---------------------------------------------------------------------------------------


def test_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    text = (
        "Fresno is the largest U.S. city not linked to an Interstate. It was named after M. Theo Kearney. "
        "Jacksonville is the largest city in the U.S. The city grew fast. Dr. Smith agreed."
    )
    assert split_sentences(text) == [
        "Fresno is the largest U.S. city not linked to an Interstate.",
        "It was named after M. Theo Kearney.",
        "Jacksonville is the largest city in the U.S.",
        "The city grew fast.",
        "Dr. Smith agreed.",
    ]


def test_chinese_sentences_end_at_their_punctuation_with_closing_quotes() -> None:
    assert split_sentences("他說：「這是台灣最高的山。」後來證實了。它高3,952公尺！") == [
        "他說：「這是台灣最高的山。」",
        "後來證實了。",
        "它高3,952公尺！",
    ]


# --- question types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many points did the Panthers defense surrender?", AnswerType.NUMBER),
        ("When were Tesla's patents restored?", AnswerType.NUMBER),
        ("若游戏中离，则多少分钟内不得进行配对？", AnswerType.NUMBER),
        ("印度在哪一年獨立？", AnswerType.NUMBER),
        ("Who founded the Carolina Panthers?", AnswerType.PERSON),
        ("誰認為希臘語與梵語出自同一語言？", AnswerType.PERSON),
        ("为什么这张专辑销量惨淡？", AnswerType.REASON),
        ("Where did British settlers live?", AnswerType.PLACE),
        ("蓝线裸顶鲷以什么为食？", AnswerType.OTHER),
    ],
)
def test_question_wording_tells_the_kind_of_answer(question: str, kind: AnswerType) -> None:
    assert answer_type(question) is kind


def test_a_number_the_question_already_holds_is_no_answer() -> None:
    assert offers("The team was founded in 1993.", AnswerType.NUMBER, "When was the team founded?")
    assert not offers("The team was founded in 1993.", AnswerType.NUMBER, "What happened in 1993?")
    assert offers("2008年12月4日一审宣判", AnswerType.NUMBER, "何时宣判？")


# --- which sentence ----------------------------------------------------------------------------------


def test_the_sentence_with_the_question_specific_terms_beats_the_topic_sentence() -> None:
    # In an article about the fish, its name is everywhere by implication: 为食 decides.
    fish = SourceText(
        1,
        "蓝线裸顶鲷",
        "",
        "蓝线裸顶鲷，又称蓝线白鲷，为辐鳍鱼纲鲈形目龙占鱼科的其中一个种。本鱼栖息在岩礁附近的沙质海域。"
        "属肉食性，以甲壳类、头足类和小鱼为食。",
    )
    assert answer("蓝线裸顶鲷以什么为食？", [fish]).startswith("属肉食性，以甲壳类、头足类和小鱼为食。[1]")


def test_a_number_question_prefers_the_sentence_holding_a_number() -> None:
    engine = SourceText(
        2,
        "Steam engine",
        "",
        "The Energiprojekt engine uses modern materials. It is a single-step, 5-cylinder engine.",
    )
    text = answer("How many cylinders does the Energiprojekt engine have?", [engine])
    assert text.startswith("It is a single-step, 5-cylinder engine.[2]")


def test_a_sentence_repeated_by_overlapping_chunks_is_quoted_once() -> None:
    shared = "The Rhine Delta is the common short name."
    sources = [
        SourceText(1, "Rhine", "", f"The Rhine-Meuse delta is large. {shared}"),
        SourceText(2, "Rhine", "", f"{shared} The delta lies in the Netherlands."),
    ]
    text = answer("What is the short name of the delta?", sources)
    assert text.count(shared) == 1


# --- how much of it ----------------------------------------------------------------------------------


def test_a_clear_answer_is_one_short_piece_cut_around_the_match() -> None:
    sentence = (
        "Although the allies withdrew gradually over the following years and the treaty was debated at "
        "length in several parliaments, a Supreme Court decision restored the prior patents of Tesla in "
        "1943, long after the first disputes had been settled by the courts of several other countries."
    )
    source = SourceText(4, "Tesla", "", f"Tesla moved to New York. {sentence} He died in 1943 in New York.")
    text = answer("When did a court decision restore Tesla's patents?", [source])
    assert len(pieces(text)) == 1
    assert "restored the prior patents of Tesla in 1943" in text
    assert len(text) <= SHORT_CHARS + len("[4]")
    assert text.startswith("…")
    assert text.endswith("…[4]")


def test_competing_sentences_are_all_quoted_each_with_its_marker() -> None:
    sources = [
        SourceText(1, "Kangaroos", "", "Eugenes kangaroos live on the southern islands."),
        SourceText(2, "Kangaroos", "", "Grey kangaroos live in the eastern forests."),
    ]
    assert pieces(answer("Where do kangaroos live?", sources)) == [
        "Eugenes kangaroos live on the southern islands.[1]",
        " Grey kangaroos live in the eastern forests.[2]",
    ]


def test_the_window_never_cuts_inside_a_word_or_number() -> None:
    sentence = "Attendance reached 1,234,567 visitors in 2019 " + "and kept growing every year " * 8
    window = quote_window(sentence, {"attend": 1.0, "visitor": 1.0}, 60)
    assert "1,234,567 visitors" in window
    assert window.startswith("Attendance")  # the question's own words stay in view
    assert re.fullmatch(r"[^…]*\w…", window)  # the cut falls after a whole word
