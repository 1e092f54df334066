/* acceltune-tcp-client: a plain request/response TCP timer, the job that `acceltune verify` starts
 * between two network namespaces to measure a tcp-stream study's export the way a user's job
 * would meet it (the MTU, tcp_wmem/tcp_rmem and congestion control reach it only through the
 * namespaces' settings, never through acceltune). It knows nothing of acceltune: plain C, POSIX
 * sockets, one line per size on stdout. It sets nothing on its sockets that changes how they
 * perform (no SO_SNDBUF/SO_RCVBUF, no TCP_NODELAY): the kernel's defaults and autotuning decide.
 *
 *   acceltune-tcp-client serve --bind ADDR --port P [--idle-seconds S]
 *   acceltune-tcp-client send --to ADDR --port P --sizes N1,N2,... [--seconds X] [--congestion NAME]
 *
 * Protocol: every connection begins with the size N as 8 bytes in network order. N == 0 asks the
 * server to quit (it closes and exits 0). Otherwise the connection is a series of runs, the
 * tcp-stream kernel's unit (kernels/tcp/tcp_stream.cpp): the sender writes N bytes, the server
 * reads all N and answers 1 byte, again, until the sender closes at a run's boundary. The server
 * serves connections one after the other and exits 1 when none comes for S seconds (default 5).
 * Byte i of a run is (i*131+7) & 0xff; the server compares the first run of each connection.
 *
 * The sender, per size: a fresh connection (ECONNREFUSED retried for 3 s while the server starts),
 * warm-up runs (at least 2 and at least 0.05 s), then samples of k consecutive runs, k chosen from
 * the warm-up so a sample takes about 10 ms, until X seconds (default 0.3) and at least 5 samples.
 * A run writes the whole remainder of its N bytes to send() at each call (MSG_DONTWAIT, waiting
 * in poll() while the socket buffer is full, the same wait a blocking send makes but with a
 * deadline), then reads the answer. For each size it prints
 *
 *   size=<N> median_seconds=<median over samples of seconds per run> mean_seconds=<mean> runs=<R>
 *
 * and after the last size it sends N == 0 so the server exits. --congestion NAME sets
 * TCP_CONGESTION on the sender's sockets: a stand-in for a host's default congestion control
 * (net.ipv4.tcp_congestion_control), which a network namespace may refuse to take when the host
 * does not allow that algorithm (net.ipv4.tcp_allowed_congestion_control); root may still set any
 * available one per socket, which is what the default would give it.
 * No socket I/O waits forever: a run (or a header, or an answer) gets 30 s at most. Exit codes:
 * 0 success, 1 a network failure or wrong bytes (one line on stderr naming the step and the
 * size), 2 bad arguments. */
#define _DEFAULT_SOURCE /* TCP_CONGESTION, MSG_DONTWAIT beside POSIX.1-2008 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 256
#define MAX_SIZE_BYTES (1ull << 32)
#define IO_TIMEOUT_SECONDS 30.0
#define CONNECT_SECONDS 3.0
#define WARMUP_SECONDS 0.05
#define WARMUP_MIN_RUNS 2
#define SAMPLE_SECONDS 0.01
#define MIN_SAMPLES 5
#define READ_CHUNK (128u << 10)

static const char *kProg = "acceltune-tcp-client";

struct options {
  int serve, port;
  const char *addr;
  double idle_seconds, seconds;
  const char *congestion;
  unsigned long long sizes[MAX_SIZES];
  int size_count;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s serve --bind ADDR --port P [--idle-seconds S]\n"
          "       %s send --to ADDR --port P --sizes BYTES[,BYTES...] [--seconds X] [--congestion NAME]\n"
          "  serve: answer runs of N bytes with 1 byte; exit 0 on a connection that asks N = 0, 1 when none\n"
          "         comes for S seconds (default 5)\n"
          "  send:  time runs of each size (bytes, 1 to 4 GiB) for about X seconds (default 0.3); one line\n"
          "         per size: size=N median_seconds=T mean_seconds=M runs=R\n",
          kProg, kProg);
}

