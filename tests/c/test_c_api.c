/* The C interface (include/cagra/c_api.h) exercised from C99, as a binding would use it: build
 * on bigann10k, search (recall against the ground truth), save/load round trip, filtered search,
 * labels, extend / remove / compact, device lists (replicated search), a sharded index (build,
 * search, save/load, info), the int8 traversal and the error paths (status, message, index
 * unchanged).
 * No test framework: each failed check prints its line, and main returns 1 if any failed.
 * Usage: test_c_api OUTPUT_DIR (where the index file is written; the data folder comes from
 * CAGRA_DATA_DIR or the source tree, as for the C++ tests). */
#include <cagra/c_api.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* The call succeeds; otherwise prints its status and message. */
#define CHECK_OK(call)                                                          \
  do {                                                                          \
    cagra_status_t check_status_ = (call);                                      \
    if (check_status_ != CAGRA_OK) {                                            \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, \
              cagra_status_name(check_status_), cagra_last_error());            \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

/* The call fails with `expected` and a message that contains `text` (so it is this call's). */
#define CHECK_FAILS(call, expected, text)                                                    \
  do {                                                                                       \
    cagra_status_t check_status_ = (call);                                                   \
    if (check_status_ != (expected) || strstr(cagra_last_error(), (text)) == NULL) {         \
      fprintf(stderr, "%s:%d: %s returned %s (\"%s\"), expected %s with \"%s\"\n", __FILE__, \
              __LINE__, #call, cagra_status_name(check_status_), cagra_last_error(),         \
              cagra_status_name(expected), (text));                                          \
      ++failures;                                                                            \
    }                                                                                        \
  } while (0)

enum { K = 10 };

/* A matrix file: uint32 rows, uint32 cols, then rows * cols elements of `elem` bytes. */
typedef struct matrix {
  uint32_t rows;
  uint32_t cols;
  void* data;
} matrix;

static int read_bin(const char* path, size_t elem, matrix* m) {
  FILE* file = fopen(path, "rb");
  uint32_t head[2];
  size_t bytes;
  if (file == NULL) return 0;
  if (fread(head, sizeof(uint32_t), 2, file) != 2) {
    fclose(file);
    return 0;
  }
  m->rows = head[0];
  m->cols = head[1];
  bytes = (size_t)m->rows * m->cols * elem;
  m->data = malloc(bytes);
  if (m->data == NULL || fread(m->data, 1, bytes, file) != bytes) {
    fclose(file);
    free(m->data);
    return 0;
  }
  fclose(file);
  return 1;
}

/* The folder holding bigann10k/: $CAGRA_DATA_DIR, else the source tree's data/shared or
 * ../shared/data. */
static const char* data_dir(void) {
  static char found[4096];
  const char* env = getenv("CAGRA_DATA_DIR");
  const char* candidates[3];
  int i;
  candidates[0] = env;
  candidates[1] = CAGRA_SOURCE_DIR "/data/shared";
  candidates[2] = CAGRA_SOURCE_DIR "/../shared/data";
  for (i = 0; i < 3; ++i) {
    FILE* probe;
    if (candidates[i] == NULL) continue;
    snprintf(found, sizeof found, "%s/bigann10k/base.u8bin", candidates[i]);
    probe = fopen(found, "rb");
    if (probe != NULL) {
      fclose(probe);
      snprintf(found, sizeof found, "%s", candidates[i]);
      return found;
    }
  }
  return NULL;
}

/* Mean over queries of |found[:K] & truth[:K]| / K; `found` and `truth` as int64. */
static double recall(const int64_t* found, const int64_t* truth, size_t truth_stride,
                     size_t queries) {
  size_t q, i, j, hits = 0;
  for (q = 0; q < queries; ++q)
    for (i = 0; i < K; ++i)
      for (j = 0; j < K; ++j)
        if (found[q * K + i] == truth[q * truth_stride + j]) ++hits;
  return (double)hits / (double)(queries * K);
}

static cagra_index_info_t info_of(const cagra_index_t* index) {
  cagra_index_info_t info;
  memset(&info, 0, sizeof info);
  CHECK_OK(cagra_index_get_info(index, &info));
  return info;
}

static int same_info(cagra_index_info_t a, cagra_index_info_t b) {
  return a.rows == b.rows && a.dim == b.dim && a.graph_degree == b.graph_degree &&
         a.dtype == b.dtype && a.metric == b.metric && a.live_rows == b.live_rows &&
         a.deleted_rows == b.deleted_rows && a.has_labels == b.has_labels;
}

static void set_bit(uint32_t* words, int64_t row) { words[row >> 5] |= 1u << (row & 31); }
static int has_bit(const uint32_t* words, int64_t row) {
  return (words[row >> 5] >> (row & 31)) & 1u;
}

/* Everything the library reports without an index. */
static void test_library(void) {
  cagra_build_params_t bp;
  cagra_search_params_t sp;
  cagra_extend_params_t ep;
  CHECK(strlen(cagra_version()) >= 5);
  CHECK(strcmp(cagra_status_name(CAGRA_ERROR_IO), "CAGRA_ERROR_IO") == 0);
  CHECK(strcmp(cagra_status_name((cagra_status_t)99), "unknown status") == 0);
  CHECK_OK(cagra_build_params_default(&bp));
  CHECK(bp.graph_degree == 64 && bp.intermediate_graph_degree == 0);
  CHECK(bp.metric == CAGRA_METRIC_L2 && bp.resources.backend == CAGRA_BACKEND_AUTO);
  CHECK_OK(cagra_search_params_default(&sp));
  CHECK(sp.itopk_size == 64 && sp.search_width == 1 && sp.persistent == 0);
  CHECK(sp.traversal == CAGRA_TRAVERSAL_EXACT && sp.rerank == 0);
  CHECK_OK(cagra_extend_params_default(&ep));
  CHECK(ep.chunk_size == 0 && ep.resources.num_threads == 0);
  /* No device list by default: `device` alone, as before the list existed. */
  CHECK(bp.resources.num_devices == 0 && bp.resources.devices == NULL);
  CHECK(sp.resources.num_devices == 0 && sp.resources.devices == NULL);
  CHECK(ep.resources.num_devices == 0 && ep.resources.devices == NULL);
  CHECK_FAILS(cagra_build_params_default(NULL), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(cagra_search_params_default(NULL), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
  CHECK(cagra_filter_words(33) == 2 && cagra_filter_words(0) == 0);
  CHECK_OK(cagra_index_free(NULL));
  CHECK_OK(cagra_sharded_index_free(NULL));
  CHECK_FAILS(cagra_resources_default(NULL), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
}

typedef struct data_set {
  matrix base;    /* u8 [rows, dim] */
  matrix queries; /* u8 [nq, dim] */
  int64_t* truth; /* [nq, truth_k] */
  size_t truth_k;
} data_set;

static cagra_build_params_t build_params(void) {
  cagra_build_params_t p;
  cagra_build_params_default(&p);
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  p.resources.backend = CAGRA_BACKEND_CPU;
  return p;
}

static cagra_search_params_t search_params(void) {
  cagra_search_params_t p;
  cagra_search_params_default(&p);
  p.resources.backend = CAGRA_BACKEND_CPU;
  return p;
}

/* Search of every query into row ids widened to int64 (for recall). */
static void search_all(const cagra_index_t* index, const data_set* d, uint32_t* ids, float* dist,
                       int64_t* ids64) {
  const cagra_search_params_t sp = search_params();
  size_t i;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, d->queries.rows,
                              d->queries.cols, K, ids, dist, NULL));
  for (i = 0; i < (size_t)d->queries.rows * K; ++i) ids64[i] = ids[i];
}

static void test_build_search_save_load(const data_set* d, cagra_index_t* index,
                                        const char* out_dir) {
  const size_t n = (size_t)d->queries.rows * K;
  uint32_t* ids = malloc(n * sizeof *ids);
  uint32_t* ids2 = malloc(n * sizeof *ids2);
  float* dist = malloc(n * sizeof *dist);
  float* dist2 = malloc(n * sizeof *dist2);
  int64_t* ids64 = malloc(n * sizeof *ids64);
  int64_t* labels = malloc(n * sizeof *labels);
  const cagra_search_params_t sp = search_params();
  cagra_index_info_t info = info_of(index);
  cagra_index_t* loaded = NULL;
  char path[4096];
  size_t i;

  CHECK(info.rows == d->base.rows && info.dim == d->base.cols && info.graph_degree == 32);
  CHECK(info.dtype == CAGRA_DTYPE_U8 && info.metric == CAGRA_METRIC_L2);
  CHECK(info.live_rows == info.rows && info.deleted_rows == 0 && info.has_labels == 0);

  search_all(index, d, ids, dist, ids64);
  printf("recall@10 on bigann10k: %.4f\n", recall(ids64, d->truth, d->truth_k, d->queries.rows));
  CHECK(recall(ids64, d->truth, d->truth_k, d->queries.rows) >= 0.95);
  for (i = 0; i < n; ++i) CHECK(i % K == 0 || dist[i - 1] <= dist[i]);

  /* Without labels, the labels are the row numbers. */
  CHECK_OK(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, d->queries.rows,
                                     d->queries.cols, K, labels, NULL, NULL));
  CHECK(memcmp(labels, ids64, n * sizeof *labels) == 0);

  /* Save, load: the same index, the same results bit for bit. */
  snprintf(path, sizeof path, "%s/test_c_api.cagra", out_dir);
  CHECK_OK(cagra_index_save(index, path));
  CHECK_OK(cagra_index_load(path, &loaded));
  CHECK(loaded != NULL);
  if (loaded != NULL) {
    CHECK(same_info(info_of(loaded), info));
    CHECK_OK(cagra_index_search(loaded, &sp, d->queries.data, CAGRA_DTYPE_U8, d->queries.rows,
                                d->queries.cols, K, ids2, dist2, NULL));
    CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0);
    CHECK(memcmp(dist, dist2, n * sizeof *dist) == 0);
    CHECK_OK(cagra_index_free(loaded));
  }
  remove(path);
  free(ids), free(ids2), free(dist), free(dist2), free(ids64), free(labels);
}

