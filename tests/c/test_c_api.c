/* The C interface (include/cagra/c_api.h) exercised from C99, as a binding would use it: build
 * on bigann10k, search (recall against the ground truth), save/load round trip, filtered search,
 * labels, extend / remove / compact, device lists (replicated search), a sharded index (build,
 * search, save/load, info), the int8 traversal and the error paths (status, message, index
 * unchanged). One program (cagra_test_c_api, ctest `c_api`) of several files: this one holds
 * main, which loads the data and runs the cases of test_c_api_*.c in order, and the checks of
 * what the library reports without an index; c_api_test_support.h has the shared helpers.
 * No test framework: each failed check prints its file and line, and main returns 1 if any
 * failed.
 * Usage: test_c_api OUTPUT_DIR (where the index file is written; the data folder comes from
 * CAGRA_DATA_DIR or the source tree, as for the C++ tests). */
#include "c_api_test_support.h"

#include <stdlib.h>

/* Everything the library reports without an index. */
void test_library(void) {
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
  CHECK(sp.itopk_size == 64 && sp.search_width == 1 && sp.persistent == 1);
  CHECK(sp.traversal == CAGRA_TRAVERSAL_EXACT && sp.rerank == 0);
  CHECK(sp.persistent_lifetime_us == 1000 && sp.cuda_stream == NULL);
  CHECK(sp.stored_rows == CAGRA_ROWS_AUTO && sp.stream_ordered == 0);
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
    test_registered_filters(&d, index);
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
