// sse_swarm: a native load client for browserd's event streams, so that the client is not what
// limits the measurement. One thread (or SWARM_THREADS) runs the watchers on an epoll set (non-blocking sockets,
// HTTP/1.1 chunked or plain bodies parsed incrementally, no allocation per event); another thread
// mutates at a fixed rate over one keep-alive connection and stamps each acknowledgement. Both stamp
// with CLOCK_MONOTONIC, so latency = a mutation's acknowledgement -> its event at the last watcher.
//
// Mutation i sets the title "bench-<i>" on tabs[i % T]; watcher w watches windows[w % W] (tab k is
// in window k). Output: one JSON object on stdout (latencies in ms, deliveries, client CPU).
//
// Build: cc -O2 -pthread -o sse_swarm bench/sse_swarm.c
// Usage: sse_swarm PORT WATCHERS RATE SECONDS WINDOWS(comma list) TABS(comma list) [IDLE_SECONDS]
//   SWARM_THREADS=N: N watcher threads, each with its own epoll set and share of the watchers.
//   RATE 0: watchers only (connect, wait IDLE_SECONDS, report; for memory per idle watcher).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MARK "\"title\":\"bench-"
#define MARK_LEN (sizeof(MARK) - 1)

static int port;
static int watcher_count;
static double rate;
static double seconds;
static char **windows;
static int window_count;
static char **tabs;
static int tab_count;
static double idle_seconds = 2;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int split(char *list, char ***out) {
    int n = 1;
    for (char *p = list; *p; p++) n += *p == ',';
    *out = calloc(n, sizeof(char *));
    int i = 0;
    for (char *save = NULL, *part = strtok_r(list, ",", &save); part; part = strtok_r(NULL, ",", &save)) (*out)[i++] = part;
    return i;
}

static int connect_to(int nonblocking) {
    int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) { perror("socket"); exit(2); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0 && errno != EINPROGRESS) { perror("connect"); exit(2); }
    return fd;
}

// ---- marks: per mutation, its acknowledgement and the arrivals -------------------------------------
static int mark_count;
static double *acked;             // ms, 0 = not yet
static _Atomic int *arrived;      // watchers that saw it
static double *last_arrival;      // latest arrival (merged from the lanes at the end)
// Every delivery (mark, arrival), for the per-delivery latency once every acknowledgement is known.
struct delivery { int mark; double t; };
static struct delivery *delivered_log;
static long long delivered_capacity;

// ---- watchers -------------------------------------------------------------------------------------
enum phase { SENDING, HEAD, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, PLAIN };

struct watcher {
    int fd;
    enum phase phase;
    int chunked;
    long chunk_left;
    int started;      // the snapshot arrived
    int last;         // last mark seen
    char head[2048];
    int head_len;
    char carry[48];   // the end of the previous body piece (a mark split between reads)
    int carry_len;
    int request_sent;
    char request[512];
    int request_len;
    int lane;
};

static struct watcher *all;
static _Atomic int ready_count;
static _Atomic int finished;
static long long bytes_read;
static long long deliveries;

// A lane: one watcher thread with its own epoll set, its share of the watchers (w % lanes), and its
// own tallies (merged at the end). SWARM_THREADS sets how many (default 1).
struct lane {
    int index;
    double *last_arrival;
    struct delivery *log;
    long long capacity, deliveries, bytes_read;
};
static int lane_count = 1;
static struct lane *lanes;

static void record(struct watcher *w, int mark, double t) {
    if (mark <= w->last || mark >= mark_count) return;
    w->last = mark;
    atomic_fetch_add(&arrived[mark], 1);
    struct lane *l = &lanes[w->lane];
    if (t > l->last_arrival[mark]) l->last_arrival[mark] = t;
    if (l->deliveries < l->capacity) l->log[l->deliveries] = (struct delivery){mark, t};
    l->deliveries++;
}