static void test_filters(const data_set* d, const cagra_index_t* index) {
  const int64_t rows = d->base.rows, nq = d->queries.rows;
  const int64_t words = cagra_filter_words(rows);
  const cagra_search_params_t sp = search_params();
  uint32_t* shared = calloc((size_t)words, sizeof *shared);
  uint32_t* few = calloc((size_t)words, sizeof *few);
  uint32_t* per_query = calloc((size_t)(words * nq), sizeof *per_query);
  uint32_t* ids = malloc((size_t)nq * K * sizeof *ids);
  float* dist = malloc((size_t)nq * K * sizeof *dist);
  cagra_filter_t filter;
  int64_t q, r, i;

  /* A shared bitset: every third row. */
  for (r = 0; r < rows; r += 3) set_bit(shared, r);
  filter.words = shared, filter.rows = rows, filter.queries = 0;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, d->queries.cols, K,
                              ids, dist, &filter));
  for (i = 0; i < nq * K; ++i) CHECK(ids[i] != CAGRA_INVALID_ID && ids[i] % 3 == 0);

  /* One bitset per query: query q may return the rows r with (r + q) % 5 == 0. */
  for (q = 0; q < nq; ++q)
    for (r = (5 - q % 5) % 5; r < rows; r += 5) set_bit(per_query + q * words, r);
  filter.words = per_query, filter.queries = nq;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, d->queries.cols, K,
                              ids, dist, &filter));
  for (q = 0; q < nq; ++q)
    for (i = 0; i < K; ++i) {
      const uint32_t id = ids[q * K + i];
      CHECK(id != CAGRA_INVALID_ID && has_bit(per_query + q * words, id));
    }

  /* Four rows allowed, k = 10: those four, then empty slots. */
  set_bit(few, 7), set_bit(few, 700), set_bit(few, 7000), set_bit(few, rows - 1);
  filter.words = few, filter.queries = 0;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, d->queries.cols, K,
                              ids, dist, &filter));
  for (q = 0; q < nq; ++q)
    for (i = 0; i < K; ++i) {
      const uint32_t id = ids[q * K + i];
      CHECK(i < 4 ? id != CAGRA_INVALID_ID && has_bit(few, id) : id == CAGRA_INVALID_ID);
      CHECK(i < 4 || isinf(dist[q * K + i]));
    }

  /* A filter over the wrong number of rows, or per-query bitsets for another batch size. */
  filter.rows = rows - 1;
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, d->queries.cols,
                                 K, ids, dist, &filter),
              CAGRA_ERROR_INVALID_ARGUMENT, "filter");
  filter.words = per_query, filter.rows = rows, filter.queries = nq - 1;
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, d->queries.cols,
                                 K, ids, dist, &filter),
              CAGRA_ERROR_INVALID_ARGUMENT, "filter");
  free(shared), free(few), free(per_query), free(ids), free(dist);
}

