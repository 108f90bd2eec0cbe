"""Deep research (issue 14): a question planned into sections, researched in parallel with per-section
evidence pools, checked for sufficiency, and written as a cited report (backend/research/graph.py)."""

from backend.research.service import ResearchService
from backend.research.types import PreparedRun, ResearchRequest

__all__ = ["PreparedRun", "ResearchRequest", "ResearchService"]
