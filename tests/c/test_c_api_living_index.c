/* C API test (see test_c_api.c): an index that changes: half of bigann10k built, the rest
 * extended with labels, rows removed by label and by row number, then compacted; labels survive,
 * removed rows never come back and recall holds throughout. */
#include "c_api_test_support.h"

#include <stdlib.h>

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
void test_living_index(const data_set* d) {
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
