"""Policy v6 (issue 26 item 1): v3 for documents in the question's language, a cross-lingual branch of
its own for the others, so a Chinese question over the English passage that answers it is answered."""

from __future__ import annotations

import json

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.confidence.answerability import document_score
from backend.confidence.answerability_policy import AnswerabilityPolicy
from backend.confidence.assess import load_score_policy
from backend.confidence.policy import POLICIES_DIR, PolicyError
from backend.search.types import SearchRequest


def _policy(version: str) -> AnswerabilityPolicy:
    policy = load_score_policy(version)
    assert isinstance(policy, AnswerabilityPolicy)
    return policy


V3, V6 = _policy("v3"), _policy("v6")


def test_v6_round_trips_through_its_json_with_the_cross_lingual_branch(tmp_path):
    assert V6.cross_lingual is not None
    (tmp_path / "v6.json").write_text(json.dumps(V6.to_json()), encoding="utf-8")
    assert load_score_policy("v6", tmp_path) == V6
    assert "cross_lingual" not in V3.to_json()  # a policy without the branch keeps its file as it was


def test_a_negative_weight_in_the_cross_lingual_branch_is_refused_with_its_name():
    data = V6.to_json()
    data["cross_lingual"]["weights"]["cosine_lift"] = -1.0
    with pytest.raises(PolicyError, match=r"cross_lingual: weights must be finite and >= 0.*cosine_lift"):
        AnswerabilityPolicy.from_json(data)
    data["cross_lingual"]["weights"] = {"no_such_feature": 1.0}
    with pytest.raises(PolicyError, match="cross_lingual: unknown features"):
        AnswerabilityPolicy.from_json(data)


def test_a_same_language_document_is_scored_as_v3_and_a_cross_lingual_one_by_the_branch():
    values = {"cosine_lift": 0.3, "term_coverage": 0.0, "leg_agreement": 0.0, "comparable_coverage": 0.0}
    same = {**values, "cross_lingual": 0.0}
    cross = {**values, "cross_lingual": 1.0}
    assert document_score(same, V6) == document_score(same, V3)
    assert document_score(cross, V3) < V3.t_low <= document_score(cross, V6)
    weak = {**cross, "cosine_lift": 0.05}
    assert document_score(weak, V6) < V6.t_low


# --- end to end: a real search with the local model over an English corpus -----------------------

ENGLISH = [
    ("normans", "Normans", "In 1066 the Normans under William the Conqueror invaded and conquered England."),
    (
        "amazon",
        "Amazon rainforest",
        "The Amazon rainforest covers much of the Amazon basin of South America.",
    ),
    (
        "koala",
        "Koala",
        "The koala feeds on eucalyptus leaves and sleeps most of the day in eastern Australia.",
    ),
    (
        "jupiter",
        "Jupiter",
        "Jupiter is the largest planet of the Solar System, a gas giant with dozens of moons.",
    ),
    ("bread", "Bread", "Bread is baked from a dough of flour and water, usually leavened with yeast."),
    (
        "violin",
        "Violin",
        "The violin is a wooden string instrument played with a bow, the smallest of its family.",
    ),
]


@pytest.fixture(scope="module")
def local_model():
    from backend.config import Settings
    from backend.embeddings import LocalEmbedder

    return LocalEmbedder(Settings(_env_file=None))


@pytest.fixture
def english_corpus(make_services, local_model):
    from tests.factories import loaded_document

    def search(version: str, question: str) -> dict:
        services = make_services(
            embedder=local_model, score_policy_version=version, score_policies_dir=POLICIES_DIR
        )
        services.ingestion.ingest([loaded_document(e, t, title) for e, title, t in ENGLISH], identity=None)
        return services.retrieval.search(SearchRequest(query=question), identity=LOCAL_IDENTITY).confidence

    return search


def test_a_chinese_question_answered_only_by_an_english_passage_is_answered_under_v6(english_corpus):
    from backend.confidence.routing import decide_route

    question = "诺曼人在哪一年征服了英格兰？"
    v6 = english_corpus("v6", question)
    assert v6["top_parents"][0]["title"] == "Normans"
    assert v6["top_parents"][0]["features"]["cross_lingual"] is True
    assert decide_route(v6, web_available=False) == "answer"
    v3 = english_corpus("v3", question)
    assert decide_route(v3, web_available=False) == "not_in_documents"


def test_an_unrelated_chinese_question_over_the_english_corpus_is_not_answered_under_v6(english_corpus):
    from backend.confidence.routing import decide_route

    v6 = english_corpus("v6", "如何申请护照的加急办理？")
    assert decide_route(v6, web_available=False) == "not_in_documents"
