/* C API test (see test_c_api.c): build on bigann10k and search (recall against the ground
 * truth, labels of an index without labels), a save/load round trip with identical results, the
 * CPU's latency path (algo MULTI_CTA), filtered search (a shared bitset, one per query, fewer
 * allowed rows than k, bad filters, a registered bitset), the int8 traversal, and the kNN graph
 * built in checkpointed partitions. */
#include "c_api_test_support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void test_build_search_save_load(const data_set* d, cagra_index_t* index, const char* out_dir) {
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

  /* The CPU's latency path: algo MULTI_CTA on the CPU backend walks each query on 2 threads. */
  {
    cagra_search_params_t mp = search_params();
    mp.algo = CAGRA_SEARCH_ALGO_MULTI_CTA;
    mp.resources.num_threads = 2;
    CHECK_OK(cagra_index_search(index, &mp, d->queries.data, CAGRA_DTYPE_U8, d->queries.rows,
                                d->queries.cols, K, ids2, dist2, NULL));
    for (i = 0; i < n; ++i) ids64[i] = ids2[i];
    CHECK(recall(ids64, d->truth, d->truth_k, d->queries.rows) >= 0.95);
    for (i = 0; i < n; ++i) CHECK(i % K == 0 || dist2[i - 1] <= dist2[i]);
  }
  free(ids), free(ids2), free(dist), free(dist2), free(ids64), free(labels);
}

void test_filters(const data_set* d, const cagra_index_t* index) {
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

/* A registered shared bitset (cagra_filter_register) on `backend`: the same results as
 * unregistered (on the CPU; allowed rows only on the GPU); words changed while registered never
 * bring a disallowed row (queries one at a time, each call's nearest row filtered out before the
 * next, the registration kept: on the GPU the resident kernel's copy then carries a stale stamp);
 * registered again and unregistered. */
static void registered_filter_on(const data_set* d, const cagra_index_t* index,
                                 cagra_backend_t backend) {
  const int64_t rows = d->base.rows, nq = d->queries.rows, dim = d->queries.cols;
  const int64_t words = cagra_filter_words(rows);
  cagra_search_params_t sp = search_params();
  uint32_t* allowed = calloc((size_t)words, sizeof *allowed);
  uint32_t* ids = malloc((size_t)nq * K * sizeof *ids);
  uint32_t* ids2 = malloc((size_t)nq * K * sizeof *ids2);
  float* dist = malloc((size_t)nq * K * sizeof *dist);
  cagra_filter_t filter;
  int64_t q, r, i;
  int call;

  sp.resources.backend = backend;
  for (r = 0; r < rows; r += 2) set_bit(allowed, r);
  filter.words = allowed, filter.rows = rows, filter.queries = 0;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids, dist,
                              &filter));
  CHECK_OK(cagra_filter_register(&filter));
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids2, dist,
                              &filter));
  /* The CPU search is deterministic; the GPU's multi-CTA CTAs race for their claims. */
  if (backend == CAGRA_BACKEND_CPU) CHECK(memcmp(ids, ids2, (size_t)nq * K * sizeof *ids) == 0);
  for (i = 0; i < nq * K; ++i) CHECK(ids2[i] != CAGRA_INVALID_ID && has_bit(allowed, ids2[i]));
  for (q = 0; q < 20; ++q) {
    const uint8_t* one = (const uint8_t*)d->queries.data + q * dim;
    for (call = 0; call < 2; ++call) {
      CHECK_OK(cagra_index_search(index, &sp, one, CAGRA_DTYPE_U8, 1, dim, K, ids, dist, &filter));
      for (i = 0; i < K; ++i) CHECK(ids[i] != CAGRA_INVALID_ID && has_bit(allowed, ids[i]));
      if (ids[0] != CAGRA_INVALID_ID) allowed[ids[0] / 32] &= ~(1u << (ids[0] % 32));
    }
  }
  CHECK_OK(cagra_filter_register(&filter)); /* counted and named anew */
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids, dist,
                              &filter));
  for (i = 0; i < nq * K; ++i) CHECK(ids[i] != CAGRA_INVALID_ID && has_bit(allowed, ids[i]));
  CHECK_OK(cagra_filter_unregister(allowed));
  CHECK_OK(cagra_filter_unregister(allowed)); /* not registered: nothing to do */
  free(allowed), free(ids), free(ids2), free(dist);
}

/* Registered bitsets on the CPU, and on the GPU where there is one; only shared bitsets
 * register. */
void test_registered_filters(const data_set* d, const cagra_index_t* index) {
  uint32_t word = 1;
  cagra_filter_t per_query;
  registered_filter_on(d, index, CAGRA_BACKEND_CPU);
  if (cagra_cuda_available()) registered_filter_on(d, index, CAGRA_BACKEND_CUDA);
  per_query.words = &word, per_query.rows = 3, per_query.queries = 1;
  CHECK_FAILS(cagra_filter_register(&per_query), CAGRA_ERROR_INVALID_ARGUMENT, "shared bitset");
  CHECK_FAILS(cagra_filter_register(NULL), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(cagra_filter_unregister(NULL), CAGRA_ERROR_INVALID_ARGUMENT, "NULL");
}

/* The int8 traversal: on a float32 copy of bigann10k, recall within 0.02 of the exact walk and
 * the distances returned exact (squared L2 of the returned rows); refused for the u8 index, for
 * rerank < k and for a traversal outside the enum. */
void test_int8_traversal(const data_set* d, const cagra_index_t* u8_index) {
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
  /* Stored rows on the host need the int8 traversal; a value outside the enum is refused. */
  sp = search_params();
  sp.stored_rows = CAGRA_ROWS_HOST;
  CHECK_FAILS(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "needs traversal = int8");
  sp.stored_rows = (cagra_rows_location_t)3;
  CHECK_FAILS(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "stored_rows");
  /* stream_ordered is 0 or 1 (host queries ignore it: they always wait for their results). */
  sp = search_params();
  sp.stream_ordered = 2;
  CHECK_FAILS(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                 dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "stream_ordered must be 0 or 1");
  sp.stream_ordered = 1;
  CHECK_OK(cagra_index_search(u8_index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq, dim, K, ids, dist,
                              NULL));

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
    { /* the same answers with the rows left on the host (the CPU reads them there anyway) */
      uint32_t* ids_host = malloc(n * sizeof *ids_host);
      sp.stored_rows = CAGRA_ROWS_HOST;
      CHECK_OK(cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids_host, NULL,
                                  NULL));
      CHECK(memcmp(ids_host, ids, n * sizeof *ids) == 0);
      sp.stored_rows = CAGRA_ROWS_AUTO;
      free(ids_host);
    }
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
    sp.persistent_lifetime_us = 100; /* below the 200 us floor */
    CHECK_FAILS(
        cagra_index_search(index, &sp, queries, CAGRA_DTYPE_F32, nq, dim, K, ids, dist, NULL),
        CAGRA_ERROR_INVALID_ARGUMENT, "persistent_lifetime_us");
    sp.persistent_lifetime_us = 1000;
    CHECK_OK(cagra_index_free(index));
  }
  free(base), free(queries), free(ids), free(dist), free(ids64);
}

/* The kNN graph in partitions, checkpointed: the second build loads every partition (the
 * folder's files are not written again) and gives the same graph. */
void test_partitioned_build(const data_set* d, const char* out_dir) {
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
