"""The search options and their measured defaults, apart from the search machinery.

Kept free of imports so the window can read them at start-up without loading the engine
(tantivy, numpy, the tokenizer): the engine opens later, in a worker thread.
"""

from __future__ import annotations

#: How the hybrid combines the two lists (``engine.search.answers.fuse``). The default, CAI's plain sum
#: of raw scores, measured best of the three out of domain and on SQuAD dev (docs/ood.md, "Fusion").
FUSIONS = ("sum", "minmax", "rrf")
DEFAULT_FUSION = "sum"
#: The search the app and ``sparcdesk ask`` run unless told otherwise: the best configuration
#: measured out of domain with the shipped model (docs/ood.md, "Every combination"): SPARC
#: with each question word weighted by its IDF in the user's files, plus BM25 (CAI's hybrid).
DEFAULT_IDF = True
DEFAULT_HYBRID = True
