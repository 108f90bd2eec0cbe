"""False document-date filters on the development datasets' questions, and the hit rate on scoping
questions that must get one (docs/where.md).

Usage: .venv/bin/python -m bench.where [--show N] [--datasets-dir ../shared/datasets]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from backend.where.cues import document_cue
from bench.common import DATASETS_DIR
from bench.where.measure import NoQuestions, dataset_rate, make_builder, question_files, scoping_rate
from bench.where.scoping import NOW


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--show", type=int, default=0, metavar="N", help="list N flagged questions each")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    try:
        files = question_files(args.datasets_dir)
    except NoQuestions as exc:
        print(exc.message, file=sys.stderr)
        return 2
    builder = make_builder()
    print(f"# WhereBuilder date filters (rules, now = {NOW.isoformat()})\n")
    print("| dataset | questions | with a date filter (false) | rate |\n|---|---:|---:|---:|")
    rates = [dataset_rate(builder, path) for path in files]
    for r in rates:
        print(f"| {r.name} | {r.questions} | {len(r.flagged)} | {r.rate:.2%} |")
    scoping = scoping_rate(builder)
    hits = scoping.total - len(scoping.missed)
    print(f"\nScoping questions with their exact range: {hits}/{scoping.total} ({scoping.rate:.0%})")
    for question, got in scoping.missed:
        print(f"- missed: {question} -> {got or 'no date filter'}")
    for r in rates if args.show else []:
        print(f"\n## {r.name}: date filters on content questions\n")
        if not r.flagged:
            print("(none)")
        for question, item in r.flagged[: args.show]:
            cue = document_cue(question, item.strip[0]) if item.strip else None
            why = f"cue `{cue}`" if cue else "a relative period"
            print(f"- {question} — `{item.phrase}` ({why}): {item.field} {item.condition}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
