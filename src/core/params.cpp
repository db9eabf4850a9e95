// Parameter validation: every violated constraint is collected into one message, so a user fixes
// them all in one go instead of one error per run.
#include <algorithm>
#include <string>
#include <vector>

#include <cagra/params.hpp>

namespace cagra {
namespace {

class violations {
 public:
  template <typename... Args>
  void check(bool ok, const char* fmt, Args... args) {
    if (!ok) list_.push_back(detail::format(fmt, args...));
  }
  void raise(const char* what) const {
    if (list_.empty()) return;
    std::string msg = std::string("invalid ") + what + ": ";
    for (size_t i = 0; i < list_.size(); ++i) msg += (i ? "; " : "") + list_[i];
    throw error(msg);
  }

 private:
  std::vector<std::string> list_;
};

}  // namespace

void index_params::validate(int64_t rows) const {
  violations v;
  v.check(uint32_t(metric) <= 2, "unknown metric %u", uint32_t(metric));
  v.check(graph_degree >= 1, "graph_degree must be >= 1");
  if (intermediate_graph_degree != 0) {  // 0: automatic, 2 x graph_degree capped at rows - 1
    v.check(intermediate_graph_degree >= graph_degree,
            "intermediate_graph_degree (%u) must be >= graph_degree (%u)",
            intermediate_graph_degree, graph_degree);
    v.check(intermediate_graph_degree <= 1024, "intermediate_graph_degree %u exceeds 1024",
            intermediate_graph_degree);
    v.check(rows > int64_t{intermediate_graph_degree},
            "the dataset has %lld rows, but intermediate_graph_degree %u needs at least %u rows "
            "(lower --intermediate-degree/--graph-degree)",
            (long long)rows, intermediate_graph_degree, intermediate_graph_degree + 1);
  } else {
    v.check(2 * uint64_t{graph_degree} <= 1024,
            "graph_degree %u makes the automatic intermediate_graph_degree (2 x graph_degree) "
            "exceed 1024",
            graph_degree);
    v.check(rows > int64_t{graph_degree},
            "the dataset has %lld rows, but graph_degree %u needs at least %u rows (lower "
            "--graph-degree)",
            (long long)rows, graph_degree, graph_degree + 1);
  }
  v.check(rows <= kMaxRows, "the dataset has %lld rows; at most 2^31-1 are supported",
          (long long)rows);
  v.check(uint32_t(knn.algo) <= 2, "unknown knn algorithm %u", uint32_t(knn.algo));
  v.check(knn.max_iterations >= 1, "knn.max_iterations must be >= 1");
  v.check(knn.sample_rate > 0 && knn.sample_rate <= 1, "knn.sample_rate must be in (0, 1]");
  v.check(knn.termination_threshold >= 0, "knn.termination_threshold must be >= 0");
  v.check(uint32_t(reorder) <= 1, "unknown reorder kind %u", uint32_t(reorder));
  v.check(uint32_t(storage) <= 2, "unknown storage type %u", uint32_t(storage));
  v.raise("index parameters");
}

void search_params::validate(uint32_t k, int64_t rows, uint32_t graph_degree) const {
  violations v;
  v.check(k >= 1, "k must be >= 1");
  v.check(int64_t{k} <= rows, "k = %u exceeds the index size %lld", k, (long long)rows);
  v.check(itopk_size >= 1 && itopk_size <= 65536, "itopk_size must be in [1, 65536] (got %u)",
          itopk_size);
  // Up to 128: on the multi-CTA kernel search_width is the CTAs per query (at most
  // kMultiCtaMaxItopk / kMultiCtaList); the single-CTA plan allows 64 parents (plan_kernels.cpp).
  v.check(search_width >= 1 && search_width <= 128, "search_width must be in [1, 128] (got %u)",
          search_width);
  v.check(persistent_lifetime_us >= 200 && persistent_lifetime_us <= 10'000'000,
          "persistent_lifetime_us must be in [200, 10000000] (got %u)", persistent_lifetime_us);
  v.check(max_iterations == 0 || max_iterations >= min_iterations,
          "max_iterations (%u) must be >= min_iterations (%u)", max_iterations, min_iterations);
  v.check(team_size == 0 || team_size == 2 || team_size == 4 || team_size == 8 || team_size == 16 ||
              team_size == 32,
          "team_size must be 0 (auto), 2, 4, 8, 16 or 32 (got %u)", team_size);
  v.check(hash_bits == 0 || (hash_bits >= 8 && hash_bits <= 24),
          "hash_bits must be 0 (auto) or in [8, 24] (got %u)", hash_bits);
  v.check(uint32_t(algo) <= 2, "unknown search algorithm %u", uint32_t(algo));
  v.check(uint32_t(filter) <= 2, "unknown filter algorithm %u", uint32_t(filter));
  v.check(graph_degree >= 1, "the index graph is empty");
  v.check(uint32_t(traversal) <= 1, "unknown traversal %u", uint32_t(traversal));
  v.check(uint32_t(stored_rows) <= 2, "unknown stored_rows location %u", uint32_t(stored_rows));
  v.check(stored_rows != rows_location::host || traversal == traversal_type::int8,
          "stored_rows = host needs traversal = int8: the exact walk reads every row it visits, "
          "the int8 traversal only the re-ranked candidates'");
  v.check(rerank == 0 || rerank >= k, "rerank (%u) must be 0 (auto) or at least k (%u)", rerank, k);
  v.check(rerank == 0 || rerank <= std::max(itopk_size, k),
          "rerank (%u) must be at most itopk_size (%u): the walk keeps that many candidates",
          rerank, std::max(itopk_size, k));
  v.raise("search parameters");
}

void extend_params::validate(uint32_t graph_degree) const {
  violations v;
  v.check(chunk_size <= (1u << 20), "chunk_size must be 0 (auto) or at most 1048576 (got %u)",
          chunk_size);
  v.check(candidates == 0 || candidates >= graph_degree,
          "candidates (%u) must be 0 (auto) or at least the graph degree (%u)", candidates,
          graph_degree);
  v.check(candidates <= 1024, "candidates must be at most 1024 (got %u)", candidates);
  v.check(itopk_size == 0 || itopk_size >= candidates,
          "itopk_size (%u) must be 0 (auto) or at least candidates (%u)", itopk_size, candidates);
  v.check(itopk_size <= 65536, "itopk_size must be at most 65536 (got %u)", itopk_size);
  v.raise("extend parameters");
}

}  // namespace cagra
