"""Hostile files and odd arguments (issue 17) end in a clear Python exception, never a
UnicodeDecodeError, a raw nanobind signature dump or a dead interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cagra
import numpy as np
import pytest
from conftest import REPO


def regress_input(name: str) -> Path | None:
    """A fuzzer-found input of /work/shared/data/regress, looked for next to the shared data sets
    ($CAGRA_DATA_DIR, <repo>/data/shared, <repo>/../shared/data); None when absent."""
    dirs = [Path(os.environ["CAGRA_DATA_DIR"])] if os.environ.get("CAGRA_DATA_DIR") else []
    dirs += [REPO / "data" / "shared", REPO.parent / "shared" / "data"]
    for d in dirs:
        if (d / "regress" / name).is_file():
            return d / "regress" / name
    return None


def npy_with_header(header: bytes) -> bytes:
    """A .npy file (version 1.0) whose header is `header`, byte for byte."""
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def printable_ascii(s: str) -> bool:
    return all(0x20 <= ord(c) <= 0x7E for c in s)


# ---- defect 7: messages that quote file bytes --------------------------------------------------


def test_non_utf8_npy_header_is_a_cagra_error(tmp_path):
    bad = tmp_path / "nonutf8.npy"
    header = b"{'descr': '\xff\xfe<f4\x1b[2J', 'fortran_order': False, 'shape': (2, 2)}"
    bad.write_bytes(npy_with_header(header))
    with pytest.raises(cagra.CagraError, match="unsupported dtype") as err:
        cagra.read_matrix(bad)
    assert printable_ascii(str(err.value)), str(err.value)
    assert "\\xff" in str(err.value)


def test_long_npy_header_is_truncated(tmp_path):
    bad = tmp_path / "long.npy"
    bad.write_bytes(npy_with_header(b"{'descr': " + b"\x1b[31mred\xc3(" * 5000))
    with pytest.raises(cagra.CagraError, match="bad .npy header") as err:
        cagra.read_matrix(bad)
    assert printable_ascii(str(err.value)), str(err.value)
    assert len(str(err.value)) < 400


def test_fuzzed_non_utf8_npy():
    found = regress_input("nonutf8.npy")
    if found is None:
        pytest.skip("regress/nonutf8.npy is not here")
    with pytest.raises(cagra.CagraError, match="bad .npy header") as err:
        cagra.read_matrix(found)
    assert printable_ascii(str(err.value)), str(err.value)


def test_message_bytes_that_are_not_utf8_still_give_a_cagra_error():
    # The binding's own guard, behind the library's escaping: any byte reaches Python as \xNN.
    with pytest.raises(cagra.CagraError, match=r"bad \\xff\\xfe bytes"):
        cagra._ext._raise_error(b"bad \xff\xfe bytes")
    with pytest.raises(cagra.CagraError, match="caf\u00e9"):
        cagra._ext._raise_error("caf\u00e9".encode())


# ---- defect 6: an index whose vectors are not finite --------------------------------------------

_M64 = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes) -> int:
    """XXH64 with seed 0 (the index file's checksum, docs/index_format.md), from the spec."""
    n, p = len(data), 0
    if n >= 32:
        v = [(_P1 + _P2) & _M64, _P2, 0, (-_P1) & _M64]
        while n - p >= 32:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[p + 8 * i : p + 8 * i + 8], "little"))
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for x in v:
            h = (((h ^ _round(0, x)) * _P1) + _P4) & _M64
    else:
        h = _P5
    h = (h + n) & _M64
    while n - p >= 8:
        k = _round(0, int.from_bytes(data[p : p + 8], "little"))
        h = ((_rotl(h ^ k, 27) * _P1) + _P4) & _M64
        p += 8
    if n - p >= 4:
        k = (int.from_bytes(data[p : p + 4], "little") * _P1) & _M64
        h = ((_rotl(h ^ k, 23) * _P2) + _P3) & _M64
        p += 4
    while p < n:
        h = (_rotl(h ^ ((data[p] * _P5) & _M64), 11) * _P1) & _M64
        p += 1
    h = ((h ^ (h >> 33)) * _P2) & _M64
    h = ((h ^ (h >> 29)) * _P3) & _M64
    return h ^ (h >> 32)


def test_index_with_nan_vectors_is_refused(tmp_path):
    data = np.random.default_rng(5).random((40, 4), dtype=np.float32)
    path = tmp_path / "finite.cagra"
    cagra.build(data, graph_degree=4, intermediate_graph_degree=8, backend="cpu").save(path)
    raw = bytearray(path.read_bytes())
    assert int.from_bytes(raw[-8:], "little") == xxh64(bytes(raw[:-8]))
    raw[64 + 4 * (7 * 4 + 2) : 64 + 4 * (7 * 4 + 3)] = np.float32(np.nan).tobytes()
    raw[-8:] = xxh64(bytes(raw[:-8])).to_bytes(8, "little")  # a valid checksum over the NaN
    bad = tmp_path / "nan.cagra"
    bad.write_bytes(bytes(raw))
    with pytest.raises(cagra.CagraError, match="vector row 7, column 2 is NaN"):
        cagra.load(bad)
    found = regress_input("vectors_nan.cagra")
    if found is not None:
        with pytest.raises(cagra.CagraError, match="is NaN"):
            cagra.load(found)