// Scans body bytes for marks; a mark split across pieces is found through the carried tail.
static void body(struct watcher *w, const char *data, long length, double t) {
    if (!w->started) {
        w->started = 1;
        atomic_fetch_add(&ready_count, 1);
    }
    char joined[48 + 4096];
    long offset = 0;
    while (offset < length) {
        long take = length - offset > 4096 ? 4096 : length - offset;
        memcpy(joined, w->carry, w->carry_len);
        memcpy(joined + w->carry_len, data + offset, take);
        long total = w->carry_len + take;
        const char *p = joined, *end = joined + total;
        while ((p = memmem(p, end - p, MARK, MARK_LEN)) != NULL) {
            const char *digits = p + MARK_LEN;
            const char *q = digits;
            int value = 0;
            while (q < end && *q >= '0' && *q <= '9') value = value * 10 + (*q++ - '0');
            if (q == end) break; // incomplete: carried
            if (*q == '"' && q > digits) record(w, value, t);
            p = q;
        }
        long keep = total < 40 ? total : 40;
        memmove(w->carry, joined + total - keep, keep);
        w->carry_len = (int)keep;
        offset += take;
    }
}

static int parse(struct watcher *w, char *data, long length, double t) {
    long i = 0;
    while (i < length) {
        switch (w->phase) {
        case SENDING:
        case HEAD: {
            while (i < length && w->head_len < (int)sizeof w->head - 1) {
                w->head[w->head_len++] = data[i++];
                if (w->head_len >= 4 && memcmp(w->head + w->head_len - 4, "\r\n\r\n", 4) == 0) {
                    w->head[w->head_len] = 0;
                    if (strncmp(w->head, "HTTP/1.1 200", 12) != 0 && strncmp(w->head, "HTTP/1.0 200", 12) != 0) {
                        fprintf(stderr, "sse_swarm: stream answered: %.60s\n", w->head);
                        return -1;
                    }
                    w->chunked = strcasestr(w->head, "transfer-encoding: chunked") != NULL;
                    w->phase = w->chunked ? CHUNK_SIZE : PLAIN;
                    w->chunk_left = 0;
                    w->head_len = 0;
                    break;
                }
            }
            if (w->head_len >= (int)sizeof w->head - 1) return -1;
            break;
        }
        case CHUNK_SIZE:
            while (i < length) {
                char c = data[i++];
                if (c == '\n') {
                    w->phase = w->chunk_left == 0 ? CHUNK_END : CHUNK_DATA;
                    if (w->chunk_left == 0) return -1; // the stream ended
                    break;
                }
                if (c >= '0' && c <= '9') w->chunk_left = w->chunk_left * 16 + (c - '0');
                else if (c >= 'a' && c <= 'f') w->chunk_left = w->chunk_left * 16 + (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F') w->chunk_left = w->chunk_left * 16 + (c - 'A' + 10);
            }
            break;
        case CHUNK_DATA: {
            long take = length - i < w->chunk_left ? length - i : w->chunk_left;
            body(w, data + i, take, t);
            i += take;
            w->chunk_left -= take;
            if (w->chunk_left == 0) w->phase = CHUNK_END;
            break;
        }
        case CHUNK_END: // the CRLF after a chunk's data
            while (i < length) {
                if (data[i++] == '\n') {
                    w->phase = CHUNK_SIZE;
                    w->chunk_left = 0;
                    break;
                }
            }
            break;
        case PLAIN:
            body(w, data + i, length - i, t);
            i = length;
            break;
        }
    }
    return 0;
}

static void *watch(void *arg) {
    struct lane *lane = arg;
    int ep = epoll_create1(0);
    // Connect in waves so the server's listen backlog is not overrun.
    int connected = lane->index;
    struct epoll_event events[1024];
    char *buffer = malloc(1 << 16);
    while (!atomic_load(&finished)) {
        while (connected < watcher_count && connected - atomic_load(&ready_count) < 256) {
            struct watcher *w = &all[connected];
            w->fd = connect_to(1);
            w->lane = lane->index;
            w->last = -1;
            w->phase = SENDING;
            w->request_len = snprintf(w->request, sizeof w->request,
                                      "GET /v1/browsers/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
                                      windows[connected % window_count]);
            struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.ptr = w};
            epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &e);
            connected += lane_count;
        }
        int n = epoll_wait(ep, events, 1024, 50);
        double t = now_ms();
        for (int k = 0; k < n; k++) {
            struct watcher *w = events[k].data.ptr;
            if (w->phase == SENDING && (events[k].events & EPOLLOUT)) {
                ssize_t sent = send(w->fd, w->request + w->request_sent, w->request_len - w->request_sent, MSG_NOSIGNAL);
                if (sent > 0) w->request_sent += (int)sent;
                if (w->request_sent == w->request_len) {
                    w->phase = HEAD;
                    struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = w};
                    epoll_ctl(ep, EPOLL_CTL_MOD, w->fd, &e);
                }
            }
            if (events[k].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    ssize_t got = recv(w->fd, buffer, 1 << 16, 0);
                    if (got > 0) {
                        lane->bytes_read += got;
                        if (parse(w, buffer, got, t) < 0) {
                            epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                            close(w->fd);
                            w->fd = -1;
                            break;
                        }
                        if (got < (ssize_t)(1 << 16)) break;
                        continue;
                    }
                    if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                        epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                        close(w->fd);
                        w->fd = -1;
                    }
                    break;
                }
            }
        }
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// ---- the mutator ----------------------------------------------------------------------------------
static int mutator_fd;
static char reply[1 << 16];

