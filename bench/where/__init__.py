"""bench.where: how often the WhereBuilder's rules put a document-date filter on a question.

Two measures, no database and no model (the rules only, at a fixed "now"):
- the development datasets' questions (../shared/datasets/*/queries.jsonl) ask about content, so every
  date filter they get is a false one: the share of questions that get one;
- a hand-written list of scoping questions (bench/where/scoping.py) that must get a date filter, and
  the exact range: the hit rate.
"""