/* Whether `label` (1,000,000 + row of the data set) was removed by test_living_index. */
static int removed_label(int64_t label) {
  const int64_t row = label - 1000000;
  return row % 10 == 0 || (row >= 1 && row <= 3);
}

/* Recall of labels against the ground truth, over the rows not removed. */
static double live_recall(const data_set* d, const int64_t* labels) {
  const size_t nq = d->queries.rows;
  int64_t* truth = malloc(nq * K * sizeof *truth);
  size_t q, j;
  double r;
  for (q = 0; q < nq; ++q) {
    size_t kept = 0;
    for (j = 0; j < d->truth_k && kept < K; ++j) {
      const int64_t label = 1000000 + d->truth[q * d->truth_k + j];
      if (!removed_label(label)) truth[q * K + kept++] = label;
    }
    CHECK(kept == K);
  }
  r = recall(labels, truth, K, nq);
  free(truth);
  return r;
}

/* Half the index built, the rest extended with labels; rows removed by label and by row number,
 * then compacted away: labels survive, removed rows never come back, recall holds. */
static void test_living_index(const data_set* d) {
  const int64_t rows = d->base.rows, dim = d->base.cols, nq = d->queries.rows;
  const int64_t first = rows - 1000;
  const cagra_build_params_t bp = build_params();
  const cagra_search_params_t sp = search_params();
  cagra_extend_params_t ep;
  cagra_index_t* index = NULL;
  int64_t* labels = malloc((size_t)rows * sizeof *labels);
  int64_t* found = malloc((size_t)nq * K * sizeof *found);
  int64_t* gone = malloc((size_t)rows * sizeof *gone);
  int64_t* truth_labels = malloc((size_t)nq * d->truth_k * sizeof *truth_labels);
  const int64_t some_rows[3] = {1, 2, 3};
  int64_t i, n_gone = 0, removed = -1;
  cagra_index_info_t info, before;

  for (i = 0; i < rows; ++i) labels[i] = 1000000 + i;
  cagra_extend_params_default(&ep);
  ep.resources.backend = CAGRA_BACKEND_CPU;
  CHECK_OK(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, first, dim, &index));
  if (index == NULL) {
    free(labels), free(found), free(gone), free(truth_labels);
    return;
  }
  CHECK_OK(cagra_index_set_labels(index, labels, first));
  CHECK_OK(cagra_index_extend(index, &ep, (const uint8_t*)d->base.data + first * dim,
                              CAGRA_DTYPE_U8, rows - first, dim, labels + first));
  info = info_of(index);
  CHECK(info.rows == rows && info.has_labels == 1 && info.deleted_rows == 0);
  CHECK_OK(cagra_index_get_labels(index, gone, rows));
  CHECK(memcmp(gone, labels, (size_t)rows * sizeof *labels) == 0);
  CHECK_OK(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, found,
                                     NULL, NULL));
  for (i = 0; i < nq * (int64_t)d->truth_k; ++i) truth_labels[i] = 1000000 + d->truth[i];
  printf("recall@10 after extend: %.4f\n", recall(found, truth_labels, d->truth_k, nq));
  CHECK(recall(found, truth_labels, d->truth_k, nq) >= 0.95);

  /* An index with labels needs them for new rows; the failed extend changes nothing. */
  CHECK_FAILS(cagra_index_extend(index, &ep, d->base.data, CAGRA_DTYPE_U8, 10, dim, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "label");
  CHECK(same_info(info_of(index), info));

  /* Remove every tenth row by label, then rows 1..3 by row number. */
  for (i = 0; i < rows; i += 10) gone[n_gone++] = 1000000 + i;
  CHECK_OK(cagra_index_remove(index, NULL, gone, n_gone, 0.0, &removed));
  CHECK(removed == n_gone);
  CHECK_OK(cagra_index_remove_rows(index, NULL, some_rows, 3, 0.0, &removed));
  CHECK(removed == 3);
  before = info_of(index);
  CHECK(before.deleted_rows == n_gone + 3 && before.live_rows == rows - n_gone - 3);
  CHECK_FAILS(cagra_index_remove_rows(index, NULL, some_rows, 1, 0.0, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "removed before");
  CHECK_FAILS(cagra_index_remove(index, NULL, labels, 1, 0.0, NULL), CAGRA_ERROR_INVALID_ARGUMENT,
              "removed before");
  CHECK_FAILS(cagra_index_remove(index, NULL, some_rows, 1, 0.0, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "not in the index");
  CHECK_FAILS(cagra_index_remove_rows(index, NULL, &rows, 1, 0.0, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "outside");
  CHECK(same_info(info_of(index), before));

  CHECK_OK(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, found,
                                     NULL, NULL));
  for (i = 0; i < nq * K; ++i) CHECK(found[i] >= 1000000 && !removed_label(found[i]));
  printf("recall@10 over the live rows, removed rows tombstoned: %.4f\n", live_recall(d, found));
  CHECK(live_recall(d, found) >= 0.95);

  CHECK_OK(cagra_index_compact(index, NULL));
  info = info_of(index);
  CHECK(info.rows == before.live_rows && info.deleted_rows == 0 && info.has_labels == 1);
  CHECK_OK(cagra_index_get_labels(index, gone, rows));
  for (i = 0; i < info.rows; ++i)
    CHECK(!removed_label(gone[i]) && (i == 0 || gone[i - 1] < gone[i]));
  CHECK_FAILS(cagra_index_get_labels(index, gone, info.rows - 1), CAGRA_ERROR_INVALID_ARGUMENT,
              "capacity");
  CHECK_OK(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, found,
                                     NULL, NULL));
  for (i = 0; i < nq * K; ++i) CHECK(found[i] >= 1000000 && !removed_label(found[i]));
  printf("recall@10 over the live rows, compacted: %.4f\n", live_recall(d, found));
  CHECK(live_recall(d, found) >= 0.95);

  cagra_index_free(index);
  free(labels), free(found), free(gone), free(truth_labels);
}

/* Bad calls: the right status, a message, outputs and the index untouched. */
static void test_errors(const data_set* d, cagra_index_t* index) {
  const int64_t rows = d->base.rows, dim = d->base.cols, nq = d->queries.rows;
  const size_t n = (size_t)nq * K;
  cagra_build_params_t bp = build_params();
  cagra_search_params_t sp = search_params();
  cagra_index_t* out = NULL;
  cagra_index_info_t before = info_of(index);
  uint32_t* ids = malloc(n * sizeof *ids);
  uint32_t* ids_before = malloc(n * sizeof *ids_before);
  float* dist = malloc(n * sizeof *dist);
  int64_t* ids64 = malloc(n * sizeof *ids64);
  int64_t* labels = malloc((size_t)rows * sizeof *labels);
  float* halves = malloc((size_t)dim * sizeof *halves);
  int64_t i;
  char path[4096];

  search_all(index, d, ids_before, dist, ids64);
  for (i = 0; i < dim; ++i) halves[i] = 0.5f;

  /* Build: NULL pointers, a dtype outside the enum, bad parameters, a missing backend. */
  CHECK_FAILS(cagra_index_build(&bp, NULL, CAGRA_DTYPE_U8, rows, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, rows, dim, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, (cagra_dtype_t)42, rows, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "dtype");
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 0, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "rows");
  bp.graph_degree = 0;
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, rows, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "graph_degree");
  bp = build_params();
  bp.metric = (cagra_metric_t)7;
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, rows, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "metric");
  bp = build_params();
  if (!cagra_cuda_available()) {
    bp.resources.backend = CAGRA_BACKEND_CUDA;
    CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, rows, dim, &out),
                CAGRA_ERROR_UNSUPPORTED, "CUDA");
  }
  CHECK(out == NULL);

  /* Search: NULL pointers, dimension mismatch, a dtype that does not convert exactly, bad k. */
  CHECK_FAILS(
      cagra_index_search(NULL, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids, dist, NULL),
      CAGRA_ERROR_INVALID_ARGUMENT, "index is NULL");
  CHECK_FAILS(cagra_index_search(index, &sp, NULL, CAGRA_DTYPE_U8, nq, dim, K, ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "queries is NULL");
  CHECK_FAILS(
      cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, NULL, dist, NULL),
      CAGRA_ERROR_INVALID_ARGUMENT, "neighbors is NULL");
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim / 2, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "dimension");
  CHECK_FAILS(cagra_index_search(index, &sp, halves, CAGRA_DTYPE_F32, 1, dim, K, ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "exactly");
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, (cagra_dtype_t)-1, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "dtype");
  CHECK_FAILS(
      cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, 0, ids, dist, NULL),
      CAGRA_ERROR_INVALID_ARGUMENT, "k must be >= 1");
  sp.algo = (cagra_search_algo_t)9;
  CHECK_FAILS(
      cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids, dist, NULL),
      CAGRA_ERROR_INVALID_ARGUMENT, "algo");
  sp = search_params();
  CHECK_FAILS(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                        NULL, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "labels is NULL");
  if (!cagra_cuda_available()) {
    /* Host pointers stand in for device ones: the call refuses before it reads them. */
    CHECK_FAILS(cagra_index_search_device(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                          ids, dist, NULL),
                CAGRA_ERROR_UNSUPPORTED, "CUDA");
  }

  /* Extend: dimension and dtype mismatch, NULL data; the index stays as it was. */
  CHECK_FAILS(cagra_index_extend(index, NULL, d->base.data, CAGRA_DTYPE_U8, 10, dim - 1, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "dimension");
  CHECK_FAILS(cagra_index_extend(index, NULL, halves, CAGRA_DTYPE_F32, 1, dim, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "stores u8");
  CHECK_FAILS(cagra_index_extend(index, NULL, NULL, CAGRA_DTYPE_U8, 10, dim, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(cagra_index_extend(NULL, NULL, d->base.data, CAGRA_DTYPE_U8, 10, dim, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "index is NULL");

  /* Labels: duplicates, a wrong count; remove of an unknown row. */
  for (i = 0; i < rows; ++i) labels[i] = i;
  labels[5] = 4;
  CHECK_FAILS(cagra_index_set_labels(index, labels, rows), CAGRA_ERROR_INVALID_ARGUMENT, "unique");
  CHECK_FAILS(cagra_index_set_labels(index, labels, rows - 1), CAGRA_ERROR_INVALID_ARGUMENT,
              "labels");
  CHECK_FAILS(cagra_index_set_labels(index, NULL, rows), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
  labels[0] = rows;
  CHECK_FAILS(cagra_index_remove(index, NULL, labels, 1, 0.0, NULL), CAGRA_ERROR_INVALID_ARGUMENT,
              "not in the index");

  /* Files: a missing folder, a file that is no index, NULL paths. */
  CHECK_FAILS(cagra_index_load("/nonexistent-folder/index.cagra", &out), CAGRA_ERROR_IO,
              "cannot open");
  snprintf(path, sizeof path, "%s/bigann10k/base.u8bin", data_dir());
  CHECK_FAILS(cagra_index_load(path, &out), CAGRA_ERROR_IO, "not a CAGRA index");
  CHECK_FAILS(cagra_index_load(NULL, &out), CAGRA_ERROR_INVALID_ARGUMENT, "path is NULL");
  CHECK(out == NULL);
  CHECK_FAILS(cagra_index_save(index, "/nonexistent-folder/index.cagra"), CAGRA_ERROR_IO,
              "nonexistent-folder");
  CHECK_FAILS(cagra_index_save(index, NULL), CAGRA_ERROR_INVALID_ARGUMENT, "path is NULL");
  CHECK_FAILS(cagra_index_get_info(index, NULL), CAGRA_ERROR_INVALID_ARGUMENT, "info is NULL");

  /* None of it changed the index. */
  CHECK(same_info(info_of(index), before));
  search_all(index, d, ids, dist, ids64);
  CHECK(memcmp(ids, ids_before, n * sizeof *ids) == 0);
  free(ids), free(ids_before), free(dist), free(ids64), free(labels), free(halves);
}

/* A device list on the CPU backend: checked, then the CPU ignores it, so a build and a
 * (replicated) search give exactly the results of no list. A bad list is refused by every call
 * that takes resources, before any work. */
static void test_device_lists(const data_set* d, const cagra_index_t* index) {
  const int64_t dim = d->base.cols, nq = d->queries.rows;
  const size_t n = (size_t)nq * K;
  const int32_t two[2] = {0, 1}, three[3] = {2, 0, 1}, negative[2] = {0, -1}, twice[3] = {1, 0, 1};
  cagra_build_params_t bp = build_params();
  cagra_search_params_t sp = search_params();
  cagra_index_t* built = NULL;
  cagra_index_t* out = NULL;
  uint32_t* ids = malloc(n * sizeof *ids);
  uint32_t* ids2 = malloc(n * sizeof *ids2);
  float* dist = malloc(n * sizeof *dist);
  float* dist2 = malloc(n * sizeof *dist2);
  int64_t* ids64 = malloc(n * sizeof *ids64);

  search_all(index, d, ids, dist, ids64);
  sp.resources.devices = two, sp.resources.num_devices = 2;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2, dist2,
                              NULL));
  CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0 && memcmp(dist, dist2, n * sizeof *dist) == 0);
  sp.resources.devices = three, sp.resources.num_devices = 3;
  memset(ids2, 0, n * sizeof *ids2);
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2, dist2,
                              NULL));
  CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0 && memcmp(dist, dist2, n * sizeof *dist) == 0);

  /* A build with a list runs on its first device: on the CPU, the same index as without. */
  bp.resources.devices = three, bp.resources.num_devices = 3;
  CHECK_OK(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, d->base.rows, dim, &built));
  if (built != NULL) {
    sp = search_params();
    CHECK_OK(cagra_index_search(built, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2,
                                dist2, NULL));
    CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0 && memcmp(dist, dist2, n * sizeof *dist) == 0);
    CHECK_OK(cagra_index_free(built));
  }

  /* Bad lists: a negative ordinal, a repeated one, a negative count, a NULL list. */
  sp = search_params();
  sp.resources.devices = negative, sp.resources.num_devices = 2;
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2,
                                 dist2, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "resources.devices[1] is -1");
  sp.resources.devices = twice, sp.resources.num_devices = 3;
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2,
                                 dist2, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "twice");
  sp.resources.devices = two, sp.resources.num_devices = -1;
  CHECK_FAILS(cagra_index_search_labels(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                        ids64, NULL, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "num_devices");
  sp.resources.devices = NULL, sp.resources.num_devices = 2;
  CHECK_FAILS(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2,
                                 dist2, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "resources.devices is NULL");
  bp.resources.devices = twice, bp.resources.num_devices = 3;
  CHECK_FAILS(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, d->base.rows, dim, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "twice");
  CHECK(out == NULL);
  CHECK_FAILS(cagra_index_compact((cagra_index_t*)index, &bp.resources),
              CAGRA_ERROR_INVALID_ARGUMENT, "twice");
  free(ids), free(ids2), free(dist), free(dist2), free(ids64);
}

