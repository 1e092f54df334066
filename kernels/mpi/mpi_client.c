/* acceltune-mpi-client: a plain MPI collective timer, the job that `acceltune verify` starts under
 * mpirun to measure a study's export the way a user's job would load it (the rules file and the
 * environment reach it only through mpirun and Open MPI, never through acceltune). It knows
 * nothing of acceltune: plain C, plain MPI, one line per size on rank 0's stdout.
 *
 *   acceltune-mpi-client --op allreduce --sizes 512,4096,32768 [--iters 200] [--warmup 20]
 *
 * Sizes are per-rank buffer bytes as the mpi-coll kernel reads them (kernels/mpi_coll.cpp):
 * floats, allreduce and bcast move bytes/4 elements; allgather, reduce_scatter and alltoall move
 * blocks of bytes/4/ranks elements per rank. Each call is timed alone after a barrier; its time
 * is the slowest rank's. For each size rank 0 prints
 *
 *   size=<bytes> median_seconds=<x> p10_seconds=<y> p90_seconds=<z>
 *
 * Exit codes: 0 success, 1 a wrong result or an MPI failure, 2 bad arguments. */
#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_ALLREDUCE, OP_BCAST, OP_ALLGATHER, OP_REDUCE_SCATTER, OP_ALLTOALL };

/* A family of operations is a table: the name on the command line and whether each rank's share
 * is a block of the buffer (split) or the whole of it. */
struct collective {
  enum op op;
  const char *name;
  int split;
};

static const struct collective kCollectives[] = {
    {OP_ALLREDUCE, "allreduce", 0},           {OP_BCAST, "bcast", 0},
    {OP_ALLGATHER, "allgather", 1},           {OP_REDUCE_SCATTER, "reduce_scatter", 1},
    {OP_ALLTOALL, "alltoall", 1},
};
#define COLLECTIVE_COUNT (sizeof kCollectives / sizeof kCollectives[0])

#define MAX_SIZES 256

struct options {
  const struct collective *coll;
  unsigned long long sizes_bytes[MAX_SIZES];
  int size_count;
  long iters;
  long warmup;
};

/* Messages before MPI_Init come from every rank of the job; only the first speaks. */
static int first_rank(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r) r = getenv("PMI_RANK");
  if (!r) r = getenv("PMIX_RANK");
  return !r || strcmp(r, "0") == 0;
}

static void usage(FILE *f) {
  size_t i;
  fprintf(f,
          "usage: acceltune-mpi-client --op OP --sizes BYTES[,BYTES...] [--iters N] [--warmup N]\n"
          "  OP: ");
  for (i = 0; i < COLLECTIVE_COUNT; ++i) fprintf(f, "%s%s", i ? ", " : "", kCollectives[i].name);
  fprintf(f,
          "\n  sizes are per-rank buffer bytes (K, M, G suffixes: powers of 1024); --iters timed calls per\n"
          "  size (default 200), --warmup untimed calls before them (default 20)\n");
}

static int bad_usage(const char *what, const char *value) {
  if (first_rank()) {
    fprintf(stderr, "acceltune-mpi-client: %s%s%s%s\n", what, value ? " '" : "", value ? value : "", value ? "'" : "");
    usage(stderr);
  }
  return 2;
}

/* A whole non-negative number, with an optional K/M/G suffix (powers of 1024). */
static int parse_count(const char *text, int allow_suffix, unsigned long long *out) {
  char *end = NULL;
  unsigned long long v;
  if (!text || !*text || *text == '-' || *text == '+') return 0;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return 0;
  if (allow_suffix && *end) {
    unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift == 0 || (v >> (64 - shift)) != 0) return 0;
    v <<= shift;
    ++end;
  }
  if (*end) return 0;
  *out = v;
  return 1;
}

