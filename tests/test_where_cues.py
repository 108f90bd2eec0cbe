"""Document dates versus dates in the content: a year or month in a question filters the documents only
when a document word, verb or scoping word ties it to them; relative periods that only make sense as
scope always do. The newer time expressions with their exact ranges (fixed now), and bench.where."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from backend.where.cues import document_cue
from backend.where.rules import Vocabulary, infer_rules
from backend.where.time_phrases import find_time
from bench.where.__main__ import main as bench_where
from bench.where.scoping import NOW, SCOPING, ZONE, Scoping, expected_condition

VOCABULARY = Vocabulary({"lang": ["zh", "en"], "content_type": ["application/pdf", "text/plain"]})


def local(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text).replace(tzinfo=ZONE) if text else None


def rules(question: str) -> dict:
    return {i.field: i.condition for i in infer_rules(question, NOW, VOCABULARY, high_quality_min=0.8)}


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("2023年第三季度的销售报告", "2023年第三季度", "2023-07-01", "2023-10-01"),
        ("2023年三季度的报告", "2023年三季度", "2023-07-01", "2023-10-01"),
        ("2023年Q4的报告", "2023年Q4", "2023-10-01", "2024-01-01"),
        ("三季度的报告", "三季度", "2024-07-01", "2024-10-01"),  # NOW is in Q2: the latest Q3 begun
        ("第二季度的报告", "第二季度", "2025-04-01", "2025-07-01"),  # the current one has begun
        ("Q3 2023 reports", "Q3 2023", "2023-07-01", "2023-10-01"),
        ("2023 Q1 reports", "2023 Q1", "2023-01-01", "2023-04-01"),
        ("the third quarter of 2023 reports", "the third quarter of 2023", "2023-07-01", "2023-10-01"),
        ("上周五上传的文件", "上周五", "2025-06-13", "2025-06-14"),
        ("上周日的纪要", "上周日", "2025-06-15", "2025-06-16"),
        ("本周一的邮件", "本周一", "2025-06-16", "2025-06-17"),
        ("files from last Friday", "from last Friday", "2025-06-13", "2025-06-14"),
        ("notes since last Monday", "since last Monday", "2025-06-16", None),
        ("what was sent last Wednesday", "last Wednesday", "2025-06-11", "2025-06-12"),  # not today
        ("2021-2023年的审计报告", "2021-2023年", "2021-01-01", "2024-01-01"),
        ("2021到2023年的年度报告", "2021到2023年", "2021-01-01", "2024-01-01"),
        ("从2021至2023年的文件", "从2021至2023年", "2021-01-01", "2024-01-01"),
        ("reports from 2021–2023", "from 2021–2023", "2021-01-01", "2024-01-01"),
        ("documents 2019 through 2020", "2019 through 2020", "2019-01-01", "2021-01-01"),
        ("二〇二三年的工作总结文档", "二〇二三年", "2023-01-01", "2024-01-01"),
        ("二零二三年三月的纪要", "二零二三年三月", "2023-03-01", "2023-04-01"),
        ("二〇二三年十二月二十五日的通知", "二〇二三年十二月二十五日", "2023-12-25", "2023-12-26"),
        ("一九九八年的档案", "一九九八年", "1998-01-01", "1999-01-01"),
        ("三天前上传的资料", "三天前", "2025-06-15", "2025-06-16"),
        ("3天前的邮件", "3天前", "2025-06-15", "2025-06-16"),
        ("两周前整理的纪要", "两周前", "2025-06-02", "2025-06-09"),  # the ISO week that held that day
        ("一个月前的报告", "一个月前", "2025-05-01", "2025-06-01"),
        ("files created 3 days ago", "3 days ago", "2025-06-15", "2025-06-16"),
        ("emails sent two weeks ago", "two weeks ago", "2025-06-02", "2025-06-09"),
        ("reports since a month ago", "since a month ago", "2025-05-01", None),
        ("今年以来发布的制度文件", "今年以来", "2025-01-01", None),
        ("年初至今的周报", "年初至今", "2025-01-01", None),
        ("今年至今上传的文件", "今年至今", "2025-01-01", None),
        ("YTD sales reports", "YTD", "2025-01-01", None),
        ("year-to-date reports", "year-to-date", "2025-01-01", None),
        ("notes so far this year", "so far this year", "2025-01-01", None),
        ("上上周的文件", "上上周", "2025-06-02", "2025-06-09"),
        ("去年12月上传的合同", "去年12月", "2024-12-01", "2025-01-01"),
        ("今年3月5日的通知", "今年3月5日", "2025-03-05", "2025-03-06"),
    ],
)
def test_new_time_expressions_and_their_ranges(question, phrase, start, end):
    match = find_time(question, NOW)
    assert match is not None
    assert (match.phrase, match.start, match.end) == (phrase, local(start), local(end))


@pytest.mark.parametrize(
    "question",
    [
        "2019年诺贝尔奖得主是谁?",
        "What happened in March 1998?",
        "1992年4月，罗保铭担任什么职务？",
        "2008年，欧盟做出了什么批准？",
        "1984年6月至1985年1月，蒋巨峰担任什么职务？",
        "苹果2007年发布的手机叫什么",  # 发布 without a document word: a product launch
        "创建于1902年的大学在哪里",
        "威廉·狄尔泰在1948年发表论文的主题是什么",  # 发表 as the main verb, not a document's description
        "报告里2023年的收入是多少",  # the revenue of 2023, in whatever report says so
        "2023年5月的会议讨论了什么",
        "今天的路口镇是由哪两个乡镇合并的？",  # today as "nowadays"
        "How much lower was the North Sea in the last cold phase than it is today?",
        "谁获得本年总决赛的最有价值球员奖？",
        "新加坡和香港近十五年的人均GDP表现中，何者较优异?",  # a trend over years, not a scope
        "在《神秘博士》的前15年间，谁是最频繁的音乐贡献者？",  # the first 15 years
        "十年前的今天发生了什么",
        "Since 2005, what is the gender of Doctor Who's primary traveling companion?",
        "In 2000, ABC started an internet based campaign focused on what?",
        "How many interceptions are the Panthers defense credited with in 2015?",
        "the year 2023 in review",
        "How many of the 2000 documents mention tax?",  # a count, not a year
        "sales between 2021 and 2023",
        "Who won the third quarter?",
        "只要2020年以前出生就可以报名吗",  # 只要: "as long as"
        "What changed just before 1990?",
    ],
)
def test_dates_about_the_content_set_no_date_filter(question):
    found = rules(question)
    assert "created_at" not in found
    assert "updated_at" not in found


@pytest.mark.parametrize("item", SCOPING, ids=[s.question for s in SCOPING])
def test_scoping_questions_get_their_exact_date_filter(item: Scoping):
    found = rules(item.question)
    assert {k: v for k, v in found.items() if k in ("created_at", "updated_at")} == {
        item.field: expected_condition(item)
    }


@pytest.mark.parametrize(
    ("question", "phrase", "cue"),
    [
        ("2023年的财务报告", "2023年", "报告"),
        ("2023年关于预算的文件", "2023年", "文件"),
        ("2023年英文PDF", "2023年", "PDF"),
        ("2023年由财务部发布的通知", "2023年", "发布"),
        ("哪些文件是2023年发布的", "2023年", "发布"),  # the document word earlier in the clause
        ("2023年上传了什么", "2023年", "上传"),  # only documents are uploaded
        ("发布于2024年3月的通知", "2024年3月", "通知"),
        ("创建于2020年的", "2020年", None),  # 创建 also founds universities: needs a document word
        ("文档创建于2020年", "2020年", "创建"),
        ("只看2022年的", "2022年", "只看"),
        ("根據2015年的資料統計", "2015年", "資料"),  # traditional characters too
        ("the 2023 reports", "2023", "reports"),
        ("papers in 2023", "in 2023", "papers"),
        ("documents written in 2022", "in 2022", "written"),
        ("anything uploaded in March", "in March", "uploaded"),
        ("search limited to 2023", "2023", "limited to"),
        ("only in 2015 did they win", "in 2015", None),
        ("苹果2007年发布的手机", "2007年", None),
        ("1948年发表论文", "1948年", None),
        ("the book published in 1937", "in 1937", None),  # a book is not one of the documents here
        ("2008年，报告说", "2008年", None),  # another clause
    ],
)
def test_document_cues(question, phrase, cue):
    start = question.index(phrase)
    assert document_cue(question, (start, start + len(phrase))) == cue


def test_english_pdf_gives_language_and_file_type():
    assert rules("英文PDF里的报销规定") == {"lang": {"$eq": "en"}, "content_type": {"$eq": "application/pdf"}}
    assert rules("English PDFs about refunds") == {
        "lang": {"$eq": "en"},
        "content_type": {"$eq": "application/pdf"},
    }
    found = rules("2023年英文PDF报告")
    assert found["created_at"] == {"$gte": "2023-01-01T00:00:00+08:00", "$lt": "2024-01-01T00:00:00+08:00"}
    assert found["lang"] == {"$eq": "en"}
    assert rules("纯文本文件里的配置") == {"content_type": {"$eq": "text/plain"}}


def test_bench_where_reports_rates_and_names_a_missing_datasets_folder(tmp_path, capsys):
    assert bench_where(["--datasets-dir", str(tmp_path / "absent")]) == 2
    assert str(tmp_path / "absent") in capsys.readouterr().err
    (tmp_path / "mini").mkdir()
    questions = ["2019年诺贝尔奖得主是谁?", "2023年的财务报告讲了什么?", "谁发明了电话?", "上周的会议纪要"]
    lines = [json.dumps({"_id": str(i), "text": q}, ensure_ascii=False) for i, q in enumerate(questions)]
    (tmp_path / "mini" / "queries.jsonl").write_text("\n".join(lines), encoding="utf-8")
    assert bench_where(["--datasets-dir", str(tmp_path), "--show", "5"]) == 0
    out = capsys.readouterr().out
    assert "| mini | 4 | 2 | 50.00% |" in out
    assert f"{len(SCOPING)}/{len(SCOPING)} (100%)" in out
