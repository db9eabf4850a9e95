// cagra::import_hnswlib: reads a float32 hnswlib file (hnswlib_format.hpp) into an index. Every
// header field is checked against the file's real size before anything large is allocated, and
// every link against the row count, so a truncated or garbled file gives a cagra::error, never
// a crash. Level 0 becomes the graph, each row's list made exactly `graph_degree` long: its own
// links nearest first, then (when short) the nearest of its neighbours' links, then (a row with
// almost no neighbourhood) the next rows in order. The upper levels are read past and dropped:
// the CAGRA search starts from random rows and needs no hierarchy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/hnswlib.hpp>

#include "core/convert.hpp"
#include "core/hnswlib_format.hpp"
#include "core/io/common.hpp"

namespace cagra {

namespace {

using core::hnsw::header;

/** Reads and checks the header; returns the vector dimension. */
uint32_t read_header(io::detail::input_file& in, header& h, const hnswlib_import_params& params) {
  const char* path = in.path().c_str();
  uint8_t bytes[core::hnsw::kHeaderBytes];
  in.read(bytes, sizeof(bytes), "hnswlib header");
  h.decode(bytes);
  CAGRA_EXPECTS(h.offset_level0 == 0,
                "%s: not an hnswlib index (level-0 offset %llu, hnswlib writes 0)", path,
                (unsigned long long)h.offset_level0);
  CAGRA_EXPECTS(h.element_count >= 2 && h.element_count <= uint64_t(kMaxRows),
                "%s: %llu elements; an index needs 2 .. 2^31 - 1 rows", path,
                (unsigned long long)h.element_count);
  CAGRA_EXPECTS(h.maxM0 >= 1 && h.maxM0 <= core::hnsw::kMaxLinks && h.maxM <= core::hnsw::kMaxLinks,
                "%s: level-0 capacity maxM0 = %llu and maxM = %llu must be in [1, 65535]", path,
                (unsigned long long)h.maxM0, (unsigned long long)h.maxM);
  CAGRA_EXPECTS(h.data_offset == h.level0_links_bytes(),
                "%s: vector offset %llu does not follow the level-0 links (%llu bytes)", path,
                (unsigned long long)h.data_offset, (unsigned long long)h.level0_links_bytes());
  CAGRA_EXPECTS(h.label_offset > h.data_offset && h.label_offset - h.data_offset <= (1u << 24) &&
                    h.size_data_per_element == h.label_offset + sizeof(uint64_t),
                "%s: inconsistent record layout (vector at %llu, label at %llu, record of %llu "
                "bytes)",
                path, (unsigned long long)h.data_offset, (unsigned long long)h.label_offset,
                (unsigned long long)h.size_data_per_element);
  const uint64_t data_bytes = h.label_offset - h.data_offset;
  CAGRA_EXPECTS(data_bytes % sizeof(float) == 0,
                "%s: %llu bytes per vector is not float32 data (an L2SpaceI file of u8 vectors?); "
                "only float32 files can be imported",
                path, (unsigned long long)data_bytes);
  const uint32_t dim = uint32_t(data_bytes / sizeof(float));
  CAGRA_EXPECTS(params.dim == 0 || params.dim == dim,
                "%s: vectors of dimension %u, expected %u (a u8 L2SpaceI file reads as a quarter "
                "of its dimension; only float32 files can be imported)",
                path, dim, params.dim);
  CAGRA_EXPECTS(h.max_level >= 0 && h.entry_point < h.element_count,
                "%s: entry point %u / top level %d outside the index", path, h.entry_point,
                h.max_level);
  const uint64_t level0 =
      io::detail::mul_checked(h.element_count, h.size_data_per_element, in.path(), "level 0");
  // Level 0, then at least the 4-byte size of every row's upper lists.
  CAGRA_EXPECTS(level0 <= in.remaining() && in.remaining() - level0 >= 4 * h.element_count,
                "%s: truncated: %llu rows of %llu bytes need more than the %llu bytes left", path,
                (unsigned long long)h.element_count, (unsigned long long)h.size_data_per_element,
                (unsigned long long)in.remaining());
  return dim;
}

/** Reads level 0: vectors, link lists (checked), labels, deleted marks. */
void read_level0(io::detail::input_file& in, const header& h, host_matrix& vectors,
                 std::vector<uint32_t>& counts, std::vector<uint32_t>& links,
                 std::vector<uint64_t>& labels, std::vector<int64_t>& deleted) {
  const int64_t n = int64_t(h.element_count);
  const size_t record = h.size_data_per_element;
  const size_t maxM0 = h.maxM0;
  counts.resize(size_t(n));
  links.resize(size_t(n) * maxM0);
  labels.resize(size_t(n));
  const int64_t block_rows = std::max<int64_t>(1, int64_t((64u << 20) / record));
  std::vector<uint8_t> block;
  for (int64_t first = 0; first < n; first += block_rows) {
    const int64_t rows = std::min(block_rows, n - first);
    block.resize(size_t(rows) * record);
    in.read(block.data(), block.size(), "hnswlib level 0");
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = first + r;
      const uint8_t* rec = block.data() + size_t(r) * record;
      uint32_t link_header;
      std::memcpy(&link_header, rec, 4);
      const uint32_t count = link_header & core::hnsw::kMaxLinks;
      CAGRA_EXPECTS(count <= maxM0, "%s: row %lld has %u links, more than the %zu slots",
                    in.path().c_str(), (long long)i, count, maxM0);
      if (link_header & core::hnsw::kDeletedBit) deleted.push_back(i);
      counts[size_t(i)] = count;
      std::memcpy(&links[size_t(i) * maxM0], rec + 4, size_t(count) * 4);
      for (uint32_t j = 0; j < count; ++j) {
        const uint32_t id = links[size_t(i) * maxM0 + j];
        CAGRA_EXPECTS(id < uint64_t(n), "%s: row %lld links to row %u; the index has %lld rows",
                      in.path().c_str(), (long long)i, id, (long long)n);
      }
      std::memcpy(static_cast<uint8_t*>(vectors.data()) + size_t(i) * vectors.view().row_bytes(),
                  rec + h.data_offset, vectors.view().row_bytes());
      std::memcpy(&labels[size_t(i)], rec + h.label_offset, sizeof(uint64_t));
    }
  }
}

/** Reads past the upper levels, checking that their sizes add up to the end of the file. */
void skip_upper_levels(io::detail::input_file& in, const header& h) {
  for (uint64_t i = 0; i < h.element_count; ++i) {
    uint32_t bytes;
    in.read(&bytes, 4, "hnswlib upper-level size");
    CAGRA_EXPECTS(bytes % h.upper_links_bytes() == 0 && bytes <= in.remaining(),
                  "%s: row %llu has %u bytes of upper-level links (lists of %llu bytes, %llu "
                  "bytes left)",
                  in.path().c_str(), (unsigned long long)i, bytes,
                  (unsigned long long)h.upper_links_bytes(), (unsigned long long)in.remaining());
    if (bytes != 0) in.seek(in.offset() + bytes);
  }
  CAGRA_EXPECTS(in.remaining() == 0, "%s: %llu bytes after the last row's links", in.path().c_str(),
                (unsigned long long)in.remaining());
}

/** Each row's list made exactly `degree` long (see the file comment). */
std::vector<uint32_t> fixed_degree_graph(const host_matrix& vectors, metric m,
                                         const std::vector<uint32_t>& counts,
                                         const std::vector<uint32_t>& links, size_t maxM0,
                                         uint32_t degree, int nt) {
  const int64_t n = vectors.rows();
  const int64_t dim = vectors.cols();
  const float* v = static_cast<const float*>(vectors.data());
  // cosine rows are unit-norm here, so 1 - dot orders them as cosine does.
  const metric space = m == metric::l2 ? metric::l2 : metric::inner_product;
  std::vector<uint32_t> graph(size_t(n) * degree);
#pragma omp parallel num_threads(nt)
  {
    std::vector<std::pair<float, uint32_t>> chosen, two_hop;
    std::vector<uint32_t> own_ids, hop_ids;
#pragma omp for schedule(dynamic, 512)
    for (int64_t i = 0; i < n; ++i) {
      const auto dist = [&](uint32_t j) {
        return core::hnsw::space_distance(space, v + i * dim, v + int64_t(j) * dim, dim);
      };
      const uint32_t* row = &links[size_t(i) * maxM0];
      // The row's own links (and the row itself), distinct, sorted by id.
      own_ids.assign(row, row + counts[size_t(i)]);
      own_ids.push_back(uint32_t(i));
      std::sort(own_ids.begin(), own_ids.end());
      own_ids.erase(std::unique(own_ids.begin(), own_ids.end()), own_ids.end());
      chosen.clear();
      for (uint32_t j : own_ids)
        if (j != uint32_t(i)) chosen.emplace_back(dist(j), j);
      std::sort(chosen.begin(), chosen.end());
      if (chosen.size() > degree) chosen.resize(degree);
      if (chosen.size() < degree) {
        hop_ids.clear();
        for (uint32_t e = 0; e < counts[size_t(i)]; ++e) {
          const uint32_t j = row[e];
          hop_ids.insert(hop_ids.end(), &links[size_t(j) * maxM0],
                         &links[size_t(j) * maxM0] + counts[j]);
        }
        std::sort(hop_ids.begin(), hop_ids.end());
        hop_ids.erase(std::unique(hop_ids.begin(), hop_ids.end()), hop_ids.end());
        two_hop.clear();
        for (uint32_t t : hop_ids)
          if (!std::binary_search(own_ids.begin(), own_ids.end(), t))
            two_hop.emplace_back(dist(t), t);
        const size_t want = std::min(two_hop.size(), degree - chosen.size());
        std::partial_sort(two_hop.begin(), two_hop.begin() + want, two_hop.end());
        chosen.insert(chosen.end(), two_hop.begin(), two_hop.begin() + want);
      }
      // A row with (almost) no neighbourhood: the next rows in order.
      for (int64_t step = 1; chosen.size() < degree; ++step) {
        const uint32_t j = uint32_t((i + step) % n);
        const bool taken =
            std::any_of(chosen.begin(), chosen.end(), [j](const auto& c) { return c.second == j; });
        if (!taken) chosen.emplace_back(0.0f, j);
      }
      for (uint32_t e = 0; e < degree; ++e) graph[size_t(i) * degree + e] = chosen[e].second;
    }
  }
  return graph;
}

}  // namespace

