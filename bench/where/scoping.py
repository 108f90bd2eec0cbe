"""Questions that scope by document date and the range each must get, at NOW (a Wednesday, Shanghai).

Ranges are local dates or times at NOW's zone; end exclusive, None open. Written by hand: time words
tied to a document word or verb, relative periods that only make sense as scope, the newer expressions
(quarters, 上周五 / last Friday, year ranges, 二〇二三年, N天前 / N days ago, year to date).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple
from zoneinfo import ZoneInfo

ZONE = ZoneInfo("Asia/Shanghai")
NOW = datetime(2025, 6, 18, 15, 30, tzinfo=ZONE)


class Scoping(NamedTuple):
    question: str
    field: str
    start: str | None
    end: str | None


C, U = "created_at", "updated_at"
SCOPING: tuple[Scoping, ...] = (
    Scoping("上周的会议纪要", C, "2025-06-09", "2025-06-16"),
    Scoping("上个月上传的报销文件", C, "2025-05-01", "2025-06-01"),
    Scoping("今年以来发布的制度文件", C, "2025-01-01", None),
    Scoping("年初至今的周报", C, "2025-01-01", None),
    Scoping("近一周的邮件", C, "2025-06-11T15:30", None),
    Scoping("最近三天更新的文档", U, "2025-06-15T15:30", None),
    Scoping("去年创建的文件", C, "2024-01-01", "2025-01-01"),
    Scoping("2023年的财务报告", C, "2023-01-01", "2024-01-01"),
    Scoping("2023年5月的会议纪要", C, "2023-05-01", "2023-06-01"),
    Scoping("2024年写的技术文档", C, "2024-01-01", "2025-01-01"),
    Scoping("发布于2024年3月的通知", C, "2024-03-01", "2024-04-01"),
    Scoping("只看2022年的资料", C, "2022-01-01", "2023-01-01"),
    Scoping("2023年第三季度的销售报告", C, "2023-07-01", "2023-10-01"),
    Scoping("三季度的报告", C, "2024-07-01", "2024-10-01"),  # the latest third quarter that has begun
    Scoping("上周五上传的文件", C, "2025-06-13", "2025-06-14"),
    Scoping("2021-2023年的审计报告", C, "2021-01-01", "2024-01-01"),
    Scoping("2021到2023年的年度报告", C, "2021-01-01", "2024-01-01"),
    Scoping("二〇二三年的工作总结文档", C, "2023-01-01", "2024-01-01"),
    Scoping("三天前上传的资料", C, "2025-06-15", "2025-06-16"),
    Scoping("两周前整理的纪要", C, "2025-06-02", "2025-06-09"),
    Scoping("reports from last week", C, "2025-06-09", "2025-06-16"),
    Scoping("documents uploaded last month", C, "2025-05-01", "2025-06-01"),
    Scoping("notes updated in the past week", U, "2025-06-11T15:30", None),
    Scoping("what do the 2023 reports say about revenue", C, "2023-01-01", "2024-01-01"),
    Scoping("in the 2023 reports, what was the revenue?", C, "2023-01-01", "2024-01-01"),
    Scoping("documents written in 2022", C, "2022-01-01", "2023-01-01"),
    Scoping("papers published since March", C, "2025-03-01", None),
    Scoping("what did the March 2024 reports say about hiring", C, "2024-03-01", "2024-04-01"),
    Scoping("Q3 2023 reports", C, "2023-07-01", "2023-10-01"),
    Scoping("files uploaded last Friday", C, "2025-06-13", "2025-06-14"),
    Scoping("documents published between 2021 and 2023", C, "2021-01-01", "2024-01-01"),
    Scoping("reports from 2021–2023", C, "2021-01-01", "2024-01-01"),
    Scoping("files created 3 days ago", C, "2025-06-15", "2025-06-16"),
    Scoping("emails sent two weeks ago", C, "2025-06-02", "2025-06-09"),
    Scoping("year-to-date sales reports", C, "2025-01-01", None),
    Scoping("action items from last month's board meeting notes", C, "2025-05-01", "2025-06-01"),
    # Written after the rules, as a check they had not seen: 15 of these 16 passed at first (去年12月
    # was read as the whole of last year), then 去年/今年 + a month was added.
    Scoping("上个月写的周报里提到了哪些风险", C, "2025-05-01", "2025-06-01"),
    Scoping("2024年第一季度的财报", C, "2024-01-01", "2024-04-01"),
    Scoping("去年12月上传的合同", C, "2024-12-01", "2025-01-01"),
    Scoping("2022年以来归档的审计文件", C, "2022-01-01", None),
    Scoping("最近两周更新的操作手册", U, "2025-06-04T15:30", None),
    Scoping("2023年下半年的会议纪要有哪些", C, "2023-07-01", "2024-01-01"),
    Scoping("上周三发的邮件说了什么", C, "2025-06-11", "2025-06-12"),
    Scoping("年初以来整理的笔记", C, "2025-01-01", None),
    Scoping("2020到2022年的年报", C, "2020-01-01", "2023-01-01"),
    Scoping("emails from last Tuesday", C, "2025-06-17", "2025-06-18"),
    Scoping("the 2022 annual reports on sales", C, "2022-01-01", "2023-01-01"),
    Scoping("slides uploaded yesterday", C, "2025-06-17", "2025-06-18"),
    Scoping("documents created since January 2024", C, "2024-01-01", None),
    Scoping("notes from Q2 2024 meetings", C, "2024-04-01", "2024-07-01"),
    Scoping("reports published in the last 3 months", C, "2025-03-18T15:30", None),
    Scoping("files modified two days ago", U, "2025-06-16", "2025-06-17"),
)


def expected_condition(item: Scoping) -> dict[str, str]:
    """The filter condition `item` must get: {$gte, $lt} as ISO timestamps at NOW's zone."""
    condition = {}
    if item.start is not None:
        condition["$gte"] = datetime.fromisoformat(item.start).replace(tzinfo=ZONE).isoformat()
    if item.end is not None:
        condition["$lt"] = datetime.fromisoformat(item.end).replace(tzinfo=ZONE).isoformat()
    return condition