static cagra_sharded_index_info_t sharded_info_of(const cagra_sharded_index_t* index) {
  cagra_sharded_index_info_t info;
  memset(&info, 0, sizeof info);
  CHECK_OK(cagra_sharded_index_get_info(index, &info));
  return info;
}

/* Whether `path` names a file that can be opened for reading. */
static int file_exists(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return 0;
  fclose(file);
  return 1;
}

/* bigann10k in 3 shards on the CPU backend: info and offsets, recall at itopk 64 with global
 * ids, the same results with a device list, a filter over the global rows, a save/load round
 * trip with identical results, and the files telling single and sharded indexes apart. */
static void test_sharded(const data_set* d, const cagra_index_t* single, const char* out_dir) {
  const int64_t rows = d->base.rows, dim = d->base.cols, nq = d->queries.rows;
  const size_t n = (size_t)nq * K;
  const int32_t devices[2] = {1, 0};
  const cagra_build_params_t bp = build_params();
  cagra_search_params_t sp = search_params();
  cagra_sharded_index_t* sharded = NULL;
  cagra_sharded_index_t* loaded = NULL;
  cagra_index_t* shard = NULL;
  cagra_sharded_index_info_t info;
  cagra_filter_t filter;
  uint32_t* ids = malloc(n * sizeof *ids);
  uint32_t* ids2 = malloc(n * sizeof *ids2);
  float* dist = malloc(n * sizeof *dist);
  float* dist2 = malloc(n * sizeof *dist2);
  int64_t* ids64 = malloc(n * sizeof *ids64);
  uint32_t* every_third = calloc((size_t)cagra_filter_words(rows), sizeof *every_third);
  int64_t offsets[4] = {-1, -1, -1, -1}, offsets2[4] = {-1, -1, -1, -1};
  char path[4096], shard_path[4200];
  size_t i;
  int64_t r, s;

  CHECK_OK(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, rows, dim, 3, &sharded));
  if (sharded == NULL) {
    free(ids), free(ids2), free(dist), free(dist2), free(ids64), free(every_third);
    return;
  }
  info = sharded_info_of(sharded);
  CHECK(info.rows == rows && info.dim == dim && info.shards == 3 && info.graph_degree == 32);
  CHECK(info.dtype == CAGRA_DTYPE_U8 && info.metric == CAGRA_METRIC_L2);
  CHECK_OK(cagra_sharded_index_get_offsets(sharded, offsets, 4));
  for (s = 0; s <= 3; ++s) CHECK(offsets[s] == rows * s / 3); /* [0, 3300, 6600, 9900] */

  /* Search at itopk 64: global ids, nearest first, recall against the whole set's truth. */
  sp.itopk_size = 64;
  CHECK_OK(cagra_sharded_index_search(sharded, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                      ids, dist, NULL));
  for (i = 0; i < n; ++i) {
    CHECK(ids[i] < (uint32_t)rows && (i % K == 0 || dist[i - 1] <= dist[i]));
    ids64[i] = ids[i];
  }
  printf("recall@10 of 3 shards at itopk 64: %.4f\n",
         recall(ids64, d->truth, d->truth_k, d->queries.rows));
  CHECK(recall(ids64, d->truth, d->truth_k, d->queries.rows) >= 0.9);

  /* Placement over a device list does not change the results (the CPU ignores it). */
  sp.resources.devices = devices, sp.resources.num_devices = 2;
  CHECK_OK(cagra_sharded_index_search(sharded, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                      ids2, dist2, NULL));
  CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0 && memcmp(dist, dist2, n * sizeof *dist) == 0);
  sp.resources.devices = NULL, sp.resources.num_devices = 0;

  /* A filter covers the global rows; every shard sees its slice. */
  for (r = 0; r < rows; r += 3) set_bit(every_third, r);
  filter.words = every_third, filter.rows = rows, filter.queries = 0;
  CHECK_OK(cagra_sharded_index_search(sharded, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                      ids2, NULL, &filter));
  for (i = 0; i < n; ++i) CHECK(ids2[i] != CAGRA_INVALID_ID && ids2[i] % 3 == 0);
  filter.rows = offsets[1]; /* one shard's rows: not the index's */
  CHECK_FAILS(cagra_sharded_index_search(sharded, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                         ids2, NULL, &filter),
              CAGRA_ERROR_INVALID_ARGUMENT, "filter");

  /* Save, load: the same shards, the same results bit for bit. */
  snprintf(path, sizeof path, "%s/test_c_api_sharded.cagra", out_dir);
  CHECK_OK(cagra_sharded_index_save(sharded, path));
  CHECK(cagra_is_sharded_file(path) == 1);
  snprintf(shard_path, sizeof shard_path, "%s.shard-1-of-3", path);
  CHECK(file_exists(shard_path) && cagra_is_sharded_file(shard_path) == 0);
  CHECK_OK(cagra_sharded_index_load(path, &loaded));
  CHECK(loaded != NULL);
  if (loaded != NULL) {
    cagra_sharded_index_info_t again = sharded_info_of(loaded);
    CHECK(again.rows == info.rows && again.dim == info.dim && again.shards == info.shards &&
          again.graph_degree == info.graph_degree && again.dtype == info.dtype &&
          again.metric == info.metric);
    CHECK_OK(cagra_sharded_index_get_offsets(loaded, offsets2, 4));
    CHECK(memcmp(offsets, offsets2, sizeof offsets) == 0);
    CHECK_OK(cagra_sharded_index_search(loaded, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                        ids2, dist2, NULL));
    CHECK(memcmp(ids, ids2, n * sizeof *ids) == 0 && memcmp(dist, dist2, n * sizeof *dist) == 0);
    CHECK_OK(cagra_sharded_index_free(loaded));
    loaded = NULL;
  }

  /* A shard file is an ordinary index; the manifest is not one, and a single index file is no
   * manifest: each load says which function reads the file. */
  CHECK_OK(cagra_index_load(shard_path, &shard));
  if (shard != NULL) {
    CHECK(info_of(shard).rows == offsets[2] - offsets[1]);
    CHECK_OK(cagra_index_free(shard));
  }
  shard = NULL;
  CHECK_FAILS(cagra_index_load(path, &shard), CAGRA_ERROR_IO, "cagra_sharded_index_load");
  CHECK(shard == NULL);
  CHECK_FAILS(cagra_sharded_index_load(shard_path, &loaded), CAGRA_ERROR_IO, "cagra_index_load");
  snprintf(shard_path, sizeof shard_path, "%s/test_c_api_single.cagra", out_dir);
  CHECK_OK(cagra_index_save(single, shard_path));
  CHECK(cagra_is_sharded_file(shard_path) == 0);
  CHECK_FAILS(cagra_sharded_index_load(shard_path, &loaded), CAGRA_ERROR_IO, "not the manifest");
  remove(shard_path);
  CHECK_FAILS(cagra_sharded_index_load("/nonexistent-folder/index.cagra", &loaded), CAGRA_ERROR_IO,
              "cannot open");
  CHECK(loaded == NULL);
  CHECK(cagra_is_sharded_file("/nonexistent-folder/index.cagra") == 0);
  CHECK(cagra_is_sharded_file(NULL) == 0);
  for (s = 0; s < 3; ++s) {
    snprintf(shard_path, sizeof shard_path, "%s.shard-%d-of-3", path, (int)s);
    remove(shard_path);
  }
  remove(path);

  CHECK_OK(cagra_sharded_index_free(sharded));
  free(ids), free(ids2), free(dist), free(dist2), free(ids64), free(every_third);
}

