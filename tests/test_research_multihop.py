"""Multi-hop research (issue 30 item 5): a sub-question that needs the answer of the one before it
("哪一位科学家发现了青霉素？此人出生在哪个国家？") is researched after it, searched with that answer in
place of its pointing words, and the answer line answers the last step; with the fake engines, without
a model and with the fake model's plan."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.embeddings import LocalEmbedder
from backend.llm import ExtractiveLLM
from backend.research.heuristic_plan import heuristic_plan
from backend.research.plan import sections_from_json
from backend.research.presets import preset
from backend.testing.fake_web_corpus import FakePage
from backend.text.bridge import bridge_phrase
from bench.research.web_multihop import pointing_words

QUESTION = "哪一位科学家发现了青霉素？此人出生在哪个国家？"
PAGES = (
    FakePage(
        "zh.example.cn",
        "penicillin",
        "zh",
        "青霉素的发现",
        ("1928年，亚历山大·弗莱明在伦敦的实验室发现了青霉素。",),
    ),
    FakePage(
        "zh.example.cn",
        "fleming",
        "zh",
        "亚历山大·弗莱明",
        ("亚历山大·弗莱明出生于苏格兰的洛克菲尔德农场。",),
    ),
    # What "此人出生在哪个国家" finds when nobody carries the first answer over.
    FakePage("zh.example.cn", "curie", "zh", "玛丽·居里", ("玛丽·居里出生于波兰华沙，是著名的科学家。",)),
)


@pytest.mark.parametrize(
    ("question", "after", "bridge"),
    [
        (QUESTION, 0, "此人"),
        ("陆特和汉斯雷顿开创了哪一地区对梵语的研究？该地区最大的河流是哪一条？", 0, "该地区"),
        ("Who founded the Carolina Panthers? Where was that person born?", 0, "that person"),
        ("Which company makes the iPhone? When was that company founded?", 0, "that company"),
        # Not a bridge: a pronoun points at what the earlier part names, and a number is no name.
        ("李白是谁？他出生在哪里？", None, None),
        ("黑豹队的防守丢了多少分？该队的主教练是谁？", None, None),
    ],
)
def test_a_part_that_names_the_earlier_answer_is_a_multi_hop_step(question, after, bridge):
    sections = heuristic_plan(question, max_sections=4, queries_per_section=2).sections
    assert len(sections) == 2
    assert (sections[1].after, sections[1].bridge) == (after, bridge)
    if bridge:
        assert bridge in sections[1].question  # kept, to be replaced by the answer
    else:
        assert "他" not in sections[1].question  # resolved as before: 李白出生在哪里


def test_the_bench_pointing_words_are_what_the_plan_recognises():
    for q1, q2 in [
        ("哪一位科学家发现了青霉素？", "{}出生在哪个国家？"),
        ("梵語起源於哪一地區？", "{}最大的河流是哪一條？"),
    ]:
        words = pointing_words(q1, traditional="語" in q1)
        assert words is not None
        assert bridge_phrase(q1, q2.format(words)) == words


def test_the_models_multi_hop_step_is_kept_only_when_usable():
    def plan(after, bridge):
        return {
            "sections": [
                {"title": "a", "question": "哪一位科学家发现了青霉素？", "queries": ["青霉素 发现者"]},
                {
                    "title": "b",
                    "question": "此人出生在哪个国家？",
                    "queries": [],
                    "after": after,
                    "bridge": bridge,
                },
            ]
        }

    lite = preset("lite", _settings())
    good = sections_from_json(plan(0, "此人"), lite)[1]
    assert (good.after, good.bridge) == (0, "此人")
    # Malformed: a later or its own section, a boolean, a string index, words the question lacks.
    for after, bridge in [
        (1, "此人"),
        (5, "此人"),
        (True, "此人"),
        ("0", "此人"),
        (0, "那人"),
        (0, ""),
        (0, 3),
    ]:
        bad = sections_from_json(plan(after, bridge), lite)[1]
        assert (bad.after, bad.bridge) == (None, None), (after, bridge)


def _settings():
    from backend.config import Settings

    return Settings(_env_file=None)


@pytest.fixture(scope="module")
def local_model():
    return LocalEmbedder(_settings())


def _run(make_services, fake_web, local_model, llm=None, **overrides) -> dict:
    for page in PAGES:
        fake_web.add_page(page)
    services = make_services(
        embedder=local_model,
        llm=llm or ExtractiveLLM(),
        score_policies_dir=None,
        web_search_provider=None,
        **fake_web.engine_settings("bocha"),
        web_allow_private_addresses=True,
        web_backoff_base_s=0.01,
        web_deep_read_top_n=0,
        **overrides,
    )
    with TestClient(create_app(services=services)) as client:
        response = client.post("/research", json={"question": QUESTION, "web": True})
        assert response.status_code == 200, response.text
        return response.json()


@pytest.mark.slow
def test_the_first_answer_is_carried_into_the_second_search(make_services, fake_web, local_model):
    body = _run(make_services, fake_web, local_model)
    first, second = body["diagnostics"]["sections"]
    assert first["reflections"][-1]["answer"] == "亚历山大·弗莱明"
    assert second["hop"] == {
        "asked": "此人出生在哪个国家？",
        "after": 0,
        "bridge": "此人",
        "entity": "亚历山大·弗莱明",
        "method": "reflection",
        "question": "亚历山大·弗莱明出生在哪个国家？",
    }
    asked = [s["query"] for s in second["searches"]]
    assert asked[0] == "亚历山大·弗莱明出生在哪个国家？"
    assert not any("此人" in q for q in asked)
    bocha = {r.query for r in fake_web.requests if r.path == "/v1/web-search"}
    assert "亚历山大·弗莱明出生在哪个国家？" in bocha
    assert "此人出生在哪个国家？" not in bocha
    cited = {s["url"] for s in body["sources"] if s.get("url")}
    assert fake_web.page_url("fleming") in cited
    # The answer line answers the last step, as a one-thing question.
    assert body["short_answer"] == "苏格兰"


@pytest.mark.slow
def test_the_fake_models_plan_carries_the_step_too(make_services, fake_web, local_model, fake_openai):
    from backend.llm.factory import create_llm
    from bench.research.fake_model import script

    fake_openai.script = script
    model = {
        "llm_provider": "openai_compatible",
        "openai_base_url": fake_openai.url,
        "openai_api_key": fake_openai.api_key,
        "openai_model": fake_openai.model,
    }
    llm = create_llm(_settings().model_validate({**_settings().model_dump(), **model}))
    body = _run(make_services, fake_web, local_model, llm=llm, **model)
    assert body["diagnostics"]["plan_method"] == "llm"
    second = body["diagnostics"]["sections"][1]
    assert second["hop"]["entity"] == "亚历山大·弗莱明"
    assert second["searches"][0]["query"] == "亚历山大·弗莱明出生在哪个国家？"


@pytest.mark.parametrize(
    ("question", "texts", "line"),
    [
        ("考拉生活在澳洲吗？", ["考拉以桉树叶为食。考拉生活在澳洲东部。"], "是：考拉生活在澳洲东部"),
        (
            "考拉是不是生活在澳洲？",
            ["考拉并不生活在澳洲西部，而生活在澳洲东部。"],
            "否：考拉并不生活在澳洲西部，而生活在澳洲东部",
        ),
        (
            "Did Tesla work for Edison?",
            ["Tesla did not work for Edison for long."],
            "No: Tesla did not work for Edison for long",
        ),
        (
            "Is the Rhine longer than the Elbe?",
            ["The Rhine is longer than the Elbe."],
            "Yes: The Rhine is longer than the Elbe",
        ),
        # Not clearly said (no sentence names every anchor): no line, and why.
        ("考拉是不是生活在非洲？", ["考拉生活在澳洲东部。"], None),
    ],
)
def test_a_yes_no_question_gets_an_answer_line_only_when_the_evidence_says_so(question, texts, line):
    from backend.research.answer import heuristic_answer

    answer = heuristic_answer(question, "yesno", texts)
    assert answer.text == line
    assert answer.method == "heuristic"
    assert (answer.reason is None) == (line is not None)


def _chain(answer, entities, *, sufficient):
    """Two sections: 0 found `answer` (its evidence also naming `entities`); 1, the step that needed
    it, was searched with `answer` and judged `sufficient` or not."""
    from backend.research.evaluate import Verdict
    from backend.research.pool import EvidenceIds, SectionPool
    from backend.research.reflect import Reflection
    from backend.research.sections import SectionState

    plan = heuristic_plan(QUESTION, max_sections=4, queries_per_section=2)
    first, second = (SectionState(i, p, SectionPool(EvidenceIds())) for i, p in enumerate(plan.sections))
    first.reflections.append(Reflection(0, "heuristic", [], "", entities, [], [], [], [], [], answer=answer))
    first.verdicts.append(Verdict(True, "heuristic", None, "high", 0.9))
    second.hop = {
        "asked": "此人出生在哪个国家？",
        "after": 0,
        "bridge": "此人",
        "entity": answer,
        "method": "reflection",
        "question": f"{answer}出生在哪个国家？",
    }
    second.verdicts.append(Verdict(sufficient, "heuristic", None if sufficient else "missing", "low", 0.1))
    second.relevant, second.done = 1, True
    return [first, second]


def _context():
    from types import SimpleNamespace

    from backend.research.evaluate import QueryLedger

    events: list[dict] = []
    ledger = QueryLedger()
    ledger.claim("玛丽·居里出生在哪个国家？")
    ctx = SimpleNamespace(
        model=SimpleNamespace(generative=False),
        ledger=ledger,
        settings=_settings(),
        emit=events.append,
        question=QUESTION,
        preset=preset("lite", _settings()),
    )
    return ctx, events


def test_without_a_model_the_global_verify_sends_the_chains_gap_back():
    import asyncio

    from backend.research.verify import global_verify as verify
    from backend.research.verify import plan_gaps

    def global_verify(ctx, states, loop):
        return asyncio.run(verify(ctx, states, loop))

    ctx, _ = _context()
    # The step searched with 玛丽·居里 found no answer: the verify asks it with the next name the
    # first step's evidence holds (居里 asked already is not asked again).
    states = _chain("玛丽·居里", ["玛丽·居里", "亚历山大·弗莱明"], sufficient=False)
    verdict = global_verify(ctx, states, 0)
    assert verdict.method == "heuristic"
    assert verdict.gaps == ["亚历山大·弗莱明出生在哪个国家？"]
    [gap] = plan_gaps(ctx, verdict, states)
    assert (gap.question, gap.loop, gap.priority) == ("亚历山大·弗莱明出生在哪个国家？", 1, "medium")
    # Every name tried: no gap.
    states = _chain("玛丽·居里", ["玛丽·居里"], sufficient=False)
    assert global_verify(ctx, states, 0).gaps == []
    # An answered step needs nothing.
    states = _chain("亚历山大·弗莱明", ["亚历山大·弗莱明", "玛丽·居里"], sufficient=True)
    assert global_verify(ctx, states, 0).gaps == []


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ({"answer": "**亚历山大·弗莱明**。"}, "亚历山大·弗莱明"),
        ({"answer": 5}, None),
        ({"answer": " "}, None),
        ({}, None),
    ],
)
def test_the_models_answer_in_its_reflection_is_one_clean_line_or_none(value, answer):
    from backend.research.reflect import model_reflection

    assert model_reflection(value).answer == answer
