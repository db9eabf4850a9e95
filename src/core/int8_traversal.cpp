// The int8 traversal (core/int8_traversal.hpp): fitting the codec, encoding rows and queries,
// keeping the copy with the index, and the search itself (walk the copy, re-rank exactly).
#include "core/int8_traversal.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/half.hpp"
#include "core/team.hpp"
#include "core/update/editor.hpp"

namespace cagra::core {
namespace {

/** Row i of host `m` (f32 or f16) as floats into `out`. */
void row_as_float(dataset_view m, int64_t i, float* out) {
  const size_t dim = size_t(m.cols);
  const auto* row = static_cast<const uint8_t*>(m.data) + size_t(i) * m.row_bytes();
  if (m.type == dtype::f32) {
    std::copy_n(reinterpret_cast<const float*>(row), dim, out);
    return;
  }
  const auto* h = reinterpret_cast<const half*>(row);
  for (size_t j = 0; j < dim; ++j) out[j] = half_to_float(h[j]);
}

int8_t code_of(float v) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(v), -127.f, 127.f));
}

}  // namespace

int8_codec fit_int8_codec(dataset_view rows, metric m, int threads) {
  CAGRA_EXPECTS(rows.type == dtype::f32 || rows.type == dtype::f16,
                "the int8 traversal encodes f32 or f16 rows, not %s", to_string(rows.type));
  const size_t dim = size_t(rows.cols);
  std::vector<float> lo(dim, INFINITY), hi(dim, -INFINITY);
  run_team(threads_for_elements(threads, rows.rows * rows.cols), [&] {
    std::vector<float> l(dim, INFINITY), h(dim, -INFINITY), v(dim);
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < rows.rows; ++i) {
      row_as_float(rows, i, v.data());
      for (size_t j = 0; j < dim; ++j) l[j] = std::min(l[j], v[j]), h[j] = std::max(h[j], v[j]);
    }
#pragma omp critical(cagra_fit_int8_codec)
    for (size_t j = 0; j < dim; ++j) lo[j] = std::min(lo[j], l[j]), hi[j] = std::max(hi[j], h[j]);
  });
  int8_codec c;
  c.m = m;
  c.offset.resize(dim);
  c.scale.resize(dim);
  float widest = 0;
  for (size_t j = 0; j < dim; ++j) {
    c.offset[j] = lo[j] + (hi[j] - lo[j]) / 2;
    widest = std::max(widest, (hi[j] - lo[j]) / 2);
  }
  for (size_t j = 0; j < dim; ++j) {
    const float half_range = m == metric::l2 ? widest : (hi[j] - lo[j]) / 2;
    c.scale[j] = half_range > 0 ? 127.f / half_range : 1.f;
  }
  return c;
}

host_matrix encode_rows(const int8_codec& c, dataset_view rows, int threads) {
  const size_t dim = size_t(rows.cols);
  CAGRA_EXPECTS(c.offset.size() == dim, "the int8 codec has %zu dimensions, the rows %zu",
                c.offset.size(), dim);
  host_matrix out(dtype::i8, rows.rows, rows.cols);
  auto* codes = static_cast<int8_t*>(out.data());
  run_team(threads_for_elements(threads, rows.rows * rows.cols), [&] {
    std::vector<float> v(dim);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows.rows; ++i) {
      row_as_float(rows, i, v.data());
      int8_t* o = codes + size_t(i) * dim;
      for (size_t j = 0; j < dim; ++j) o[j] = code_of((v[j] - c.offset[j]) * c.scale[j]);
    }
  });
  return out;
}

host_matrix encode_queries(const int8_codec& c, dataset_view queries, int threads) {
  CAGRA_EXPECTS(queries.type == dtype::f32 && queries.space == memory_space::host,
                "the int8 traversal encodes host f32 queries");
  const size_t dim = size_t(queries.cols);
  host_matrix out(dtype::i8, queries.rows, queries.cols);
  auto* codes = static_cast<int8_t*>(out.data());
  const auto* q = static_cast<const float*>(queries.data);
  const bool l2 = c.m == metric::l2;
  const auto encode = [&](int64_t i, float* v) {
    const float* r = q + size_t(i) * dim;
    int8_t* o = codes + size_t(i) * dim;
    if (l2) {
      for (size_t j = 0; j < dim; ++j) o[j] = code_of((r[j] - c.offset[j]) * c.scale[j]);
      return;
    }
    float most = 0;
    for (size_t j = 0; j < dim; ++j) most = std::max(most, std::fabs(v[j] = r[j] / c.scale[j]));
    const float t = most > 0 ? 127.f / most : 0.f;
    for (size_t j = 0; j < dim; ++j) o[j] = code_of(v[j] * t);
  };
  // A few queries run on the caller's thread.
  run_team(threads_for_elements(threads, queries.rows * queries.cols), [&] {
    std::vector<float> v(dim);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < queries.rows; ++i) encode(i, v.data());
  });
  return out;
}