static int bad_usage(const char *what, const char *value) {
  fprintf(stderr, "%s: %s%s%s%s\n", kProg, what, value ? " '" : "", value ? value : "", value ? "'" : "");
  usage(stderr);
  return 2;
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Milliseconds left until `deadline` for poll(), at least 0. */
static int ms_left(double deadline) {
  const double left = deadline - now_seconds();
  if (left <= 0) return 0;
  if (left > 1e6) return 1000000000;
  return (int)(left * 1000.0) + 1;
}

/* Waits until `fd` is ready for `events` (POLLIN, POLLOUT) or `deadline` passes. 0 when ready,
 * else -1 with errno (ETIMEDOUT past the deadline). */
static int wait_ready(int fd, short events, double deadline) {
  struct pollfd p;
  int r;
  p.fd = fd;
  p.events = events;
  p.revents = 0;
  do r = poll(&p, 1, ms_left(deadline));
  while (r < 0 && errno == EINTR);
  if (r == 0) errno = ETIMEDOUT;
  return r > 0 ? 0 : -1;
}

/* A whole number without sign or suffix. */
static int parse_whole(const char *text, unsigned long long *out) {
  char *end = NULL;
  unsigned long long v;
  if (!text || *text < '0' || *text > '9') return 0;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (errno != 0 || *end) return 0;
  *out = v;
  return 1;
}

static int parse_seconds(const char *text, double lo, double hi, double *out) {
  char *end = NULL;
  double v;
  if (!text || !*text) return 0;
  errno = 0;
  v = strtod(text, &end);
  if (errno != 0 || *end || !(v >= lo && v <= hi)) return 0;
  *out = v;
  return 1;
}

/* Returns 0 when the arguments are good, else the exit code (2, or -1 for --help). */
static int parse_args(int argc, char **argv, struct options *o) {
  int i;
  memset(o, 0, sizeof *o);
  o->idle_seconds = 5;
  o->seconds = 0.3;
  o->port = -1;
  if (argc < 2) return bad_usage("a mode is needed: serve or send", NULL);
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return -1;
  }
  if (strcmp(argv[1], "serve") == 0) o->serve = 1;
  else if (strcmp(argv[1], "send") != 0) return bad_usage("unknown mode (serve or send)", argv[1]);
  for (i = 2; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long n = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return -1;
    }
    if (strcmp(a, "--port") != 0 &&
        (o->serve ? strcmp(a, "--bind") != 0 && strcmp(a, "--idle-seconds") != 0
                  : strcmp(a, "--to") != 0 && strcmp(a, "--sizes") != 0 && strcmp(a, "--seconds") != 0 &&
                        strcmp(a, "--congestion") != 0)) {
      return bad_usage(o->serve ? "unknown argument of serve" : "unknown argument of send", a);
    }
    if (!v) return bad_usage("missing value after", a);
    ++i;
    if (strcmp(a, "--bind") == 0 || strcmp(a, "--to") == 0) {
      struct in_addr probe;
      if (inet_pton(AF_INET, v, &probe) != 1) return bad_usage("an IPv4 address is needed, not", v);
      o->addr = v;
    } else if (strcmp(a, "--port") == 0) {
      if (!parse_whole(v, &n) || n < 1 || n > 65535) {
        return bad_usage("--port: a port from 1 to 65535 is needed, not", v);
      }
      o->port = (int)n;
    } else if (strcmp(a, "--idle-seconds") == 0) {
      if (!parse_seconds(v, 0.001, 86400, &o->idle_seconds)) {
        return bad_usage("--idle-seconds: a number of seconds above 0 is needed, not", v);
      }
    } else if (strcmp(a, "--seconds") == 0) {
      if (!parse_seconds(v, 0, 3600, &o->seconds)) {
        return bad_usage("--seconds: a number from 0 to 3600 is needed, not", v);
      }
    } else if (strcmp(a, "--congestion") == 0) {
      if (!*v || strlen(v) >= 16) return bad_usage("--congestion: a congestion control name is needed, not", v);
      o->congestion = v;
    } else {
      const char *at = v;
      o->size_count = 0;
      for (;;) {
        const char *comma = strchr(at, ',');
        const size_t len = comma ? (size_t)(comma - at) : strlen(at);
        char tok[32];
        if (len >= sizeof tok) return bad_usage("--sizes: a size is too long in", v);
        memcpy(tok, at, len);
        tok[len] = '\0';
        if (!parse_whole(tok, &n) || n == 0 || n > MAX_SIZE_BYTES) {
          return bad_usage("--sizes: each size must be a whole number of bytes from 1 to 4294967296, not", tok);
        }
        if (o->size_count == MAX_SIZES) return bad_usage("--sizes: too many sizes (256 at most)", NULL);
        o->sizes[o->size_count++] = n;
        if (!comma) break;
        at = comma + 1;
      }
    }
  }
  if (!o->addr) return bad_usage(o->serve ? "--bind is required" : "--to is required", NULL);
  if (o->port < 0) return bad_usage("--port is required", NULL);
  if (!o->serve && o->size_count == 0) return bad_usage("--sizes is required", NULL);
  return 0;
}

