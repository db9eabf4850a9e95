// Measurement hooks for the benchmark tools (bench_hooks.hpp): thin routes through the backend
// interface, with the checks of the public calls they mirror.
#include "core/bench_hooks.hpp"

#include "core/convert.hpp"
#include "core/filter.hpp"
#include "core/initial_pool.hpp"
#include "core/int8_traversal.hpp"
#include "core/update/graph_edit.hpp"

namespace cagra::bench_hooks {

void cpu_search_with_stats(const resources& res, const search_params& params, const index& idx,
                           dataset_view queries, uint32_t k, uint32_t* ids, search_stats* stats) {
  resources cpu = res;
  cpu.target = backend::cpu;
  const search_plan plan = plan_search(cpu, params, idx, k, queries.rows);
  const int nt = core::host_threads(res.num_threads);
  const host_matrix q = core::queries_for(queries, idx.storage_dtype(), idx.metric(), nt);
  if (plan.traversal != traversal_type::int8) {
    core::cpu_backend().search(idx, q, plan, {}, ids, nullptr, cpu, stats);
    return;
  }
  // The int8 traversal: the walk (what is counted) on the int8 copy, then the re-ranking.
  const std::shared_ptr<const core::int8_copy> copy = core::int8_copy_of(idx, nt);
  const search_plan walk = core::int8_walk_plan(plan);
  std::vector<uint32_t> candidates(size_t(q.rows()) * plan.rerank);
  core::cpu_backend().search(copy->walk, core::encode_queries(copy->codec, q, nt), walk, {},
                             candidates.data(), nullptr, cpu, stats);
  core::cpu_backend().rerank(idx, q, candidates.data(), plan.rerank, k, ids, nullptr, cpu);
}

std::vector<uint32_t> optimize_steps(const resources& res, const knn_graph& knn, uint32_t degree,
                                     reorder_kind reorder, bool reorder_step, bool reverse_step) {
  CAGRA_EXPECTS(knn.rows > int64_t{knn.k} && knn.k > 0,
                "the kNN graph is empty or has rows <= degree");
  return core::backend_for(core::resolve_backend(res))
      .optimize(knn, degree, reorder, {reorder_step, reverse_step}, res);
}

std::vector<uint32_t> reverse_and_merge(const std::vector<uint32_t>& pruned, int64_t n,
                                        uint32_t degree, int num_threads) {
  return core::reverse_and_merge(pruned, n, degree, num_threads);
}

host_matrix to_storage(dataset_view input, metric m, storage_type s, int num_threads) {
  return core::to_storage(input, m, s, num_threads);
}

std::vector<uint32_t> allowed_ids(const row_filter& f) { return core::allowed_ids(f); }

int64_t visible_allowed_rows(const index& idx, const row_filter& f, bool stamp_trusted) {
  if (!f.empty()) core::check_filter(f, idx.size(), 1);
  core::visible_storage storage;
  const row_filter v = core::visible_rows(
      idx, f, 1, storage,
      stamp_trusted ? core::stamp_trust::answers_checked : core::stamp_trust::compare);
  return v.empty() ? idx.size() : core::fewest_allowed(v, 1);
}

std::vector<uint32_t> initial_pool_rows(uint64_t n, uint32_t p) {
  return core::initial_pool_rows(n, p);
}

void merge_row(const uint32_t* pruned, const uint32_t* rev, uint32_t n_rev, uint32_t degree,
               uint32_t* out) {
  core::merge_row(pruned, rev, n_rev, degree, out);
}

}  // namespace cagra::bench_hooks
