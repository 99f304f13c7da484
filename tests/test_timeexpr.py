"""pgmem.timeexpr: the parsing table (zh and en, month and year boundaries, week starts,
time zones), resolution at write and the windows of questions. Pure Python."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pgmem import timeexpr as te

TUESDAY = date(2026, 12, 1)  # a Tuesday
SUNDAY = date(2026, 12, 6)
MONDAY = date(2026, 11, 30)
NEW_YEARS_EVE = date(2026, 12, 31)  # a Thursday
NEW_YEAR = date(2026, 1, 1)  # a Thursday
END_OF_MARCH = date(2026, 3, 31)
LEAP_DAY = date(2028, 2, 29)


@pytest.mark.parametrize(
    ("today", "text", "label"),
    [
        # English, days
        (TUESDAY, "today", "2026-12-01"),
        (TUESDAY, "tonight", "2026-12-01"),
        (TUESDAY, "yesterday", "2026-11-30"),
        (TUESDAY, "last night", "2026-11-30"),
        (TUESDAY, "tomorrow", "2026-12-02"),
        (TUESDAY, "the day after tomorrow", "2026-12-03"),
        (TUESDAY, "the day before yesterday", "2026-11-29"),
        (TUESDAY, "in two days", "2026-12-03"),
        (TUESDAY, "in 10 days", "2026-12-11"),
        (TUESDAY, "two days ago", "2026-11-29"),
        (TUESDAY, "a week ago", "2026-11-24"),
        (TUESDAY, "3 weeks from now", "2026-12-22"),
        # English, weekdays: next/last = the first one after/before today
        (TUESDAY, "next Friday", "2026-12-04"),
        (TUESDAY, "last Friday", "2026-11-27"),
        (TUESDAY, "this Friday", "2026-12-04"),
        (TUESDAY, "next Tuesday", "2026-12-08"),
        (TUESDAY, "last Tuesday", "2026-11-24"),
        (MONDAY, "this Monday", "2026-11-30"),
        (MONDAY, "next Monday", "2026-12-07"),
        (MONDAY, "last Monday", "2026-11-23"),
        (SUNDAY, "this Monday", "2026-11-30"),  # weeks start on Monday
        (SUNDAY, "this Sunday", "2026-12-06"),
        # English, periods
        (TUESDAY, "this week", "2026-11-30/2026-12-06"),
        (SUNDAY, "this week", "2026-11-30/2026-12-06"),
        (TUESDAY, "last week", "2026-11-23/2026-11-29"),
        (TUESDAY, "next week", "2026-12-07/2026-12-13"),
        (TUESDAY, "this weekend", "2026-12-05/2026-12-06"),
        (SUNDAY, "this weekend", "2026-12-05/2026-12-06"),
        (TUESDAY, "last weekend", "2026-11-28/2026-11-29"),
        (TUESDAY, "last month", "2026-11"),
        (TUESDAY, "next year", "2027"),
        (TUESDAY, "last May", "2026-05"),
        (TUESDAY, "next May", "2027-05"),
        # boundaries
        (NEW_YEARS_EVE, "tomorrow", "2027-01-01"),
        (NEW_YEARS_EVE, "next month", "2027-01"),
        (NEW_YEARS_EVE, "next week", "2027-01-04/2027-01-10"),
        (NEW_YEARS_EVE, "in two days", "2027-01-02"),
        (NEW_YEARS_EVE, "明年", "2027"),
        (NEW_YEARS_EVE, "下个月", "2027-01"),
        (NEW_YEAR, "yesterday", "2025-12-31"),
        (NEW_YEAR, "last month", "2025-12"),
        (NEW_YEAR, "last year", "2025"),
        (NEW_YEAR, "上周", "2025-12-22/2025-12-28"),
        (NEW_YEAR, "上个月", "2025-12"),
        (NEW_YEAR, "去年五月", "2025-05"),
        (END_OF_MARCH, "一个月前", "2026-02-28"),  # no 31 February: the month's last day
        (END_OF_MARCH, "in a month", "2026-04-30"),
        (LEAP_DAY, "a year ago", "2027-02-28"),
        # Chinese, days
        (TUESDAY, "今天", "2026-12-01"),
        (TUESDAY, "昨天", "2026-11-30"),
        (TUESDAY, "昨晚", "2026-11-30"),
        (TUESDAY, "明天", "2026-12-02"),
        (TUESDAY, "后天", "2026-12-03"),
        (TUESDAY, "大后天", "2026-12-04"),
        (TUESDAY, "前天", "2026-11-29"),
        (TUESDAY, "大前天", "2026-11-28"),
        (TUESDAY, "3天前", "2026-11-28"),
        (TUESDAY, "三天后", "2026-12-04"),
        (TUESDAY, "两周前", "2026-11-17"),
        (TUESDAY, "两个月后", "2027-02-01"),
        (TUESDAY, "十天以后", "2026-12-11"),
        # Chinese, weeks: 下周三 is next week's Wednesday
        (TUESDAY, "下周三", "2026-12-09"),
        (TUESDAY, "上周三", "2026-11-25"),
        (TUESDAY, "周三", "2026-12-02"),
        (TUESDAY, "星期天", "2026-12-06"),
        (TUESDAY, "下个星期一", "2026-12-07"),
        (TUESDAY, "上礼拜五", "2026-11-27"),
        (SUNDAY, "本周一", "2026-11-30"),
        (SUNDAY, "下周一", "2026-12-07"),
        (TUESDAY, "上周", "2026-11-23/2026-11-29"),
        (TUESDAY, "下周", "2026-12-07/2026-12-13"),
        (TUESDAY, "这周末", "2026-12-05/2026-12-06"),
        (TUESDAY, "周末", "2026-12-05/2026-12-06"),
        (TUESDAY, "下周末", "2026-12-12/2026-12-13"),
        # Chinese, months and years
        (TUESDAY, "上个月", "2026-11"),
        (TUESDAY, "这个月", "2026-12"),
        (TUESDAY, "去年", "2025"),
        (TUESDAY, "前年", "2024"),
        (TUESDAY, "去年五月", "2025-05"),
        (TUESDAY, "今年3月", "2026-03"),
        (TUESDAY, "明年二月十四号", "2027-02-14"),
    ],
)
def test_parsing_table(today: date, text: str, label: str) -> None:
    [mention] = te.find(f"xx {text} yy" if text.isascii() else f"我{text}去", today)
    assert mention.span.label == label
    assert mention.relative


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("on 3 June, 2023", "2023-06-03"),
        ("on May 3, 2023", "2023-05-03"),
        ("in December 2023", "2023-12"),
        ("in 2022", "2022"),
        ("2023年5月", "2023-05"),
        ("2023年5月3日", "2023-05-03"),
        ("2023年", "2023"),
    ],
)
def test_explicit_dates_do_not_depend_on_today(text: str, label: str) -> None:
    for today in (TUESDAY, NEW_YEAR):
        [mention] = te.find(text, today)
        assert (mention.span.label, mention.relative) == (label, False)


@pytest.mark.parametrize(
    "text",
    [
        "每周一开会",  # every Monday
        "I go running every Monday",
        "The meeting went well",
        "When did Melanie go camping in June?",  # a month without a year
        "on 31 June, 2023",  # no such day: not its month either
        "五月的花",
    ],
)
def test_texts_without_a_date(text: str) -> None:
    assert te.find(text, TUESDAY) == []


def test_longest_expression_wins() -> None:
    assert [m.text for m in te.find("下周三和下周", TUESDAY)] == ["下周三", "下周"]
    assert [m.text for m in te.find("the day after tomorrow", TUESDAY)] == [
        "the day after tomorrow"
    ]


# --------------------------------------------------------------------- write


def test_resolve_writes_absolute_dates_beside_the_words() -> None:
    at = datetime(2026, 12, 1, 10, tzinfo=UTC)
    future = te.resolve("next Friday I fly to Berlin", at, UTC)
    assert future.content == "next Friday (2026-12-04) I fly to Berlin"
    assert future.valid_from is None
    assert future.event_end == datetime(2026, 12, 5, tzinfo=UTC)
    zh = te.resolve("我老婆下周过生日", at, UTC)
    assert zh.content == "我老婆下周（2026-12-07/2026-12-13）过生日"
    assert zh.event_end == datetime(2026, 12, 14, tzinfo=UTC)
    past = te.resolve("Yesterday I adopted a cat and 3天前 我搬家了", at, UTC)
    assert past.content == "Yesterday (2026-11-30) I adopted a cat and 3天前（2026-11-28） 我搬家了"
    assert past.valid_from == datetime(2026, 11, 28, tzinfo=UTC)  # the earliest
    assert past.event_end is None
    today = te.resolve("Today is my birthday", at, UTC)
    assert (today.valid_from, today.event_end) == (None, None)
    assert today.content == "Today (2026-12-01) is my birthday"


def test_resolve_leaves_explicit_and_resolved_dates_alone() -> None:
    at = datetime(2026, 12, 1, 10, tzinfo=UTC)
    for text in ("I was born on 3 June, 1990", "I like tea", "每周一开会"):
        assert te.resolve(text, at, UTC) == te.Resolved(text, (), None, None)
    once = te.resolve("下周三开会, tomorrow too", at, UTC).content
    assert te.resolve(once, at, UTC).content == once  # resolving twice adds nothing


def test_resolve_in_the_subjects_time_zone() -> None:
    # 20:00 UTC on 1 December is 04:00 on 2 December in Shanghai, noon on 1 December in
    # Los Angeles: "tomorrow" is a different day in each.
    at = datetime(2026, 12, 1, 20, tzinfo=UTC)
    shanghai, la = te.time_zone("Asia/Shanghai"), te.time_zone("America/Los_Angeles")
    assert te.resolve("tomorrow", at, UTC).content == "tomorrow (2026-12-02)"
    assert te.resolve("tomorrow", at, shanghai).content == "tomorrow (2026-12-03)"
    assert te.resolve("tomorrow", at, la).content == "tomorrow (2026-12-02)"
    past = te.resolve("昨天去爬山", at, shanghai)
    assert past.content == "昨天（2026-12-01）去爬山"
    assert past.valid_from == datetime(2026, 11, 30, 16, tzinfo=UTC)  # midnight in Shanghai


def test_time_zone_names() -> None:
    assert te.time_zone(None) is UTC
    assert te.time_zone("UTC") is UTC
    with pytest.raises(ValueError, match="unknown time zone"):
        te.time_zone("Mars/Olympus")


def test_strip_drops_relative_times_only() -> None:
    assert te.strip("Lisbon 3 days ago", TUESDAY) == "Lisbon"
    assert te.strip("下周三的会议", TUESDAY) == "的会议"
    assert te.strip("Berlin in May 2023", TUESDAY) == "Berlin in May 2023"
    assert te.strip("next Friday", TUESDAY) == ""


# ------------------------------------------------------------------- queries


def test_question_periods_relative_to_now_and_time_zone() -> None:
    now = datetime(2026, 12, 1, 20, tzinfo=UTC)
    assert te.period("what did I do last week?", now) == (
        datetime(2026, 11, 23, tzinfo=UTC),
        datetime(2026, 11, 30, tzinfo=UTC),
    )
    shanghai = te.time_zone("Asia/Shanghai")
    since, until = te.period("我昨天做了什么？", now, shanghai) or (None, None)
    assert (since, until) == (
        datetime(2026, 12, 1, tzinfo=shanghai),
        datetime(2026, 12, 2, tzinfo=shanghai),
    )
    assert te.period("去年五月我去了哪里", now) == (
        datetime(2025, 5, 1, tzinfo=UTC),
        datetime(2025, 6, 1, tzinfo=UTC),
    )
    assert te.period("What did she paint in May 2023?", now) == (
        datetime(2023, 5, 1, tzinfo=UTC),
        datetime(2023, 6, 1, tzinfo=UTC),
    )
    assert te.period("what did I eat two days ago", now) == (
        datetime(2026, 11, 29, tzinfo=UTC),
        datetime(2026, 11, 30, tzinfo=UTC),
    )
    assert te.period("what do I like?", now) is None
    assert te.window("what did I do last week?", now) == (
        datetime(2026, 11, 23, tzinfo=UTC) - te.WINDOW_BEFORE,
        datetime(2026, 11, 30, tzinfo=UTC) + te.WINDOW_AFTER,
    )
    assert te.window("what do I like?", now) is None


def test_explicit_period_ignores_relative_times() -> None:
    assert te.explicit_period("What did John do last weekend?") is None
    assert te.explicit_period("2023年5月3日发生了什么") == (
        datetime(2023, 5, 3, tzinfo=UTC),
        datetime(2023, 5, 4, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "question",
    [
        "我今天又想吃冰淇淋了，上次吃的是什么口味？",
        "What should I cook today? Last time I made risotto.",
        "今晚吃什么好？",
        "tonight I want a movie, which one did I like?",
    ],
)
def test_the_day_a_question_is_asked_names_no_window(question: str) -> None:
    now = datetime(2026, 12, 3, 12, tzinfo=UTC)
    assert te.period(question, now) is None
    assert te.window(question, now) is None


def test_a_calendar_range_beside_today_still_names_its_window() -> None:
    now = datetime(2026, 12, 3, 12, tzinfo=UTC)
    period = te.period("我今天想起上周去的那家店，叫什么？", now)
    assert period is not None
    assert [d.date().isoformat() for d in period] == ["2026-11-23", "2026-11-30"]
    yesterday = te.period("What did I eat yesterday?", now)
    assert yesterday is not None and yesterday[0].date().isoformat() == "2026-12-02"
