"""LLM_PROVIDER=openai_compatible against a local fake OpenAI-compatible server: plain and streamed
chat, JSON modes and servers without them, retries (429, 5xx, Retry-After), timeouts, malformed replies
(a clear 502, never a 500), token usage, and the factory."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from backend.config import Settings
from backend.errors import ProviderError
from backend.llm import OpenAICompatibleLLM, SourceText, Turn, create_llm, load_prompt
from backend.llm.base import Sampling, ToolSpec
from backend.llm.usage import metering
from backend.testing.fake_openai import FakeOpenAI

KANGAROO = [
    SourceText(3, "尤金袋鼠", "概述", "尤金袋鼠是一种小型袋鼠。它们在夜间活动，以草为食。"),
    SourceText(7, "尤金袋鼠", "分布", "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"),
]
SCHEMA = {"type": "object", "properties": {"sufficient": {"type": "boolean"}}, "required": ["sufficient"]}


def settings(fake: FakeOpenAI, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_provider": "openai_compatible",
        "openai_base_url": fake.url,
        "openai_api_key": fake.api_key,
        "openai_model": fake.model,
        "llm_max_retries": 2,
        "llm_timeout_s": 5,
        **overrides,
    }
    return Settings(_env_file=None, **values)


def llm(fake: FakeOpenAI, **overrides: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(settings(fake, **overrides), backoff_s=0.001, max_backoff_s=0.01)


# --- chat ------------------------------------------------------------------------------------------


def test_complete_posts_a_chat_completion_with_the_key_and_reports_usage(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("尤金袋鼠吃什么？", total_tokens=37)
    with metering() as meter:
        assert llm(fake_openai).complete("Rewrite queries.", "那它吃什么？") == "尤金袋鼠吃什么？"
    assert (meter.reported, meter.tokens) == (True, 37)
    request = fake_openai.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer test-key"
    assert request.body["model"] == "fake-chat"
    assert request.body["messages"] == [
        {"role": "system", "content": "Rewrite queries."},
        {"role": "user", "content": "那它吃什么？"},
    ]
    assert "stream" not in request.body


def test_answer_streams_the_deltas_with_the_history_and_counts_the_streamed_usage(fake_openai):
    fake_openai.reply("尤金袋鼠分布在", "澳洲南部岛屿", "及西岸地区。[7]", total_tokens=321)
    history = [Turn("user", "尤金袋鼠是什么？"), Turn("assistant", "一种小型袋鼠。[3]")]
    with metering() as meter:
        deltas = list(llm(fake_openai).answer("它分布在哪里？", KANGAROO, history))
    assert deltas == ["尤金袋鼠分布在", "澳洲南部岛屿", "及西岸地区。[7]"]
    assert meter.tokens == 321  # from the last chunk, which include_usage asked for
    body = fake_openai.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == load_prompt("answer_system").render()
    assert '<source n="7">\n尤金袋鼠 > 分布\n尤金袋鼠分布在澳洲南部岛屿' in body["messages"][-1]["content"]


def test_a_clients_temperature_and_token_limit_reach_the_server(fake_openai):
    fake_openai.reply("澳洲南部[7]")
    fake_openai.reply("澳洲南部[7]")
    list(llm(fake_openai).answer("它分布在哪里？", KANGAROO, (), Sampling(temperature=0.2, max_tokens=64)))
    list(llm(fake_openai).answer("它分布在哪里？", KANGAROO))
    first, default = (r.body for r in fake_openai.requests)
    assert (first["temperature"], first["max_tokens"]) == (0.2, 64)
    assert "temperature" not in default
    assert "max_tokens" not in default


def test_a_server_that_refuses_stream_options_still_streams_and_is_not_asked_again(fake_openai):
    fake_openai.stream_options = False
    fake_openai.reply("答案[3]")
    fake_openai.reply("又一个答案[7]")
    model = llm(fake_openai)
    assert "".join(model.answer("q", KANGAROO)) == "答案[3]"
    assert "".join(model.answer("q", KANGAROO)) == "又一个答案[7]"
    assert ["stream_options" in r.body for r in fake_openai.requests] == [True, False, False]


def test_a_reasoning_models_think_block_is_not_part_of_the_answer(fake_openai):
    fake_openai.reply("<thi", "nk>用户问的是分布。", "</think>\n\n", "尤金袋鼠分布在澳洲南部[7]。")
    fake_openai.reply("<think>想一想</think>\n尤金袋鼠吃什么？")
    model = llm(fake_openai)
    assert "".join(model.answer("它分布在哪里？", KANGAROO)) == "尤金袋鼠分布在澳洲南部[7]。"
    assert model.complete("", "那它吃什么？") == "尤金袋鼠吃什么？"


# --- structured output -----------------------------------------------------------------------------


def test_complete_json_asks_for_the_json_schema_and_states_it(fake_openai):
    fake_openai.reply('{"sufficient": true}', total_tokens=12)
    with metering() as meter:
        assert llm(fake_openai).complete_json("Judge.", "evidence", SCHEMA) == {"sufficient": True}
    assert meter.tokens == 12
    body = fake_openai.requests[0].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "result", "schema": SCHEMA, "strict": False},
    }
    system = body["messages"][0]["content"]
    assert system.startswith("Judge.\n\n")
    assert '"sufficient"' in system  # the schema is in the instructions too


def test_a_server_without_json_schema_gets_json_mode_from_then_on(fake_openai):
    fake_openai.json_schema = False  # DeepSeek: json_object only
    fake_openai.reply('{"sufficient": false}')
    fake_openai.reply('{"sufficient": true}')
    model = llm(fake_openai)
    assert model.complete_json("", "evidence", SCHEMA) == {"sufficient": False}
    assert llm(fake_openai).complete_json("", "more evidence", SCHEMA) == {"sufficient": True}  # per process
    kinds = [r.body.get("response_format", {}).get("type") for r in fake_openai.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]


def test_a_server_with_neither_mode_is_read_from_plain_text(fake_openai):
    fake_openai.json_schema = fake_openai.json_object = False
    fake_openai.reply('好的，结果如下：\n```json\n{"sufficient": true}\n```\n希望有帮助。')
    assert llm(fake_openai).complete_json("", "evidence", SCHEMA) == {"sufficient": True}
    kinds = [r.body.get("response_format", {}).get("type") for r in fake_openai.requests]
    assert kinds == ["json_schema", "json_object", None]


def test_a_pinned_mode_the_server_refuses_is_a_clear_502(fake_openai):
    fake_openai.json_schema = False
    refused = "rejected the request: HTTP 400 This response_format type"
    with pytest.raises(ProviderError, match=refused) as info:
        llm(fake_openai, openai_structured_output="json_schema").complete_json("", "p", SCHEMA)
    assert info.value.status_code == 502
    assert len(fake_openai.requests) == 1


def test_json_without_an_object_is_none(fake_openai):
    fake_openai.reply("I cannot help with that.")
    assert llm(fake_openai).complete_json("", "prompt", SCHEMA) is None


# --- failures --------------------------------------------------------------------------------------


def test_429_then_success_waits_for_retry_after(fake_openai):
    fake_openai.reply_error(429, "Rate limit reached for requests", retry_after="0.3")
    fake_openai.reply("答案[3]")
    started = time.monotonic()
    assert "".join(llm(fake_openai).answer("q", KANGAROO)) == "答案[3]"
    assert time.monotonic() - started >= 0.3
    assert len(fake_openai.requests) == 2


def test_a_retry_after_longer_than_the_cap_gives_up_at_once(fake_openai):
    fake_openai.reply_error(429, "Quota exceeded", retry_after="3600")
    with pytest.raises(ProviderError, match="asks to retry after 3600 s: HTTP 429 Quota exceeded"):
        llm(fake_openai).complete("", "prompt")
    assert len(fake_openai.requests) == 1


def test_5xx_is_retried_up_to_llm_max_retries_then_a_502(fake_openai):
    for _ in range(2):
        fake_openai.reply_error(503, "The engine is currently overloaded")
    exhausted = "failed after 2 attempt.*HTTP 503 The engine is currently"
    with pytest.raises(ProviderError, match=exhausted) as info:
        llm(fake_openai, llm_max_retries=1).complete("", "prompt")
    assert info.value.status_code == 502


@pytest.mark.parametrize(
    ("status", "hint"), [(400, "rejected the request: HTTP 400"), (401, "check the API key")]
)
def test_a_client_error_is_not_retried(fake_openai, status, hint):
    fake_openai.reply_error(status, "Invalid request")
    with pytest.raises(ProviderError, match=hint):
        list(llm(fake_openai).answer("q", KANGAROO))
    assert len(fake_openai.requests) == 1


def test_a_wrong_model_name_says_what_to_check(fake_openai):
    with pytest.raises(ProviderError, match="does not exist.*check the model name"):
        llm(fake_openai, openai_model="no-such-model").complete("", "prompt")


def test_a_server_slower_than_the_timeout_is_retried_then_named(fake_openai):
    fake_openai.reply("late", delay_s=2)
    fake_openai.reply("late again", delay_s=2)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timed out after 0.3 s \(LLM_TIMEOUT_S\)"):
        llm(fake_openai, llm_timeout_s=0.3, llm_max_retries=1).complete("", "prompt")
    assert time.monotonic() - started < 1.5
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        ('{"choices": [{"message": {"content": "cut', "application/json", "a body that is not JSON"),
        ("<html>502 Bad Gateway</html>", "text/html", "a body that is not JSON: <html>"),
        ('{"id": "x", "object": "chat.completion"}', "application/json", "not a chat completion"),
    ],
)
def test_a_malformed_reply_is_a_clear_502_not_retried(fake_openai, body, content_type, message):
    fake_openai.reply_raw(200, body, content_type)
    with pytest.raises(ProviderError, match=message) as info:
        llm(fake_openai).complete("", "prompt")
    assert info.value.status_code == 502
    assert len(fake_openai.requests) == 1


def test_a_malformed_stream_event_is_a_502(fake_openai):
    fake_openai.reply_raw(200, 'data: {"choices": [{"delta": {"content": "答\n\n', "text/event-stream")
    with pytest.raises(ProviderError, match="a stream event that is not JSON"):
        list(llm(fake_openai).answer("q", KANGAROO))


def test_a_stream_that_breaks_after_text_is_not_retried(fake_openai):
    fake_openai.reply("尤金袋鼠", then=('{"error": {"message": "upstream died"}}',))
    stream = llm(fake_openai).answer("q", KANGAROO)
    assert next(stream) == "尤金袋鼠"
    with pytest.raises(ProviderError, match="broke off: upstream died"):
        next(stream)
    assert len(fake_openai.requests) == 1


def test_an_answer_without_text_is_a_502(fake_openai):
    fake_openai.reply(finish_reason="content_filter")
    with pytest.raises(ProviderError, match="returned no text"):
        list(llm(fake_openai).answer("q", KANGAROO))


# --- assist-mode tool calls ------------------------------------------------------------------------


class Tools:
    """Two tools; each call is recorded and answered with a numbered source."""

    specs: Sequence[ToolSpec] = (
        ToolSpec("search_local", "Search the user's documents.", {"type": "object", "properties": {}}),
        ToolSpec("search_web", "Search the web.", {"type": "object", "properties": {}}),
    )

    def __init__(self, max_calls: int = 3) -> None:
        self.max_calls = max_calls
        self.called: list[tuple[str, dict[str, Any]]] = []

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        self.called.append((name, dict(args)))
        return f'<source n="{len(self.called) + 7}">\n{name} 找到的资料\n</source>'


def test_a_tool_call_is_run_and_read_back_before_the_answer_streams(fake_openai):
    fake_openai.reply_tool_calls(("search_local", {"query": "尤金袋鼠 食物"}), total_tokens=40)
    fake_openai.reply("尤金袋鼠以草为食[8]。", total_tokens=90)
    tools = Tools()
    with metering() as meter:
        answer = "".join(llm(fake_openai).answer_with_tools("它吃什么？", KANGAROO, [], tools))
    assert answer == "尤金袋鼠以草为食[8]。"
    assert tools.called == [("search_local", {"query": "尤金袋鼠 食物"})]
    assert meter.tokens == 130
    first, second = (r.body for r in fake_openai.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["search_local", "search_web"]
    assert first["tool_choice"] == "auto"
    asked, read_back = second["messages"][-2:]
    assert asked["tool_calls"][0]["function"] == {
        "name": "search_local",
        "arguments": json.dumps({"query": "尤金袋鼠 食物"}, ensure_ascii=False),
    }
    assert read_back == {
        "role": "tool",
        "tool_call_id": asked["tool_calls"][0]["id"],
        "content": '<source n="8">\nsearch_local 找到的资料\n</source>',
    }


def test_a_spent_call_budget_ends_in_an_answer_with_no_more_calls(fake_openai):
    fake_openai.reply_tool_calls(("search_web", {"query": "a"}), ("search_local", {"query": "b"}))
    fake_openai.reply("最后的答案[8]。")
    tools = Tools(max_calls=1)
    assert "".join(llm(fake_openai).answer_with_tools("q", KANGAROO, [], tools)) == "最后的答案[8]。"
    assert tools.called == [("search_web", {"query": "a"})]  # the second call was past the budget
    assert fake_openai.requests[-1].body["tool_choice"] == "none"


def test_a_server_without_function_calling_answers_without_tools_from_then_on(fake_openai):
    fake_openai.tools = False
    fake_openai.reply("不用工具的答案[3]。")
    fake_openai.reply("又一个答案[7]。")
    model = llm(fake_openai)
    assert "".join(model.answer_with_tools("q", KANGAROO, [], Tools())) == "不用工具的答案[3]。"
    assert "".join(model.answer_with_tools("q", KANGAROO, [], Tools())) == "又一个答案[7]。"
    assert ["tools" in r.body for r in fake_openai.requests] == [True, False, False]


def test_arguments_that_are_not_json_reach_the_tool_as_no_arguments(fake_openai):
    fake_openai.reply_raw(
        200,
        "data: "
        + json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c1",
                                    "function": {"name": "search_local", "arguments": "{query: 考拉"},
                                }
                            ]
                        },
                    }
                ]
            }
        )
        + "\n\ndata: [DONE]\n\n",
        "text/event-stream",
    )
    fake_openai.reply("答案[3]。")
    tools = Tools()
    assert "".join(llm(fake_openai).answer_with_tools("q", KANGAROO, [], tools)) == "答案[3]。"
    assert tools.called == [("search_local", {})]


# --- factory and settings --------------------------------------------------------------------------


def test_the_factory_builds_the_provider_from_settings(fake_openai):
    model = create_llm(settings(fake_openai))
    assert isinstance(model, OpenAICompatibleLLM)
    assert (model.name, model.generator) == ("fake-chat", "openai_compatible")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"openai_model": "m"}, "needs OPENAI_BASE_URL"),
        ({"openai_base_url": "https://api.deepseek.com"}, "needs OPENAI_MODEL"),
        ({"openai_base_url": "api.deepseek.com", "openai_model": "m"}, "must be an http"),
    ],
)
def test_settings_name_what_the_provider_is_missing(values, message):
    with pytest.raises(ValueError, match=message):
        Settings(_env_file=None, llm_provider="openai_compatible", **values)