# ---- defect 8a: a save killed with SIGKILL leaves a temporary, the next save removes it ----------


def test_next_save_removes_the_temporary_of_a_killed_save(tmp_path):
    path = tmp_path / "killed.cagra"
    # A child process saves a 32 MB index over and over; it is killed while a temporary exists.
    code = (
        "import sys, numpy as np, cagra\n"
        "x = np.random.default_rng(6).random((200, 40_000), dtype=np.float32)\n"
        "idx = cagra.build(x, graph_degree=4, intermediate_graph_degree=8, backend='cpu')\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    idx.save(sys.argv[1])\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 60
        temps = []
        while not temps and time.monotonic() < deadline:
            temps = list(tmp_path.glob("killed.cagra.tmp.*"))
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    temps = list(tmp_path.glob("killed.cagra.tmp.*"))
    assert temps, "no temporary file was caught mid-save"
    # Written a minute ago (a writer whose pid we cannot see keeps writing: recent files stay).
    old = time.time() - 120
    for t in temps:
        os.utime(t, (old, old))
    data = np.random.default_rng(6).random((100, 8), dtype=np.float32)
    cagra.build(data, graph_degree=4, intermediate_graph_degree=8).save(path)
    assert list(tmp_path.glob("killed.cagra.tmp.*")) == []
    assert cagra.load(path).size == 100


# ---- defect 8c: arrays that are empty, big-endian or of Python objects ---------------------------


@pytest.fixture(scope="module")
def small_index():
    data = np.random.default_rng(7).random((100, 8), dtype=np.float32)
    return data, cagra.build(data, graph_degree=4, intermediate_graph_degree=8)


def test_empty_arrays_are_reported_as_empty(small_index):
    data, index = small_index
    for empty in (np.zeros((0, 8), np.float32), np.empty((0, 8), np.float32), data[:0]):
        with pytest.raises(cagra.CagraError, match=r"queries is empty \(shape \(0, 8\)\)"):
            index.search(empty, 3)
        with pytest.raises(cagra.CagraError, match=r"dataset is empty \(shape \(0, 8\)\)"):
            cagra.build(empty, graph_degree=4, intermediate_graph_degree=8)
    with pytest.raises(cagra.CagraError, match=r"dataset is empty \(shape \(5, 0\)\)"):
        cagra.brute_force(np.zeros((5, 0), np.float32), data, 3)


def test_big_endian_arrays_get_a_clear_message(small_index):
    data, index = small_index
    for dt in (">f4", ">f2"):
        big = data.astype(dt)
        with pytest.raises(ValueError, match="queries is big-endian") as err:
            index.search(big, 3)
        assert "incompatible function arguments" not in str(err.value)
        with pytest.raises(ValueError, match="dataset is big-endian"):
            cagra.build(big, graph_degree=4, intermediate_graph_degree=8)
    # Converted as the message says, it works.
    big = data.astype(">f4")
    ids, _ = index.search(big.astype(big.dtype.newbyteorder("=")), 3)
    assert ids.shape == (100, 3)


@pytest.mark.parametrize("dt", [object, "U4", [("a", "<f4"), ("b", "<f4")], ">i8"])
def test_object_and_other_unsupported_numpy_dtypes(small_index, dt):
    data, index = small_index
    bad = data.astype(dt)
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8") as err:
        index.search(bad, 3)
    assert "incompatible function arguments" not in str(err.value)
    with pytest.raises(TypeError, match="dataset has dtype"):
        cagra.build(bad)
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8"):
        cagra.brute_force(data, bad, 3)


# ---- defect 5: thread counts ---------------------------------------------------------------------


def test_absurd_thread_counts_are_clamped():
    data = np.random.default_rng(8).random((300, 8), dtype=np.float32)
    index = cagra.build(data, graph_degree=8, intermediate_graph_degree=16, backend="cpu")
    one = index.search(data[:50], 5, backend="cpu", num_threads=1)
    for n in (65_536, 2**31 - 1):
        many = index.search(data[:50], 5, backend="cpu", num_threads=n)
        np.testing.assert_array_equal(one[0], many[0])
    cagra.build(data, graph_degree=8, intermediate_graph_degree=16, backend="cpu", num_threads=n)
    cagra.analyze(index, num_threads=n)


def test_threads_the_system_cannot_start_raise_instead_of_exiting():
    # 1 GiB thread stacks (OMP_STACKSIZE) in a 3 GiB address space: a team of 4 cannot start.
    # Before, libgomp printed "Thread creation failed" and the interpreter exited.
    code = (
        "import numpy as np, cagra\n"
        "x = np.random.default_rng(9).random((300, 8), dtype=np.float32)\n"
        "try:\n"
        "    cagra.build(x, graph_degree=8, intermediate_graph_degree=16, backend='cpu',"
        " num_threads=64)\n"
        "except cagra.CagraError as e:\n"
        "    print('CagraError:', e)\n"
        "index = cagra.build(x, graph_degree=8, intermediate_graph_degree=16, backend='cpu')\n"
        "print('default:', index.search(x[:20], 3)[0].shape)\n"
    )

    def limit_address_space():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    env = dict(os.environ, OMP_STACKSIZE="1G", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="64")
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        preexec_fn=limit_address_space,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "CagraError: cannot start " in r.stdout, r.stdout + r.stderr
    assert "default: (20, 3)" in r.stdout, r.stdout + r.stderr
