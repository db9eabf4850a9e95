/* The helpers of the C API test (declared in c_api_test_support.h): the failure count, the
 * bigann10k loader and data folder, recall, info and filter-bit helpers, and the build and
 * search parameters every case uses. */
#include "c_api_test_support.h"

#include <stdlib.h>

int failures = 0;

int read_bin(const char* path, size_t elem, matrix* m) {
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
const char* data_dir(void) {
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
double recall(const int64_t* found, const int64_t* truth, size_t truth_stride, size_t queries) {
  size_t q, i, j, hits = 0;
  for (q = 0; q < queries; ++q)
    for (i = 0; i < K; ++i)
      for (j = 0; j < K; ++j)
        if (found[q * K + i] == truth[q * truth_stride + j]) ++hits;
  return (double)hits / (double)(queries * K);
}

cagra_index_info_t info_of(const cagra_index_t* index) {
  cagra_index_info_t info;
  memset(&info, 0, sizeof info);
  CHECK_OK(cagra_index_get_info(index, &info));
  return info;
}

cagra_sharded_index_info_t sharded_info_of(const cagra_sharded_index_t* index) {
  cagra_sharded_index_info_t info;
  memset(&info, 0, sizeof info);
  CHECK_OK(cagra_sharded_index_get_info(index, &info));
  return info;
}

int same_info(cagra_index_info_t a, cagra_index_info_t b) {
  return a.rows == b.rows && a.dim == b.dim && a.graph_degree == b.graph_degree &&
         a.dtype == b.dtype && a.metric == b.metric && a.live_rows == b.live_rows &&
         a.deleted_rows == b.deleted_rows && a.has_labels == b.has_labels;
}

void set_bit(uint32_t* words, int64_t row) { words[row >> 5] |= 1u << (row & 31); }
int has_bit(const uint32_t* words, int64_t row) { return (words[row >> 5] >> (row & 31)) & 1u; }

/* Whether `path` names a file that can be opened for reading. */
int file_exists(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return 0;
  fclose(file);
  return 1;
}

cagra_build_params_t build_params(void) {
  cagra_build_params_t p;
  cagra_build_params_default(&p);
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  p.resources.backend = CAGRA_BACKEND_CPU;
  return p;
}

cagra_search_params_t search_params(void) {
  cagra_search_params_t p;
  cagra_search_params_default(&p);
  p.resources.backend = CAGRA_BACKEND_CPU;
  return p;
}

/* Search of every query into row ids widened to int64 (for recall). */
void search_all(const cagra_index_t* index, const data_set* d, uint32_t* ids, float* dist,
                int64_t* ids64) {
  const cagra_search_params_t sp = search_params();
  size_t i;
  CHECK_OK(cagra_index_search(index, &sp, d->queries.data, CAGRA_DTYPE_U8, d->queries.rows,
                              d->queries.cols, K, ids, dist, NULL));
  for (i = 0; i < (size_t)d->queries.rows * K; ++i) ids64[i] = ids[i];
}