std::shared_ptr<const int8_copy> int8_copy_of(const index& idx, int threads) {
  static std::mutex mutex;  // making a copy is rare: one lock for every index
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<detail::backend_state>& slot = idx.derived_cache();
  if (auto kept = std::dynamic_pointer_cast<const int8_copy>(slot)) return kept;
  auto made = std::make_shared<int8_copy>();
  made->codec = fit_int8_codec(idx.vectors(), idx.metric(), threads);
  const matrix_view<const uint32_t> g = idx.graph();
  made->walk = index(idx.metric() == metric::l2 ? metric::l2 : metric::inner_product,
                     encode_rows(made->codec, idx.vectors(), threads),
                     std::vector<uint32_t>(g.data, g.data + g.size()), idx.graph_degree());
  made->fitted_rows = idx.size();
  slot = made;
  return made;
}

void int8_copy_extended(index& idx, int64_t old_rows, const std::vector<uint32_t>& changed,
                        int threads) {
  auto copy = std::dynamic_pointer_cast<int8_copy>(idx.derived_cache());
  if (!copy) return;
  index& walk = copy->walk;
  if (idx.size() > 2 * copy->fitted_rows || walk.size() != old_rows) {
    detail::index_editor::drop_derived(idx);
    return;
  }
  try {
    const host_matrix& v = idx.vectors();
    const dataset_view fresh(v.row_bytes(old_rows), v.type(), idx.size() - old_rows, v.cols());
    detail::index_editor::vectors(walk).append_rows(encode_rows(copy->codec, fresh, threads));
    const uint32_t d = idx.graph_degree();
    const uint32_t* g = idx.graph().data;
    std::vector<uint32_t>& wg = detail::index_editor::graph(walk);
    wg.insert(wg.end(), g + size_t(old_rows) * d, g + size_t(idx.size()) * d);
    for (uint32_t r : changed) std::copy_n(g + size_t(r) * d, d, wg.data() + size_t(r) * d);
    for (backend b : {backend::cpu, backend::cuda})
      backend_for(b).index_changed(walk, old_rows, changed, threads);
  } catch (...) {
    detail::index_editor::drop_derived(idx);  // made anew on next use
  }
}

search_plan int8_walk_plan(const search_plan& plan) {
  search_plan walk = plan;
  walk.k = plan.rerank;
  walk.traversal = traversal_type::exact;
  walk.rerank = 0;
  walk.normalize_on_device = false;
  return walk;
}

uint32_t auto_rerank(uint32_t k, uint32_t itopk) { return std::min(itopk, std::max(32u, 4 * k)); }

void search_int8_steps(const backend_ops& walker, const backend_ops& reranker, const index& idx,
                       const int8_copy& copy, dataset_view queries, const search_plan& plan,
                       const row_filter& visible, uint32_t* ids, float* distances,
                       const resources& res) {
  const host_matrix codes = encode_queries(copy.codec, queries, host_threads(res.num_threads));
  const search_plan walk = int8_walk_plan(plan);
  std::vector<uint32_t> candidates(size_t(queries.rows) * plan.rerank);
  walker.search(copy.walk, codes.view(), walk, visible, candidates.data(), nullptr, res, nullptr);
  reranker.rerank(idx, queries, candidates.data(), plan.rerank, plan.k, ids, distances, res);
}

void backend_ops::search_int8(const index& idx, const int8_copy& copy, dataset_view queries,
                              const search_plan& plan, const row_filter& filter, uint32_t* ids,
                              float* distances, const resources& res) const {
  search_int8_steps(*this, *this, idx, copy, queries, plan, filter, ids, distances, res);
}

void search_int8(const backend_ops& be, const index& idx, dataset_view queries,
                 const search_plan& plan, const row_filter& visible, uint32_t* ids,
                 float* distances, const resources& res) {
  const std::shared_ptr<const int8_copy> copy = int8_copy_of(idx, host_threads(res.num_threads));
  be.search_int8(idx, *copy, queries, plan, visible, ids, distances, res);
}

}  // namespace cagra::core
