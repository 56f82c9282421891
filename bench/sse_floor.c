// sse_floor: the least any event-stream server could do on this machine, as the baseline of
// bench/sse_swarm.py. It keeps no model and parses just enough HTTP: `GET /v1/browsers/wK/events`
// opens a chunked stream on window K; `PATCH /v1/tabs/tK` with {"title":"bench-N"} answers 200 and
// sends one event of browserd's size (one encoding, one write per watcher) to every watcher of
// window K, on two sender threads (as browserd has two stream loops). Whatever it measures is the
// kernel's and the client's share, which no server can go under.
//
// Build: cc -O2 -pthread -o sse_floor bench/sse_floor.c     Usage: sse_floor PORT EVENT_BYTES
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SENDERS 2
#define MAX_WINDOWS 1024

struct window { int *fds; int count, capacity; };
static struct window windows[MAX_WINDOWS];
static int event_bytes = 540;

// One broadcast at a time: the event and the window, handed to the sender threads.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static char *event;
static int event_length;
static int event_window = -1;
static long generation;
static long finished; // sender passes done, over all generations
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static long long short_writes;

static void *sender(void *arg) {
    long index = (long)arg, seen = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (generation == seen) pthread_cond_wait(&go, &lock);
        seen = generation;
        struct window *w = &windows[event_window];
        int length = event_length;
        char *bytes = event;
        int count = w->count;
        pthread_mutex_unlock(&lock);
        for (int i = (int)index; i < count; i += SENDERS) {
            ssize_t sent = send(w->fds[i], bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (sent != length) __atomic_add_fetch(&short_writes, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_lock(&lock);
        finished++;
        pthread_cond_broadcast(&done);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void broadcast(int window, int mark) {
    static char body[65536], framed[65600];
    pthread_mutex_lock(&lock);
    while (finished < generation * SENDERS) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    int n = snprintf(body, sizeof body, "id: e-%d\nevent: tabs.update\ndata: {\"browserId\":\"w%d\",\"item\":{\"title\":\"bench-%d\",\"pad\":\"", mark, window, mark);
    while (n < event_bytes - 6) body[n++] = 'x';
    n += snprintf(body + n, sizeof body - n, "\"}}\n\n");
    int f = snprintf(framed, sizeof framed, "%x\r\n", n);
    memcpy(framed + f, body, n);
    memcpy(framed + f + n, "\r\n", 2);
    pthread_mutex_lock(&lock);
    // The previous event is out first (its buffer is reused; no sender skips one).
    while (finished < generation * SENDERS) pthread_cond_wait(&done, &lock);
    event = framed;
    event_length = f + n + 2;
    event_window = window;
    generation++;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&lock);
}

struct connection { int fd; char buffer[4096]; int length; };

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: sse_floor PORT [EVENT_BYTES]\n"); return 2; }
    if (argc > 2) event_bytes = atoi(argv[2]);
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 4096) < 0) { perror("listen"); return 1; }
    for (long i = 0; i < SENDERS; i++) { pthread_t t; pthread_create(&t, NULL, sender, (void *)i); }
    int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &e);
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int k = 0; k < n; k++) {
            struct connection *c = events[k].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    c = calloc(1, sizeof *c);
                    c->fd = fd;
                    struct epoll_event ce = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
                }
                continue;
            }
            ssize_t got = recv(c->fd, c->buffer + c->length, sizeof c->buffer - c->length - 1, 0);
            if (got <= 0) { epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); close(c->fd); free(c); continue; }
            c->length += (int)got;
            c->buffer[c->length] = 0;
            char *end = strstr(c->buffer, "\r\n\r\n");
            if (!end) continue;
            int window;
            if (sscanf(c->buffer, "GET /v1/browsers/w%d/events", &window) == 1 && window >= 0 && window < MAX_WINDOWS) {
                const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n: hi\n\n\n\r\n";
                send(c->fd, head, strlen(head), MSG_NOSIGNAL);
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                pthread_mutex_lock(&lock);
                struct window *w = &windows[window];
                if (w->count == w->capacity) {
                    w->capacity = w->capacity ? w->capacity * 2 : 1024;
                    w->fds = realloc(w->fds, w->capacity * sizeof *w->fds);
                }
                w->fds[w->count++] = c->fd;
                pthread_mutex_unlock(&lock);
                free(c);
                continue;
            }
            // PATCH /v1/tabs/tK with a body: wait for the whole body, then broadcast and answer.
            char *cl = strcasestr(c->buffer, "content-length:");
            int body_length = cl ? atoi(cl + 15) : 0;
            if (c->length < (end - c->buffer) + 4 + body_length) continue;
            int tab, mark;
            char *title = strstr(end, "bench-");
            if (sscanf(c->buffer, "PATCH /v1/tabs/t%d", &tab) == 1 && title && sscanf(title, "bench-%d", &mark) == 1 && tab < MAX_WINDOWS) {
                broadcast(tab, mark);
            }
            const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
            send(c->fd, ok, strlen(ok), MSG_NOSIGNAL);
            c->length = 0;
        }
    }
}
