#define _GNU_SOURCE
#include "renderer_support.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

int browserd_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : -errno;
}

static pid_t spawn_devtools(const char *path, char *const argv[], char *const envp[], int command_read,
                            int event_write, int log_fd) {
    // The child's ends move to descriptors >= 10 first, so that neither dup2 below can overwrite the
    // other's source (a pipe end may itself be fd 3 or 4). The copies are close-on-exec: the dup2s
    // make the child's 3 and 4 without it.
    int high_read = fcntl(command_read, F_DUPFD_CLOEXEC, 10);
    if (high_read < 0) return -errno;
    int high_write = fcntl(event_write, F_DUPFD_CLOEXEC, 10);
    if (high_write < 0) {
        int error = errno;
        close(high_read);
        return -error;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (log_fd >= 0) {
        posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
        posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
    }
    posix_spawn_file_actions_adddup2(&actions, high_read, 3);
    posix_spawn_file_actions_adddup2(&actions, high_write, 4);
    // Nothing else of this process reaches the browser: not a descriptor some library left without
    // close-on-exec (a server's sockets held open by the browser would outlive their close here).
    posix_spawn_file_actions_addclosefrom_np(&actions, 5);
    // Its own process group (killpg ends the browser and every helper it started), no blocked
    // signals, and default dispositions for those a parent may ignore.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGHUP);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    int status = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(high_read);
    close(high_write);
    return status == 0 ? pid : -status;
}

struct spawn_call {
    const char *path;
    char *const *argv;
    char *const *envp;
    int command_read, event_write, log_fd, niceness;
    pid_t result;
};

// On a thread of its own: raises that thread's niceness (Linux keeps it per thread, and a child
// inherits its parent thread's), then spawns. An unprivileged thread cannot lower it again, which is
// why it is not the caller's.
static void *spawn_niced(void *argument) {
    struct spawn_call *call = argument;
    errno = 0;
    int now = getpriority(PRIO_PROCESS, 0);
    if (now == -1 && errno != 0) {
        call->result = -errno;
        return NULL;
    }
    if (setpriority(PRIO_PROCESS, 0, now + call->niceness) != 0) {
        call->result = -errno;
        return NULL;
    }
    // Chromium sets its threads' niceness itself (0 for most, -8 for display ones): allowed only with
    // CAP_SYS_NICE, which a browser run as root would have. Out of this thread's bounding set, its
    // child never gets it, and no thread of Chromium's runs less nice than it started. (Unprivileged,
    // the call fails and nothing needs it: an unprivileged process cannot lower its niceness.)
    (void)prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0);
    call->result = spawn_devtools(call->path, call->argv, call->envp, call->command_read, call->event_write, call->log_fd);
    return NULL;
}

pid_t browserd_spawn_devtools(const char *path, char *const argv[], char *const envp[], int command_read,
                              int event_write, int log_fd, int niceness) {
    if (niceness <= 0) return spawn_devtools(path, argv, envp, command_read, event_write, log_fd);
    struct spawn_call call = {path, argv, envp, command_read, event_write, log_fd, niceness, -EINVAL};
    pthread_t thread;
    int status = pthread_create(&thread, NULL, spawn_niced, &call);
    if (status != 0) return -status;
    pthread_join(thread, NULL);
    return call.result;
}
