"""Issue 17, defect 1: a search with a small explicit visited hash never returned (the thread
spun with the GIL released and Ctrl-C could not stop it). Now the plan refuses a size that
cannot hold the search's working set, with a clear CagraError."""

from __future__ import annotations

import cagra
import pytest
from conftest import clustered


def test_too_small_hash_is_an_error_not_a_hang():
    index = cagra.build(clustered(2000, 16, seed=17), graph_degree=32)
    queries = clustered(5, 16, seed=18)
    with pytest.raises(cagra.CagraError, match="hash_bits 8 is too small"):
        index.search(queries, 10, itopk_size=256, hash_bits=8, backend="cpu")
    neighbors, _ = index.search(queries, 10, itopk_size=256, hash_bits=9, backend="cpu")
    assert neighbors.shape == (5, 10)
