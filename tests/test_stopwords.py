"""The stopword list drops a word in simplified and traditional script alike (issue 26 item 2): a
traditional question searches with the same terms as its simplified twin, so it gets the same evidence
and the same route."""

from __future__ import annotations

import pytest

from backend.text import query_terms
from backend.text.keywords import keyword_query
from backend.text.script import SIMPLIFIED_TO_TRADITIONAL, TRADITIONAL_TO_SIMPLIFIED, script_forms
from backend.text.segment import stopwords


@pytest.mark.parametrize(
    ("simplified", "traditional"),
    [
        # Before, 關於 / 哪個 / 說 / 進行 / 通過 / 什麼樣 stayed query terms of the traditional question.
        ("关于日本，哪个城市的人口最多？", "關於日本，哪個城市的人口最多？"),
        ("他说日本什么时候进行了改革？", "他說日本什麼時候進行了改革？"),
        ("日本通过了什么样的法律？", "日本通過了什麼樣的法律？"),
    ],
)
def test_a_traditional_question_searches_with_the_terms_of_its_simplified_twin(simplified, traditional):
    assert query_terms(traditional) == query_terms(simplified)
    assert keyword_query(traditional) == keyword_query(simplified)


def test_simplified_function_words_listed_only_in_traditional_are_dropped():
    # 其實 / 應該 / 每個 were listed, 其实 / 应该 / 每个 were query terms.
    assert query_terms("其实应该怎么调？") == ["调"]
    assert "每个" not in query_terms("每个文档最多几条结果？")
    assert "文档" in query_terms("每个文档最多几条结果？")


def test_how_many_with_a_measure_word_is_not_a_query_term():
    # 几条 / 几种 / 第几 were terms: a chunk that happened to hold them outranked one about the subject.
    assert query_terms("每个文档最多几条结果？") == ["文档", "结果"]
    assert query_terms("有几种方法") == ["方法"]
    assert query_terms("第几章讲索引") == ["讲", "索引"]
    assert query_terms("幾種方法") == query_terms("几种方法")
    assert "几何" in query_terms("几何图形的面积")


def test_every_listed_chinese_word_is_a_stopword_in_both_scripts():
    stop = stopwords()
    for word in ("每个", "每個", "说", "說", "时候", "時候", "这里", "這裡", "這裏", "进行", "進行"):
        assert word in stop
    assert {"个", "個"} <= script_forms("个")


def test_the_character_map_round_trips():
    for simplified, traditional in SIMPLIFIED_TO_TRADITIONAL.items():
        for char in traditional:
            assert char != simplified
            assert TRADITIONAL_TO_SIMPLIFIED[char] == simplified
    assert script_forms("那里") == {"那里", "那裡", "那裏"}
    assert script_forms("什麼時候") == {"什么时候", "什麼時候"}
