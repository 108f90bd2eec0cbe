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
