// Small libhdf5 helpers of the HDF5 reader (hdf5_reader.hpp): names from the file made safe to
// quote, the root group's members for "no dataset" messages, the external-link refusal, and
// the error path that tells a corrupt file's runaway allocation from an ordinary failure.
#include "core/io/hdf5_reader.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <cstdio>

namespace cagra::io::detail::h5 {

namespace {

herr_t note_no_memory(unsigned, const H5E_error2_t* e, void* out) {
  // Any module's "can't allocate" (the metadata cache reports its own) or "no space".
  if (e->min_num == H5E_CANTALLOC || e->min_num == H5E_NOSPACE) *static_cast<bool*>(out) = true;
  return 0;
}

// Whether the last libhdf5 failure was an allocation that failed (in the child: the memory
// limit, which a valid file of this size never reaches).
bool hdf5_out_of_memory() {
  bool found = false;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, note_no_memory, &found);
  return found;
}

struct collect_state {
  std::string names;
  int count = 0;
};

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  auto* s = static_cast<collect_state*>(out);
  if (++s->count > 20) {
    s->names += ", ...";
    return 1;  // stop: enough for a message
  }
  if (!s->names.empty()) s->names += ", ";
  s->names += shown(name, 60);
  return 0;
}

}  // namespace

std::string shown(const char* s, size_t max_len) {
  std::string out;
  for (size_t i = 0; s[i] != '\0'; ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string list_members(hid_t file) {
  collect_state s;
  hsize_t idx = 0;
  H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &s);
  return s.names.empty() ? "nothing" : s.names;
}

herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t,
                            void*) {
  return -1;
}

[[noreturn]] void fail_hdf5(isolate_context& ctx, const char* doing, const std::string& file,
                            uint64_t file_size, const char* src, int line,
                            const std::string& message) {
  if (hdf5_out_of_memory()) {
    const uint64_t budget = ctx.memory_budget();
    if (budget > 0) {
      cagra::detail::throw_error(
          src, line,
          cagra::detail::format("%s: libhdf5 ran out of memory while %s: it needed more than the "
                                "%llu MiB that reading a %llu-byte file can justify (the file "
                                "is corrupt)",
                                file.c_str(), doing, (unsigned long long)(budget >> 20),
                                (unsigned long long)file_size));
    }
    cagra::detail::throw_error(
        src, line, message + " (libhdf5 could not allocate memory while " + doing + ")");
  }
  cagra::detail::throw_error(src, line, message);
}

}  // namespace cagra::io::detail::h5

#endif  // CAGRA_HAVE_HDF5