/* Bad calls on sharded indexes: the right status and a message naming the problem, before any
 * work, and the output handle untouched. Uses a small index of 2 shards over 500 rows. */
static void test_sharded_errors(const data_set* d) {
  const int64_t dim = d->base.cols, nq = d->queries.rows;
  const size_t n = (size_t)nq * K;
  const int32_t negative[2] = {0, -3}, twice[2] = {2, 2};
  cagra_build_params_t bp = build_params();
  cagra_search_params_t sp = search_params();
  cagra_sharded_index_t* index = NULL;
  cagra_sharded_index_t* out = NULL;
  cagra_sharded_index_info_t info;
  uint32_t* ids = malloc(n * sizeof *ids);
  float* dist = malloc(n * sizeof *dist);
  int64_t offsets[3];

  /* Build: NULL pointers, shard counts outside [1, rows], bad sizes and dtypes, bad lists. */
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 2, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "index (where the new handle goes) is NULL");
  CHECK_FAILS(cagra_sharded_index_build(&bp, NULL, CAGRA_DTYPE_U8, 500, dim, 2, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "data is NULL");
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 0, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "shards is 0");
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, -2, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "shards is -2");
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 5, dim, 6, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "[1, 5]");
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 0, dim, 1, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "rows must be >= 1");
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, (cagra_dtype_t)9, 500, dim, 2, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "dtype");
  bp.resources.devices = negative, bp.resources.num_devices = 2;
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 2, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "resources.devices[1] is -3");
  bp.resources.devices = twice;
  CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 2, &out),
              CAGRA_ERROR_INVALID_ARGUMENT, "twice");
  bp = build_params();
  if (!cagra_cuda_available()) {
    bp.resources.backend = CAGRA_BACKEND_CUDA;
    CHECK_FAILS(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 2, &out),
                CAGRA_ERROR_UNSUPPORTED, "CUDA");
    bp = build_params();
  }
  CHECK(out == NULL);

  /* NULL handles everywhere. */
  CHECK_FAILS(cagra_sharded_index_search(NULL, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                         ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "index is NULL");
  CHECK_FAILS(cagra_sharded_index_get_info(NULL, &info), CAGRA_ERROR_INVALID_ARGUMENT,
              "index is NULL");
  CHECK_FAILS(cagra_sharded_index_get_offsets(NULL, offsets, 3), CAGRA_ERROR_INVALID_ARGUMENT,
              "index is NULL");
  CHECK_FAILS(cagra_sharded_index_save(NULL, "/tmp/unused.cagra"), CAGRA_ERROR_INVALID_ARGUMENT,
              "index is NULL");
  CHECK_FAILS(cagra_sharded_index_load(NULL, &out), CAGRA_ERROR_INVALID_ARGUMENT, "path is NULL");
  CHECK_FAILS(cagra_sharded_index_load("/tmp/unused.cagra", NULL), CAGRA_ERROR_INVALID_ARGUMENT,
              "index (where the new handle goes) is NULL");
  CHECK(out == NULL);

  CHECK_OK(cagra_sharded_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, 500, dim, 2, &index));
  if (index == NULL) {
    free(ids), free(dist);
    return;
  }
  /* Search: NULL pointers, dimension mismatch, bad k, bad device lists. */
  CHECK_FAILS(
      cagra_sharded_index_search(index, &sp, NULL, CAGRA_DTYPE_U8, nq, dim, K, ids, dist, NULL),
      CAGRA_ERROR_INVALID_ARGUMENT, "queries is NULL");
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                         NULL, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "neighbors is NULL");
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim - 1,
                                         K, ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "dimension");
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, 0, dim, K,
                                         ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "num_queries");
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, 0,
                                         ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "k");
  sp.resources.devices = twice, sp.resources.num_devices = 2;
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                         ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "twice");
  sp.resources.devices = negative;
  CHECK_FAILS(cagra_sharded_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K,
                                         ids, dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "resources.devices[1] is -3");
  sp = search_params();

  /* Info and offsets: NULL outputs, a capacity below shards + 1; files: NULL, bad folder. */
  CHECK_FAILS(cagra_sharded_index_get_info(index, NULL), CAGRA_ERROR_INVALID_ARGUMENT,
              "info is NULL");
  CHECK_FAILS(cagra_sharded_index_get_offsets(index, NULL, 3), CAGRA_ERROR_INVALID_ARGUMENT,
              "offsets is NULL");
  CHECK_FAILS(cagra_sharded_index_get_offsets(index, offsets, 2), CAGRA_ERROR_INVALID_ARGUMENT,
              "capacity");
  CHECK_OK(cagra_sharded_index_get_offsets(index, offsets, 3));
  CHECK(offsets[0] == 0 && offsets[1] == 250 && offsets[2] == 500);
  CHECK_FAILS(cagra_sharded_index_save(index, NULL), CAGRA_ERROR_INVALID_ARGUMENT, "path is NULL");
  CHECK_FAILS(cagra_sharded_index_save(index, "/nonexistent-folder/index.cagra"), CAGRA_ERROR_IO,
              "nonexistent-folder");
  CHECK(sharded_info_of(index).rows == 500);
  CHECK_OK(cagra_sharded_index_free(index));
  free(ids), free(dist);
}

