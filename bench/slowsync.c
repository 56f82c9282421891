// LD_PRELOAD shim for bench/slow_disk.sh: adds SLOWSYNC_US microseconds to every fsync/fdatasync,
// to show how the group-committing writer behaves on a disk whose flushes cost what real disks'
// do (1–5 ms), beside the same baselines under the same delay. A simulation, not a measurement of
// a real device.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static int delay_us(void) {
    const char *text = getenv("SLOWSYNC_US");
    return text ? atoi(text) : 2000;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    usleep(delay_us());
    return real(fd);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    usleep(delay_us());
    return real(fd);
}
