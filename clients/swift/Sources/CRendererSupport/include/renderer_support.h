#ifndef BROWSERD_RENDERER_SUPPORT_H
#define BROWSERD_RENDERER_SUPPORT_H

#include <sys/types.h>

/// A pipe whose two ends are close-on-exec from the start (pipe2 with O_CLOEXEC): no other thread's
/// spawn can inherit them. Returns 0, or -errno.
int browserd_pipe_cloexec(int fds[2]);

/// Spawns `path` (argv and envp NULL-terminated) in a process group of its own, with the DevTools
/// pipe's ends as its fd 3 (`command_read`: it reads commands) and fd 4 (`event_write`: it writes
/// answers and events), stdin from /dev/null and stdout and stderr on `log_fd` (inherited when -1).
/// No other descriptor reaches it (glibc's `addclosefrom_np`). `niceness` > 0: it runs that much
/// nicer than this process (spawned from a thread of its own whose niceness is raised: every thread
/// and process it starts inherits it). Returns the child's pid, or -errno.
pid_t browserd_spawn_devtools(const char *path, char *const argv[], char *const envp[], int command_read,
                              int event_write, int log_fd, int niceness);

#endif