/* Returns 0 when the arguments are good, else the exit code (2, or -1 for --help). */
static int parse_args(int argc, char **argv, struct options *o) {
  int i;
  memset(o, 0, sizeof *o);
  o->iters = 200;
  o->warmup = 20;
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long n = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (first_rank()) usage(stdout);
      return -1;
    }
    if (strcmp(a, "--op") != 0 && strcmp(a, "--sizes") != 0 && strcmp(a, "--iters") != 0 &&
        strcmp(a, "--warmup") != 0) {
      return bad_usage("unknown argument", a);
    }
    if (!v) return bad_usage("missing value after", a);
    ++i;
    if (strcmp(a, "--op") == 0) {
      size_t k;
      o->coll = NULL;
      for (k = 0; k < COLLECTIVE_COUNT; ++k) {
        if (strcmp(v, kCollectives[k].name) == 0) o->coll = &kCollectives[k];
      }
      if (!o->coll) return bad_usage("--op: not a collective of this client", v);
    } else if (strcmp(a, "--sizes") == 0) {
      const char *at = v;
      o->size_count = 0;
      for (;;) {
        const char *comma = strchr(at, ',');
        const size_t len = comma ? (size_t)(comma - at) : strlen(at);
        char tok[32];
        if (len >= sizeof tok) return bad_usage("--sizes: a size is too long in", v);
        memcpy(tok, at, len);
        tok[len] = '\0';
        /* A count of floats must fit MPI's int count. */
        if (!parse_count(tok, 1, &n) || n == 0 || n / sizeof(float) > (unsigned long long)INT_MAX) {
          return bad_usage("--sizes: each size must be a whole number of bytes from 1 to 8 GiB, not", tok);
        }
        if (o->size_count == MAX_SIZES) return bad_usage("--sizes: too many sizes (256 at most)", NULL);
        o->sizes_bytes[o->size_count++] = n;
        if (!comma) break;
        at = comma + 1;
      }
      if (o->size_count == 0) return bad_usage("--sizes: no size in", v);
    } else if (strcmp(a, "--iters") == 0) {
      if (!parse_count(v, 0, &n) || n < 1 || n > 10000000) return bad_usage("--iters: a whole number from 1 is needed, not", v);
      o->iters = (long)n;
    } else {
      if (!parse_count(v, 0, &n) || n > 10000000) return bad_usage("--warmup: a whole number from 0 is needed, not", v);
      o->warmup = (long)n;
    }
  }
  if (!o->coll) return bad_usage("--op is required", NULL);
  if (o->size_count == 0) return bad_usage("--sizes is required", NULL);
  return 0;
}

/* The value rank r contributes at index i: never zero, small integers so float sums are exact
 * (the same as the mpi-coll kernel's). */
static float input_value(int r, size_t i) { return (float)(1 + r + (int)(i % 13)); }

/* The buffers of one size, laid out as the mpi-coll kernel lays them out. */
struct buffers {
  float *send, *recv;
  int *counts;
  size_t send_len, recv_len, block;
  int count;
};

static int make_buffers(const struct collective *c, unsigned long long bytes, int rank, int ranks, struct buffers *b) {
  size_t elements = (size_t)(bytes / sizeof(float));
  size_t total, i;
  if (elements == 0) elements = 1;
  b->block = c->split ? elements / (size_t)ranks : elements;
  if (b->block == 0) b->block = 1;
  total = c->split ? b->block * (size_t)ranks : elements;
  b->send_len = c->op == OP_ALLGATHER ? b->block : total;
  b->recv_len = c->op == OP_REDUCE_SCATTER ? b->block : total;
  b->count = (int)(c->split ? b->block : elements);
  b->send = malloc(b->send_len * sizeof(float));
  b->recv = malloc(b->recv_len * sizeof(float));
  b->counts = malloc((size_t)ranks * sizeof(int));
  if (!b->send || !b->recv || !b->counts) return 0;
  /* First touched here, before any timing. */
  for (i = 0; i < b->send_len; ++i) b->send[i] = input_value(rank, i);
  for (i = 0; i < b->recv_len; ++i) b->recv[i] = 0.0f;
  if (c->op == OP_BCAST && rank == 0) memcpy(b->recv, b->send, b->recv_len * sizeof(float));
  for (i = 0; i < (size_t)ranks; ++i) b->counts[i] = (int)b->block;
  return 1;
}

static void free_buffers(struct buffers *b) {
  free(b->send);
  free(b->recv);
  free(b->counts);
}

