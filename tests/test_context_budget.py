"""The context builder's real token budget: Gemini's count-tokens API (the local fake) or the calibrated
estimate, the reply reserve, Chinese near-duplicate removal, and what the diagnostics say was dropped."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.chat.context import SOURCE_FRAMING_TOKENS, ContextBuilder
from backend.config import Settings
from backend.llm import GeminiLLM, Turn
from backend.llm.token_count import EstimateCounter, GeminiTokenCounter, create_token_counter
from backend.search.types import ScoredChunk
from backend.telemetry import Metrics
from backend.text.tokens import estimate_tokens, truncate_to_tokens

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)

# Texts and their token counts by the Gemma 3 tokenizer (Gemini's), measured offline (docs/context-budget.md).
MEASURED = [
    (
        "尤金袋鼠是袋鼠科中细小的成员，分布在澳洲南部岛屿及西岸地区。它们主要以草为食，夜间活动，白天则躲在灌木丛中休息。",
        45,
    ),
    (
        "在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。後來威廉·瓊斯發現印歐語系，也要歸功於對梵語的研究。",
        44,
    ),
    (
        "The Panthers defense gave up just 308 points, ranking sixth in the league, while also leading "
        "the NFL in interceptions with 24.",
        30,
    ),
    (
        "# 安装\n\n运行 `make run` 即可启动整个系统；hybrid_search 的参数见 sql/README.md（2024年3月更新）。",
        35,
    ),
]
DISTINCT = [
    "考拉生活在澳洲东部的桉树林中，以桉树叶为食，每天睡眠长达二十小时，几乎不喝水，因为树叶里的水分已经足够。",
    "大熊猫主要分布在四川、陕西和甘肃的山区，竹子占其食物的百分之九十九，成年熊猫每天要吃十几公斤竹子。",
    "鸭嘴兽是少数会产卵的哺乳动物之一，雄性后腿上有毒刺，它们在水中依靠嘴上的电感受器寻找虾和昆虫幼虫。",
    "企鹅大多生活在南半球，帝企鹅在南极的冬天繁殖，雄企鹅把蛋放在脚背上孵化，两个月里几乎不进食。",
    "袋熊的粪便呈立方体，这种形状可以防止粪便滚落，便于标记领地；它们用坚硬的臀部堵住洞口来抵御天敌。",
]
PARAGRAPH = (
    "尤金袋鼠是袋鼠科中细小的成员，分布在澳洲南部岛屿及西岸地区。它们主要以草为食，夜间活动，白天则躲在灌木丛中休息。"
    "雌性每年繁殖一次，幼崽在育儿袋中生活约九个月。由于狐狸和猫的捕食，它们在大陆上的数量曾经大幅下降。"
)


def chunk(n: int, content: str, title: str = "尤金袋鼠") -> ScoredChunk:
    return ScoredChunk(
        chunk_id=n,
        document_id=uuid.uuid4(),
        external_id=f"doc-{n}",
        title=title,
        heading_path=[],
        position=0,
        content=content,
        content_hash=f"hash-{content}",
        metadata={},
        content_tokens="",
        vector_rank=None,
        full_text_rank=None,
        rrf_score=None,
        similarity=0.9,
    )


def settings(**overrides) -> Settings:
    return Settings(_env_file=None, **overrides)


@pytest.mark.parametrize(("text", "tokens"), MEASURED)
def test_the_calibrated_estimate_is_within_15_percent_of_gemini_tokens(text, tokens):
    assert abs(estimate_tokens(text) - tokens) <= 0.15 * tokens
    assert estimate_tokens(text, margin=1.1) >= tokens  # the default margin leans high


def test_truncation_cuts_at_a_sentence_end_within_the_budget():
    cut = truncate_to_tokens(PARAGRAPH, 40)
    assert cut.endswith("。")
    assert estimate_tokens(cut) <= 40
    assert PARAGRAPH.startswith(cut)


def test_a_near_duplicate_chinese_paragraph_is_dropped_with_what_it_repeats():
    edited = PARAGRAPH.replace("细小的成员", "较小的成员").replace("九个月", "八个月")
    other = "考拉生活在澳洲东部的桉树林中，以桉树叶为食，每天睡眠长达二十小时。"
    builder = ContextBuilder(settings(), EstimateCounter(1.1), Metrics())
    built = builder.build(
        [chunk(1, PARAGRAPH), chunk(2, edited), chunk(3, other, "考拉"), chunk(4, PARAGRAPH)], scope=A
    )
    assert [c.chunk_id for c in built.chunks] == [1, 3]
    assert [s.n for s in built.sources] == [1, 2]
    reasons = {d.chunk_id: (d.reason, d.duplicate_of) for d in built.dropped}
    assert reasons == {2: ("near_duplicate", 1), 4: ("duplicate", 1)}
    near = next(d for d in built.dropped if d.reason == "near_duplicate")
    assert near.similarity is not None
    assert near.similarity >= 0.8
    assert (built.dropped_near_duplicates, built.dropped_duplicates) == (1, 1)


def test_the_budget_keeps_the_reply_reserve_and_reports_what_it_dropped():
    builder = ContextBuilder(settings(), EstimateCounter(1.0), Metrics())
    prompt = builder.build([], scope=A, question="动物吃什么？", history=[Turn("user", "你好")]).prompt_tokens
    # Room for about two and a half of the five sources after the prompt and a 300-token reply.
    s = settings(context_max_tokens=prompt + 300 + 170, context_reply_tokens=300)
    builder = ContextBuilder(s, EstimateCounter(1.0), Metrics())
    chunks = [chunk(i, text, title=f"文档{i}") for i, text in enumerate(DISTINCT, 1)]
    built = builder.build(chunks, scope=A, question="动物吃什么？", history=[Turn("user", "你好")])
    assert built.prompt_tokens == prompt
    assert built.available_tokens == 170
    assert built.used_tokens <= built.available_tokens
    assert built.truncated + built.dropped_for_budget >= 1
    budget_drops = [d for d in built.dropped if d.reason == "budget"]
    assert len(budget_drops) == built.dropped_for_budget
    assert all(d.tokens and d.tokens > 0 for d in budget_drops)
    assert len(built.chunks) + built.dropped_for_budget == 5


def test_a_bigger_reply_reserve_leaves_less_room_for_sources():
    chunks = [chunk(i, text, title=f"文档{i}") for i, text in enumerate(DISTINCT, 1)]
    small = ContextBuilder(settings(context_reply_tokens=100), EstimateCounter(1.0), Metrics()).build(
        chunks, scope=A
    )
    big = ContextBuilder(
        settings(context_max_tokens=small.prompt_tokens + 400, context_reply_tokens=250),
        EstimateCounter(1.0),
        Metrics(),
    ).build(chunks, scope=A)
    assert big.available_tokens < small.available_tokens
    assert len(big.chunks) < len(small.chunks)


def test_the_best_source_is_kept_even_when_the_prompt_leaves_no_room():
    built = ContextBuilder(
        settings(context_max_tokens=100, context_reply_tokens=90), EstimateCounter(1.0), Metrics()
    ).build([chunk(1, PARAGRAPH * 3), chunk(2, DISTINCT[0], "考拉")], scope=A)
    assert built.available_tokens < 0
    assert [c.chunk_id for c in built.chunks] == [1]  # an answer always gets its best evidence, cut short
    assert built.truncated == 1
    assert built.used_tokens <= 200  # FIRST_SOURCE_FLOOR
    assert [(d.chunk_id, d.reason) for d in built.dropped] == [(2, "budget")]


def gemini_settings(fake_gemini, **overrides) -> Settings:
    values = {
        "llm_provider": "gemini",
        "gemini_api_key": "test-key",
        "gemini_base_url": fake_gemini.url,
        "context_count_timeout_s": 1.0,
    }
    return settings(**{**values, **overrides})


def test_gemini_counts_each_text_once_and_remembers_it(fake_gemini):
    s = gemini_settings(fake_gemini)
    counter = create_token_counter(s, Metrics())
    assert isinstance(counter, GeminiTokenCounter)
    first = counter.count(["尤金袋鼠", "考拉吃桉树叶", "尤金袋鼠"], scope=A)
    assert first.tokens == [4, 6, 4]  # the fake counts one token per character
    assert first.exact == [True, True, True]
    assert sorted(fake_gemini.count_requests) == ["尤金袋鼠", "考拉吃桉树叶"]
    again = counter.count(["考拉吃桉树叶"], scope=A)
    assert again.tokens == [6]
    assert again.methods == {"api": 0, "cache": 1, "estimate": 0}
    assert len(fake_gemini.count_requests) == 2
    counter.close()


def test_a_count_remembered_for_one_caller_is_not_anothers(fake_gemini):
    """The counted texts include the question: B's context diagnostics must not show a cache hit for
    the question A asked (nor answer faster for it)."""
    counter = GeminiTokenCounter(gemini_settings(fake_gemini), Metrics())
    counter.count(["张伟的年薪是多少？"], scope=A)
    theirs = counter.count(["张伟的年薪是多少？"], scope=B)
    assert theirs.methods == {"api": 1, "cache": 0, "estimate": 0}
    assert counter.count(["张伟的年薪是多少？"], scope=A).methods["cache"] == 1
    assert fake_gemini.count_requests == ["张伟的年薪是多少？"] * 2
    counter.close()


@pytest.mark.parametrize(
    ("status", "delay", "says"), [(503, 0.0, "count_tokens failed"), (200, 1.5, "longer")]
)
def test_a_failing_or_slow_count_falls_back_to_the_estimate(fake_gemini, status, delay, says):
    fake_gemini.count_status, fake_gemini.count_delay_s = status, delay
    metrics = Metrics()
    counter = GeminiTokenCounter(gemini_settings(fake_gemini, context_count_timeout_s=0.5), metrics)
    counts = counter.count([PARAGRAPH], scope=A)
    assert counts.tokens == [estimate_tokens(PARAGRAPH, 1.1)]
    assert counts.exact == [False]
    assert counts.error
    assert says in counts.error
    assert metrics.token_counts.labels("estimate")._value.get() == 1
    counter.close()


def test_chat_with_gemini_budgets_with_the_models_own_counts(make_services, fake_gemini):
    s = gemini_settings(fake_gemini, llm_max_retries=0)
    services = make_services(
        llm=GeminiLLM(s, backoff_s=0.001),
        llm_provider="gemini",
        gemini_api_key="test-key",
        gemini_base_url=fake_gemini.url,
        chat_gap_supplement_enabled=False,
        chat_assist_tools=False,
        chat_clarify_enabled=False,  # two copies of one text compete: answer rather than ask which
    )
    docs = [
        {"external_id": "kangaroo", "title": "尤金袋鼠", "content": PARAGRAPH},
        {"external_id": "copy", "title": "尤金袋鼠（转载）", "content": PARAGRAPH.replace("细小", "较小")},
    ]
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
        fake_gemini.reply_stream("尤金袋鼠以草为食[1]。")
        response = client.post("/chat", json={"message": "尤金袋鼠分布在哪些地区？", "top_k": 2})
    assert response.status_code == 200, response.text
    context = response.json()["diagnostics"]["context"]
    assert context["counter"] == "gemini"
    assert context["counted"]["api"] >= 3  # instructions, question template, and the source
    assert context["counter_error"] is None
    assert context["budget_tokens"] == services.settings.context_max_tokens
    assert context["reply_reserve_tokens"] == services.settings.context_reply_tokens
    expected_available = context["budget_tokens"] - context["reply_reserve_tokens"] - context["prompt_tokens"]
    assert context["available_tokens"] == expected_available
    assert context["sources"] == 1  # the edited copy is a near duplicate of the better one
    assert [d["reason"] for d in context["dropped"]] == ["near_duplicate"]
    source = next(t for t in fake_gemini.count_requests if PARAGRAPH[:20] in t)
    assert context["used_tokens"] == len(source) + SOURCE_FRAMING_TOKENS  # the fake: one token per char
