"""Time expressions in a question, Chinese and English, as a date range on the documents' dates.

Rolling windows count back from now ("近一周", "最近三天", "past 3 days", "the last month");
named periods are calendar periods in the configured time zone ("上个月", "本月", "去年", "上周五",
"last week", "last Friday", "this year", "今年以来", "year to date"); "N天前" / "3 days ago" is that
calendar day (week, month); absolute ones are years, quarters, months and days ("2023年", "二〇二三年",
"2023年第三季度", "Q3 2023", "2023年5月", "in 2023", "since March", "before 2024", "2023-05-01"),
with 以来/之后/以前 or since/after/before/until turning a period into an open range, and year ranges
("2021-2023年", "2021到2023年", "2021–2023", "between 2021 and 2023"). A range is [start, end):
start inclusive, end exclusive, either may be open. Arithmetic: backend.where.dates.

Each match says whether it is `scope`: a relative period that only makes sense as a limit on the
documents (上周, last month). The others — absolute dates, and words that often mean "nowadays" or
"the first N" (今天, today, 前三年) or span years (近十年) — filter only with a document cue
(backend.where.cues).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

from backend.where import dates as d

DateField = Literal["created_at", "updated_at"]


@dataclass(frozen=True)
class TimeMatch:
    start: datetime | None  # inclusive
    end: datetime | None  # exclusive
    span: tuple[int, int]  # where the phrase is in the question
    phrase: str
    field: DateField
    scope: bool  # a relative period that only makes sense as scope: filters without a document cue


class Range(NamedTuple):
    start: datetime | None
    end: datetime | None
    scope: bool = False


_UPDATED = re.compile(r"更新|修改|改动|编辑|\b(?:updated|modified|changed|edited|revised)\b", re.IGNORECASE)
_CN_NUM = r"(?:\d+|[零一二两三四五六七八九十半几]+)"
_CN_UNIT = r"(?P<unit>小时|天|日|周|星期|礼拜|个月|月|年)"
_CN_MODIFIER = r"(?P<mod>以来|至今|起|开始|以后|之后|以前|之前)?"
_EN_NUM = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"
_EN_UNIT = r"(?P<unit>hours?|days?|weeks?|months?|years?)"
_EN_PREP = r"(?:(?:in|within|over|during|from|for)\s+)?"
_YEAR = r"(?:19|20)\d{2}"
_CN_YEAR = r"[一二][九〇零○Ｏ][一二三四五六七八九〇零○Ｏ]{2}"  # 一九九八, 二〇二三, 二零二三
_CN_MONTH = r"\d{1,2}|十[一二]?|[一二三四五六七八九]"
_CN_DAY = r"\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_MONTH_NAME = "|".join(sorted(d.MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(d.WEEKDAYS)
# Chinese: 2023年 / 二〇二三年 / 2023年5月 / 2023年5月3日 / 2023年上半年 / 2023年第三季度 / 2023年Q3;
# ISO: 2023-05 / 2023-05-03; English: May / May 3, 2023 / 2023 (after a preposition).
_CN_ABS = (
    rf"(?P<y>{_YEAR}|{_CN_YEAR})年度?(?:(?P<m>{_CN_MONTH})月份?(?:(?P<d>{_CN_DAY})[日号])?"
    r"|(?P<half>[上下])半年|第?(?P<q>[一二三四1-4])季度|[Qq](?P<qn>[1-4]))?"
)
_ISO = rf"(?P<y>{_YEAR})[-/.](?P<m>\d{{1,2}})(?:[-/.](?P<d>\d{{1,2}}))?(?!\d)"
_EN_ABS = (
    rf"(?:(?P<mon>{_MONTH_NAME})\b\.?(?:\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?)?(?:\s+(?P<y>{_YEAR}))?"
    rf"|(?P<yo>{_YEAR}))\b"
)


def _suffixed(pattern: str, suffix: str) -> str:
    """`pattern` with every group renamed name -> name + suffix (two periods in one expression)."""
    return re.sub(r"\(\?P<(\w+)>", rf"(?P<\g<1>{suffix}>", pattern)


def find_times(text: str, now: datetime) -> list[TimeMatch]:
    """Every time expression in `text`, resolved against `now`: the longest first (earliest of equals)."""
    found: list[TimeMatch] = []
    for pattern, resolve in _RULES:
        for m in pattern.finditer(text):
            resolved = resolve(m.groupdict(), now)
            if resolved is not None:
                a, b = m.span()
                found.append(TimeMatch(*resolved[:2], (a, b), text[a:b], _field(text, a, b), resolved.scope))
    return sorted(found, key=lambda f: (f.span[0] - f.span[1], f.span[0]))


def find_time(text: str, now: datetime) -> TimeMatch | None:
    """The longest time expression in `text` (the earliest of equals), or None."""
    return next(iter(find_times(text, now)), None)


def _field(text: str, a: int, b: int) -> DateField:
    """updated_at when the phrase is about changes ("上周更新的", "updated last week")."""
    return "updated_at" if _UPDATED.search(text[max(0, a - 12) : b + 6]) else "created_at"


# --- the rules ---------------------------------------------------------------------------------

Resolver = Callable[[dict[str, str | None], datetime], Range | None]
_RULES: list[tuple[re.Pattern[str], Resolver]] = []


def _rule(pattern: str, flags: int = 0) -> Callable[[Resolver], Resolver]:
    def register(resolve: Resolver) -> Resolver:
        _RULES.append((re.compile(pattern, flags), resolve))
        return resolve

    return register


def _scoped(bounds: d.Bounds | None, scope: bool) -> Range | None:
    return Range(*bounds, scope) if bounds is not None else None


def _absolute(g: dict[str, str | None], now: datetime, suffix: str = "") -> d.Period | None:
    """The period of one absolute date (groups y, m or mon, d, half, q, qn, yo; with `suffix`)."""
    month_name = g.get("mon" + suffix)
    month_text = g.get("m" + suffix)
    month = d.MONTHS[month_name.lower()] if month_name else int(d.cn_number(month_text) or 0) or None
    day_text = g.get("d" + suffix)
    year_text = g.get("y" + suffix) or g.get("yo" + suffix)
    quarter = g.get("q" + suffix) or g.get("qn" + suffix)
    year = d.year_number(year_text) if year_text else None
    if quarter:
        return d.quarter(now, year, int(d.cn_number(quarter) or 0))
    if year is None:
        if not month:
            return None
        year = now.year if month <= now.month else now.year - 1  # "since March": the latest begun
    if g.get("half" + suffix):
        return d.months_of(now, year, 1 if g["half" + suffix] == "上" else 7, 6)
    return d.period(now, year, month, int(d.cn_number(day_text) or 0) if day_text else None)


@_rule(rf"(?:(?P<pre>最近|近|过去的?|前)(?P<n>{_CN_NUM})个?{_CN_UNIT}(?:以来|之内|以内|内|来)?)")
@_rule(rf"(?<![\d零一二两三四五六七八九十])(?P<n>{_CN_NUM})个?{_CN_UNIT}(?:之内|以内|内)")
def _cn_rolling(g: dict[str, str | None], now: datetime) -> Range | None:
    unit = d.unit_name(g["unit"] or "")
    n = 7.0 if g["n"] == "几" and unit == "day" else d.cn_number(g["n"])
    if not n:
        return None
    # 前三年 is as often "the first three years"; 近十年 a trend in the content, not a scope.
    scope = g.get("pre") != "前" and not (unit == "year" and n > 1)
    return Range(d.back(now, n, unit), None, scope)


@_rule(
    r"(?<![\d零一二两三四五六七八九十])(?P<n>\d{1,3}|[一二两三四五六七八九十半几]+)\s*(?P<unit>天|周|个?星期|个?礼拜|个月|年)前"
)
def _cn_ago(g: dict[str, str | None], now: datetime) -> Range | None:
    n = d.cn_number(g["n"])
    unit = d.unit_name((g["unit"] or "").lstrip("个"))
    if not n or n != int(n):
        return None
    return Range(*d.ago(now, int(n), unit), unit != "year")  # 十年前 is history more often than a scope


_CN_NAMED = {
    "今天": ("day", 0), "今日": ("day", 0), "昨天": ("day", -1), "昨日": ("day", -1), "前天": ("day", -2),
    "本周": ("week", 0), "这周": ("week", 0), "这个星期": ("week", 0), "本星期": ("week", 0),
    "上周": ("week", -1), "上个星期": ("week", -1), "上星期": ("week", -1), "上个礼拜": ("week", -1),
    "上上周": ("week", -2), "上上个星期": ("week", -2),
    "本月": ("month", 0), "这个月": ("month", 0), "当月": ("month", 0),
    "上个月": ("month", -1), "上月": ("month", -1), "上上个月": ("month", -2),
    "本季度": ("quarter", 0), "这个季度": ("quarter", 0),
    "上季度": ("quarter", -1), "上个季度": ("quarter", -1),
    "今年": ("year", 0), "本年": ("year", 0),
    "去年": ("year", -1), "上一年": ("year", -1), "前年": ("year", -2),
}  # fmt: skip
_CN_NOWADAYS = {"今天", "今日", "本年", "当月"}  # "今天的路口镇" is the town as it is now; 当月: that month


@_rule(rf"(?P<name>{'|'.join(sorted(_CN_NAMED, key=len, reverse=True))}){_CN_MODIFIER}")
def _cn_named(g: dict[str, str | None], now: datetime) -> Range | None:
    unit, offset = _CN_NAMED[g["name"] or ""]
    bounds = d.open_range(d.calendar_period(now, unit, offset), g["mod"])
    return _scoped(bounds, g["name"] not in _CN_NOWADAYS)


_CN_YEARS_BACK = {"今年": 0, "本年": 0, "去年": -1, "前年": -2}


@_rule(rf"(?P<rel>今年|本年|去年|前年)(?P<m>{_CN_MONTH})月份?(?:(?P<d>{_CN_DAY})[日号])?{_CN_MODIFIER}")
def _cn_month_of_year(g: dict[str, str | None], now: datetime) -> Range | None:
    """去年12月, 今年3月5日: a month or day of a year named relative to now (relative: a scope)."""
    g = {**g, "y": str(now.year + _CN_YEARS_BACK[g["rel"] or ""])}
    return _scoped(d.open_range(_absolute(g, now), g["mod"]), True)


_CN_YTD = (
    r"(?:从|自)?(?:今年|本年度?)?年初(?:至今|以来|到现在|到今天|迄今)"
    r"|(?:今年|本年度?)(?:至今|迄今|到现在)|本年度?以来"
)
_EN_YTD = (
    r"year[-\s]to[-\s]date|YTD|so\s+far\s+this\s+year"
    r"|since\s+the\s+(?:start|beginning)\s+of\s+(?:the|this)\s+year"
)


@_rule(_CN_YTD)
@_rule(rf"\b(?:{_EN_YTD})\b", re.I)
def _year_to_date(g: dict[str, str | None], now: datetime) -> Range | None:
    return Range(d.calendar_period(now, "year", 0)[0], None, True)


@_rule(r"(?P<which>上个?|上一个?|本|这个?)(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])(?![报記记志气])")
def _cn_weekday(g: dict[str, str | None], now: datetime) -> Range | None:
    weekday = d.CN_WEEKDAYS[g["wd"] or ""]
    return Range(*d.weekday_of_week(now, weekday, -1 if (g["which"] or "").startswith("上") else 0), True)


@_rule(rf"\b(?P<since>(?:since|from|on)\s+)?last\s+(?P<wd>{_WEEKDAY})\b", re.I)
def _en_weekday(g: dict[str, str | None], now: datetime) -> Range | None:
    start, end = d.last_weekday(now, d.WEEKDAYS[(g["wd"] or "").lower()])
    return Range(start, None if (g["since"] or "").lower().startswith("since") else end, True)


@_rule(rf"(?:{_CN_ABS}|{_suffixed(_ISO, '_iso')}){_CN_MODIFIER}")
def _cn_absolute(g: dict[str, str | None], now: datetime) -> Range | None:
    return _scoped(d.open_range(_absolute(g, now) or _absolute(g, now, "_iso"), g["mod"]), False)


@_rule(r"(?<![年\d])第?(?P<q>[一二三四])季度")
@_rule(rf"\b(?:(?P<y>{_YEAR})\s*-?\s*)?Q(?P<qn>[1-4])(?:\s*(?P<y2>{_YEAR}))?\b", re.I)
@_rule(rf"\b(?:the\s+)?(?P<ord>{'|'.join(d.ORDINALS)})\s+quarter(?:\s+(?:of\s+)?(?P<y>{_YEAR}))?\b", re.I)
def _quarter(g: dict[str, str | None], now: datetime) -> Range | None:
    ordinal = g.get("ord")
    q = d.ORDINALS[ordinal.lower()] if ordinal else int(d.cn_number(g.get("q") or g.get("qn")) or 0)
    year = g.get("y") or g.get("y2")
    return _scoped(d.quarter(now, int(year) if year else None, q), False)


@_rule(rf"(?:从|自)?{_CN_ABS}\s*(?:到|至|-|~|—)\s*{_suffixed(_CN_ABS, '2')}")
@_rule(rf"\b(?:between|from)\s+{_EN_ABS}\s+(?:and|to|until|through)\s+{_suffixed(_EN_ABS, '2')}", re.I)
def _between(g: dict[str, str | None], now: datetime) -> Range | None:
    first, last = _absolute(g, now), _absolute(g, now, "2")
    return Range(first[0], last[1]) if first and last and first[0] < last[1] else None


@_rule(rf"(?:从|自)?(?P<y>{_YEAR})年?\s*(?:到|至|-|–|—|~|～)\s*(?P<y2>{_YEAR})年")
@_rule(rf"\b(?:from\s+)?(?P<y>{_YEAR})\s*(?:-|–|—|to|through)\s*(?P<y2>{_YEAR})\b", re.I)
def _year_range(g: dict[str, str | None], now: datetime) -> Range | None:
    return _scoped(d.years(now, int(g["y"] or 0), int(g["y2"] or 0)), False)


@_rule(rf"\b{_EN_PREP}(?:the\s+)?(?:past|last|previous)\s+(?P<n>{_EN_NUM})\s+{_EN_UNIT}\b", re.I)
@_rule(rf"\b{_EN_PREP}(?:the\s+past|the\s+last|past)\s+{_EN_UNIT}\b", re.I)
def _en_rolling(g: dict[str, str | None], now: datetime) -> Range | None:
    n = d.en_number(g.get("n"))
    unit = d.unit_name(g["unit"] or "")
    return Range(d.back(now, n, unit), None, not (unit == "year" and n > 1)) if n > 0 else None


@_rule(rf"\b(?P<since>since\s+)?(?P<n>{_EN_NUM})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b", re.I)
def _en_ago(g: dict[str, str | None], now: datetime) -> Range | None:
    n, unit = d.en_number(g["n"]), d.unit_name(g["unit"] or "")
    if n <= 0 or n != int(n):
        return None
    start, end = d.ago(now, int(n), unit)
    return Range(start, None if g["since"] else end, unit != "year")


@_rule(
    r"\b(?P<since>(?:from|in|during|since)\s+)?(?P<which>last|this|previous|current)\s+(?P<unit>week|month|quarter|year)(?:'s)?\b",
    re.I,
)  # noqa: E501
@_rule(r"\b(?P<since>(?:from|since)\s+)?(?P<which>today|yesterday)(?:'s)?\b", re.I)
def _en_named(g: dict[str, str | None], now: datetime) -> Range | None:
    which = (g["which"] or "").lower()
    if which in ("today", "yesterday"):
        period = d.calendar_period(now, "day", 0 if which == "today" else -1)
    else:
        period = d.calendar_period(now, (g["unit"] or "").lower(), 0 if which in ("this", "current") else -1)
    start, end = period
    # "than it is today" is the present, not a scope: today needs a document cue.
    return Range(start, None if (g["since"] or "").lower().startswith("since") else end, which != "today")


@_rule(
    rf"\b(?P<mod>in|during|since|after|before|from|until|till|by)\s+(?:{_EN_ABS}|{_suffixed(_ISO, '_iso')})",
    re.I,
)  # noqa: E501
def _en_absolute(g: dict[str, str | None], now: datetime) -> Range | None:
    modifier = (g["mod"] or "").lower()
    period = _absolute(g, now) or _absolute(g, now, "_iso")
    return _scoped(d.open_range(period, None if modifier in ("in", "during", "from") else modifier), False)


# After "of the", "all", "over" ... a number is a count ("how many of the 2000 documents").
_COUNTED = "".join(
    rf"(?<!{w} )" for w in ("of the", "all", "all the", "over", "about", "nearly", "almost", "than")
)


@_rule(rf"{_COUNTED}\b(?:(?P<mon>{_MONTH_NAME})\s+)?(?P<y>{_YEAR})\b", re.I)
def _en_bare(g: dict[str, str | None], now: datetime) -> Range | None:
    """A year without a preposition ("the 2023 reports"): a topic unless a document cue ties it."""
    return _scoped(_absolute(g, now), False)