static int call(const struct collective *c, struct buffers *b) {
  switch (c->op) {
    case OP_ALLREDUCE: return MPI_Allreduce(b->send, b->recv, b->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case OP_BCAST: return MPI_Bcast(b->recv, b->count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    case OP_ALLGATHER:
      return MPI_Allgather(b->send, b->count, MPI_FLOAT, b->recv, b->count, MPI_FLOAT, MPI_COMM_WORLD);
    /* MPI_Reduce_scatter, not _block: coll/tuned's reduce_scatter algorithm and rules apply to it. */
    case OP_REDUCE_SCATTER: return MPI_Reduce_scatter(b->send, b->recv, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case OP_ALLTOALL: return MPI_Alltoall(b->send, b->count, MPI_FLOAT, b->recv, b->count, MPI_FLOAT, MPI_COMM_WORLD);
  }
  return MPI_ERR_OTHER;
}

/* The first element of the last call's result that differs from the expected one, or -1. */
static long long first_wrong(const struct collective *c, const struct buffers *b, int rank, int ranks, float *got,
                             float *want_out) {
  const float base = (float)(ranks + ranks * (ranks - 1) / 2);
  size_t i;
  for (i = 0; i < b->recv_len; ++i) {
    float want = 0;
    switch (c->op) {
      case OP_ALLREDUCE: want = base + (float)(ranks * (int)(i % 13)); break;
      case OP_BCAST: want = input_value(0, i); break;
      case OP_ALLGATHER: want = input_value((int)(i / b->block), i % b->block); break;
      case OP_REDUCE_SCATTER: want = base + (float)(ranks * (int)(((size_t)rank * b->block + i) % 13)); break;
      case OP_ALLTOALL: want = input_value((int)(i / b->block), (size_t)rank * b->block + i % b->block); break;
    }
    if (b->recv[i] != want) {
      *got = b->recv[i];
      *want_out = want;
      return (long long)i;
    }
  }
  return -1;
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Linear interpolation between the closest ranks of sorted values (q in [0, 1]). */
static double quantile(const double *sorted, long n, double q) {
  const double at = q * (double)(n - 1);
  const long lo = (long)at;
  const long hi = lo + 1 < n ? lo + 1 : lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - (double)lo);
}

int main(int argc, char **argv) {
  struct options o;
  int rank = 0, ranks = 1, s, rc = 0;
  double *times_seconds, *slowest_seconds;
  const int parsed = parse_args(argc, argv, &o);
  if (parsed != 0) return parsed < 0 ? 0 : parsed;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  times_seconds = malloc((size_t)o.iters * sizeof(double));
  slowest_seconds = malloc((size_t)o.iters * sizeof(double));
  if (!times_seconds || !slowest_seconds) {
    fprintf(stderr, "acceltune-mpi-client: rank %d: out of memory for %ld timings\n", rank, o.iters);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  for (s = 0; s < o.size_count && rc == 0; ++s) {
    const unsigned long long bytes = o.sizes_bytes[s];
    struct buffers b;
    long i;
    long long wrong;
    int any_wrong = 0;
    float got = 0, want = 0;
    if (!make_buffers(o.coll, bytes, rank, ranks, &b)) {
      fprintf(stderr, "acceltune-mpi-client: rank %d: out of memory for %s of %llu bytes\n", rank, o.coll->name, bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < o.warmup; ++i) call(o.coll, &b);
    for (i = 0; i < o.iters; ++i) {
      double t0;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      call(o.coll, &b);
      times_seconds[i] = MPI_Wtime() - t0;
    }
    /* Outside the timed calls: the last result must be the expected one on every rank. */
    wrong = first_wrong(o.coll, &b, rank, ranks, &got, &want);
    if (wrong >= 0) {
      fprintf(stderr, "acceltune-mpi-client: rank %d: %s of %llu bytes gave a wrong result at element %lld: %g instead of %g\n",
              rank, o.coll->name, bytes, wrong, (double)got, (double)want);
    }
    any_wrong = wrong >= 0;
    MPI_Allreduce(MPI_IN_PLACE, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* A call's time is the slowest rank's: the collective is done when the last rank is. */
    MPI_Reduce(times_seconds, slowest_seconds, (int)o.iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    free_buffers(&b);
    if (any_wrong) {
      rc = 1;
      break;
    }
    if (rank == 0) {
      qsort(slowest_seconds, (size_t)o.iters, sizeof(double), compare_doubles);
      printf("size=%llu median_seconds=%.9g p10_seconds=%.9g p90_seconds=%.9g\n", bytes,
             quantile(slowest_seconds, o.iters, 0.5), quantile(slowest_seconds, o.iters, 0.1),
             quantile(slowest_seconds, o.iters, 0.9));
      fflush(stdout);
    }
  }
  free(times_seconds);
  free(slowest_seconds);
  MPI_Finalize();
  return rc;
}