// Sends one request on the keep-alive connection and reads its answer; returns the status.
static int exchange(const char *method, const char *path, const char *json) {
    char request[1024];
    int length = snprintf(request, sizeof request,
                          "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                          method, path, strlen(json), json);
    if (send(mutator_fd, request, length, MSG_NOSIGNAL) != length) { perror("send"); exit(2); }
    long have = 0, need = -1;
    int status = 0;
    for (;;) {
        ssize_t got = recv(mutator_fd, reply + have, sizeof reply - have - 1, 0);
        if (got <= 0) { fprintf(stderr, "sse_swarm: the mutator's connection closed\n"); exit(2); }
        have += got;
        reply[have] = 0;
        char *end = strstr(reply, "\r\n\r\n");
        if (!end) continue;
        if (need < 0) {
            status = atoi(reply + 9);
            char *cl = strcasestr(reply, "content-length:");
            need = (end - reply) + 4 + (cl && cl < end ? atol(cl + 15) : 0);
        }
        if (have >= need) break;
    }
    return status;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: sse_swarm PORT WATCHERS RATE SECONDS WINDOWS TABS [IDLE_SECONDS]\n");
        return 2;
    }
    port = atoi(argv[1]);
    watcher_count = atoi(argv[2]);
    rate = atof(argv[3]);
    seconds = atof(argv[4]);
    window_count = split(argv[5], &windows);
    tab_count = split(argv[6], &tabs);
    if (argc > 7) idle_seconds = atof(argv[7]);
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);

    mark_count = (int)(rate * seconds);
    acked = calloc(mark_count + 1, sizeof *acked);
    arrived = calloc(mark_count + 1, sizeof *arrived);
    last_arrival = calloc(mark_count + 1, sizeof *last_arrival);
    delivered_capacity = (long long)mark_count * watcher_count;
    if (delivered_capacity > 50000000) delivered_capacity = 50000000;
    delivered_log = malloc((delivered_capacity + 1) * sizeof *delivered_log);
    if (getenv("SWARM_THREADS")) lane_count = atoi(getenv("SWARM_THREADS")) > 0 ? atoi(getenv("SWARM_THREADS")) : 1;
    lanes = calloc(lane_count, sizeof *lanes);
    all = calloc(watcher_count, sizeof *all);
    for (int i = 0; i < lane_count; i++) {
        lanes[i].index = i;
        lanes[i].last_arrival = calloc(mark_count + 1, sizeof(double));
        lanes[i].capacity = delivered_capacity / lane_count + 1;
        lanes[i].log = malloc((lanes[i].capacity + 1) * sizeof(struct delivery));
    }

    double t0 = now_ms();
    pthread_t *threads = calloc(lane_count, sizeof *threads);
    for (int i = 0; i < lane_count; i++) pthread_create(&threads[i], NULL, watch, &lanes[i]);
    while (atomic_load(&ready_count) < watcher_count) {
        usleep(10000);
        if (now_ms() - t0 > 180000) {
            fprintf(stderr, "sse_swarm: only %d of %d watchers started\n", atomic_load(&ready_count), watcher_count);
            return 1;
        }
    }
    double connect_s = (now_ms() - t0) / 1e3;
    // Idle: the server's memory per watcher is read now by the caller (it waits for this line).
    printf("{\"ready\": %d, \"connect_s\": %.2f}\n", watcher_count, connect_s);
    fflush(stdout);
    usleep((useconds_t)(idle_seconds * 1e6));

    double cpu0 = cpu_ms(), wall0 = now_ms();
    int failures = 0;
    if (mark_count > 0) {
        mutator_fd = connect_to(0);
        char path[256], json[64];
        double interval = 1000.0 / rate, begin = now_ms();
        for (int i = 0; i < mark_count; i++) {
            double target = begin + i * interval, wait = target - now_ms();
            if (wait > 0) usleep((useconds_t)(wait * 1000));
            snprintf(path, sizeof path, "/v1/tabs/%s", tabs[i % tab_count]);
            snprintf(json, sizeof json, "{\"title\":\"bench-%d\"}", i);
            if (exchange("PATCH", path, json) != 200) failures++;
            acked[i] = now_ms();
        }
        // Let the last events arrive (every watcher of the last mutations' windows).
        double deadline = now_ms() + 10000;
        int expected_last = watcher_count / (window_count < watcher_count ? window_count : watcher_count);
        while (now_ms() < deadline) {
            int done = 1;
            for (int i = mark_count - tab_count > 0 ? mark_count - tab_count : 0; i < mark_count; i++) {
                if (atomic_load(&arrived[i]) < expected_last) done = 0;
            }
            if (done) break;
            usleep(5000);
        }
        usleep(200000);
    }
    double wall = now_ms() - wall0, cpu = cpu_ms() - cpu0;
    atomic_store(&finished, 1);
    for (int i = 0; i < lane_count; i++) pthread_join(threads[i], NULL);
    // Merge the lanes.
    for (int i = 0; i < lane_count; i++) {
        for (int m = 0; m < mark_count; m++) {
            if (lanes[i].last_arrival[m] > last_arrival[m]) last_arrival[m] = lanes[i].last_arrival[m];
        }
        long long kept = lanes[i].deliveries < lanes[i].capacity ? lanes[i].deliveries : lanes[i].capacity;
        for (long long k = 0; k < kept && deliveries < delivered_capacity; k++) delivered_log[deliveries++] = lanes[i].log[k];
        bytes_read += lanes[i].bytes_read;
    }
    {
        long long total = 0;
        for (int i = 0; i < lane_count; i++) total += lanes[i].deliveries;
        deliveries = total;
    }

    // Per mutation: the last watcher's arrival minus the acknowledgement (0 when it came first).
    double *latency = calloc(mark_count + 1, sizeof *latency);
    int complete = 0;
    long long expected = 0;
    for (int i = 0; i < mark_count; i++) {
        int watchers_of_window = 0;
        for (int w = 0; w < watcher_count; w++) watchers_of_window += (w % window_count) == (i % tab_count) % window_count;
        expected += watchers_of_window;
        if (arrived[i] == watchers_of_window && watchers_of_window > 0) {
            double d = last_arrival[i] - acked[i];
            latency[complete++] = d < 0 ? 0 : d;
        }
    }
    qsort(latency, complete, sizeof *latency, by_value);
    double p50 = complete ? latency[complete / 2] : -1;
    double p99 = complete ? latency[(int)(complete * 0.99) < complete ? (int)(complete * 0.99) : complete - 1] : -1;
    double max = complete ? latency[complete - 1] : -1;
    // Each delivery's own latency (acknowledgement -> this watcher; 0 when it came first).
    long long logged = 0;
    for (int i = 0; i < lane_count; i++) logged += lanes[i].deliveries < lanes[i].capacity ? lanes[i].deliveries : lanes[i].capacity;
    if (logged > delivered_capacity) logged = delivered_capacity;
    double *each = malloc((logged + 1) * sizeof *each);
    for (long long k = 0; k < logged; k++) {
        double d = delivered_log[k].t - acked[delivered_log[k].mark];
        each[k] = d < 0 ? 0 : d;
    }
    qsort(each, logged, sizeof *each, by_value);
    double delivery_p50 = logged ? each[logged / 2] : -1;
    double delivery_p99 = logged ? each[(long long)(logged * 0.99)] : -1;
    printf("{\"watchers\": %d, \"windows\": %d, \"rate\": %.0f, \"mutations\": %d, \"failed_mutations\": %d, "
           "\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"max_ms\": %.2f, \"complete_mutations\": %d, "
           "\"delivered\": %lld, \"expected\": %lld, \"delivery_p50_ms\": %.2f, \"delivery_p99_ms\": %.2f, "
           "\"client_cpu_pct\": %.1f, \"seconds\": %.2f, \"bytes_read\": %lld, \"connect_s\": %.2f}\n",
           watcher_count, window_count, rate, mark_count, failures, p50, p99, max, complete, deliveries, expected,
           delivery_p50, delivery_p99, wall > 0 ? cpu / wall * 100 : 0, wall / 1e3, bytes_read, connect_s);
    return 0;
}
