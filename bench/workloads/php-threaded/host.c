/* host.c — a threaded PHP host: N worker threads, each with its own PHP request context (a ZTS
 * PHP's embed SAPI), running one PHP script per request — the shape of FrankenPHP's workers,
 * NGINX Unit or any threaded C server with PHP inside.
 *
 * usage: host [--workers N] [--script FILE] (--requests K | --wrk SECONDS [--connections C]
 *             | --port P)
 *   --requests K   no HTTP: each worker runs K requests back to back (for tests and profiles)
 *   --wrk S        serve HTTP/1.1 (keep-alive) on an ephemeral port of 127.0.0.1 and load it with
 *                  `wrk -t T -c C -d S --latency` (C connections, default N; T = min(2, C)), then
 *                  stop; wrk runs without LD_PRELOAD or ALLOCSCOPE_* (it is not the program
 *                  being measured) and its report is copied to stdout
 *   --port P       serve HTTP on 127.0.0.1:P until SIGINT or SIGTERM
 *   --script FILE  the PHP script of every request (default: request.php beside this source)
 * Each worker thread calls ts_resource(0) once, then per request php_request_startup(), defines
 * $request_id, runs the script with php_execute_script() (read and compiled every time: no
 * opcache), and php_request_shutdown().  In HTTP mode a worker accepts a connection and serves
 * its requests until the client closes it: C should not exceed N (a connection beyond the
 * workers would wait for one to be free).  The script's output is the response body.
 *
 * Prints the workload's own figures on stdout (service time per request: from request start-up
 * to shutdown, HTTP reading and writing excluded):
 *   requests <n> errors <n> seconds <s> rps <requests/s>
 *   latency_us p50 <x> p90 <x> p99 <x> max <x>
 * A request is an error when PHP fails (a fatal error, an exception) or its output lacks the
 * script's end marker.  Exit status 0 when every request succeeded, 1 otherwise, 2 on bad use. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sapi/embed/php_embed.h>

#ifndef ZTS
#error "the host needs a thread-safe PHP (configure --enable-zts)"
#endif
#ifndef DEFAULT_SCRIPT
#define DEFAULT_SCRIPT "request.php"
#endif
#define END_MARKER "</html>"

extern char** environ;

static int g_workers = 4;
static long g_requests = 0;    /* --requests */
static int g_wrk_seconds = 0;  /* --wrk */
static int g_connections = 0;  /* --connections */
static int g_port = -1;        /* --port */
static const char* g_script = DEFAULT_SCRIPT;
static int g_listen = -1;
static volatile sig_atomic_t g_stop = 0;

/* --- per-thread output buffer: the SAPI's unbuffered write appends to it ------------------- */
struct buffer {
  char* data;
  size_t len, cap;
};
static __thread struct buffer* t_out;

static void buffer_append(struct buffer* b, const char* s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + n) cap *= 2;
    char* p = realloc(b->data, cap);
    if (!p) return;
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static size_t host_ub_write(const char* str, size_t len) {
  if (t_out) buffer_append(t_out, str, len);
  return len;
}

static void host_flush(void* server_context) { (void)server_context; }

/* --- latency samples ------------------------------------------------------------------------ */
struct stats {
  uint64_t* us;
  size_t n, cap;
  uint64_t errors;
};

static void stats_add(struct stats* s, uint64_t us) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4096;
    uint64_t* p = realloc(s->us, cap * sizeof *p);
    if (!p) return;
    s->us = p;
    s->cap = cap;
  }
  s->us[s->n++] = us;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One PHP request; its output lands in `out`.  Returns 0 on success. */
static int run_request(long id, struct buffer* out) {
  out->len = 0;
  t_out = out;
  SG(options) |= SAPI_OPTION_NO_CHDIR;
  if (php_request_startup() == FAILURE) return -1;
  SG(headers_sent) = 1;
  SG(request_info).no_headers = 1;
  int ok = 0;
  zend_first_try {
    char init[64];
    snprintf(init, sizeof init, "$request_id = %ld;", id);
    zend_eval_string(init, NULL, "request id");
    zend_file_handle fh;
    zend_stream_init_filename(&fh, g_script);
    ok = php_execute_script(&fh);
    zend_destroy_file_handle(&fh);
    if (EG(exception)) ok = 0;
  } zend_catch {
    ok = 0;
  } zend_end_try();
  php_request_shutdown(NULL);
  t_out = NULL;
  const size_t m = sizeof END_MARKER - 1;
  int marker = 0;
  for (size_t i = out->len >= m + 8 ? out->len - m - 8 : 0; !marker && i + m <= out->len; i++)
    marker = memcmp(out->data + i, END_MARKER, m) == 0;
  return ok && marker ? 0 : -1;
}

