/* cuvs_c_peer: NVIDIA cuVS CAGRA at batch 1 through cuVS's C API (libcuvs_c), the peer of
 * `cagra bench --batch 1`: no Python between the calls, one query a call, each call synchronized.
 *
 *   cuvs_c_peer BASE QUERIES GT DEGREES ITOPKS [--k 10] [--reps 3] [--warmup 500] [--nq N]
 *               [--metric l2|ip|cosine] [--build-algo default|auto|ivf_pq|nn_descent]
 *               [--intermediate N] [--algo auto|single_cta|multi_cta] [--width 1]
 *               [--persistent 0|1] [--json FILE] [--dataset NAME] [--commit C]
 *
 * BASE and QUERIES are .u8bin / .i8bin / .fbin files, GT an .ibin file (an int32 row count and
 * column count, then the rows). DEGREES and ITOPKS are comma lists (e.g. 32,64 and 32,64,128).
 * For each graph degree d the index is built with cuvsCagraIndexParamsCreate's defaults except
 * graph_degree = d, intermediate_graph_degree = 2d (--intermediate N: N; 0 keeps the default) and
 * build_algo = NN_DESCENT (--build-algo default keeps cuVS's), from the base copied to the device
 * (as cuvs.neighbors.cagra.build does: an owning padded copy, or a padded view when the rows are
 * already aligned; the build time counts from there to the synchronized index). Then for each
 * itopk, with cuvsCagraSearchParamsCreate's defaults except itopk_size, algo (AUTO, as Python's
 * SearchParams has it: the C default is SINGLE_CTA, one CTA a query), hashmap_mode (AUTO_HASH,
 * likewise) and search_width (--width, 1 as both defaults); --persistent 1 asks for cuVS's
 * persistent single-CTA kernel (persistent = true, algo SINGLE_CTA). All queries on the device,
 * --warmup untimed calls (cuVS links its search kernels at run time on first use), then --reps
 * passes over the queries, one cuvsCagraSearch call a query on the resources' stream, each followed
 * by cuvsStreamSync; QPS = queries / wall seconds of the best pass. Recall@k is |found[:k] &
 * truth[:k]| / k, averaged (cagra::recall). One JSON line a point (the layout of
 * tools/cli/bench_json.cpp, system "cuvs-cagra-c", batch 1) goes to stdout and, with --json, is
 * appended to FILE.
 *
 * C99; also compiles as CUDA C++ (nvcc -x cu). Build line: scripts/dev/device-cuvs.sh. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <cuvs/core/c_api.h>
#include <cuvs/neighbors/cagra.h>
#include <dlpack/dlpack.h>

typedef struct {
  int64_t rows, cols;
  void* data;  // host, rows x cols
  DLDataType dtype;
  size_t elsize;
  const char* storage;  // "u8", "i8", "f32", "i32"
} matrix;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void
die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "cuvs_c_peer: error: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void check_cuvs(cuvsError_t rc, const char* what) {
  if (rc != CUVS_SUCCESS) {
    const char* text = cuvsGetLastErrorText();
    die("%s failed: %s", what, text ? text : "(no error text)");
  }
}
static void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) die("%s failed: %s", what, cudaGetErrorString(rc));
}
#define CUVS(call) check_cuvs((call), #call)
#define CUDA(call) check_cuda((call), #call)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int ends_with(const char* s, const char* tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

static matrix read_bin(const char* path) {
  matrix m;
  int32_t head[2];
  size_t count;
  FILE* f;
  memset(&m, 0, sizeof m);
  m.dtype.lanes = 1;
  if (ends_with(path, ".u8bin")) {
    m.dtype.code = kDLUInt, m.dtype.bits = 8, m.elsize = 1, m.storage = "u8";
  } else if (ends_with(path, ".i8bin")) {
    m.dtype.code = kDLInt, m.dtype.bits = 8, m.elsize = 1, m.storage = "i8";
  } else if (ends_with(path, ".fbin")) {
    m.dtype.code = kDLFloat, m.dtype.bits = 32, m.elsize = 4, m.storage = "f32";
  } else if (ends_with(path, ".ibin")) {
    m.dtype.code = kDLInt, m.dtype.bits = 32, m.elsize = 4, m.storage = "i32";
  } else {
    die("%s: unknown extension (.u8bin, .i8bin, .fbin or .ibin)", path);
  }
  f = fopen(path, "rb");
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  if (fread(head, sizeof head, 1, f) != 1 || head[0] <= 0 || head[1] <= 0)
    die("%s: bad header", path);
  m.rows = head[0], m.cols = head[1];
  count = (size_t)m.rows * (size_t)m.cols;
  m.data = malloc(count * m.elsize);
  if (!m.data) die("out of host memory reading %s", path);
  if (fread(m.data, m.elsize, count, f) != count) die("%s: shorter than its header says", path);
  fclose(f);
  return m;
}

/* A 2-D row-major tensor over `data` (shape points at the caller's int64_t[2]). */
static DLManagedTensor tensor2d(void* data, DLDeviceType where, DLDataType dtype, int64_t* shape) {
  DLManagedTensor t;
  memset(&t, 0, sizeof t);
  t.dl_tensor.data = data;
  t.dl_tensor.device.device_type = where;
  t.dl_tensor.device.device_id = 0;
  t.dl_tensor.ndim = 2;
  t.dl_tensor.dtype = dtype;
  t.dl_tensor.shape = shape;
  t.dl_tensor.strides = NULL;  // row-major, as cuvs's Python dlpack_c hands over
  t.dl_tensor.byte_offset = 0;
  t.manager_ctx = NULL;
  t.deleter = NULL;
  return t;
}

