"""Document-level OverallScore and retrieval confidence under versioned policies.

Specification: overall-score-confidence.md (the design seed).
"""
