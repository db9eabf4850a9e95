/* A C program outside the project that uses the installed package through the C API
 * (cagra/c_api.h): it builds an index over 4,000 random vectors, searches the first 200 of them
 * and checks that each finds itself first, then checks that a bad call returns its status and a
 * message. Exit status 0 when all of it holds. The install check (tests/consumer/CMakeLists.txt,
 * scripts/check-install.sh) compiles it as C99 against an installed prefix when it is present. */
#include <cagra/c_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  enum { ROWS = 4000, DIM = 32, QUERIES = 200, K = 10 };
  float* base = malloc(sizeof(float) * ROWS * DIM);
  uint32_t* ids = malloc(sizeof(uint32_t) * QUERIES * K);
  cagra_build_params_t build;
  cagra_index_t* index = NULL;
  cagra_status_t status;
  int i, found_self = 0, result = 1;

  if (base == NULL || ids == NULL) return 1;
  srand(7);
  for (i = 0; i < ROWS * DIM; ++i) base[i] = (float)rand() / (float)RAND_MAX;
  cagra_build_params_default(&build);
  build.graph_degree = 32;
  build.intermediate_graph_degree = 64;
  status = cagra_index_build(&build, base, CAGRA_DTYPE_F32, ROWS, DIM, &index);
  if (status == CAGRA_OK)
    status =
        cagra_index_search(index, NULL, base, CAGRA_DTYPE_F32, QUERIES, DIM, K, ids, NULL, NULL);
  if (status != CAGRA_OK) {
    fprintf(stderr, "error: %s: %s\n", cagra_status_name(status), cagra_last_error());
  } else {
    for (i = 0; i < QUERIES; ++i) found_self += ids[i * K] == (uint32_t)i;
    status = cagra_index_search(index, NULL, base, CAGRA_DTYPE_F32, QUERIES, DIM - 1, K, ids, NULL,
                                NULL);
    printf("cagra %s (C API): %d x %d, %d of %d queries find themselves first; a bad call: %s\n",
           cagra_version(), ROWS, DIM, found_self, QUERIES, cagra_status_name(status));
    result = found_self == QUERIES && status == CAGRA_ERROR_INVALID_ARGUMENT &&
                     strlen(cagra_last_error()) > 0
                 ? 0
                 : 1;
  }
  cagra_index_free(index);
  free(base);
  free(ids);
  return result;
}