static int parse_list(const char* s, int* out, int cap) {
  int n = 0;
  while (*s && n < cap) {
    char* end;
    long v = strtol(s, &end, 10);
    if (end == s || v <= 0) die("bad number list '%s'", s);
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') die("bad number list near '%s'", end);
  }
  return n;
}

/* A JSON string literal (RFC 8259 escapes), into buf. */
static const char* jstr(const char* s, char* buf, size_t cap) {
  size_t o = 0;
  buf[o++] = '"';
  for (; *s && o + 8 < cap; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[o++] = '\\', buf[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", c);
    } else {
      buf[o++] = (char)c;
    }
  }
  buf[o++] = '"';
  buf[o] = '\0';
  return buf;
}

static const char* build_algo_name(int a) {
  switch (a) {
    case AUTO_SELECT: return "auto";
    case IVF_PQ: return "ivf_pq";
    case NN_DESCENT: return "nn_descent";
    case ITERATIVE_CAGRA_SEARCH: return "iterative_cagra_search";
    case ACE: return "ace";
    default: return "unknown";
  }
}
static const char* search_algo_name(int a) {
  switch (a) {
    case SINGLE_CTA: return "single_cta";
    case MULTI_CTA: return "multi_cta";
    case MULTI_KERNEL: return "multi_kernel";
    case AUTO: return "auto";
    default: return "unknown";
  }
}

