"""The model's own verdict (issue 26 item 2): a model that reads the evidence and says the documents do
not hold the answer - citing nothing - turns the reply into "not in the documents" (route, stored
message, page badge), however high the score was; a partial answer that cites a source stays an
answer."""

from __future__ import annotations

import json

import pytest

from backend.chat.verdict import model_verdict

DOCS = [
    {
        "external_id": "kangaroo",
        "title": "尤金袋鼠",
        "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。尤金袋鼠一书的作者是约翰·古尔德。",
    },
    {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"},
]


@pytest.fixture
def corpus(client):
    assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
    return client


def ask(client, message, **kw):
    response = client.post("/chat", json={"message": message, "web": False, **kw})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_model_that_finds_no_answer_in_a_near_miss_makes_the_turn_not_found(corpus, scripted_llm):
    # The passage is on topic (the kangaroo's range) but does not say how much it weighs.
    scripted_llm.answers = ["文档中没有找到相关信息。"]
    body = ask(corpus, "尤金袋鼠分布在哪里，体重多少？")
    assert body["generator"] == "scripted"  # the model wrote it
    assert body["diagnostics"]["evidence"]["route"] == "answer"  # the score thought it held the answer
    assert body["diagnostics"]["route"] == "not_in_documents"
    assert body["diagnostics"]["model_verdict"] == "declined"
    assert body["diagnostics"]["short_answer"] is None
    assert not any(s["cited"] for s in body["sources"])
    # The stored message keeps the route the page draws ("文档中没有答案", with related documents).
    messages = corpus.get(f"/conversations/{body['conversation_id']}/messages").json()
    assert messages[1]["metadata"]["route"] == "not_in_documents"
    assert messages[1]["metadata"]["model_verdict"] == "declined"


def test_the_stream_ends_with_the_same_route(corpus, scripted_llm):
    scripted_llm.answers = ["The documents do not mention the kangaroo's weight."]
    message = {"message": "How heavy is the 尤金袋鼠?", "web": False, "stream": True}
    with corpus.stream("POST", "/chat", json=message) as response:
        assert response.status_code == 200
        raw = "".join(response.iter_text())
    frames = [f for f in raw.split("\n\n") if f]
    kind, data = frames[-1].split("\n")[:2]
    assert kind == "event: done"
    done = json.loads(data.removeprefix("data: "))
    assert done["diagnostics"]["route"] == "not_in_documents"
    assert done["diagnostics"]["model_verdict"] == "declined"


def test_a_partial_answer_that_cites_a_source_stays_an_answer(corpus, scripted_llm):
    scripted_llm.answers = ["尤金袋鼠分布在澳洲南部岛屿[1]。文档中没有提到它的体重。"]
    body = ask(corpus, "尤金袋鼠分布在哪里，体重多少？")
    assert body["diagnostics"]["route"] == "answer"
    assert body["diagnostics"]["model_verdict"] is None
    assert body["sources"][0]["cited"] is True


@pytest.mark.parametrize(
    "reply",
    [
        "文档中没有找到相关信息。",
        "No relevant information was found in the documents.",
        "所提供的资料中并未提及尤金袋鼠的体重。",
        "根据文档无法回答这个问题。",
        "The provided sources do not contain the answer to this question.",
        "This is not mentioned in the documents.",
        "I cannot find the answer in the sources provided.",
    ],
)
def test_the_ways_models_decline_are_read_as_declining(reply):
    assert model_verdict(reply, set()) == "declined"


@pytest.mark.parametrize(
    ("reply", "cited"),
    [
        ("尤金袋鼠分布在澳洲南部岛屿[1]。", {1}),
        ("文档中没有找到相关信息，但来源[2]提到它生活在岛上。", {2}),  # cites: a partial answer
        ("尤金袋鼠分布在澳洲南部岛屿。", set()),  # uncited, but an answer
        ("The club was founded in 1993.", set()),
        ("", set()),
    ],
)
def test_an_answer_is_not_read_as_declining(reply, cited):
    assert model_verdict(reply, cited) is None


# --- web auto: the web after the documents' evidence was declined ----------------------------------

PANDA_DOCS = [
    {
        "external_id": "panda-habitat",
        "title": "大熊猫的栖息地",
        "content": "大熊猫每天都要吃竹子。大熊猫主要栖息在四川、陕西和甘肃的山区竹林中。",
    }
]
PANDA = "大熊猫每天吃多少公斤竹子？"  # the document is on topic; the fake web's page says how much


@pytest.fixture
def web_client(make_services, fake_web):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    services = make_services(
        web_search_provider="tavily",
        tavily_api_key=fake_web.api_key,
        tavily_base_url=fake_web.base_url,
        web_allow_private_addresses=True,
        web_backoff_base_s=0.01,
        web_deep_read_top_n=0,
        chat_assist_tools=False,
    )
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": PANDA_DOCS}).status_code == 200
        yield client


def test_web_auto_asks_the_web_when_the_model_declines_the_documents(web_client, fake_web, scripted_llm):
    scripted_llm.answers = ["文档中没有找到相关信息。", "成年大熊猫每天吃掉十二到三十八公斤竹子[1]。"]
    body = ask(web_client, PANDA, web="auto")
    first, second = scripted_llm.calls
    assert "四川" in first.sources[0].content  # the documents' evidence first
    assert fake_web.count("/search") == 1  # then the web, once
    assert body["diagnostics"]["route"] == "web_fallback"
    assert body["diagnostics"]["model_verdict"] == "declined"  # of the documents
    assert body["answer"] == "成年大熊猫每天吃掉十二到三十八公斤竹子[1]。"
    assert body["sources"][0]["cited"] is True
    assert all(s["kind"] == "web" for s in body["sources"])
    assert [s.n for s in second.sources] == [s["n"] for s in body["sources"]]


def test_the_stream_shows_the_webs_answer_not_the_declined_one(web_client, fake_web, scripted_llm):
    scripted_llm.answers = ["文档中没有找到相关信息。", "成年大熊猫每天吃掉十二到三十八公斤竹子[1]。"]
    message = {"message": PANDA, "web": "auto", "stream": True}
    with web_client.stream("POST", "/chat", json=message) as response:
        raw = "".join(response.iter_text())
    frames = [f.split("\n") for f in raw.split("\n\n") if f]
    events = [(k.removeprefix("event: "), json.loads(d.removeprefix("data: "))) for k, d, *_ in frames]
    shown = "".join(e["text"] for k, e in events if k == "delta")
    assert shown == "成年大熊猫每天吃掉十二到三十八公斤竹子[1]。"
    assert events[-1][1]["diagnostics"]["route"] == "web_fallback"


def test_an_answer_that_cites_streams_at_once_and_asks_no_web(web_client, fake_web, scripted_llm):
    scripted_llm.answers = ["大熊猫以竹子为主要食物[1]，栖息在山区竹林中。"]
    message = {"message": PANDA, "web": "auto", "stream": True}
    with web_client.stream("POST", "/chat", json=message) as response:
        raw = "".join(response.iter_text())
    deltas = [f for f in raw.split("\n\n") if f.startswith("event: delta")]
    assert len(deltas) > 2  # held only until the first citation, then streamed on
    assert fake_web.count("/search") == 0


def test_when_the_web_is_declined_too_the_turn_is_not_in_the_documents(web_client, fake_web, scripted_llm):
    scripted_llm.answers = ["文档中没有找到相关信息。"]
    body = ask(web_client, PANDA, web="auto")
    assert len(scripted_llm.calls) == 2
    assert body["diagnostics"]["route"] == "not_in_documents"
    assert body["answer"] == "文档中没有找到相关信息。"


def test_web_off_never_asks_the_web_after_a_decline(web_client, fake_web, scripted_llm):
    scripted_llm.answers = ["文档中没有找到相关信息。"]
    body = ask(web_client, PANDA, web=False)
    assert len(scripted_llm.calls) == 1
    assert fake_web.count("/search") == 0
    assert body["diagnostics"]["route"] == "not_in_documents"
