/* C API test (see test_c_api.c): a sharded index (cagra_sharded_index_*): build, info and
 * offsets, search with global ids, device lists and filters, a save/load round trip, the files
 * telling single and sharded indexes apart, and the error paths of every sharded call. The
 * sharded header comes first: it stands alone (it includes cagra/c_api.h itself). */
#include <cagra/c_api_sharded.h>

#include "c_api_test_support.h"

#include <stdlib.h>

/* bigann10k in 3 shards on the CPU backend: info and offsets, recall at itopk 64 with global
 * ids, the same results with a device list, a filter over the global rows, a save/load round
 * trip with identical results, and the files telling single and sharded indexes apart. */
void test_sharded(const data_set* d, const cagra_index_t* single, const char* out_dir) {
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
void test_sharded_errors(const data_set* d) {
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
  CHECK_FAILS(cagra_sharded_index_search_device(index, &sp, NULL, CAGRA_DTYPE_U8, nq, dim, K, ids,
                                                dist, NULL),
              CAGRA_ERROR_INVALID_ARGUMENT, "queries is NULL");
  if (!cagra_cuda_available()) {
    /* Host pointers stand in for device ones: the call refuses before it reads them. */
    CHECK_FAILS(cagra_sharded_index_search_device(index, &sp, d->queries.data, CAGRA_DTYPE_U8, nq,
                                                  dim, K, ids, dist, NULL),
                CAGRA_ERROR_UNSUPPORTED, "CUDA");
  }
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
