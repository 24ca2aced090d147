"""The keyword half of hybrid search: BM25 over the dense candidates, fused with the dense ranking by RRF.

MiniLM vectors miss exact terms the manuals and operators share (model names such as "AF-150", "NPSHa",
"LOTO", zone letters); BM25 finds them. Rather than a second index, the keyword score reranks the
dense search's candidate pool: one Qdrant query in every mode (a sparse-vector search in Qdrant local
mode is a Python loop over every point, hundreds of milliseconds at 20,000 chunks). Inverse document
frequencies are taken over the pool, which is enough to tell rare terms from common ones there.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

K1 = 1.2
B = 0.75
# Reciprocal rank fusion constant: score = sum of 1 / (rank + RRF_K - 1) over the two rankings, rank from 1
# (Qdrant's default, 2, lets a first place in either ranking count strongly).
RRF_K = 2

_TOKEN = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")
_STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from how i if in is it its me my of on or so that the their then "
    "there these this to up what when where which who why will with you your".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased word terms without stop words, plural ``s`` stripped (``bearings`` -> ``bearing``)."""
    out = []
    for token in _TOKEN.findall(text.lower()):
        if token in _STOP_WORDS:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]
        out.append(token)
    return out


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 (Okapi) score of each document for ``query``, with statistics taken over ``documents``."""
    query_terms = set(terms(query))
    bags = [Counter(terms(document)) for document in documents]
    if not bags or not query_terms:
        return [0.0] * len(bags)
    count = len(bags)
    average = sum(sum(bag.values()) for bag in bags) / count or 1.0
    frequency = {term: sum(1 for bag in bags if term in bag) for term in query_terms}
    idf = {term: math.log(1 + (count - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}
    scores = []
    for bag in bags:
        norm = K1 * (1 - B + B * sum(bag.values()) / average)
        scores.append(sum(idf[t] * bag[t] * (K1 + 1) / (bag[t] + norm) for t in query_terms if t in bag))
    return scores


def fuse(candidates: int, keyword_scores: Sequence[float]) -> list[int]:
    """Indices of the candidates (given in dense order, best first) reordered by reciprocal rank fusion.

    Args:
        candidates: How many candidates there are; candidate ``i`` is the ``i``-th best by meaning.
        keyword_scores: Each candidate's keyword score.

    Returns:
        Candidate indices, best first; ties keep the dense order.
    """
    by_keywords = sorted(range(candidates), key=lambda i: (-keyword_scores[i], i))
    keyword_rank = {index: rank for rank, index in enumerate(by_keywords)}
    fused = {i: 1 / (i + RRF_K) + 1 / (keyword_rank[i] + RRF_K) for i in range(candidates)}
    return sorted(range(candidates), key=lambda i: (-fused[i], i))