/* Byte i of every run. */
static unsigned char pattern_at(unsigned long long i) { return (unsigned char)((i * 131u + 7u) & 0xffu); }

/* One failure: the step, the size (0: none) and the reason, on one line. */
static int fail(const char *step, unsigned long long size, const char *why) {
  if (size) fprintf(stderr, "%s: %s (size %llu): %s\n", kProg, step, size, why);
  else fprintf(stderr, "%s: %s: %s\n", kProg, step, why);
  return 1;
}

/* Reads exactly `len` bytes by `deadline`. Returns len, 0 when the peer closed before the first
 * byte, or -1 with errno (ETIMEDOUT past the deadline, ECONNRESET for a close in the middle). */
static long long read_exactly(int fd, void *buf, size_t len, double deadline) {
  size_t got = 0;
  while (got < len) {
    ssize_t n;
    if (wait_ready(fd, POLLIN, deadline) != 0) return -1;
    n = recv(fd, (char *)buf + got, len - got, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return -1;
    if (n == 0) {
      if (got == 0) return 0;
      errno = ECONNRESET;
      return -1;
    }
    got += (size_t)n;
  }
  return (long long)got;
}

/* Writes all `len` bytes by `deadline`: each call offers the whole remainder. 0, or -1 with errno. */
static int write_all(int fd, const void *buf, size_t len, double deadline) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_ready(fd, POLLOUT, deadline) != 0) return -1;
      continue;
    }
    if (n == 0) errno = EIO;
    return -1;
  }
  return 0;
}

static void encode_size(unsigned long long n, unsigned char out[8]) {
  int i;
  for (i = 7; i >= 0; --i) {
    out[i] = (unsigned char)(n & 0xffu);
    n >>= 8;
  }
}

static unsigned long long decode_size(const unsigned char in[8]) {
  unsigned long long n = 0;
  int i;
  for (i = 0; i < 8; ++i) n = (n << 8) | in[i];
  return n;
}

static int make_address(const struct options *o, struct sockaddr_in *sa) {
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)o->port);
  return inet_pton(AF_INET, o->addr, &sa->sin_addr) == 1;
}

/* ---------------- serve ---------------- */
/* One connection of size `size`: runs until the peer closes at a run's boundary. 0 or 1. */
static int serve_runs(int fd, unsigned long long size, unsigned char *buf) {
  unsigned long long run;
  const unsigned char one = 1;
  for (run = 0;; ++run) {
    unsigned long long got = 0;
    const double deadline = now_seconds() + IO_TIMEOUT_SECONDS;
    while (got < size) {
      const unsigned long long left = size - got;
      const int ready = wait_ready(fd, POLLIN, deadline) == 0;
      const ssize_t n = ready ? recv(fd, buf, left < READ_CHUNK ? (size_t)left : READ_CHUNK, 0) : -1;
      if (n < 0 && ready && (errno == EINTR || errno == EAGAIN)) continue;
      if (n == 0 && got == 0) return 0; /* the sender is done with this size */
      if (n <= 0) {
        char why[160];
        snprintf(why, sizeof why, "after %llu of %llu bytes of run %llu: %s", got, size, run,
                 n == 0 ? "the sender closed the connection" : strerror(errno));
        return fail("serve: reading a run", size, why);
      }
      if (run == 0) {
        ssize_t i;
        for (i = 0; i < n; ++i) {
          const unsigned long long at = got + (unsigned long long)i;
          if (buf[i] != pattern_at(at)) {
            char why[160];
            snprintf(why, sizeof why, "wrong byte at offset %llu of the first run: %u instead of %u", at,
                     (unsigned)buf[i], (unsigned)pattern_at(at));
            return fail("serve: checking the bytes", size, why);
          }
        }
      }
      got += (unsigned long long)n;
    }
    if (write_all(fd, &one, 1, now_seconds() + IO_TIMEOUT_SECONDS) != 0) {
      return fail("serve: answering a run", size, strerror(errno));
    }
  }
}