/* The kNN graph in partitions, checkpointed: the second build loads every partition (the
 * folder's files are not written again) and gives the same graph. */
static void test_partitioned_build(const data_set* d, const char* out_dir) {
  cagra_build_params_t bp = build_params();
  cagra_index_t *a = NULL, *b = NULL;
  char folder[4096], part[4200];
  struct stat before, after;
  snprintf(folder, sizeof folder, "%s/c_knn_checkpoint", out_dir);
  bp.knn_partition_rows = 3000;
  bp.knn_checkpoint_dir = folder;
  CHECK_OK(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, d->base.rows, d->base.cols, &a));
  snprintf(part, sizeof part, "%s/knn-part-0-of-", folder);
  {
    /* The partition count depends on the clusters: find part 0's file by trying counts. */
    int n, found = 0;
    for (n = 1; n <= 64 && !found; ++n) {
      snprintf(part, sizeof part, "%s/knn-part-0-of-%d.bin", folder, n);
      found = stat(part, &before) == 0;
    }
    CHECK(found);
  }
  CHECK_OK(cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, d->base.rows, d->base.cols, &b));
  CHECK(stat(part, &after) == 0 && after.st_mtime == before.st_mtime &&
        after.st_size == before.st_size);
  if (a && b) {
    const size_t n = (size_t)d->queries.rows * K;
    uint32_t* ids = malloc(2 * n * sizeof *ids);
    float* dist = malloc(n * sizeof *dist);
    int64_t* ids64 = malloc(n * sizeof *ids64);
    search_all(a, d, ids, dist, ids64);
    search_all(b, d, ids + n, dist, ids64);
    CHECK(memcmp(ids, ids + n, n * sizeof *ids) == 0);
    free(ids), free(dist), free(ids64);
  }
  bp.knn_partition_rows = 10; /* too small for the degree */
  {
    cagra_index_t* c = NULL;
    CHECK_FAILS(
        cagra_index_build(&bp, d->base.data, CAGRA_DTYPE_U8, d->base.rows, d->base.cols, &c),
        CAGRA_ERROR_INVALID_ARGUMENT, "partition_rows");
  }
  cagra_index_free(a), cagra_index_free(b);
}