int main(int argc, char** argv) {
  const char *json_path = NULL, *dataset = NULL, *commit = NULL, *metric = "l2";
  const char* build_algo_arg = "nn_descent";
  int k = 10, reps = 3, warmup = 500, intermediate_arg = -1, width = 1, persistent = 0;
  const char* algo_arg = "auto";
  int64_t nq_limit = 0;
  int degrees[16], itopks[64], n_degrees, n_itopks, i, di, ti;
  const char* pos[5];
  int n_pos = 0;
  matrix base, queries, gt;
  char device[512], version[32], run_id[96], dataset_buf[256], b1[1024], b2[256], b3[512], b4[512];
  FILE* json = NULL;
  cuvsResources_t res;
  uint16_t vmaj = 0, vmin = 0, vpatch = 0;
  struct cudaDeviceProp prop;
  int drv = 0, rt = 0;
  void *d_base = NULL, *d_q = NULL;
  uint32_t* d_nb = NULL;
  float* d_dist = NULL;
  uint32_t* h_nb;
  int64_t nq, n, dim;
  cuvsDistanceType dist_type = L2Expanded;

  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] == '-' && a[1] == '-') {
      if (!v) die("%s needs a value", a);
      if (!strcmp(a, "--json"))
        json_path = v;
      else if (!strcmp(a, "--dataset"))
        dataset = v;
      else if (!strcmp(a, "--commit"))
        commit = v;
      else if (!strcmp(a, "--metric"))
        metric = v;
      else if (!strcmp(a, "--build-algo"))
        build_algo_arg = v;
      else if (!strcmp(a, "--k"))
        k = atoi(v);
      else if (!strcmp(a, "--reps"))
        reps = atoi(v);
      else if (!strcmp(a, "--warmup"))
        warmup = atoi(v);
      else if (!strcmp(a, "--nq"))
        nq_limit = atoll(v);
      else if (!strcmp(a, "--intermediate"))
        intermediate_arg = atoi(v);
      else if (!strcmp(a, "--algo"))
        algo_arg = v;
      else if (!strcmp(a, "--width"))
        width = atoi(v);
      else if (!strcmp(a, "--persistent"))
        persistent = atoi(v) != 0;
      else
        die("unknown option %s", a);
      ++i;
    } else if (n_pos < 5) {
      pos[n_pos++] = a;
    } else {
      die("too many arguments (at %s)", a);
    }
  }
  if (n_pos != 5 || k <= 0 || reps <= 0 || warmup < 0 || width <= 0) {
    fprintf(
        stderr,
        "usage: cuvs_c_peer BASE QUERIES GT DEGREES ITOPKS [--k 10] [--reps 3] [--warmup 500]\n"
        "       [--nq N] [--metric l2|ip|cosine] [--build-algo default|auto|ivf_pq|nn_descent]\n"
        "       [--intermediate N] [--algo auto|single_cta|multi_cta] [--width 1]\n"
        "       [--persistent 0|1] [--json FILE] [--dataset NAME] [--commit C]\n");
    return 2;
  }
  if (!strcmp(metric, "l2"))
    dist_type = L2Expanded;
  else if (!strcmp(metric, "ip"))
    dist_type = InnerProduct;
  else if (!strcmp(metric, "cosine"))
    dist_type = CosineExpanded;
  else
    die("--metric: l2, ip or cosine (got %s)", metric);
  n_degrees = parse_list(pos[3], degrees, 16);
  n_itopks = parse_list(pos[4], itopks, 64);
  if (!commit) commit = getenv("CAGRA_COMMIT");
  if (!commit || !*commit) commit = "unknown";
  if (!dataset) {  // the base file's folder name
    char* slash;
    snprintf(dataset_buf, sizeof dataset_buf, "%s", pos[0]);
    slash = strrchr(dataset_buf, '/');
    if (slash) {
      *slash = '\0';
      slash = strrchr(dataset_buf, '/');
      dataset = slash ? slash + 1 : dataset_buf;
    } else {
      dataset = ".";
    }
  }
  if (json_path) {  // opened first: a bad path fails before the build
    json = fopen(json_path, "a");
    if (!json) die("cannot open %s for appending: %s", json_path, strerror(errno));
  }

  base = read_bin(pos[0]);
  queries = read_bin(pos[1]);
  gt = read_bin(pos[2]);
  n = base.rows, dim = base.cols;
  nq = queries.rows;
  if (nq_limit > 0 && nq_limit < nq) nq = nq_limit;
  if (queries.cols != dim || queries.dtype.code != base.dtype.code ||
      queries.dtype.bits != base.dtype.bits)
    die("queries (%s) do not match the base (%s)", pos[1], pos[0]);
  if (gt.rows < nq || gt.cols < k) die("ground truth %s does not cover the queries x k", pos[2]);

  CUDA(cudaGetDeviceProperties(&prop, 0));
  CUDA(cudaDriverGetVersion(&drv));
  CUDA(cudaRuntimeGetVersion(&rt));
  snprintf(device, sizeof device, "%s (sm_%d%d, %d SMs, %zu MiB, driver %d, runtime %d)", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem >> 20, drv, rt);
  CUVS(cuvsVersionGet(&vmaj, &vmin, &vpatch));
  snprintf(version, sizeof version, "%u.%02u.%u", (unsigned)vmaj, (unsigned)vmin, (unsigned)vpatch);
  {
    time_t t = time(NULL);
    struct tm utc;
    char stamp[32];
    gmtime_r(&t, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
    snprintf(run_id, sizeof run_id, "%s-cuvs-c-%ld", stamp, (long)getpid());
  }
  printf("cuvs %s (C API) on %s; %s: n=%lld dim=%lld %s nq=%lld batch=1 k=%d metric=%s\n", version,
         device, dataset, (long long)n, (long long)dim, base.storage, (long long)nq, k, metric);
  fflush(stdout);

  CUVS(cuvsResourcesCreate(&res));
  CUDA(cudaMalloc(&d_base, (size_t)n * (size_t)dim * base.elsize));
  CUDA(
      cudaMemcpy(d_base, base.data, (size_t)n * (size_t)dim * base.elsize, cudaMemcpyHostToDevice));
  CUDA(cudaMalloc(&d_q, (size_t)nq * (size_t)dim * queries.elsize));
  CUDA(cudaMemcpy(d_q, queries.data, (size_t)nq * (size_t)dim * queries.elsize,
                  cudaMemcpyHostToDevice));
  CUDA(cudaMalloc((void**)&d_nb, (size_t)nq * (size_t)k * sizeof(uint32_t)));
  CUDA(cudaMalloc((void**)&d_dist, (size_t)nq * (size_t)k * sizeof(float)));
  h_nb = (uint32_t*)malloc((size_t)nq * (size_t)k * sizeof(uint32_t));
  if (!h_nb) die("out of host memory");

  for (di = 0; di < n_degrees; ++di) {
    int64_t base_shape[2];
    DLManagedTensor base_t;
    cuvsDataset_t ds = NULL;
    cuvsCagraIndexParams_t ip;
    cuvsCagraIndex_t index;
    cuvsCagraSearchParams_t sp;
    cuvsError_t rc;
    double t0, build_s;
    const char* padded;
    base_shape[0] = n, base_shape[1] = dim;
    base_t = tensor2d(d_base, kDLCUDA, base.dtype, base_shape);

    CUVS(cuvsCagraIndexParamsCreate(&ip));
    ip->metric = dist_type;
    ip->graph_degree = (size_t)degrees[di];
    if (intermediate_arg < 0)
      ip->intermediate_graph_degree = 2 * (size_t)degrees[di];
    else if (intermediate_arg > 0)
      ip->intermediate_graph_degree = (size_t)intermediate_arg;
    if (!strcmp(build_algo_arg, "nn_descent"))
      ip->build_algo = NN_DESCENT;
    else if (!strcmp(build_algo_arg, "ivf_pq"))
      ip->build_algo = IVF_PQ;
    else if (!strcmp(build_algo_arg, "auto"))
      ip->build_algo = AUTO_SELECT;
    else if (strcmp(build_algo_arg, "default") != 0)
      die("--build-algo: default, auto, ivf_pq or nn_descent (got %s)", build_algo_arg);
    CUVS(cuvsCagraIndexCreate(&index));

    CUDA(cudaDeviceSynchronize());
    t0 = now_s();
    // As cuvs.common.dataset.make_device_padded_dataset_handle: an owning padded device copy,
    // or a view when cuVS says the rows are already padded.
    rc = cuvsDatasetMakePadded(res, &base_t, CUVS_DATASET_MEM_TYPE_DEVICE, &ds);
    padded = "copy";
    if (rc != CUVS_SUCCESS) {
      const char* text = cuvsGetLastErrorText();
      if (!text || !strstr(text, "stride is already correct"))
        die("cuvsDatasetMakePadded failed: %s", text ? text : "(no error text)");
      CUVS(cuvsDatasetMakePaddedView(res, &base_t, &ds));
      padded = "view";
    }
    CUVS(cuvsCagraBuild(res, ip, ds, index));
    CUVS(cuvsStreamSync(res));
    build_s = now_s() - t0;
    printf("build d=%d intermediate=%zu %s (padded %s): %.3f s\n", degrees[di],
           ip->intermediate_graph_degree, build_algo_name(ip->build_algo), padded, build_s);
    fflush(stdout);

    CUVS(cuvsCagraSearchParamsCreate(&sp));
    if (!strcmp(algo_arg, "auto"))
      sp->algo = AUTO;
    else if (!strcmp(algo_arg, "single_cta"))
      sp->algo = SINGLE_CTA;
    else if (!strcmp(algo_arg, "multi_cta"))
      sp->algo = MULTI_CTA;
    else
      die("--algo: auto, single_cta or multi_cta (got %s)", algo_arg);
    sp->hashmap_mode = AUTO_HASH;
    sp->search_width = (size_t)width;
    if (persistent) {
      sp->persistent = true;
      sp->algo = SINGLE_CTA;
    }
    for (ti = 0; ti < n_itopks; ++ti) {
      int64_t q_shape[2], o_shape[2];
      DLManagedTensor q_t, nb_t, dist_t;
      cuvsFilter no_filter;
      double best = 1e300, recall;
      int64_t hits = 0, q;
      int r, w;
      if (itopks[ti] < k) continue;
      sp->itopk_size = (size_t)itopks[ti];
      q_shape[0] = 1, q_shape[1] = dim;
      o_shape[0] = 1, o_shape[1] = k;
      q_t = tensor2d(d_q, kDLCUDA, queries.dtype, q_shape);
      {
        DLDataType u32, f32;
        u32.code = kDLUInt, u32.bits = 32, u32.lanes = 1;
        f32.code = kDLFloat, f32.bits = 32, f32.lanes = 1;
        nb_t = tensor2d(d_nb, kDLCUDA, u32, o_shape);
        dist_t = tensor2d(d_dist, kDLCUDA, f32, o_shape);
      }
      no_filter.addr = 0;
      no_filter.type = NO_FILTER;

      for (r = -1; r < reps; ++r) {  // r = -1: the untimed warm-up calls
        int64_t calls = r < 0 ? (warmup < nq ? warmup : nq) : nq;
        double t;
        t = now_s();
        for (q = 0; q < calls; ++q) {
          q_t.dl_tensor.data = (char*)d_q + (size_t)q * (size_t)dim * queries.elsize;
          nb_t.dl_tensor.data = d_nb + (size_t)q * (size_t)k;
          dist_t.dl_tensor.data = d_dist + (size_t)q * (size_t)k;
          CUVS(cuvsCagraSearch(res, sp, index, &q_t, &nb_t, &dist_t, no_filter));
          CUVS(cuvsStreamSync(res));
        }
        t = now_s() - t;
        if (r >= 0 && t < best) best = t;
      }
      CUDA(cudaMemcpy(h_nb, d_nb, (size_t)nq * (size_t)k * sizeof(uint32_t),
                      cudaMemcpyDeviceToHost));
      for (q = 0; q < nq; ++q) {
        const int32_t* truth = (const int32_t*)gt.data + (size_t)q * (size_t)gt.cols;
        int a, b;
        for (a = 0; a < k; ++a)
          for (b = 0; b < k; ++b)
            if ((int64_t)h_nb[q * k + a] == (int64_t)truth[b]) {
              ++hits;
              break;
            }
      }
      recall = (double)hits / ((double)nq * (double)k);
      printf(
          "  d=%3d itopk=%4d width=%zu algo=%s batch=1 recall@%d=%.4f QPS=%.0f (%.2f us a query)\n",
          degrees[di], itopks[ti], sp->search_width, search_algo_name(sp->algo), k, recall,
          (double)nq / best, best * 1e6 / (double)nq);
      fflush(stdout);
      {
        char line[4096];
        w = snprintf(
            line, sizeof line,
            "{\"run_id\":%s,\"system\":\"cuvs-cagra-c\",\"device\":%s,\"commit\":%s,"
            "\"dataset\":%s,\"metric\":\"%s\",\"n\":%lld,\"dim\":%lld,\"nq\":%lld,\"batch\":1,"
            "\"k\":%d,\"params\":{\"itopk\":%d,\"search_width\":%zu,\"max_iterations\":%zu,"
            "\"threads\":1,\"storage\":\"%s\",\"graph_degree\":%d,"
            "\"intermediate_graph_degree\":%zu,\"build_algo\":\"%s\",\"algo\":\"%s\","
            "\"io\":\"device\"%s},\"recall\":%.6f,\"qps\":%.2f,\"latency_ms\":%.6g,"
            "\"build_s\":%.6g,\"cuvs_version\":\"%s\",\"plan\":\"cuvs-cagra %s C API, one "
            "cuvsCagraSearch + cuvsStreamSync a query, padded %s, best of %d\"}",
            jstr(run_id, b2, sizeof b2), jstr(device, b1, sizeof b1), jstr(commit, b3, sizeof b3),
            jstr(dataset, b4, sizeof b4), metric, (long long)n, (long long)dim, (long long)nq, k,
            itopks[ti], sp->search_width, sp->max_iterations, base.storage, degrees[di],
            ip->intermediate_graph_degree, build_algo_name(ip->build_algo),
            search_algo_name(sp->algo), persistent ? ",\"persistent\":true" : "", recall,
            (double)nq / best, best * 1e3 / (double)nq, build_s, version, version, padded, reps);
        if (w <= 0 || (size_t)w >= sizeof line) die("JSON line too long");
        printf("%s\n", line);
        if (json) {
          fprintf(json, "%s\n", line);
          fflush(json);
        }
      }
    }
    CUVS(cuvsCagraSearchParamsDestroy(sp));
    CUVS(cuvsCagraIndexDestroy(index));
    CUVS(cuvsDatasetDestroy(ds));
    CUVS(cuvsCagraIndexParamsDestroy(ip));
  }
  if (json) fclose(json);
  CUDA(cudaFree(d_base));
  CUDA(cudaFree(d_q));
  CUDA(cudaFree(d_nb));
  CUDA(cudaFree(d_dist));
  CUVS(cuvsResourcesDestroy(res));
  free(h_nb);
  free(base.data);
  free(queries.data);
  free(gt.data);
  return 0;
}
