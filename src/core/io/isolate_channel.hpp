// The channel between the caller and its forked reader process (isolate.cpp): what both sides of
// run_isolated agree on, kept in one place so that the child's half (isolate_child.cpp) and the
// caller's half (isolate_parent.cpp) cannot drift apart.
//
// Shared state is a memfd created before fork(). Its first page(s) are a header that both
// processes map: state, a progress counter, the current phase, the error message and the meta
// values. When the work begins its result, the child grows the memfd by a ring of two staging
// slots (each the work's largest piece) and maps it; the parent maps the same ring. A
// SOCK_SEQPACKET socketpair carries the flow control: the child sends "piece in slot s goes to
// [offset, offset + n)", the parent copies it into the caller's buffer and sends the slot back.
// So the data is copied once, into memory the caller allocated anyway, and the staging pages
// are touched once per slot, not once per byte of the result (fresh pages cost far more than a
// copy). send() with MSG_NOSIGNAL means a dead child can never raise SIGPIPE in the caller.
//
// Linux only: CAGRA_ISOLATE_FORK is defined where the forked reader exists.
#pragma once

#if defined(__linux__)
#define CAGRA_ISOLATE_FORK 1
#endif

#ifdef CAGRA_ISOLATE_FORK
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace cagra::io::detail::isolate_impl {

// Header states, written by the child; 0 (the zero-filled header) while it runs.
constexpr uint32_t kDone = 1;
constexpr uint32_t kFailed = 2;
constexpr int kExitFailed = 3;  // the child's exit status when the header holds an error message
constexpr uint64_t kSlots = 2;  // the ring: the child fills one slot while the parent copies one

struct shared_header {
  uint32_t state;
  uint32_t reserved;
  uint64_t progress;    // bumped by the child; the parent's stall clock watches it
  uint64_t bytes;       // the result's size, once begun
  uint64_t slot_bytes;  // the size of each ring slot, once begun
  uint64_t meta[8];
  char phase[128];
  char message[4096];
};

// Messages on the socketpair.
enum : uint32_t { kMsgBegin = 1, kMsgPiece = 2 };
struct message {
  uint32_t type;
  uint32_t slot;
  uint64_t offset;
  uint64_t n;
};

inline uint64_t page_bytes() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

inline uint64_t round_to_page(uint64_t n) {
  const uint64_t p = page_bytes();
  return (n + p - 1) / p * p;
}

// Where the ring starts in the memfd: after the header's pages.
inline uint64_t ring_offset() { return round_to_page(sizeof(shared_header)); }

// Copies a NUL-terminated string into a fixed buffer, always terminating it.
inline void put_text(char* dst, size_t cap, const char* src) {
  size_t n = 0;
  for (; src[n] != '\0' && n + 1 < cap; ++n) dst[n] = src[n];
  dst[n] = '\0';
}

class fd_owner {
 public:
  explicit fd_owner(int fd = -1) : fd_(fd) {}
  ~fd_owner() { reset(); }
  fd_owner(const fd_owner&) = delete;
  fd_owner& operator=(const fd_owner&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

class mapping {
 public:
  mapping() = default;
  ~mapping() { reset(); }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  bool map(int fd, uint64_t offset, uint64_t n, int prot) {
    reset();
    void* p =
        ::mmap(nullptr, static_cast<size_t>(n), prot, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return false;
    p_ = static_cast<uint8_t*>(p);
    n_ = n;
    return true;
  }
  void reset() {
    if (p_ != nullptr) ::munmap(p_, static_cast<size_t>(n_));
    p_ = nullptr;
  }
  uint8_t* get() const { return p_; }

 private:
  uint8_t* p_ = nullptr;
  uint64_t n_ = 0;
};

}  // namespace cagra::io::detail::isolate_impl

#endif  // CAGRA_ISOLATE_FORK