/* The int8 traversal: on a float32 copy of bigann10k, recall within 0.02 of the exact walk and
 * the distances returned exact (squared L2 of the returned rows); refused for the u8 index, for
 * rerank < k and for a traversal outside the enum. */
static void test_int8_traversal(const data_set* d, const cagra_index_t* u8_index) {
  const int64_t rows = d->base.rows, dim = d->base.cols, nq = d->queries.rows;
  const size_t n = (size_t)nq * K;
  const cagra_build_params_t bp = build_params();
  cagra_search_params_t sp = search_params();
  float* base = malloc((size_t)(rows * dim) * sizeof *base);
  float* queries = malloc((size_t)(nq * dim) * sizeof *queries);
  uint32_t* ids = malloc(n * sizeof *ids);
  float* dist = malloc(n * sizeof *dist);
  int64_t* ids64 = malloc(n * sizeof *ids64);
  cagra_index_t* index = NULL;
  double exact_recall = 0, int8_recall = 0;
  size_t i;

  for (i = 0; i < (size_t)(rows * dim); ++i) base[i] = ((const uint8_t*)d->base.data)[i];
  for (i = 0; i < (size_t)(nq * dim); ++i) queries[i] = ((const uint8_t*)d->queries.data)[i];

  sp.traversal = CAGRA_TRAVERSAL_INT8;
  CHECK_FAILS(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "int8");
  sp.traversal = (cagra_traversal_t)2;
  CHECK_FAILS(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "traversal");

  CHECK_OK(cagra_index_build(&bp, base, CAGRA_DTYPE_F32, rows, dim, &index));
  if (index != NULL) {
    sp = search_params();
    CHECK_OK(cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids, dist, NULL));
    for (i = 0; i < n; ++i) ids64[i] = ids[i];
    exact_recall = recall(ids64, d->truth, d->truth_k, (size_t)nq);

    sp.traversal = CAGRA_TRAVERSAL_INT8;
    CHECK_OK(cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids, dist, NULL));
    for (i = 0; i < n; ++i) ids64[i] = ids[i];
    int8_recall = recall(ids64, d->truth, d->truth_k, (size_t)nq);
    printf("recall@10 on bigann10k as f32: exact %.4f, int8 traversal %.4f\n", exact_recall,
           int8_recall);
    CHECK(int8_recall >= exact_recall - 0.02);
    for (i = 0; i < n; ++i) {
      const float* q = queries + (i / K) * (size_t)dim;
      const float* x = base + (size_t)ids[i] * (size_t)dim;
      double exact = 0;
      int64_t j;
      CHECK(ids[i] < (uint32_t)rows);
      if (ids[i] >= (uint32_t)rows) continue;
      for (j = 0; j < dim; ++j) exact += ((double)q[j] - x[j]) * ((double)q[j] - x[j]);
      CHECK(fabs(dist[i] - exact) <= 1e-4 * exact + 1e-3);
      CHECK(i % K == 0 || dist[i - 1] <= dist[i]);
    }

    sp.rerank = K - 1; /* fewer candidates than k */
    CHECK_FAILS(
        cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids, dist, NULL),
        CAGRA_ERROR_INVALID_ARGUMENT, "rerank");
    sp.rerank = K; /* the smallest allowed */
    CHECK_OK(cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids, dist, NULL));
    CHECK_OK(cagra_index_free(index));
  }
  free(base), free(queries), free(ids), free(dist), free(ids64);
}

