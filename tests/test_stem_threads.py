"""English stemming from several threads at once (web passages are segmented in worker threads, one per
research section): every thread gets the stems one thread alone gets."""

from __future__ import annotations

import random
import string
import sys
from concurrent.futures import ThreadPoolExecutor

import snowballstemmer

from backend.text.segment import stem


def test_stemming_from_many_threads_gives_the_stems_one_thread_gives():
    rng = random.Random(7)
    words = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 12))) + "ings" for _ in range(20_000)
    ]
    alone = snowballstemmer.stemmer("english")
    expected = [alone.stemWord(w) for w in words]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: a shared stemmer mixes words up
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda k: [stem(w) for w in words[k::8]], range(8)))
    finally:
        sys.setswitchinterval(interval)
    assert got == [expected[k::8] for k in range(8)]
