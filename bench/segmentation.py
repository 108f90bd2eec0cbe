"""jieba vs rjieba search-mode segmentation on the shared corpora: speed and token agreement.

Usage: .venv/bin/python -m bench.segmentation [--datasets DIR] [--repeats N]
Both tokenizers see the text exactly as backend.text.segment prepares it (normalised, lower-cased) and
their output is filtered the same way (word-like tokens only), so the agreement figures say how far the
stored content_tokens would change if the index switched tokenizer.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import jieba

from backend.text.normalize import normalize
from bench.common import DATASETS_DIR
from bench.common.beir import dataset_names, read_jsonl
from bench.common.report import markdown_table

try:
    import rjieba
except ImportError as exc:  # the bench extra
    raise SystemExit("rjieba is missing: pip install -e '.[bench]'") from exc

Cut = Callable[[str], Iterable[str]]
TOKENIZERS: dict[str, Cut] = {
    "jieba": lambda text: jieba.cut_for_search(text, HMM=True),
    "rjieba": lambda text: rjieba.cut_for_search(text, hmm=True),
}
HEADERS = (
    "dataset|docs|chars|jieba tokens/s|rjieba tokens/s|rjieba speed-up|jieba chars/s|rjieba chars/s|"
    "mean Jaccard|identical docs"
).split("|")
_WORDLIKE = re.compile(r"\w")
_WARMUP_DOCS = 20


@dataclass
class Row:
    dataset: str
    docs: int
    chars: int
    seconds: dict[str, float]
    tokens: dict[str, int]
    mean_jaccard: float
    identical_share: float


def load_corpora(root: Path) -> dict[str, list[str]]:
    """Texts of every <root>/*/corpus.jsonl, prepared as segment() prepares them."""
    return {
        name: [normalize(row["text"]).lower() for row in read_jsonl(root / name / "corpus.jsonl")]
        for name in dataset_names(root)
    }


def best_time(cut: Cut, texts: list[str], repeats: int) -> tuple[float, list[list[str]]]:
    """Best wall time of `repeats` full passes (after a warm-up pass) and the filtered tokens."""
    for text in texts[:_WARMUP_DOCS]:
        list(cut(text))
    best = float("inf")
    outputs: list[list[str]] = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = [list(cut(text)) for text in texts]
        best = min(best, time.perf_counter() - start)
    return best, [[t for t in out if _WORDLIKE.search(t) and not t.isspace()] for out in outputs]


def jaccard(a: list[str], b: list[str]) -> float:
    """Jaccard similarity of two token multisets (1.0 when both are empty)."""
    ca, cb = Counter(a), Counter(b)
    union = sum((ca | cb).values())
    return sum((ca & cb).values()) / union if union else 1.0


def measure(dataset: str, texts: list[str], repeats: int) -> Row:
    seconds, tokens = {}, {}
    for name, cut in TOKENIZERS.items():
        seconds[name], tokens[name] = best_time(cut, texts, repeats)
    pairs = list(zip(tokens["jieba"], tokens["rjieba"], strict=True))
    return Row(
        dataset,
        len(texts),
        sum(map(len, texts)),
        seconds,
        {name: sum(map(len, toks)) for name, toks in tokens.items()},
        sum(jaccard(a, b) for a, b in pairs) / len(pairs),
        sum(a == b for a, b in pairs) / len(pairs),
    )


def total(rows: list[Row]) -> Row:
    docs = sum(r.docs for r in rows)
    return Row(
        "**all**",
        docs,
        sum(r.chars for r in rows),
        {n: sum(r.seconds[n] for r in rows) for n in TOKENIZERS},
        {n: sum(r.tokens[n] for r in rows) for n in TOKENIZERS},
        sum(r.mean_jaccard * r.docs for r in rows) / docs,
        sum(r.identical_share * r.docs for r in rows) / docs,
    )


def render(rows: list[Row]) -> str:
    table = []
    for r in rows:
        rate = [f"{r.tokens[n] / r.seconds[n]:,.0f}" for n in TOKENIZERS]
        chars = [f"{r.chars / r.seconds[n]:,.0f}" for n in TOKENIZERS]
        speed_up = f"{r.seconds['jieba'] / r.seconds['rjieba']:.1f}x"
        agreement = [f"{r.mean_jaccard:.4f}", f"{r.identical_share:.1%}"]
        table.append([r.dataset, r.docs, f"{r.chars:,}", *rate, speed_up, *chars, *agreement])
    return markdown_table(HEADERS, table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=DATASETS_DIR)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per tokenizer (best is kept)")
    args = parser.parse_args(argv)
    jieba.setLogLevel(logging.WARNING)
    corpora = load_corpora(args.datasets)
    if not corpora:
        raise SystemExit(f"no */corpus.jsonl under {args.datasets}")
    rows = [measure(name, texts, args.repeats) for name, texts in corpora.items()]
    print(render([*rows, total(rows)]))
    print(
        f"\nBest of {args.repeats} passes after a warm-up; search mode with HMM; tokens counted after "
        "dropping punctuation and spaces, as backend.text.segment does."
    )


if __name__ == "__main__":
    main()
