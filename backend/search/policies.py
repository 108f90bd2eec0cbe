"""What a search ranks and judges with, loaded once at start-up: the rerank policy (and the seed's, the
scale confidence was calibrated on), the score policy, the fusion the SQL used, and the SQL knobs."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from backend.confidence.answerability import Fusion
from backend.confidence.assess import ScorePolicy, load_score_policy
from backend.confidence.policy import POLICIES_DIR
from backend.config import Settings
from backend.embeddings import Embedder
from backend.embeddings.fitted import fitted_model_warnings, policies_fitted
from backend.retrieval.params import HybridParams
from backend.retrieval.rerank_policy import RERANK_POLICIES_DIR, RerankPolicy, load_rerank_policy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchPolicies:
    rerank: RerankPolicy  # RAG_RERANK_POLICY: ranks the candidates and sets the dynamic cut's ratio
    seed: RerankPolicy  # the shipped seed formula (rerank_v1): every chunk's seed_score
    score: ScorePolicy  # SCORE_POLICY_VERSION: the search's confidence and route
    fusion: Fusion  # what the candidates' RRF ranks came from: the answerability score re-fuses them
    params: HybridParams  # the SQL functions' knobs

    @classmethod
    def load(cls, settings: Settings, *, embedder: Embedder) -> SearchPolicies:
        """Read the policy files the settings name (RerankPolicyError, PolicyError when one is bad), and
        warn for each policy fitted with another embedding model than the one in use."""
        rerank = load_rerank_policy(
            settings.rag_rerank_policy, settings.rag_rerank_policies_dir or RERANK_POLICIES_DIR
        )
        score = load_score_policy(settings.score_policy_version, settings.score_policies_dir or POLICIES_DIR)
        for warning in fitted_model_warnings(embedder, policies_fitted(rerank, score)):
            logger.warning("%s", warning)
        return cls(
            rerank=rerank,
            seed=load_rerank_policy("v1"),
            score=score,
            fusion=Fusion(settings.rag_rrf_k, settings.rag_full_text_weight, settings.rag_semantic_weight),
            params=HybridParams.from_settings(settings),
        )
