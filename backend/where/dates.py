"""Date arithmetic and number words for the time rules (backend.where.time_phrases).

Periods are [start, end) at midnight in now's zone; calendar weeks are ISO weeks (Monday first).
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, time, timedelta

Period = tuple[datetime, datetime]
Bounds = tuple[datetime | None, datetime | None]

CN_DIGITS = {
    "零": 0, "〇": 0, "○": 0, "Ｏ": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
    "七": 7, "八": 8, "九": 9,
}  # fmt: skip
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
EN_NUMBERS |= {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
EN_NUMBERS |= {"several": 5}
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}


def midnight(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(), tzinfo=now.tzinfo)


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def period(now: datetime, year: int, month: int | None = None, day: int | None = None) -> Period | None:
    """The year, month or day as a period; None when it is not a date (2023年13月)."""
    try:
        if month is None:
            return midnight(date(year, 1, 1), now), midnight(date(year + 1, 1, 1), now)
        first = date(year, month, day or 1)
    except ValueError:
        return None
    if day is None:
        return midnight(first, now), midnight(add_months(first, 1), now)
    return midnight(first, now), midnight(first + timedelta(days=1), now)


def months_of(now: datetime, year: int, first_month: int, months: int) -> Period:
    """`months` calendar months from the first of `first_month` (a quarter: 3, a half year: 6)."""
    first = date(year, first_month, 1)
    return midnight(first, now), midnight(add_months(first, months), now)


def years(now: datetime, first: int, last: int) -> Period | None:
    """From the first of January of `first` to the end of `last` ("2021-2023年"); None when reversed."""
    if first > last:
        return None
    return midnight(date(first, 1, 1), now), midnight(date(last + 1, 1, 1), now)


def quarter(now: datetime, year: int | None, q: int) -> Period | None:
    """Quarter q of `year`; without a year, the latest quarter q that has begun (as "since March")."""
    if not 1 <= q <= 4:
        return None
    if year is None:
        year = now.year if 3 * q - 2 <= now.month else now.year - 1
    return months_of(now, year, 3 * q - 2, 3)


def calendar_period(now: datetime, unit: str, offset: int) -> Period:
    """The calendar day / week / month / quarter / year containing now, moved `offset` periods."""
    today = now.date()
    if unit == "day":
        first = today + timedelta(days=offset)
        return midnight(first, now), midnight(first + timedelta(days=1), now)
    if unit == "week":
        first = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return midnight(first, now), midnight(first + timedelta(weeks=1), now)
    months = {"month": 1, "quarter": 3, "year": 12}[unit]
    first = date(today.year, 1 if unit == "year" else today.month - (today.month - 1) % months, 1)
    first = add_months(first, offset * months)
    return midnight(first, now), midnight(add_months(first, months), now)


def weekday_of_week(now: datetime, weekday: int, week_offset: int) -> Period:
    """The day `weekday` (Monday 0) of the ISO week `week_offset` weeks from now's (上周五: -1)."""
    monday = calendar_period(now, "week", week_offset)[0].date()
    return _day(now, monday + timedelta(days=weekday))


def last_weekday(now: datetime, weekday: int) -> Period:
    """The latest `weekday` strictly before today ("last Friday" on a Saturday is yesterday)."""
    today = now.date()
    back = (today.weekday() - weekday) % 7 or 7
    return _day(now, today - timedelta(days=back))


def _day(now: datetime, day: date) -> Period:
    return midnight(day, now), midnight(day + timedelta(days=1), now)


def ago(now: datetime, n: int, unit: str) -> Period:
    """The calendar day / week / month / year that held now minus n units ("三天前", "2 weeks ago")."""
    if unit in ("month", "year"):
        return calendar_period(now, unit, -n)
    return calendar_period(now - timedelta(**{f"{unit}s": n}), unit, 0)


def back(now: datetime, n: float, unit: str) -> datetime:
    """now minus n units (months and years on the calendar; half a year is six months)."""
    if unit in ("month", "year"):
        months = round(n * (12 if unit == "year" else 1))
        if months == 0 and n > 0:  # half a month
            return now - timedelta(days=15)
        moved = add_months(now.date(), -months)
        return datetime.combine(moved, now.timetz())
    return now - timedelta(**{f"{unit}s": n})


def cn_number(word: str | None) -> float | None:
    """一 / 十二 / 二十三 / 半 / 几 / 15 as a number (几 is three)."""
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
        return float((CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (CN_DIGITS.get(ones, 0) if ones else 0))
    return float(CN_DIGITS[word]) if word in CN_DIGITS else None


def year_number(word: str) -> int | None:
    """2023 or 二〇二三 / 二零二三 (digit by digit) as a year."""
    if word.isdigit():
        return int(word)
    digits = [CN_DIGITS.get(c) for c in word]
    if any(d is None for d in digits):
        return None
    return int("".join(str(d) for d in digits))


def en_number(word: str | None) -> float:
    word = (word or "one").lower()
    return float(word) if word.isdigit() else float(EN_NUMBERS.get(word, 0))


def unit_name(word: str) -> str:
    word = word.lower().rstrip("s")
    return {
        "小时": "hour", "天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week",
        "个月": "month", "月": "month", "年": "year",
    }.get(word, word)  # fmt: skip


def open_range(span: Period | None, modifier: str | None) -> Bounds | None:
    """A period turned into a range by what follows or precedes it (以来 / since / before / ...)."""
    if span is None:
        return None
    start, end = span
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