static int serve(const struct options *o) {
  struct sockaddr_in sa;
  const int on = 1;
  unsigned char *buf;
  int lfd, rc = 1;
  if (!make_address(o, &sa)) return fail("serve: address", 0, o->addr);
  buf = malloc(READ_CHUNK);
  if (!buf) return fail("serve", 0, "out of memory");
  lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) {
    free(buf);
    return fail("serve: socket", 0, strerror(errno));
  }
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 16) != 0) {
    char why[160];
    snprintf(why, sizeof why, "%s:%d: %s", o->addr, o->port, strerror(errno));
    close(lfd);
    free(buf);
    return fail("serve: listening", 0, why);
  }
  for (;;) {
    unsigned char header[8];
    unsigned long long size;
    long long n;
    int r, fd;
    const int waited = wait_ready(lfd, POLLIN, now_seconds() + o->idle_seconds);
    if (waited != 0 && errno != ETIMEDOUT) {
      rc = fail("serve: waiting for a connection", 0, strerror(errno));
      break;
    }
    if (waited != 0) {
      char why[96];
      snprintf(why, sizeof why, "no connection came for %g s", o->idle_seconds);
      rc = fail("serve: waiting for a connection", 0, why);
      break;
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      rc = fail("serve: accepting", 0, strerror(errno));
      break;
    }
    n = read_exactly(fd, header, sizeof header, now_seconds() + IO_TIMEOUT_SECONDS);
    if (n != (long long)sizeof header) {
      rc = fail("serve: reading the size", 0, n == 0 ? "the sender closed before sending it" : strerror(errno));
      close(fd);
      break;
    }
    size = decode_size(header);
    if (size == 0) {
      close(fd);
      rc = 0;
      break;
    }
    if (size > MAX_SIZE_BYTES) {
      rc = fail("serve: reading the size", size, "larger than 4 GiB");
      close(fd);
      break;
    }
    r = serve_runs(fd, size, buf);
    close(fd);
    if (r != 0) break;
  }
  close(lfd);
  free(buf);
  return rc;
}

/* ---------------- send ---------------- */

/* A connected socket, or -1 after one line on stderr. ECONNREFUSED is retried for
 * CONNECT_SECONDS while the server starts. */
static int connect_to(const struct options *o, unsigned long long size, const char *step) {
  struct sockaddr_in sa;
  const double until = now_seconds() + CONNECT_SECONDS;
  if (!make_address(o, &sa)) {
    fail(step, size, "bad address");
    return -1;
  }
  for (;;) {
    int err = 0, fd, flags;
    socklen_t len = sizeof err;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      fail(step, size, strerror(errno));
      return -1;
    }
    if (o->congestion &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->congestion, (socklen_t)strlen(o->congestion)) != 0) {
      char why[160];
      snprintf(why, sizeof why, "TCP_CONGESTION '%s': %s", o->congestion, strerror(errno));
      close(fd);
      fail(step, size, why);
      return -1;
    }
    /* Non-blocking only while connecting, so the wait has a deadline. */
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const double deadline = until > now_seconds() + 0.5 ? until : now_seconds() + 0.5;
        if (wait_ready(fd, POLLOUT, deadline) != 0) err = errno;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      fcntl(fd, F_SETFL, flags);
      return fd;
    }
    close(fd);
    if (err == ECONNREFUSED && now_seconds() < until) {
      const struct timespec pause = {0, 20 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    {
      char why[200];
      snprintf(why, sizeof why, "%s:%d: %s", o->addr, o->port, strerror(err));
      fail(step, size, why);
    }
    return -1;
  }
}

