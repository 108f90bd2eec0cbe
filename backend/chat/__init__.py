"""Chat: one turn - the evidence for a question, the answer with [n] citations, the record it leaves."""
