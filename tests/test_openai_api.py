"""/v1/chat/completions and /v1/models through the official `openai` client, unchanged: answers with
[n] and their sources, streaming, a follow-up from resent history, research, errors in OpenAI's shape,
and sign-in by access token or personal API key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from backend.api.app import create_app
from backend.llm import ExtractiveLLM
from backend.llm.base import Sampling
from tests.auth_tokens import FakeAuthServer, es256, mint
from tests.fake_http import serve
from tests.test_research_api import DOCS


@pytest.fixture
def api(make_services) -> Iterator[TestClient]:
    services = make_services(llm=ExtractiveLLM())
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        yield client


def sdk(http: TestClient, api_key: str = "anything") -> Any:
    """The official client, its HTTP going to the app in-process (TestClient is an httpx.Client).

    Typed Any: the tests read the SDK's optional response fields directly (a None fails the test)."""
    return openai.OpenAI(base_url="http://testserver/v1", api_key=api_key, http_client=http, max_retries=0)


def content(completion: ChatCompletion) -> str:
    text = completion.choices[0].message.content
    assert text is not None
    return text


def extension(reply: BaseModel) -> dict[str, Any]:
    """The reply's `pgrag` extension field (an extra field to the SDK's models)."""
    assert reply.model_extra is not None
    return reply.model_extra["pgrag"]


def ask(client: openai.OpenAI, messages: list[dict[str, Any]], **kwargs: Any) -> ChatCompletion:
    return client.chat.completions.create(model=kwargs.pop("model", "pgrag"), messages=messages, **kwargs)  # type: ignore[arg-type]


def test_models_lists_the_modes(api):
    assert {m.id for m in sdk(api).models.list()} == {
        "pgrag",
        "pgrag-research",
        "pgrag-research-comprehensive",
    }


def test_an_answer_keeps_its_citations_and_carries_its_sources(api):
    completion = ask(sdk(api), [{"role": "user", "content": "尤金袋鼠分布在哪里？"}])
    text = content(completion)
    assert completion.choices[0].finish_reason == "stop"
    assert "澳洲南部" in text
    assert "[1]" in text
    # A client that knows nothing of pgrag still shows where [1] points: the list under the answer.
    answer, references = text.split("\n\n---\n")
    assert references.splitlines()[0] == "[1] 尤金袋鼠"
    pgrag = extension(completion)
    assert pgrag["route"] == "answer"
    assert pgrag["sources"][0]["external_id"] == "wallaby"
    assert pgrag["sources"][0]["cited"] is True
    usage = completion.usage
    assert usage is not None
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # The turn is stored like a /chat turn, with its sources.
    messages = api.get(f"/conversations/{pgrag['conversation_id']}/messages").json()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"] == answer
    assert messages[1]["sources"][0]["external_id"] == "wallaby"


def test_the_reference_list_can_be_switched_off(api):
    completion = ask(
        sdk(api),
        [{"role": "user", "content": "尤金袋鼠分布在哪里？"}],
        extra_body={"pgrag": {"references": False}},
    )
    assert "\n---\n" not in content(completion)
    assert extension(completion)["sources"]


