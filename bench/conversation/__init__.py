"""Conversation benchmark (issue 26): follow-ups, small talk, short questions about the demo corpus.

Usage: .venv/bin/python -m bench.conversation [--sets NAME ...] [--pairs N]
                                              [--out bench/results/conversation.json]

Follow-ups: per development set, pairs of questions about one paragraph of the ingested half (the
routing benchmark's half split), the second naming the article's title, which is replaced by a pronoun
(bench/conversation/pairs.py documents the rule). Each pair runs through ChatService (web off,
extractive generator) three ways: turn 1 then the pronoun follow-up in one conversation, the pronoun
follow-up alone, the original wording alone; for each, is the gold paragraph cited and does the reply
hold a gold answer string. Small talk (bench/conversation/lists.py) and 20 short questions about
demo/corpus/ are asked of a database holding the demo corpus: how many get "not found", list documents,
search at all; how many demo questions are answered, with the right fact, citing the right file.
Vectors are kept in .data/bench-cache (seeded from the routing benchmark's, so a warm run embeds only
the follow-ups and their rewrites).
"""
