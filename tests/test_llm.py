"""The LLM layer: prompt files, the extractive fallback, Gemini over HTTP (a local fake), the factory."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import cast

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from backend.config import Settings
from backend.errors import ProviderError
from backend.llm import (
    ExtractiveLLM,
    GeminiLLM,
    PromptError,
    SourceText,
    Turn,
    create_llm,
    format_sources,
    load_prompt,
)
from backend.llm.base import Sampling
from backend.llm.extractive import MAX_SENTENCE_CHARS
from backend.llm.usage import metering
from backend.testing import ScriptedLLM
from tests.fake_gemini import FakeGemini, gemini_response

PROMPT_VARIABLES = {
    "answer_system": set(),
    "answer_user": {"question", "sources"},
    "rewrite_followup": {"history", "message"},
    "gap_queries": {"question", "evidence_summary", "max_queries"},
    "not_found_zh": set(),
    "not_found_en": set(),
    "research_plan": {"question", "max_sections", "max_queries"},
    "research_sufficiency": {
        "question",
        "original_question",
        "confidence_level",
        "completed_queries",
        "evidence",
        "max_queries",
    },
}

KANGAROO = [
    SourceText(3, "尤金袋鼠", "概述", "尤金袋鼠是一种小型袋鼠。它们在夜间活动，以草为食。"),
    SourceText(7, "尤金袋鼠", "分布", "尤金袋鼠分布在澳洲南部岛屿及西岸地区。1998年的调查记录了数千只。"),
    SourceText(9, "树袋熊", "", "树袋熊以桉树叶为食，分布在澳洲东部。"),
]
PANTHERS = [
    SourceText(
        1,
        "Carolina Panthers",
        "History",
        "The Carolina Panthers are a professional American football team. The team was founded "
        "in 1993 by Jerry Richardson. It plays its home games in Charlotte.",
    ),
    SourceText(2, "NFL", "", "The NFL has 32 teams. Two expansion teams joined in 1995."),
]


def markers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", text)}


# --- prompts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "variables"), PROMPT_VARIABLES.items())
def test_every_prompt_renders_with_its_declared_variables(name: str, variables: set[str]) -> None:
    prompt = load_prompt(name)
    assert set(prompt.variables) == variables
    rendered = prompt.render(**{v: f"<{v} value>" for v in variables})
    assert all(f"<{v} value>" in rendered for v in variables)
    assert not re.search(r"\{[a-z_]+\}", rendered)


def test_render_names_the_missing_variable() -> None:
    with pytest.raises(PromptError, match="missing question"):
        load_prompt("answer_user").render(sources="[1] x")


def test_render_rejects_an_unknown_variable() -> None:
    with pytest.raises(PromptError, match="unknown questoin"):
        load_prompt("answer_user").render(question="q", sources="s", questoin="typo")


def test_values_with_braces_are_inserted_verbatim() -> None:
    rendered = load_prompt("answer_user").render(question="{sources}", sources='{"a": 1}')
    assert "Question: {sources}" in rendered
    assert '{"a": 1}' in rendered


def test_prompts_are_read_once_and_unknown_names_fail() -> None:
    assert load_prompt("answer_user") is load_prompt("answer_user")
    with pytest.raises(PromptError, match="no prompt file"):
        load_prompt("does_not_exist")


def test_sources_block_shows_number_title_heading_and_content() -> None:
    block = format_sources([KANGAROO[1], KANGAROO[2]])
    assert block == (
        '<source n="7">\n尤金袋鼠 > 分布\n'
        "尤金袋鼠分布在澳洲南部岛屿及西岸地区。1998年的调查记录了数千只。\n</source>\n\n"
        '<source n="9">\n树袋熊\n树袋熊以桉树叶为食，分布在澳洲东部。\n</source>'
    )


# --- extractive ------------------------------------------------------------------------------------


def test_extractive_quotes_the_chinese_sentence_that_answers() -> None:
    answer = "".join(ExtractiveLLM().answer("尤金袋鼠分布在哪些地区？", KANGAROO))
    assert answer.startswith("尤金袋鼠分布在澳洲南部岛屿及西岸地区。[7]")
    assert markers(answer) <= {3, 7, 9}


def test_extractive_quotes_the_english_sentence_that_answers() -> None:
    answer = "".join(ExtractiveLLM().answer("Who founded the Carolina Panthers?", PANTHERS))
    assert "founded in 1993 by Jerry Richardson.[1]" in answer
    assert markers(answer) == {1}


def test_extractive_answers_an_faq_heading_with_the_sentence_below_it_in_the_question_language() -> None:
    sources = [
        SourceText(
            1,
            "FAQ",
            "What happens when no Gemini API key is set?",
            "## What happens when no Gemini API key is set?\n\nEmbeddings come from the bundled local "
            "model and answers are extractive.",
        ),
        SourceText(2, "概览", "嵌入模型", "默认使用 Gemini 模型；没有配置 API 密钥时，使用本地模型。"),
    ]
    answer = "".join(ExtractiveLLM().answer("What happens when no Gemini API key is set?", sources))
    assert answer.startswith("Embeddings come from the bundled local model and answers are extractive.[1]")
    assert "What happens" not in answer  # the heading itself is not quoted as evidence


def test_extractive_prefers_sentences_from_different_sources() -> None:
    sources = [
        SourceText(1, "a", "", "袋鼠分布在澳洲。袋鼠分布在澳洲大陆。"),
        SourceText(2, "b", "", "袋鼠分布在新几内亚。"),
    ]
    answer = "".join(ExtractiveLLM().answer("袋鼠分布在哪里", sources))
    assert markers(answer) == {1, 2}


def test_extractive_streams_one_delta_per_sentence() -> None:
    # Two sentences compete for "where is it": both are quoted, each its own delta.
    deltas = list(ExtractiveLLM().answer("尤金袋鼠在哪里？", KANGAROO))
    assert len(deltas) >= 2
    assert " " not in "".join(deltas)
    assert all(re.search(r"\[\d+\]$", d) for d in deltas)


def test_extractive_spaces_english_sentences_only() -> None:
    sources = [PANTHERS[1], SourceText(5, "袋鼠", "", "袋鼠队成立于1995年。")]
    answer = "".join(ExtractiveLLM().answer("1995", sources))
    assert answer == "Two expansion teams joined in 1995.[2] 袋鼠队成立于1995年。[5]"


def test_extractive_never_answers_empty() -> None:
    answer = "".join(ExtractiveLLM().answer("今天天气怎么样？", KANGAROO))
    assert answer == "尤金袋鼠是一种小型袋鼠。[3]"


def test_extractive_cuts_long_sentences() -> None:
    source = SourceText(4, "t", "", "袋鼠" + "很" * 500 + "大。")
    answer = "".join(ExtractiveLLM().answer("袋鼠", [source]))
    assert answer.endswith("…[4]")
    assert len(answer) <= MAX_SENTENCE_CHARS + 4


def test_extractive_cannot_complete() -> None:
    assert ExtractiveLLM().complete("system", "prompt") is None


# --- scripted --------------------------------------------------------------------------------------


def test_scripted_llm_plays_back_and_records() -> None:
    llm = ScriptedLLM(answers=["第一个答案[1]", "第二个答案[2]"], completions=["rewritten"])
    history = (Turn("user", "hi"),)
    first = list(llm.answer("q1", KANGAROO[:1], history))
    assert len(first) > 1
    assert "".join(first) == "第一个答案[1]"
    assert "".join(llm.answer("q2", KANGAROO)) == "第二个答案[2]"
    assert "".join(llm.answer("q3", KANGAROO)) == "第二个答案[2]"  # the last answer repeats
    assert [c.question for c in llm.calls] == ["q1", "q2", "q3"]
    assert llm.calls[0].sources == (KANGAROO[0],)
    assert llm.calls[0].history == history
    assert llm.complete("sys", "prompt") == "rewritten"
    assert llm.complete_calls[0].prompt == "prompt"
    assert ScriptedLLM().complete("sys", "prompt") is None


def test_scripted_llm_raises_a_scripted_error_while_streaming() -> None:
    stream = ScriptedLLM(answers=[ProviderError("down")]).answer("q", KANGAROO)
    with pytest.raises(ProviderError, match="down"):
        next(stream)


# --- Gemini against a local fake server ------------------------------------------------------------


def gemini(fake: FakeGemini | SimpleNamespace, retries: int = 2) -> GeminiLLM:
    settings = Settings(
        _env_file=None,
        gemini_api_key="test-key",
        gemini_base_url=fake.url,
        gemini_chat_model="gemini-2.5-flash",
        llm_max_retries=retries,
        llm_timeout_s=5,
    )
    return GeminiLLM(settings, backoff_s=0.001)


def test_gemini_complete_posts_generate_content(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_text("尤金袋鼠的作者是谁？")
    assert gemini(fake_gemini).complete("Rewrite queries.", "那它的作者是谁？") == "尤金袋鼠的作者是谁？"
    path, body, headers = fake_gemini.requests[0]
    assert path.endswith("/models/gemini-2.5-flash:generateContent")
    assert headers["x-goog-api-key"] == "test-key"
    assert body["systemInstruction"]["parts"][0]["text"] == "Rewrite queries."
    assert body["contents"][0]["parts"][0]["text"] == "那它的作者是谁？"


def test_gemini_complete_json_holds_the_model_to_the_schema_and_reports_usage(
    fake_gemini: FakeGemini,
) -> None:
    schema = {"type": "object", "properties": {"sufficient": {"type": "boolean"}}, "required": ["sufficient"]}
    fake_gemini.reply_text('好的：\n```json\n{"sufficient": true}\n```', total_tokens=321)
    with metering() as meter:
        assert gemini(fake_gemini).complete_json("Judge.", "evidence", schema) == {"sufficient": True}
    assert (meter.reported, meter.tokens) == (True, 321)
    _, body, _ = fake_gemini.requests[0]
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert body["generationConfig"]["responseJsonSchema"] == schema
    assert body["systemInstruction"]["parts"][0]["text"] == "Judge."


def test_gemini_complete_json_without_an_object_is_none(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_text("I cannot help with that.")
    assert gemini(fake_gemini).complete_json("", "prompt", {"type": "object"}) is None


def test_structured_output_of_the_other_providers() -> None:
    assert ExtractiveLLM().complete_json("", "prompt", {}) is None
    scripted = ScriptedLLM(json_completions=['Sure! {"a": 1} hope this helps', "no json", {"b": 2}])
    assert [scripted.complete_json("", "p", {}) for _ in range(3)] == [{"a": 1}, None, {"b": 2}]
    assert len(scripted.json_calls) == 3


def test_gemini_answer_streams_sse_chunks(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_stream("尤金袋鼠分布在", "澳洲南部岛屿", "及西岸地区。[7]")
    history = [Turn("user", "尤金袋鼠是什么？"), Turn("assistant", "一种小型袋鼠。[3]")]
    deltas = list(gemini(fake_gemini).answer("它分布在哪里？", KANGAROO, history))
    assert deltas == ["尤金袋鼠分布在", "澳洲南部岛屿", "及西岸地区。[7]"]
    path, body, _ = fake_gemini.requests[0]
    assert path.endswith(":streamGenerateContent?alt=sse")
    assert body["systemInstruction"]["parts"][0]["text"] == load_prompt("answer_system").render()
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    prompt = body["contents"][-1]["parts"][0]["text"]
    assert '<source n="7">\n尤金袋鼠 > 分布\n尤金袋鼠分布在澳洲南部岛屿' in prompt
    assert prompt.rstrip().endswith("Answer using only the sources above and cite them as [n].")
    assert "Question: 它分布在哪里？" in prompt


def test_gemini_retries_503_then_succeeds(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_error(503, "UNAVAILABLE", "The model is overloaded.")
    fake_gemini.reply_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.")
    fake_gemini.reply_stream("答案[3]")
    assert "".join(gemini(fake_gemini).answer("尤金袋鼠是什么？", KANGAROO)) == "答案[3]"
    assert len(fake_gemini.requests) == 3


def test_gemini_gives_up_after_max_retries(fake_gemini: FakeGemini) -> None:
    for _ in range(2):
        fake_gemini.reply_error(503, "UNAVAILABLE", "The model is overloaded.")
    with pytest.raises(ProviderError, match="failed after 2 attempts: 503 UNAVAILABLE The model is"):
        gemini(fake_gemini, retries=1).complete("", "prompt")


def test_gemini_does_not_retry_a_bad_request(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_error(400, "INVALID_ARGUMENT", "API key not valid.")
    with pytest.raises(ProviderError, match="rejected the request: 400 INVALID_ARGUMENT API key not valid"):
        list(gemini(fake_gemini).answer("q", KANGAROO))
    assert len(fake_gemini.requests) == 1


def test_gemini_retries_an_unreachable_server_then_explains() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ProviderError, match="failed after 2 attempts: ConnectError"):
        gemini(SimpleNamespace(url=url), retries=1).complete("", "prompt")


def test_gemini_reports_an_answer_without_text(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_stream(finish="SAFETY")
    with pytest.raises(ProviderError, match="no text.*SAFETY"):
        list(gemini(fake_gemini).answer("q", KANGAROO))


def test_gemini_answer_takes_the_clients_temperature_and_token_limit(fake_gemini: FakeGemini) -> None:
    fake_gemini.reply_stream("澳洲南部[7]")
    list(gemini(fake_gemini).answer("它分布在哪里？", KANGAROO, (), Sampling(temperature=0.3, max_tokens=99)))
    _, body, _ = fake_gemini.requests[0]
    assert body["generationConfig"]["temperature"] == 0.3
    assert body["generationConfig"]["maxOutputTokens"] == 99
    assert body["systemInstruction"]["parts"][0]["text"] == load_prompt("answer_system").render()


def test_gemini_does_not_retry_once_text_was_streamed() -> None:
    calls = []

    def broken_stream(**kwargs: object) -> Iterator[types.GenerateContentResponse]:
        calls.append(kwargs)
        yield types.GenerateContentResponse.model_validate(gemini_response("尤金袋鼠"))
        raise genai_errors.ServerError(503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "x"}})

    client = SimpleNamespace(models=SimpleNamespace(generate_content_stream=broken_stream))
    llm = GeminiLLM(
        Settings(_env_file=None, llm_max_retries=3), client=cast(genai.Client, client), backoff_s=0.001
    )
    stream = llm.answer("q", KANGAROO)
    assert next(stream) == "尤金袋鼠"
    with pytest.raises(ProviderError, match="broke off"):
        next(stream)
    assert len(calls) == 1


# --- factory ---------------------------------------------------------------------------------------


@pytest.fixture
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "LLM_PROVIDER", "GEMINI_BASE_URL", "GEMINI_CHAT_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_llm_env")
def test_factory_chooses_by_settings() -> None:
    assert isinstance(create_llm(Settings(_env_file=None)), ExtractiveLLM)
    llm = create_llm(Settings(_env_file=None, gemini_api_key="k"))
    assert isinstance(llm, GeminiLLM)
    assert (llm.name, llm.generator) == ("gemini-2.5-flash", "gemini")
    forced = Settings(_env_file=None, gemini_api_key="k", llm_provider="extractive")
    assert isinstance(create_llm(forced), ExtractiveLLM)


@pytest.mark.usefixtures("no_llm_env")
def test_factory_explains_a_missing_key() -> None:
    with pytest.raises(ProviderError, match="GEMINI_API_KEY"):
        create_llm(Settings(_env_file=None, llm_provider="gemini"))