/* --- HTTP ----------------------------------------------------------------------------------- */
static int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int header_says_close(const char* head, size_t len) {
  for (size_t i = 0; i + 17 <= len; i++)
    if (strncasecmp(head + i, "connection: close", 17) == 0) return 1;
  return 0;
}

/* Serves the requests of one connection until the client closes it (or asks to). */
static void serve_connection(int fd, long* next_id, struct buffer* out, struct stats* st) {
  char in[16384];
  size_t have = 0;
  for (;;) {
    char* end = NULL;
    while (!(end = memmem(in, have, "\r\n\r\n", 4))) {
      if (have == sizeof in) return;  /* a header this large is not ours to serve */
      struct pollfd p = {fd, POLLIN, 0};
      int r = poll(&p, 1, 100);
      if (g_stop) return;
      if (r <= 0) continue;
      ssize_t n = recv(fd, in + have, sizeof in - have, 0);
      if (n <= 0) return;
      have += (size_t)n;
    }
    const size_t head = (size_t)(end - in) + 4;
    const int close_after = header_says_close(in, head);
    const uint64_t t0 = now_ns();
    const int failed = run_request((*next_id)++, out);
    stats_add(st, (now_ns() - t0) / 1000);
    char hdr[256];
    int hn;
    if (failed) {
      st->errors++;
      hn = snprintf(hdr, sizeof hdr, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n%s\r\n",
                    close_after ? "Connection: close\r\n" : "");
      if (write_all(fd, hdr, (size_t)hn)) return;
    } else {
      hn = snprintf(hdr, sizeof hdr,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n%s\r\n",
                    out->len, close_after ? "Connection: close\r\n" : "");
      if (write_all(fd, hdr, (size_t)hn) || write_all(fd, out->data, out->len)) return;
    }
    memmove(in, in + head, have - head);  /* a pipelined request may follow */
    have -= head;
    if (close_after) return;
  }
}

struct worker {
  pthread_t thread;
  int index;
  struct stats st;
};

