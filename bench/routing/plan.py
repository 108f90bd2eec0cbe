"""Which variants a run measures: each built once from the sets on disk (see variants.py)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

from bench.common import log
from bench.routing.split import COMBINED, Split, combine, load_split
from bench.routing.variants import (
    KINDS,
    PARALLEL,
    Variant,
    cross_lingual,
    has_native_labels,
    keyword,
    load_native,
    near_miss,
    variant_key,
)


def build_variants(kinds: Sequence[str], sets: Sequence[str], root: Path, questions: int) -> list[Variant]:
    """The variants of `kinds` over `sets`, in KINDS order. Sets with answerable.tsv only run as the
    native variant (their queries have no article split); questions: per side, keyword and native."""
    article = [s for s in sets if not has_native_labels(s, root)]
    native = [s for s in sets if has_native_labels(s, root)]

    @cache
    def split(name: str) -> Split:
        return load_split(name, root)

    out: list[Variant] = []
    for kind in (k for k in KINDS if k in kinds):
        if kind == "monolingual":
            out += [Variant(s, kind, s, split(s), (s,)) for s in article]
        elif kind == "keyword":
            for s in article:
                key = variant_key(kind, s)
                cut, dropped = keyword(split(s), questions)
                out.append(Variant(key, kind, s, cut, (key, s), dropped))
        elif kind == "xlang":
            for asked, corpus in PARALLEL:
                if asked in article and corpus in article:
                    key = variant_key(kind, f"{asked}-over-{corpus}")
                    both = cross_lingual(split(asked), split(corpus))
                    out.append(Variant(key, kind, f"{asked} → {corpus}", both, (key, corpus, asked)))
        elif kind == "near-miss":
            for s in article:
                nm = near_miss(split(s))
                if not nm.split.unanswerable:
                    log(f"near-miss: {s} has no article with two paragraphs in its ingested half, skipped")
                    continue
                key = variant_key(kind, s)
                out.append(Variant(key, kind, s, nm.split, (key, s), nm.answer_elsewhere))
        elif kind == "mixed" and article:
            mixed = combine([split(s) for s in article])
            out.append(Variant(COMBINED, kind, " + ".join(article), mixed, (COMBINED, *article)))
        elif kind == "native":
            for s in native:
                key = variant_key(kind, s)
                out.append(Variant(key, kind, s, load_native(s, root, questions), (s,)))
    return out