int main(int argc, char** argv) {
  const char* dir = data_dir();
  char path[4096];
  data_set d;
  matrix truth;
  cagra_build_params_t bp = build_params();
  cagra_index_t* index = NULL;
  size_t i;

  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  if (dir == NULL) {
    fprintf(stderr, "test data not found: set CAGRA_DATA_DIR to the folder holding bigann10k/\n");
    return 1;
  }
  snprintf(path, sizeof path, "%s/bigann10k/base.u8bin", dir);
  if (!read_bin(path, 1, &d.base)) return fprintf(stderr, "cannot read %s\n", path), 1;
  snprintf(path, sizeof path, "%s/bigann10k/query.u8bin", dir);
  if (!read_bin(path, 1, &d.queries)) return fprintf(stderr, "cannot read %s\n", path), 1;
  snprintf(path, sizeof path, "%s/bigann10k/groundtruth.ibin", dir);
  if (!read_bin(path, 4, &truth)) return fprintf(stderr, "cannot read %s\n", path), 1;
  if (truth.rows != d.queries.rows || truth.cols < K)
    return fprintf(stderr, "%s does not match the queries\n", path), 1;
  d.truth_k = truth.cols;
  d.truth = malloc((size_t)truth.rows * truth.cols * sizeof *d.truth);
  for (i = 0; i < (size_t)truth.rows * truth.cols; ++i) d.truth[i] = ((int32_t*)truth.data)[i];

  test_library();
  CHECK_OK(cagra_index_build(&bp, d.base.data, CAGRA_DTYPE_U8, d.base.rows, d.base.cols, &index));
  if (index != NULL) {
    test_build_search_save_load(&d, index, argv[1]);
    test_filters(&d, index);
    test_errors(&d, index);
    test_device_lists(&d, index);
    test_sharded(&d, index, argv[1]);
    test_int8_traversal(&d, index);
    CHECK_OK(cagra_index_free(index));
  }
  test_living_index(&d);
  test_sharded_errors(&d);
  test_partitioned_build(&d, argv[1]);

  free(d.base.data), free(d.queries.data), free(truth.data), free(d.truth);
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}
