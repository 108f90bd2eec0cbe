"""Model output is read after markdown, preambles, labels and fences are removed (seed 003's failures)."""

from __future__ import annotations

import pytest

from backend.llm.parsing import clean_line, content_lines, parse_json


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("**尤金袋鼠 天敌**", "尤金袋鼠 天敌"),
        ("1. hybrid_search rrf_k 含义", "hybrid_search rrf_k 含义"),
        ("- `ef_search` 参数", "ef_search 参数"),
        ("查询1：尤金袋鼠 分布", "尤金袋鼠 分布"),
        ("Query 2: Carolina Panthers defense 2015", "Carolina Panthers defense 2015"),
        ("“考拉 食物”", "考拉 食物"),
        ("### 三阶段检索", "三阶段检索"),
        ("一、考拉的栖息地", "考拉的栖息地"),
    ],
)
def test_a_line_loses_its_decoration_but_keeps_its_words(raw, clean):
    assert clean_line(raw) == clean


def test_preambles_fences_and_chatter_are_not_content():
    completion = (
        "以下是查询：\n```\n**尤金袋鼠 天敌**\n2. 尤金袋鼠 寿命\n```\n好的！\nHere are the queries:\n"
    )
    assert content_lines(completion) == ["尤金袋鼠 天敌", "尤金袋鼠 寿命"]


def test_a_colon_inside_content_is_kept():
    assert content_lines("检索：hybrid_search 的 rrf_k：含义") == ["hybrid_search 的 rrf_k：含义"]


def test_json_is_found_inside_fences_and_prose():
    assert parse_json('好的，计划如下：\n```json\n{"sections": [{"title": "a"}]}\n```') == {
        "sections": [{"title": "a"}]
    }
    assert parse_json("Plan: [1, 2]") == [1, 2]
    with pytest.raises(ValueError, match="no JSON"):
        parse_json("no json here {oops")


def test_a_version_number_is_not_list_numbering():
    assert clean_line("3.5 版本的变化") == "3.5 版本的变化"


def test_numbering_without_a_space_is_still_numbering():
    assert clean_line("1.尤金袋鼠 天敌") == "尤金袋鼠 天敌"
    assert clean_line("(2)考拉 食物") == "考拉 食物"
