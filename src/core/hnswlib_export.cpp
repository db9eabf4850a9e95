// cagra::export_hnswlib: writes an index as the file hnswlib's saveIndex writes
// (hnswlib_format.hpp has the layout, docs/hnswlib.md the mapping). Level 0 is the CAGRA graph
// row for row; the upper levels come from build_hierarchy. The level-0 records are made in
// parallel, a block of rows at a time, and streamed through a temporary file that is renamed
// over the target once complete.
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/hnswlib.hpp>

#include "core/hnswlib_format.hpp"
#include "core/hnswlib_levels.hpp"
#include "core/io/common.hpp"

namespace cagra {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/** M for the file: the asked one, or max(2, ceil(degree / 2)); checks what hnswlib can hold. */
uint32_t choose_M(const index& idx, const hnswlib_export_params& params) {
  const uint32_t d = idx.graph_degree();
  CAGRA_EXPECTS(d <= core::hnsw::kMaxLinks,
                "export_hnswlib: graph degree %u is over hnswlib's 65535 links per row", d);
  const uint32_t M = params.M != 0 ? params.M : std::max(2u, (d + 1) / 2);
  CAGRA_EXPECTS(M >= 2,
                "export_hnswlib: M = %u; hnswlib needs M >= 2 (its level draw divides by "
                "ln M)",
                M);
  CAGRA_EXPECTS(2 * uint64_t(M) >= d,
                "export_hnswlib: M = %u leaves 2M = %u level-0 slots for a graph of degree %u; "
                "choose M >= %u",
                M, 2 * M, d, (d + 1) / 2);
  CAGRA_EXPECTS(2 * uint64_t(M) <= core::hnsw::kMaxLinks,
                "export_hnswlib: M = %u is over hnswlib's limit (2M <= 65535)", M);
  return M;
}

}  // namespace

void export_hnswlib(const index& idx, const std::string& path, const hnswlib_export_params& params,
                    const resources& res, hnswlib_export_report* report) {
  const auto t0 = std::chrono::steady_clock::now();
  CAGRA_EXPECTS(!path.empty(), "export_hnswlib: empty file name");
  CAGRA_EXPECTS(idx.size() > 0, "export_hnswlib('%s'): the index is empty", path.c_str());
  const int64_t n = idx.size();
  const int64_t dim = idx.dim();
  const uint32_t d = idx.graph_degree();
  const uint32_t M = choose_M(idx, params);
  if (idx.has_labels()) {
    for (int64_t i = 0; i < n; ++i)
      CAGRA_EXPECTS(idx.labels()[size_t(i)] >= 0,
                    "export_hnswlib: row %lld has label %lld; hnswlib labels are unsigned",
                    (long long)i, (long long)idx.labels()[size_t(i)]);
  }
  const int nt = resolve_threads(res.num_threads);
  // Refuse a target that is a folder or a device before the (long) linking.
  io::detail::check_replaceable(path);

  core::hnsw::hierarchy h = core::hnsw::build_hierarchy(res, idx, M, params.seed);
  const double link_seconds = seconds_since(t0);

  core::hnsw::header head;
  head.maxM = M;
  head.maxM0 = 2 * uint64_t(M);
  head.M = M;
  head.max_elements = uint64_t(n);
  head.element_count = uint64_t(n);
  head.data_offset = head.level0_links_bytes();
  head.label_offset = head.data_offset + uint64_t(dim) * sizeof(float);
  head.size_data_per_element = head.label_offset + sizeof(uint64_t);
  head.max_level = h.max_level;
  head.entry_point = h.entry_point;
  head.mult = 1.0 / std::log(double(M));
  head.ef_construction = std::max<uint64_t>(params.ef_construction, M);

  const auto t_write = std::chrono::steady_clock::now();
  io::detail::output_file out(path);
  uint8_t head_bytes[core::hnsw::kHeaderBytes];
  head.encode(head_bytes);
  out.write(head_bytes, sizeof(head_bytes));

  // Level 0: blocks of records made in parallel, written in order.
  const size_t record = head.size_data_per_element;
  const int64_t block_rows = std::max<int64_t>(1, int64_t((64u << 20) / record));
  std::vector<uint8_t> block;
  const auto graph = idx.graph();
  for (int64_t first = 0; first < n; first += block_rows) {
    const int64_t rows = std::min(block_rows, n - first);
    block.assign(size_t(rows) * record, 0);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = first + r;
      uint8_t* rec = block.data() + size_t(r) * record;
      const uint32_t link_header = d | (idx.is_deleted(i) ? core::hnsw::kDeletedBit : 0u);
      std::memcpy(rec, &link_header, 4);
      std::memcpy(rec + 4, graph.row(i), size_t(d) * sizeof(uint32_t));
      core::hnsw::row_as_float(idx.vectors(), i, reinterpret_cast<float*>(rec + head.data_offset));
      const uint64_t label = uint64_t(idx.label_of(i));
      std::memcpy(rec + head.label_offset, &label, sizeof(label));
    }
    out.write(block.data(), block.size());
    if (res.progress) res.progress("hnswlib write", double(first + rows) / double(n));
  }

  // Upper levels: per row, the byte size of its lists, then one list per level it is on. The
  // rows of each level are ascending, so a cursor per level finds a row's list.
  std::vector<size_t> cursor(h.upper.size(), 0);
  std::vector<uint8_t> lists;
  for (int64_t i = 0; i < n; ++i) {
    const int level = h.level[size_t(i)];
    const uint32_t list_bytes = uint32_t(level * head.upper_links_bytes());
    out.write(&list_bytes, 4);
    if (level == 0) continue;
    lists.assign(list_bytes, 0);
    for (int l = 1; l <= level; ++l) {
      const core::hnsw::level_links& lv = h.upper[size_t(l - 1)];
      const size_t p = cursor[size_t(l - 1)]++;
      uint8_t* dst = lists.data() + size_t(l - 1) * head.upper_links_bytes();
      std::memcpy(dst, &lv.counts[p], 4);
      std::memcpy(dst + 4, &lv.links[p * M], size_t(lv.counts[p]) * sizeof(uint32_t));
    }
    out.write(lists.data(), lists.size());
  }
  out.commit();

  if (report != nullptr) {
    report->rows = n;
    report->deleted = idx.deleted_count();
    report->M = M;
    report->level_rows.assign(1, n);
    for (const auto& lv : h.upper) report->level_rows.push_back(int64_t(lv.rows.size()));
    report->entry_point = h.entry_point;
    uint64_t bytes = core::hnsw::kHeaderBytes + uint64_t(n) * (record + 4);
    for (const auto& lv : h.upper) bytes += lv.rows.size() * head.upper_links_bytes();
    report->file_bytes = bytes;
    report->link_seconds = link_seconds;
    report->write_seconds = seconds_since(t_write);
    report->total_seconds = seconds_since(t0);
  }
}

}  // namespace cagra
