/* C API test (see test_c_api.c): device lists (resources.devices) on the CPU backend: a build
 * and a replicated search with a list give exactly the results of none, and a bad list is
 * refused by every call that takes resources. */
#include "c_api_test_support.h"

#include <stdlib.h>

/* A device list on the CPU backend: checked, then the CPU ignores it, so a build and a
 * (replicated) search give exactly the results of no list. A bad list is refused by every call
 * that takes resources, before any work. */
void test_device_lists(const data_set* d, const cagra_index_t* index) {
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
