// The Index class of the extension: its properties (each read under the index's lock), the
// zero-copy numpy views of its graph and vectors (which keep the Index alive and hold off
// changes that would move its memory), and saving and loading index files.
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ext_common.hpp"

namespace cagra_py {

namespace {

/** The owner of a numpy view of the index's memory (graph or vectors): keeps the Index alive,
 *  and takes back the count in p.views (which the caller took under the lock) when it dies. */
nb::capsule view_owner(nb::handle self) {
  struct owner {
    nb::object self;
    py_index* p;
  };
  auto& p = nb::cast<py_index&>(self);
  auto* o = new (std::nothrow) owner{nb::borrow(self), &p};
  if (o == nullptr) {
    --p.views;
    throw std::bad_alloc();
  }
  nb::capsule keep;
  try {
    keep = nb::capsule(o, [](void* v) noexcept {
      auto* w = static_cast<owner*>(v);
      --w->p->views;
      delete w;  // drops the reference to the Index (the capsule dies with the GIL held)
    });
  } catch (...) {
    --p.views;
    delete o;
    throw;
  }
  return keep;
}

}  // namespace

void bind_index_class(nb::module_& m) {
  // Every property reads under the index's lock (py_index).
  const auto prop = [](auto get) {
    return [get](const py_index& p) { return read_locked(p, get); };
  };
  nb::class_<py_index>(m, "Index")
      .def_prop_ro("size", prop([](const cagra::index& i) { return i.size(); }))
      .def_prop_ro("dim", prop([](const cagra::index& i) { return i.dim(); }))
      .def_prop_ro("graph_degree", prop([](const cagra::index& i) { return i.graph_degree(); }))
      .def_prop_ro("metric", prop([](const cagra::index& i) { return i.metric(); }))
      .def_prop_ro("dtype", prop([](const cagra::index& i) {
                     return std::string(to_string(i.storage_dtype()));
                   }))
      .def_prop_ro("deleted_count", prop([](const cagra::index& i) { return i.deleted_count(); }))
      .def_prop_ro("live_size", prop([](const cagra::index& i) { return i.live_size(); }))
      .def_prop_ro("has_labels", prop([](const cagra::index& i) { return i.has_labels(); }))
      // A copy (None without labels): labels change with extend and compact.
      .def_prop_ro(
          "labels",
          [](const py_index& p) -> std::optional<nb::ndarray<nb::numpy, int64_t>> {
            std::vector<int64_t> labels =
                read_locked(p, [](const cagra::index& i) { return i.labels(); });
            if (labels.empty()) return std::nullopt;
            auto* owner = new std::vector<int64_t>(std::move(labels));
            nb::capsule deleter(
                owner, [](void* v) noexcept { delete static_cast<std::vector<int64_t>*>(v); });
            return nb::ndarray<nb::numpy, int64_t>(owner->data(), {owner->size()}, deleter);
          },
          nb::rv_policy::reference)  // the arrays own their memory (capsules)
      // Read-only views into the index, no copies; they keep the Index alive, and extend and
      // compact raise BufferError while one does (py_index::views).
      .def_prop_ro(
          "graph",
          [](nb::handle self) {
            const auto& p = nb::cast<const py_index&>(self);
            struct shape {
              const void* data;
              size_t rows, cols;
            };
            const shape s = read_locked(p, [&](const cagra::index& i) {
              ++p.views;
              return shape{i.graph().data, size_t(i.size()), size_t(i.graph_degree())};
            });
            return nb::ndarray<nb::numpy, const uint32_t, nb::ndim<2>>(s.data, {s.rows, s.cols},
                                                                       view_owner(self));
          },
          nb::rv_policy::reference)
      .def_prop_ro(
          "vectors",
          [](nb::handle self) {
            const auto& p = nb::cast<const py_index&>(self);
            struct shape {
              const void* data;
              size_t rows, cols;
              cagra::dtype type;
            };
            const shape s = read_locked(p, [&](const cagra::index& i) {
              ++p.views;
              return shape{i.vectors().data(), size_t(i.size()), size_t(i.dim()),
                           i.storage_dtype()};
            });
            return nb::ndarray<nb::numpy, nb::ro, nb::ndim<2>>(
                s.data, {s.rows, s.cols}, view_owner(self), {}, to_dlpack(s.type));
          },
          nb::rv_policy::reference);
}

void save(const py_index& p, const std::string& path) {
  read_locked(p, [&](const cagra::index& idx) { cagra::save(idx, path); });
}

std::unique_ptr<py_index> load(const std::string& path) {
  nb::gil_scoped_release nogil;
  return std::make_unique<py_index>(cagra::load(path));
}

}  // namespace cagra_py
