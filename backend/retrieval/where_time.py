"""Time expressions in a question, Chinese and English, as a date range on the documents' dates.

Rolling windows count back from now ("近一周", "最近三天", "past 3 days", "the last month");
named periods are calendar periods in the configured time zone ("上个月", "本月", "去年", "last week",
"this year"); absolute ones are years, months and days ("2023年", "2023年5月", "in 2023", "since March",
"before 2024", "2023-05-01"), with 以来/之后/以前 or since/after/before/until turning a period into an
open range. A range is [start, end): start inclusive, end exclusive, either may be open.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal

DateField = Literal["created_at", "updated_at"]
Period = tuple[datetime, datetime]


@dataclass(frozen=True)
class TimeMatch:
    start: datetime | None  # inclusive
    end: datetime | None  # exclusive
    span: tuple[int, int]  # where the phrase is in the question
    phrase: str
    field: DateField


_CN_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_EN_NUMBERS |= {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
_EN_NUMBERS |= {"several": 5}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
_UPDATED = re.compile(r"更新|修改|改动|编辑|updated|modified|changed|edited|revised", re.IGNORECASE)

_CN_NUM = r"(?:\d+|[零一二两三四五六七八九十半几]+)"
_CN_UNIT = r"(?P<unit>小时|天|日|周|星期|礼拜|个月|月|年)"
_CN_MODIFIER = r"(?P<mod>以来|至今|起|开始|以后|之后|以前|之前)?"
_EN_NUM = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"
_EN_UNIT = r"(?P<unit>hours?|days?|weeks?|months?|years?)"
_EN_PREP = r"(?:(?:in|within|over|during|from|for)\s+)?"
_YEAR = r"(?:19|20)\d{2}"
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
# Absolute periods. Chinese: 2023年 / 2023年5月 / 2023年5月3日 / 2023年上半年; ISO: 2023-05 / 2023-05-03;
# English: May / May 2023 / May 3, 2023 / 2023.
_CN_ABS = r"(?P<y>YEAR)年度?(?:(?P<m>\d{1,2})月份?(?:(?P<d>\d{1,2})[日号])?|(?P<half>[上下])半年)?".replace(
    "YEAR", _YEAR
)
_ISO = r"(?P<y>YEAR)[-/.](?P<m>\d{1,2})(?:[-/.](?P<d>\d{1,2}))?(?!\d)".replace("YEAR", _YEAR)
_EN_ABS = (
    (r"(?:(?P<mon>MONTH)\b\.?(?:\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?)?(?:\s+(?P<y>YEAR))?|(?P<yo>YEAR))\b")
    .replace("MONTH", _MONTH_NAME)
    .replace("YEAR", _YEAR)
)


def _suffixed(pattern: str, suffix: str) -> str:
    """`pattern` with every group renamed name -> name + suffix (two periods in one expression)."""
    return re.sub(r"\(\?P<(\w+)>", rf"(?P<\g<1>{suffix}>", pattern)


def find_time(text: str, now: datetime) -> TimeMatch | None:
    """The longest time expression in `text` (the earliest of equals), resolved against `now`."""
    found: list[tuple[tuple[int, int], datetime | None, datetime | None]] = []
    for pattern, resolve in _RULES:
        for m in pattern.finditer(text):
            bounds = resolve(m.groupdict(), now)
            if bounds is not None:
                found.append((m.span(), *bounds))
    if not found:
        return None
    (a, b), start, end = max(found, key=lambda f: (f[0][1] - f[0][0], -f[0][0]))
    return TimeMatch(start, end, (a, b), text[a:b], _field(text, a, b))


def _field(text: str, a: int, b: int) -> DateField:
    """updated_at when the phrase is about changes ("上周更新的", "updated last week")."""
    return "updated_at" if _UPDATED.search(text[max(0, a - 12) : b + 6]) else "created_at"


# --- arithmetic --------------------------------------------------------------------------------


def _midnight(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(), tzinfo=now.tzinfo)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _period(now: datetime, year: int, month: int | None = None, day: int | None = None) -> Period | None:
    try:
        if month is None:
            return _midnight(date(year, 1, 1), now), _midnight(date(year + 1, 1, 1), now)
        first = date(year, month, day or 1)
    except ValueError:
        return None  # 2023年13月: not a date
    if day is None:
        return _midnight(first, now), _midnight(_add_months(first, 1), now)
    return _midnight(first, now), _midnight(first + timedelta(days=1), now)


def _calendar(now: datetime, unit: str, offset: int) -> Period:
    """The calendar day / week / month / quarter / year containing now, moved `offset` periods."""
    today = now.date()
    if unit == "day":
        first = today + timedelta(days=offset)
        return _midnight(first, now), _midnight(first + timedelta(days=1), now)
    if unit == "week":  # ISO weeks start on Monday
        first = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return _midnight(first, now), _midnight(first + timedelta(weeks=1), now)
    months = {"month": 1, "quarter": 3, "year": 12}[unit]
    first = date(today.year, 1 if unit == "year" else today.month - (today.month - 1) % months, 1)
    first = _add_months(first, offset * months)
    return _midnight(first, now), _midnight(_add_months(first, months), now)


def _back(now: datetime, n: float, unit: str) -> datetime:
    """now minus n units (months and years on the calendar; half a year is six months)."""
    if unit in ("month", "year"):
        months = round(n * (12 if unit == "year" else 1))
        if months == 0 and n > 0:  # half a month
            return now - timedelta(days=15)
        moved = _add_months(now.date(), -months)
        return datetime.combine(moved, now.timetz())
    return now - timedelta(**{f"{unit}s": n})


def _cn_number(word: str | None) -> float | None:
    if word is None:
        return None
    if word.isdigit():
        return float(word)
    if word == "半":
        return 0.5
    if word == "几":
        return 3.0
    if "十" in word:
        tens, _, ones = word.partition("十")
        return float((_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(ones, 0) if ones else 0))
    return float(_CN_DIGITS[word]) if word in _CN_DIGITS else None


def _unit(word: str) -> str:
    word = word.lower().rstrip("s")
    return {
        "小时": "hour", "天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week",
        "个月": "month", "月": "month", "年": "year",
    }.get(word, word)  # fmt: skip


def _open(period: Period | None, modifier: str | None) -> tuple[datetime | None, datetime | None] | None:
    """A period turned into a range by what follows or precedes it (以来 / since / before / ...)."""
    if period is None:
        return None
    start, end = period
    if not modifier:
        return start, end
    modifier = modifier.lower()
    if modifier in ("以来", "至今", "起", "开始", "以后", "之后", "since", "from"):
        return start, None
    if modifier == "after":
        return end, None
    if modifier in ("以前", "之前", "before"):
        return None, start
    if modifier in ("until", "till", "by"):
        return None, end
    return start, end


# --- the rules ---------------------------------------------------------------------------------

Bounds = tuple[datetime | None, datetime | None]
Resolver = Callable[[dict[str, str | None], datetime], Bounds | None]
_RULES: list[tuple[re.Pattern[str], Resolver]] = []


def _rule(pattern: str, flags: int = 0) -> Callable[[Resolver], Resolver]:
    def register(resolve: Resolver) -> Resolver:
        _RULES.append((re.compile(pattern, flags), resolve))
        return resolve

    return register


def _absolute(g: dict[str, str | None], now: datetime, suffix: str = "") -> Period | None:
    """The period of one absolute date (groups y, m or mon, d, half, yo; with `suffix`)."""
    month_name = g.get("mon" + suffix)
    month_text = g.get("m" + suffix)
    month = _MONTHS[month_name.lower()] if month_name else (int(month_text) if month_text else None)
    day_text = g.get("d" + suffix)
    year_text = g.get("y" + suffix) or g.get("yo" + suffix)
    if year_text:
        year = int(year_text)
    elif month:  # "since March": the latest March that has begun
        year = now.year if month <= now.month else now.year - 1
    else:
        return None
    half = g.get("half" + suffix)
    if half:
        first = date(year, 1 if half == "上" else 7, 1)
        return _midnight(first, now), _midnight(_add_months(first, 6), now)
    return _period(now, year, month, int(day_text) if day_text else None)


@_rule(rf"(?:最近|近|过去的?|前)(?P<n>{_CN_NUM})个?{_CN_UNIT}(?:以来|之内|以内|内|来)?")
@_rule(rf"(?<![\d零一二两三四五六七八九十])(?P<n>{_CN_NUM})个?{_CN_UNIT}(?:之内|以内|内)")
def _cn_rolling(g: dict[str, str | None], now: datetime) -> Bounds | None:
    unit = _unit(g["unit"] or "")
    n = 7.0 if g["n"] == "几" and unit == "day" else _cn_number(g["n"])
    return (_back(now, n, unit), None) if n else None


_CN_NAMED = {
    "今天": ("day", 0), "今日": ("day", 0), "昨天": ("day", -1), "昨日": ("day", -1), "前天": ("day", -2),
    "本周": ("week", 0), "这周": ("week", 0), "这个星期": ("week", 0), "本星期": ("week", 0),
    "上周": ("week", -1), "上个星期": ("week", -1), "上星期": ("week", -1), "上个礼拜": ("week", -1),
    "本月": ("month", 0), "这个月": ("month", 0), "当月": ("month", 0),
    "上个月": ("month", -1), "上月": ("month", -1),
    "本季度": ("quarter", 0), "这个季度": ("quarter", 0),
    "上季度": ("quarter", -1), "上个季度": ("quarter", -1),
    "今年": ("year", 0), "本年": ("year", 0),
    "去年": ("year", -1), "上一年": ("year", -1), "前年": ("year", -2),
}  # fmt: skip


@_rule(rf"(?P<name>{'|'.join(sorted(_CN_NAMED, key=len, reverse=True))}){_CN_MODIFIER}")
def _cn_named(g: dict[str, str | None], now: datetime) -> Bounds | None:
    unit, offset = _CN_NAMED[g["name"] or ""]
    return _open(_calendar(now, unit, offset), g["mod"])


@_rule(rf"(?:{_CN_ABS}|{_suffixed(_ISO, '_iso')}){_CN_MODIFIER}")
def _cn_absolute(g: dict[str, str | None], now: datetime) -> Bounds | None:
    return _open(_absolute(g, now) or _absolute(g, now, "_iso"), g["mod"])


@_rule(rf"(?:从|自)?{_CN_ABS}\s*(?:到|至|-|~|—)\s*{_suffixed(_CN_ABS, '2')}")
@_rule(rf"\b(?:between|from)\s+{_EN_ABS}\s+(?:and|to|until|through)\s+{_suffixed(_EN_ABS, '2')}", re.I)
def _between(g: dict[str, str | None], now: datetime) -> Bounds | None:
    first, last = _absolute(g, now), _absolute(g, now, "2")
    return (first[0], last[1]) if first and last and first[0] < last[1] else None


@_rule(rf"\b{_EN_PREP}(?:the\s+)?(?:past|last|previous)\s+(?P<n>{_EN_NUM})\s+{_EN_UNIT}\b", re.I)
@_rule(rf"\b{_EN_PREP}(?:the\s+past|the\s+last|past)\s+{_EN_UNIT}\b", re.I)
def _en_rolling(g: dict[str, str | None], now: datetime) -> Bounds | None:
    word = (g.get("n") or "one").lower()
    n = float(word) if word.isdigit() else float(_EN_NUMBERS.get(word, 0))
    return (_back(now, n, _unit(g["unit"] or "")), None) if n > 0 else None


@_rule(
    r"\b(?P<since>(?:from|in|during|since)\s+)?(?P<which>last|this|previous|current)\s+(?P<unit>week|month|quarter|year)(?:'s)?\b",
    re.I,
)  # noqa: E501
@_rule(r"\b(?P<since>(?:from|since)\s+)?(?P<which>today|yesterday)(?:'s)?\b", re.I)
def _en_named(g: dict[str, str | None], now: datetime) -> Bounds | None:
    which = (g["which"] or "").lower()
    if which in ("today", "yesterday"):
        period = _calendar(now, "day", 0 if which == "today" else -1)
    else:
        period = _calendar(now, (g["unit"] or "").lower(), 0 if which in ("this", "current") else -1)
    return (period[0], None) if (g["since"] or "").lower().startswith("since") else period


@_rule(
    rf"\b(?P<mod>in|during|since|after|before|from|until|till|by)\s+(?:{_EN_ABS}|{_suffixed(_ISO, '_iso')})",
    re.I,
)  # noqa: E501
def _en_absolute(g: dict[str, str | None], now: datetime) -> Bounds | None:
    modifier = (g["mod"] or "").lower()
    period = _absolute(g, now) or _absolute(g, now, "_iso")
    return _open(period, None if modifier in ("in", "during", "from") else modifier)