index import_hnswlib(const std::string& path, const hnswlib_import_params& params,
                     const resources& res) {
  const int nt = resolve_threads(res.num_threads);
  io::detail::input_file in(path);
  header h;
  const uint32_t dim = read_header(in, h, params);
  const int64_t n = int64_t(h.element_count);
  const uint32_t degree = params.graph_degree != 0
                              ? params.graph_degree
                              : uint32_t(std::min<uint64_t>(h.maxM0, uint64_t(n - 1)));
  CAGRA_EXPECTS(int64_t(degree) < n, "import_hnswlib: graph degree %u needs more than %lld rows",
                degree, (long long)n);

  host_matrix vectors = io::detail::alloc_matrix(path, dtype::f32, n, dim);
  std::vector<uint32_t> counts, links;
  std::vector<uint64_t> labels;
  std::vector<int64_t> deleted;
  read_level0(in, h, vectors, counts, links, labels, deleted);
  skip_upper_levels(in, h);

  // Finite values checked; cosine rows normalized (hnswlib's cosine files are already).
  if (params.metric == metric::cosine) {
    vectors = core::to_storage(vectors.view(), metric::cosine, storage_type::f32, nt);
  } else {
    core::check_finite(vectors.view(), "hnswlib vectors");
  }
  std::vector<uint32_t> graph =
      fixed_degree_graph(vectors, params.metric, counts, links, h.maxM0, degree, nt);
  links = {};
  index idx(params.metric, std::move(vectors), std::move(graph), degree);

  bool row_numbers = true;
  for (int64_t i = 0; i < n && row_numbers; ++i) row_numbers = labels[size_t(i)] == uint64_t(i);
  if (!row_numbers) {
    std::vector<int64_t> signed_labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      CAGRA_EXPECTS(labels[size_t(i)] <= uint64_t(std::numeric_limits<int64_t>::max()),
                    "%s: row %lld has label %llu, over the largest label 2^63 - 1", path.c_str(),
                    (long long)i, (unsigned long long)labels[size_t(i)]);
      signed_labels[size_t(i)] = int64_t(labels[size_t(i)]);
    }
    idx.set_labels(std::move(signed_labels));
  }
  if (!deleted.empty()) {
    std::vector<int64_t> deleted_labels(deleted.size());
    for (size_t e = 0; e < deleted.size(); ++e) deleted_labels[e] = idx.label_of(deleted[e]);
    remove(res, idx, deleted_labels.data(), int64_t(deleted_labels.size()));
  }
  return idx;
}

}  // namespace cagra
