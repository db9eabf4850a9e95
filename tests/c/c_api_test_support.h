/* What the C API test's files (test_c_api*.c, one program: cagra_test_c_api) share: the check
 * macros and their failure count, the data set (bigann10k) and its loader, the parameters every
 * case builds and searches with, small helpers, and the cases themselves, which main
 * (test_c_api.c) runs in order. C99, no test framework. */
#ifndef CAGRA_TESTS_C_API_TEST_SUPPORT_H
#define CAGRA_TESTS_C_API_TEST_SUPPORT_H

#include <cagra/c_api.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Checks that failed so far, over every file; main returns 1 when it is not 0. */
extern int failures;

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

typedef struct data_set {
  matrix base;    /* u8 [rows, dim] */
  matrix queries; /* u8 [nq, dim] */
  int64_t* truth; /* [nq, truth_k] */
  size_t truth_k;
} data_set;

/* Reads a matrix file into `m` (data from malloc); 0 when it cannot. */
int read_bin(const char* path, size_t elem, matrix* m);

/* The folder holding bigann10k/: $CAGRA_DATA_DIR, else the source tree's data/shared or
 * ../shared/data; NULL when none has it. */
const char* data_dir(void);

/* Mean over queries of |found[:K] & truth[:K]| / K; `found` and `truth` as int64. */
double recall(const int64_t* found, const int64_t* truth, size_t truth_stride, size_t queries);

/* The index's info (a failed call is a failed check). */
cagra_index_info_t info_of(const cagra_index_t* index);
cagra_sharded_index_info_t sharded_info_of(const cagra_sharded_index_t* index);
int same_info(cagra_index_info_t a, cagra_index_info_t b);

/* Row bits of a filter bitset (cagra_filter_t.words). */
void set_bit(uint32_t* words, int64_t row);
int has_bit(const uint32_t* words, int64_t row);

/* Whether `path` names a file that can be opened for reading. */
int file_exists(const char* path);

/* The parameters of every case: graph degree 32 (intermediate 64) on the CPU backend. */
cagra_build_params_t build_params(void);
cagra_search_params_t search_params(void);

/* Search of every query into row ids widened to int64 (for recall). */
void search_all(const cagra_index_t* index, const data_set* d, uint32_t* ids, float* dist,
                int64_t* ids64);

/* The cases. main (test_c_api.c) runs test_library; then, on one bigann10k index built with
 * build_params(), test_build_search_save_load, test_filters, test_errors, test_device_lists,
 * test_sharded and test_int8_traversal; then test_living_index, test_sharded_errors and
 * test_partitioned_build. `out_dir` is where index files may be written. */

/* test_c_api.c */
void test_library(void);
/* test_c_api_build_search.c */
void test_build_search_save_load(const data_set* d, cagra_index_t* index, const char* out_dir);
void test_filters(const data_set* d, const cagra_index_t* index);
void test_registered_filters(const data_set* d, const cagra_index_t* index);
void test_int8_traversal(const data_set* d, const cagra_index_t* u8_index);
void test_partitioned_build(const data_set* d, const char* out_dir);
/* test_c_api_errors.c */
void test_errors(const data_set* d, cagra_index_t* index);
/* test_c_api_device_lists.c */
void test_device_lists(const data_set* d, const cagra_index_t* index);
/* test_c_api_living_index.c */
void test_living_index(const data_set* d);
/* test_c_api_sharded.c */
void test_sharded(const data_set* d, const cagra_index_t* single, const char* out_dir);
void test_sharded_errors(const data_set* d);

#endif /* CAGRA_TESTS_C_API_TEST_SUPPORT_H */
