"""HDF5 input must never take down the Python process (issue 17, defects 2 and 3). libhdf5 reads
in a forked reader process, so fuzzed files that crash it or make it allocate gigabytes become a
CagraError here, and a dataset stored outside the file (external storage) is refused."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import cagra
import numpy as np
import pytest
from conftest import REPO


def regress(name: str) -> Path:
    """A fuzzing regression input: regress/ in $CAGRA_DATA_DIR, <repo>/data/shared or
    <repo>/../shared/data. Missing is a failure, not a skip."""
    candidates = []
    if os.environ.get("CAGRA_DATA_DIR"):
        candidates.append(Path(os.environ["CAGRA_DATA_DIR"]))
    candidates += [REPO / "data" / "shared", REPO.parent / "shared" / "data"]
    for c in candidates:
        if (c / "regress" / name).is_file():
            return c / "regress" / name
    pytest.fail(f"regression input {name} not found under <data>/regress/")


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.mark.parametrize(
    ("name", "reader", "message"),
    [
        ("segv_H5F_accum_read.hdf5", cagra.read_matrix, "libhdf5 crashed reading this file"),
        ("segv_hdf5_3.hdf5", cagra.read_matrix, "libhdf5 crashed reading this file"),
        ("segv_hdf5_neighbors.hdf5", cagra.read_neighbors, "libhdf5 crashed reading this file"),
        ("segv_H5VM_memcpyvv.hdf5", cagra.read_matrix, "no data stored"),
        ("rss_1.7GB_from_2KB.hdf5", cagra.read_matrix, "out of memory"),
    ],
)
def test_fuzzed_hdf5_is_an_error_not_a_crash(name, reader, message):
    before = peak_rss_kib()
    with pytest.raises(cagra.CagraError, match=message):
        reader(regress(name))
    # The reader process's allocations never reach this process.
    assert peak_rss_kib() - before < 64 * 1024


def test_external_storage_is_refused():
    with pytest.raises(cagra.CagraError, match="external storage.*/etc/passwd"):
        cagra.read_matrix(regress("ext_passwd.hdf5"))


def test_hdf5_round_trip(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(5)
    train = rng.standard_normal((3000, 40)).astype(np.float32)
    neighbors = rng.integers(0, 3000, (50, 10)).astype(np.int64)
    path = tmp_path / "ann.hdf5"
    with h5py.File(path, "w") as f:
        f.create_dataset("train", data=train, chunks=(256, 8), compression="gzip", shuffle=True)
        f.create_dataset("neighbors", data=neighbors)
    np.testing.assert_array_equal(cagra.read_matrix(path), train)
    ids, dist = cagra.read_neighbors(path)
    np.testing.assert_array_equal(ids, neighbors.astype(np.uint32))
    assert dist is None