/* One run: all `size` bytes out, the 1-byte answer in. 0, or 1 after one line on stderr. */
static int one_run(int fd, const unsigned char *buf, unsigned long long size) {
  unsigned char answer;
  long long n;
  const double deadline = now_seconds() + IO_TIMEOUT_SECONDS;
  if (write_all(fd, buf, (size_t)size, deadline) != 0) return fail("send: writing a run", size, strerror(errno));
  n = read_exactly(fd, &answer, 1, deadline);
  if (n != 1) {
    return fail("send: reading the answer", size, n == 0 ? "the server closed the connection" : strerror(errno));
  }
  return 0;
}

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One size over a fresh connection: warm-up, samples, its line on stdout. 0 or 1. */
static int time_size(const struct options *o, unsigned long long size) {
  unsigned char header[8];
  unsigned char *buf;
  double *samples = NULL;
  long sample_count = 0, sample_cap = 0, warm_runs = 0;
  long long k, timed_runs = 0;
  unsigned long long i;
  double t0, per_run, start, timed = 0;
  int fd, rc = 1;
  buf = malloc((size_t)size);
  if (!buf) return fail("send: allocating the buffer", size, strerror(ENOMEM));
  for (i = 0; i < size; ++i) buf[i] = pattern_at(i); /* first touched here, before any timing */
  fd = connect_to(o, size, "send: connecting");
  if (fd < 0) {
    free(buf);
    return 1;
  }
  encode_size(size, header);
  if (write_all(fd, header, sizeof header, now_seconds() + IO_TIMEOUT_SECONDS) != 0) {
    fail("send: writing the size", size, strerror(errno));
    goto done;
  }
  t0 = now_seconds();
  do {
    if (one_run(fd, buf, size) != 0) goto done;
    ++warm_runs;
  } while (warm_runs < WARMUP_MIN_RUNS || now_seconds() - t0 < WARMUP_SECONDS);
  per_run = (now_seconds() - t0) / (double)warm_runs;
  k = (long long)(SAMPLE_SECONDS / (per_run > 1e-9 ? per_run : 1e-9) + 0.5);
  if (k < 1) k = 1;

  start = now_seconds();
  while (sample_count < MIN_SAMPLES || now_seconds() - start < o->seconds) {
    long long r;
    double a;
    if (sample_count == sample_cap) {
      double *grown;
      sample_cap = sample_cap ? 2 * sample_cap : 64;
      grown = realloc(samples, (size_t)sample_cap * sizeof *samples);
      if (!grown) {
        fail("send: keeping the samples", size, strerror(ENOMEM));
        goto done;
      }
      samples = grown;
    }
    a = now_seconds();
    for (r = 0; r < k; ++r) {
      if (one_run(fd, buf, size) != 0) goto done;
    }
    samples[sample_count++] = (now_seconds() - a) / (double)k;
    timed += samples[sample_count - 1] * (double)k;
    timed_runs += k;
  }
  printf("size=%llu median_seconds=%.9g mean_seconds=%.9g runs=%lld\n", size, median_of(samples, sample_count),
         timed / (double)timed_runs, timed_runs);
  fflush(stdout);
  rc = 0;
done:
  close(fd);
  free(samples);
  free(buf);
  return rc;
}

/* The last connection: N == 0, then wait for the server to close. */
static int send_quit(const struct options *o) {
  unsigned char header[8], byte;
  long long n;
  int fd = connect_to(o, 0, "send: connecting to stop the server");
  if (fd < 0) return 1;
  encode_size(0, header);
  if (write_all(fd, header, sizeof header, now_seconds() + IO_TIMEOUT_SECONDS) != 0) {
    close(fd);
    return fail("send: asking the server to stop", 0, strerror(errno));
  }
  n = read_exactly(fd, &byte, 1, now_seconds() + IO_TIMEOUT_SECONDS);
  close(fd);
  if (n != 0) return fail("send: waiting for the server to stop", 0, n < 0 ? strerror(errno) : "it answered");
  return 0;
}

int main(int argc, char **argv) {
  struct options o;
  int s;
  const int parsed = parse_args(argc, argv, &o);
  if (parsed != 0) return parsed < 0 ? 0 : parsed;
  /* A peer that goes away is an error of the step, not a signal that kills us. */
  signal(SIGPIPE, SIG_IGN);
  if (o.serve) return serve(&o);
  for (s = 0; s < o.size_count; ++s) {
    if (time_size(&o, o.sizes[s]) != 0) return 1;
  }
  return send_quit(&o);
}