def test_streaming_sends_openai_chunks_ending_with_usage_and_sources(api):
    question: list[Any] = [{"role": "user", "content": "考拉吃什么？"}]
    chunks = list(sdk(api).chat.completions.create(model="pgrag", messages=question, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "桉树叶" in streamed
    assert "[1] 考拉" in streamed
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert last.usage is not None
    assert last.usage.total_tokens > 0
    assert extension(last)["sources"][0]["external_id"] == "koala"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_a_follow_up_in_resent_history_continues_the_conversation_like_chat(api):
    client = sdk(api)
    first = [{"role": "user", "content": "尤金袋鼠分布在哪里？"}]
    turn1 = ask(client, first)
    follow_up = [
        {"role": "system", "content": "You are a helpful assistant."},
        *first,
        {"role": "assistant", "content": content(turn1)},
        {"role": "user", "content": "那它这本书的作者是谁？"},
    ]
    turn2 = ask(client, follow_up)
    conversation = extension(turn2)["conversation_id"]
    assert conversation == extension(turn1)["conversation_id"]
    assert "约翰·古尔德" in content(turn2)
    assert len(api.get(f"/conversations/{conversation}/messages").json()) == 4
    # The same follow-up on /chat in the same kind of conversation: the same answer.
    chat1 = api.post("/chat", json={"message": "尤金袋鼠分布在哪里？"}).json()
    chat2 = api.post(
        "/chat", json={"message": "那它这本书的作者是谁？", "conversation_id": chat1["conversation_id"]}
    )
    assert content(turn2).split("\n\n---\n")[0] == chat2.json()["answer"]


def test_temperature_and_max_tokens_reach_the_generator(make_services, scripted_llm):
    services = make_services()
    with TestClient(create_app(services=services)) as http:
        assert http.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        client = sdk(http)
        ask(client, [{"role": "user", "content": "考拉吃什么？"}], temperature=0.2, max_tokens=64)
        ask(client, [{"role": "user", "content": "考拉吃什么？"}], max_completion_tokens=32)
        ask(client, [{"role": "user", "content": "考拉吃什么？"}])
    assert [c.sampling for c in scripted_llm.calls] == [
        Sampling(temperature=0.2, max_tokens=64),
        Sampling(temperature=None, max_tokens=32),
        None,
    ]


def test_a_history_pgrag_never_saw_starts_a_conversation_seeded_with_it(api):
    history = [
        {"role": "user", "content": "Tell me about the Rhine."},
        {"role": "assistant", "content": "The Rhine flows from the Swiss Alps to the North Sea."},
        {"role": "user", "content": "How long is it?"},
    ]
    completion = ask(sdk(api), history)
    assert "1,230" in content(completion)
    stored = api.get(f"/conversations/{extension(completion)['conversation_id']}/messages").json()
    assert [(m["role"], m["content"]) for m in stored[:2]] == [(h["role"], h["content"]) for h in history[:2]]
    assert len(stored) == 4


def test_research_model_returns_a_cited_report(api):
    completion = ask(
        sdk(api), [{"role": "user", "content": "卡罗莱纳黑豹队的防守和主场"}], model="pgrag-research"
    )
    pgrag = extension(completion)
    assert pgrag["route"] == "research"
    assert pgrag["run_id"]
    assert "308" in content(completion)
    assert api.get(f"/research/{pgrag['run_id']}").json()["status"] == "completed"


@pytest.mark.parametrize(
    ("kwargs", "error", "code"),
    [
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            openai.NotFoundError,
            "NotFound",
        ),
        (
            {
                "model": "pgrag",
                "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            },
            openai.BadRequestError,
            "InvalidInput",
        ),
        ({"model": "pgrag", "messages": []}, openai.BadRequestError, "InvalidRequest"),
        (
            {
                "model": "pgrag",
                "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            },
            openai.BadRequestError,
            "InvalidInput",
        ),
    ],
)
def test_bad_requests_are_openai_errors(api, kwargs, error, code):
    with pytest.raises(error) as caught:
        ask(sdk(api), **kwargs)
    body: Any = caught.value.body
    assert body["code"] == code
    assert body["message"]
    assert body["type"] in ("invalid_request_error", "not_found_error")
    assert api.get("/conversations").json() == []  # nothing stored


def test_with_supabase_auth_a_token_or_an_api_key_is_the_openai_api_key(make_services):
    key = es256("es-v1")
    with serve(FakeAuthServer([key]).respond) as url:
        services = make_services(llm=ExtractiveLLM(), auth_mode="supabase", supabase_url=url)
        token = mint(key, issuer=f"{url}/auth/v1", sub=str(uuid.UUID(int=0xA)))
        with TestClient(create_app(services=services)) as http:
            with pytest.raises(openai.AuthenticationError) as caught:
                sdk(http, api_key="not-a-token").models.list()
            challenge: Any = caught.value.body
            assert challenge["type"] == "authentication_error"
            assert [m.id for m in sdk(http, api_key=token).models.list()][0] == "pgrag"
            created = http.post(
                "/api-keys", json={"name": "webui"}, headers={"Authorization": f"Bearer {token}"}
            )
            completion = ask(sdk(http, api_key=created.json()["key"]), [{"role": "user", "content": "你好"}])
            assert content(completion)
