// Large file bodies read over threads (io::detail::read_pieces): 16 MiB pieces with pread, so
// that several threads copy out of the page cache and fault the destination's pages in at once.
// read_pieces_in_order also hands each piece, in file order, to a consumer (cagra::load's
// checksum and finiteness scan) while later pieces are still being read, so that work that must
// run in order overlaps the reads instead of following them.
#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <thread>

#include "core/io/common.hpp"

namespace cagra::io::detail {
namespace {

constexpr uint64_t kPiece = uint64_t{16} << 20, kFrom = uint64_t{64} << 20;

/** Threads for a body of n bytes: one below kFrom, else up to 8. */
int threads_for(uint64_t n) { return n < kFrom ? 1 : std::min(8, omp_get_max_threads()); }

/** Reads [lo, lo + len) of the body; the bytes read before a failure (len when none) and the
 *  errno of a failed read (0 when the file ended first). */
uint64_t read_piece(int fd, uint8_t* out, uint64_t lo, uint64_t len, uint64_t offset, int* err) {
  uint64_t done = 0;
  while (done < len) {
    // At most 1 GiB a call (Linux moves at most ~2 GiB per read).
    const size_t want = static_cast<size_t>(std::min<uint64_t>(len - done, uint64_t{1} << 30));
    const ssize_t got = ::pread(fd, out + lo + done, want, static_cast<off_t>(offset + lo + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {  // the file shrank after it was sized, or the device failed
      if (got < 0) *err = errno;
      break;
    }
    done += static_cast<uint64_t>(got);
  }
  return done;
}

}  // namespace

pieces_read read_pieces(int fd, void* dst, uint64_t n, uint64_t offset) {
  return read_pieces_in_order(fd, dst, n, offset, nullptr);
}

pieces_read read_pieces_in_order(int fd, void* dst, uint64_t n, uint64_t offset,
                                 const std::function<void(uint64_t, uint64_t)>& consume) {
  auto* out = static_cast<uint8_t*>(dst);
  const int threads = threads_for(n);
  const uint64_t piece = threads > 1 ? kPiece : std::max<uint64_t>(n, 1);
  const int64_t pieces = static_cast<int64_t>((n + piece - 1) / piece);
  // Per piece: 0 not read yet, 1 read whole, 2 short (the body ends or fails inside it).
  std::unique_ptr<std::atomic<uint8_t>[]> state(new std::atomic<uint8_t>[size_t(pieces)]);
  for (int64_t p = 0; p < pieces; ++p) state[size_t(p)].store(0, std::memory_order_relaxed);
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> first_short{n};
  std::atomic<int> read_errno{0};
  int64_t consumed = 0;  // pieces handed to `consume` (thread 0 only)
  const auto read_one = [&](int64_t p) {
    const uint64_t lo = uint64_t(p) * piece, len = std::min(piece, n - lo);
    int err = 0;
    const uint64_t done = read_piece(fd, out, lo, len, offset, &err);
    if (done < len) {
      if (err) read_errno = err;
      uint64_t seen = first_short.load();
      while (lo + done < seen && !first_short.compare_exchange_weak(seen, lo + done)) {
      }
    }
    state[size_t(p)].store(done < len ? 2 : 1, std::memory_order_release);
  };
  // Thread 0 hands over every piece that is read, in order, and reads one itself only when the
  // next in order is not there yet; the others only read. The consumer stops at a short piece.
  const auto hand_over = [&] {
    while (consumed < pieces) {
      const uint8_t s = state[size_t(consumed)].load(std::memory_order_acquire);
      if (s != 1) return s == 2;  // not read yet, or short: nothing more to hand over
      const uint64_t lo = uint64_t(consumed) * piece;
      consume(lo, std::min(piece, n - lo));
      ++consumed;
    }
    return true;
  };
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const bool leader = omp_get_thread_num() == 0 && consume;
    while (true) {
      if (leader && hand_over()) break;  // all handed over, or a short piece stops it
      const int64_t p = next.fetch_add(1);
      if (p < pieces) {
        read_one(p);
        continue;
      }
      if (!leader) break;
      std::this_thread::yield();  // the last pieces are being read by others
    }
  }
  return {first_short.load(), read_errno.load()};
}

}  // namespace cagra::io::detail