static void* worker_main(void* arg) {
  struct worker* w = arg;
  ts_resource(0); /* this thread's PHP globals */
  struct buffer out = {0};
  long id = (long)w->index * 1000000;
  if (g_requests > 0) {
    for (long i = 0; i < g_requests; i++) {
      const uint64_t t0 = now_ns();
      if (run_request(id++, &out)) w->st.errors++;
      stats_add(&w->st, (now_ns() - t0) / 1000);
    }
  } else {
    while (!g_stop) {
      struct pollfd p = {g_listen, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int fd = accept(g_listen, NULL, NULL);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      serve_connection(fd, &id, &out, &w->st);
      close(fd);
    }
  }
  free(out.data);
  ts_free_thread();
  return NULL;
}

static int cmp_u64(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static uint64_t quantile(const uint64_t* v, size_t n, double q) {
  if (n == 0) return 0;
  size_t i = (size_t)(q * (double)n);
  return v[i >= n ? n - 1 : i];
}

static int open_listener(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) || listen(fd, 128)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int bound_port(int fd) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  return getsockname(fd, (struct sockaddr*)&a, &len) == 0 ? ntohs(a.sin_port) : -1;
}

/* Runs wrk against `port` with an environment free of the recorder's variables; waits for it. */
static int run_wrk(int port) {
  char threads[16], conns[16], secs[16], url[64];
  const int c = g_connections > 0 ? g_connections : g_workers;
  snprintf(threads, sizeof threads, "%d", c < 2 ? c : 2);
  snprintf(conns, sizeof conns, "%d", c);
  snprintf(secs, sizeof secs, "%ds", g_wrk_seconds);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
  char* argv[] = {"wrk", "-t", threads, "-c", conns, "-d", secs, "--latency", url, NULL};
  size_t n = 0;
  for (char** e = environ; *e; e++) n++;
  char** env = calloc(n + 1, sizeof *env);
  size_t k = 0;
  for (char** e = environ; *e; e++)
    if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "ALLOCSCOPE_", 11) && strncmp(*e, "USE_ZEND_ALLOC=", 15))
      env[k++] = *e;
  fflush(stdout);
  pid_t pid;
  int rc = posix_spawnp(&pid, "wrk", NULL, NULL, argv, env);
  free(env);
  if (rc) {
    fprintf(stderr, "host: cannot run wrk: %s (Debian package: wrk)\n", strerror(rc));
    return -1;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int usage(void) {
  fprintf(stderr, "usage: host [--workers N] [--script FILE] (--requests K | --wrk SECONDS [--connections C] | --port P)\n");
  return 2;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--workers") && v) g_workers = atoi(v), i++;
    else if (!strcmp(a, "--requests") && v) g_requests = atol(v), i++;
    else if (!strcmp(a, "--wrk") && v) g_wrk_seconds = atoi(v), i++;
    else if (!strcmp(a, "--connections") && v) g_connections = atoi(v), i++;
    else if (!strcmp(a, "--port") && v) g_port = atoi(v), i++;
    else if (!strcmp(a, "--script") && v) g_script = v, i++;
    else return usage();
  }
  const int modes = (g_requests > 0) + (g_wrk_seconds > 0) + (g_port >= 0);
  if (modes != 1 || g_workers < 1 || g_workers > 1024 || g_connections < 0) return usage();
  if (access(g_script, R_OK)) {
    fprintf(stderr, "host: cannot read the script %s: %s\n", g_script, strerror(errno));
    return 2;
  }
  if (g_requests == 0) {
    g_listen = open_listener(g_wrk_seconds ? 0 : g_port);
    if (g_listen < 0) {
      fprintf(stderr, "host: cannot listen on 127.0.0.1:%d: %s\n", g_wrk_seconds ? 0 : g_port, strerror(errno));
      return 2;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }

  php_embed_module.ub_write = host_ub_write;
  php_embed_module.flush = host_flush;
  char* php_argv[] = {argv[0], NULL};
  if (php_embed_init(1, php_argv) == FAILURE) {
    fprintf(stderr, "host: php_embed_init failed\n");
    return 2;
  }

  struct worker* w = calloc((size_t)g_workers, sizeof *w);
  const uint64_t t0 = now_ns();
  for (int i = 0; i < g_workers; i++) {
    w[i].index = i;
    if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
      fprintf(stderr, "host: cannot start worker %d\n", i);
      return 2;
    }
  }
  int wrk_failed = 0;
  if (g_wrk_seconds) {
    const int port = bound_port(g_listen);
    fprintf(stderr, "host: %d workers on 127.0.0.1:%d; wrk for %d s\n", g_workers, port, g_wrk_seconds);
    wrk_failed = run_wrk(port) != 0;
    g_stop = 1;
  } else if (g_port >= 0) {
    fprintf(stderr, "host: %d workers on 127.0.0.1:%d; SIGINT or SIGTERM stops\n", g_workers, bound_port(g_listen));
    while (!g_stop) usleep(100000);
  }
  for (int i = 0; i < g_workers; i++) pthread_join(w[i].thread, NULL);
  const double seconds = (double)(now_ns() - t0) / 1e9;

  struct stats all = {0};
  for (int i = 0; i < g_workers; i++) {
    for (size_t k = 0; k < w[i].st.n; k++) stats_add(&all, w[i].st.us[k]);
    all.errors += w[i].st.errors;
    free(w[i].st.us);
  }
  free(w);
  qsort(all.us, all.n, sizeof *all.us, cmp_u64);
  printf("requests %zu errors %llu seconds %.3f rps %.1f\n", all.n, (unsigned long long)all.errors, seconds,
         seconds > 0 ? (double)all.n / seconds : 0.0);
  printf("latency_us p50 %llu p90 %llu p99 %llu max %llu\n", (unsigned long long)quantile(all.us, all.n, 0.50),
         (unsigned long long)quantile(all.us, all.n, 0.90), (unsigned long long)quantile(all.us, all.n, 0.99),
         (unsigned long long)(all.n ? all.us[all.n - 1] : 0));
  free(all.us);
  if (g_listen >= 0) close(g_listen);
  php_embed_shutdown();
  return all.errors || wrk_failed ? 1 : 0;
}
