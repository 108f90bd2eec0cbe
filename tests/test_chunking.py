"""Chunking: headings, sentences, overlap, hard splits, code fences; properties checked with hypothesis."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.ingest.chunking import chunk_text, split_sentences

MD = "text/markdown"


def _solid(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_empty_text_gives_no_chunks():
    assert chunk_text("", content_type=MD) == []
    assert chunk_text(" \n\n\t", content_type="text/plain") == []


def test_sentences_split_after_chinese_and_english_terminators():
    text = '安装完成。请重启！可以吗？可以；好的 He said "hi." Then 3.14 stays. End'
    assert split_sentences(text) == [
        "安装完成。",
        "请重启！",
        "可以吗？",
        "可以；",
        '好的 He said "hi." ',
        "Then 3.14 stays. ",
        "End",
    ]
    assert "".join(split_sentences(text)) == text


def test_heading_starts_a_chunk_and_sets_heading_path():
    text = "# 指南\n\n前言。\n\n## 安装\n\n下载安装包。\n\n### Linux\n\n运行脚本。\n\n## 配置\n\n设置变量。"
    chunks = chunk_text(text, content_type=MD, size=500, overlap=0)
    assert [(c.content, c.heading_path) for c in chunks] == [
        ("# 指南\n\n前言。", ("指南",)),
        ("## 安装\n\n下载安装包。", ("指南", "安装")),
        ("### Linux\n\n运行脚本。", ("指南", "安装", "Linux")),
        ("## 配置\n\n设置变量。", ("指南", "配置")),
    ]
    assert [c.position for c in chunks] == [0, 1, 2, 3]


def test_heading_without_body_joins_the_next_section():
    chunks = chunk_text("# 手册\n\n## 安装 ##\n\n下载。", content_type=MD)
    assert [(c.content, c.heading_path) for c in chunks] == [
        ("# 手册\n\n## 安装 ##\n\n下载。", ("手册", "安装")),
    ]


def test_later_chunks_of_a_section_keep_the_path_but_not_the_heading_line():
    body = "".join(f"这是第{i}个句子，内容比较长一些。" for i in range(20))
    chunks = chunk_text(f"## 配置\n\n{body}", content_type=MD, size=60, overlap=0)
    assert len(chunks) > 2
    assert chunks[0].content.startswith("## 配置\n")
    assert all(c.heading_path == ("配置",) for c in chunks)
    assert not any(c.content.startswith("#") for c in chunks[1:])
    assert all(c.content.endswith("。") for c in chunks)


def test_plain_text_has_no_headings():
    chunks = chunk_text("# not a heading\nbody.", content_type="text/plain")
    assert chunks[0].heading_path == ()
    assert chunks[0].content == "# not a heading\nbody."


def test_html_converted_by_the_loader_counts_as_markdown():
    assert chunk_text("## Title\n\ntext.", content_type="text/html")[0].heading_path == ("Title",)


def test_next_chunk_starts_with_the_last_short_sentences_of_the_previous():
    text = "First sentence is long enough here. Second one. Third one here. Fourth is also long enough."
    chunks = chunk_text(text, content_type="text/plain", size=50, overlap=20)
    assert [c.content for c in chunks] == [
        "First sentence is long enough here. Second one.",
        "Second one. Third one here.",
        "Third one here. Fourth is also long enough.",
    ]


def test_no_overlap_into_a_new_section():
    text = "## A\n\nOne. Two. Three. Four.\n\n## B\n\nFive."
    chunks = chunk_text(text, content_type=MD, size=20, overlap=10)
    assert chunks[-1].content == "## B\n\nFive."


def test_overlong_sentence_is_split_at_a_comma_within_size():
    sentence = "，".join(["这是一个没有句号的很长的分句"] * 10)
    chunks = chunk_text(sentence, content_type="text/plain", size=50, overlap=10)
    assert all(len(c.content) <= 50 for c in chunks)
    assert all(c.content.endswith("，") for c in chunks[:-1])
    assert _solid("".join(c.content for c in chunks)) == _solid(sentence)


def test_hard_split_never_separates_a_surrogate_pair():
    text = "\ud83d\ude00" * 30  # lone surrogates, as a surrogateescape decode can leave them
    for size in range(2, 12):
        for chunk in chunk_text(text, content_type="text/plain", size=size, overlap=0):
            assert not "\ud800" <= chunk.content[-1] <= "\udbff"
            assert not "\udc00" <= chunk.content[0] <= "\udfff"


def test_code_fence_longer_than_size_stays_whole_and_hides_headings():
    code = "```python\n" + "\n".join(f"# step {i}\nx = {i}" for i in range(30)) + "\n```"
    text = f"## 示例\n\n看代码。\n\n{code}\n\n结束。"
    chunks = chunk_text(text, content_type=MD, size=80, overlap=0)
    assert [c.content for c in chunks] == ["## 示例\n\n看代码。", code, "结束。"]
    assert all(c.heading_path == ("示例",) for c in chunks)


def test_tilde_fence_and_unclosed_fence():
    tilde = "~~~\n" + "long line of code " * 10 + "\n~~~"
    assert chunk_text(f"Intro.\n\n{tilde}", content_type=MD, size=40, overlap=0)[-1].content == tilde
    unclosed = "```\n" + "a = 1\n" * 30
    assert chunk_text(unclosed, content_type=MD, size=40, overlap=0)[0].content == unclosed.strip()


def _table(rows: int) -> str:
    body = "".join(f"| r{i} | value {i} with some words |\n" for i in range(1, rows + 1))
    return "| name | value |\n| --- | --- |\n" + body


def test_a_table_splits_between_rows_and_each_piece_repeats_the_header():
    table = _table(30)
    text = f"## 数据\n\n表格如下。\n\n{table}\n结束。"
    chunks = chunk_text(text, content_type=MD, size=120, overlap=30)
    pieces = [c for c in chunks if "| r" in c.content]
    assert len(pieces) > 3
    rows = [line for c in pieces for line in c.content.split("\n") if line.startswith("| r")]
    assert rows == [f"| r{i} | value {i} with some words |" for i in range(1, 31)]  # whole, once each
    for piece in pieces:
        lines = piece.content.split("\n")
        table_lines = lines[lines.index("| name | value |") :]
        assert table_lines[1] == "| --- | --- |"
        assert all(line.startswith("| r") for line in table_lines[2:] if line.startswith("|"))
        assert piece.heading_path == ("数据",)


def test_a_row_longer_than_the_chunk_size_stays_whole():
    long_row = "| big | " + "很长的单元格内容，" * 40 + " |"
    text = f"| a | b |\n|---|---|\n| x | y |\n{long_row}\n| z | w |\n"
    chunks = chunk_text(text, content_type=MD, size=60, overlap=0)
    assert any(c.content.endswith(long_row) for c in chunks)
    assert all(line.startswith("|") for c in chunks for line in c.content.split("\n"))


def test_a_pipe_in_prose_is_not_a_table():
    chunks = chunk_text("a | b is prose.\nNo delimiter follows.", content_type=MD, size=500)
    assert chunks[0].content == "a | b is prose.\nNo delimiter follows."


def test_offsets_point_at_each_chunk_in_the_text():
    text = "# 指南\n\n前言。这是第一句。\n\n## 安装\n\n" + "下载安装包，然后运行。" * 10 + "\n\n" + _table(12)
    for chunk in chunk_text(text, content_type=MD, size=80, overlap=20):
        piece = text[chunk.start : chunk.end]
        assert piece.strip() == piece
        assert chunk.content == piece or (chunk.content.endswith(piece) and "| name |" in chunk.content)


def test_invalid_sizes_are_rejected():
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("x", content_type=MD, size=50, overlap=50)


# --- properties ------------------------------------------------------------------------------------

_ALPHABET = list("ab xy中文字。！？；!?;.,，、\n\n#`~") + ["😀"]
_texts = st.text(alphabet=st.sampled_from(_ALPHABET), max_size=800)
_content_types = st.sampled_from([MD, "text/plain"])


@settings(max_examples=300, deadline=None)
@given(text=_texts, size=st.integers(10, 200), content_type=_content_types)
def test_no_text_is_lost_without_overlap(text, size, content_type):
    chunks = chunk_text(text, content_type=content_type, size=size, overlap=0)
    assert _solid("".join(c.content for c in chunks)) == _solid(text)
    assert [c.position for c in chunks] == list(range(len(chunks)))


@settings(max_examples=300, deadline=None)
@given(text=_texts, size=st.integers(10, 200), overlap_share=st.floats(0, 0.9), content_type=_content_types)
def test_chunks_fit_the_size_unless_they_hold_a_fence(text, size, overlap_share, content_type):
    chunks = chunk_text(text, content_type=content_type, size=size, overlap=int(size * overlap_share))
    for chunk in chunks:
        assert chunk.content
        assert chunk.content == chunk.content.strip()
        assert len(chunk.content) <= size or (content_type == MD and re.search(r"```|~~~", chunk.content))


@settings(max_examples=300, deadline=None)
@given(text=_texts, size=st.integers(10, 200), overlap_share=st.floats(0, 0.9), content_type=_content_types)
def test_each_chunk_is_the_slice_of_the_text_its_offsets_name(text, size, overlap_share, content_type):
    chunks = chunk_text(text, content_type=content_type, size=size, overlap=int(size * overlap_share))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.content
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


_rows = st.lists(st.text(alphabet=st.sampled_from(list("ab 中文。,")), max_size=40), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(cells=_rows, size=st.integers(20, 200), overlap=st.integers(0, 19), before=_texts)
def test_table_rows_are_never_split(cells, size, overlap, before):
    rows = [f"| {i} | {cell} |" for i, cell in enumerate(cells)]
    table = "| n | cell |\n| - | - |\n" + "\n".join(rows)
    text = f"{before}\n\n{table}\n\nafter."
    chunks = chunk_text(text, content_type=MD, size=size, overlap=overlap)
    lines = [line.strip() for c in chunks for line in c.content.split("\n")]
    for row in rows:
        assert row.strip() in lines
    for chunk in chunks:
        assert text[chunk.start : chunk.end] in chunk.content


_prose = st.text(alphabet=st.sampled_from(list("ab 中文。！.,\n")), min_size=1, max_size=120)
_code = st.text(alphabet=st.sampled_from(list("xy =()\n#")), max_size=150)
_fenced = _code.map(lambda code: f"```\n{code}\n```")


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(st.one_of(_prose, _fenced), min_size=1, max_size=8),
    size=st.integers(20, 120),
    overlap=st.integers(0, 19),
)
def test_fences_are_never_split(blocks, size, overlap):
    chunks = chunk_text("\n\n".join(blocks), content_type=MD, size=size, overlap=overlap)
    for fence in (b for b in blocks if b.startswith("```")):
        assert any(fence in c.content for c in chunks)
