"""What the Python peers of `cagra bench` (bench/cuvs_peer.py, bench/faiss_peer.py) share: the
commit their records name and recall as `cagra bench` computes it. Only numpy and the standard
library: cuvs_peer.py must import cuVS before anything loads libnvJitLink."""
import os
import subprocess

import numpy as np


def commit_id(given):
    """`given`, else $CAGRA_COMMIT, else this checkout's short HEAD, else "unknown"."""
    if given:
        return given
    if os.environ.get("CAGRA_COMMIT"):
        return os.environ["CAGRA_COMMIT"]
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def recall_at(found, truth, k):
    """|found[:k] & truth[:k]| / k averaged over the rows (cagra::recall)."""
    found = np.asarray(found)[:, :k].astype(np.int64)
    truth = np.asarray(truth)[:, :k].astype(np.int64)
    hits = (found[:, :, None] == truth[:, None, :]).any(axis=2).sum()
    return float(hits) / (found.shape[0] * k)
