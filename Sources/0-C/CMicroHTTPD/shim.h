// Thin C shim over libmicrohttpd 0.9.75 for what Swift cannot call or import:
// the variadic MHD_start_daemon and MHD_get_*_info, and macros that expand to casts. (epoll and
// eventfd, for the stream loops, come from CLinuxEvents.)
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/tcp.h>
#include <microhttpd.h>

/// MHD_SIZE_UNKNOWN is `((uint64_t) -1LL)`: a cast macro, not imported.
static const uint64_t CMicroHTTPD_SIZE_UNKNOWN = MHD_SIZE_UNKNOWN;
/// MHD_CONTENT_READER_END_OF_STREAM is `((ssize_t) -1)`: ends a callback response cleanly.
static const ssize_t CMicroHTTPD_CONTENT_READER_END_OF_STREAM = MHD_CONTENT_READER_END_OF_STREAM;
/// MHD_CONTENT_READER_END_WITH_ERROR is `((ssize_t) -2)`: aborts the connection.
static const ssize_t CMicroHTTPD_CONTENT_READER_END_WITH_ERROR = MHD_CONTENT_READER_END_WITH_ERROR;

/// Starts a daemon with an option array: MHD_start_daemon is variadic, so Swift passes
/// every option through MHD_OPTION_ARRAY (terminated by an MHD_OPTION_END item). `accept`
/// decides each new connection (MHD_NO: closed at once).
static inline struct MHD_Daemon *
CMicroHTTPD_start_daemon(unsigned int flags,
                         uint16_t port,
                         MHD_AcceptPolicyCallback accept,
                         void *accept_cls,
                         MHD_AccessHandlerCallback handler,
                         void *handler_cls,
                         struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags, port, accept, accept_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// MHD_get_daemon_info is variadic: the port the daemon is bound to (0 when unknown).
static inline uint16_t CMicroHTTPD_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// MHD_get_connection_info is variadic: the connection's socket (-1 when unknown).
static inline int CMicroHTTPD_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// MHD_get_connection_info is variadic: the socket context set by the connection-notify callback.
static inline void *CMicroHTTPD_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif
