/* C API test (see test_c_api.c): the error paths of a single index (build, search, extend,
 * labels, remove, files): each bad call gives its status and a message naming the problem, and
 * leaves the outputs and the index unchanged. */
#include "c_api_test_support.h"

#include <stdlib.h>

/* Bad calls: the right status, a message, outputs and the index untouched. */
void test_errors(const data_set* d, cagra_index_t* index) {
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
    CHECK_FAILS(cagra_index_search_labels_device(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq,
                                                 dim, K, labels, dist, NULL),
                CAGRA_ERROR_UNSUPPORTED, "search host memory with cagra_index_search_labels");
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
