/* The complete example of docs/c_api.md: build an index over random vectors, search it, handle
 * an error, free it. Built and run by ctest (c_api_example), so the documented code compiles and
 * works; it exits 0 when every query finds itself first. */
#include <cagra/c_api.h>

#include <stdio.h>
#include <stdlib.h>

/* Prints what failed and returns 1 when `status` is not CAGRA_OK. */
static int failed(cagra_status_t status, const char* what) {
  if (status == CAGRA_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, cagra_status_name(status), cagra_last_error());
  return 1;
}

int main(void) {
  enum { ROWS = 2000, DIM = 16, QUERIES = 5, K = 4 };
  float* data = malloc(sizeof(float) * ROWS * DIM);
  uint32_t neighbors[QUERIES * K];
  float distances[QUERIES * K];
  cagra_build_params_t build;
  cagra_search_params_t search;
  cagra_index_t* index = NULL;
  cagra_status_t status;
  int i, q, result = 1;

  if (data == NULL) return 1;
  srand(1);
  for (i = 0; i < ROWS * DIM; ++i) data[i] = (float)rand() / (float)RAND_MAX;

  /* Build: start from the defaults, change what matters. The library copies the vectors. */
  cagra_build_params_default(&build);
  build.graph_degree = 32;
  build.metric = CAGRA_METRIC_L2;
  if (failed(cagra_index_build(&build, data, CAGRA_DTYPE_F32, ROWS, DIM, &index), "build"))
    goto done;

  /* Search the first rows themselves: each should find itself at distance 0. */
  cagra_search_params_default(&search);
  search.itopk_size = 32;
  if (failed(cagra_index_search(index, &search, data, CAGRA_DTYPE_F32, QUERIES, DIM, K, neighbors,
                                distances, NULL),
             "search"))
    goto done;
  result = 0;
  for (q = 0; q < QUERIES; ++q) {
    printf("query %d: rows", q);
    for (i = 0; i < K; ++i) printf(" %u (%.3f)", neighbors[q * K + i], distances[q * K + i]);
    printf("\n");
    if (neighbors[q * K] != (uint32_t)q) result = 1;
  }

  /* Errors: the status says what kind, cagra_last_error() says what exactly. */
  status = cagra_index_search(index, &search, data, CAGRA_DTYPE_F32, QUERIES, DIM + 1, K, neighbors,
                              distances, NULL);
  if (status == CAGRA_ERROR_INVALID_ARGUMENT)
    printf("as expected, %s: %s\n", cagra_status_name(status), cagra_last_error());
  else
    result = 1;

done:
  cagra_index_free(index); /* NULL is fine */
  free(data);
  return result;
}
