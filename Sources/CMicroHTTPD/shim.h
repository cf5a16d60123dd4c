#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Leaves the URL and its query arguments percent-encoded, as sent: libmicrohttpd's own decoding
/// writes `%00` as a NUL that truncates the value and cannot report invalid UTF-8. Swift decodes
/// (HTTPServer's PercentDecoding). `+` in query arguments is still turned into a space before this.
static size_t CMicroHTTPD_keepEscaped(void *cls, struct MHD_Connection *connection, char *s) {
    (void) cls;
    (void) connection;
    return strlen(s);
}

/// Fixed-shape options for MHD_start_daemon, whose variadic signature Swift cannot call.
typedef struct CMicroHTTPD_Options {
    unsigned int flags;
    const struct sockaddr *bindAddress; /* NULL: any address on `port` */
    uint16_t port;
    unsigned int threadPoolSize;
    unsigned int connectionLimit;
    unsigned int perIPConnectionLimit;  /* 0: unlimited */
    unsigned int connectionTimeoutSeconds;
    size_t connectionMemoryLimit;       /* bounds the request line plus headers */
    unsigned int listenBacklog;
    int strictForClient;                /* 1: reject sloppy HTTP with 400 */
    /* Called with the raw request target (path and query, before decoding) once the request line
       is parsed; its result becomes the request's first `req_cls`. */
    void *(*uriLog)(void *cls, const char *uri, struct MHD_Connection *connection);
    void *uriLogContext;
    /* Called when a connection is accepted and when it is closed (before its socket is closed). */
    MHD_NotifyConnectionCallback notifyConnection;
    void *notifyConnectionContext;
} CMicroHTTPD_Options;

static inline struct MHD_Daemon *CMicroHTTPD_start(
    const CMicroHTTPD_Options *o,
    MHD_AccessHandlerCallback handler, void *handlerContext,
    MHD_RequestCompletedCallback completed, void *completedContext)
{
    struct MHD_OptionItem items[] = {
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t) o->threadPoolSize, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, (intptr_t) o->connectionLimit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t) o->perIPConnectionLimit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t) o->connectionTimeoutSeconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) o->connectionMemoryLimit, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, (intptr_t) o->listenBacklog, NULL },
        { MHD_OPTION_STRICT_FOR_CLIENT, (intptr_t) o->strictForClient, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) completed, completedContext },
        { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t) CMicroHTTPD_keepEscaped, NULL },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) o->uriLog, o->uriLogContext },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t) o->notifyConnection, o->notifyConnectionContext },
        { o->bindAddress ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *) o->bindAddress },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(o->flags, o->port, NULL, NULL, handler, handlerContext,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0).
static inline uint16_t CMicroHTTPD_boundPort(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *CMicroHTTPD_clientAddress(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/// Bytes of the request line plus headers of the connection's current request (0 if unknown).
static inline size_t CMicroHTTPD_requestHeaderSize(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info ? info->header_size : 0;
}

/// The pointer stored in `*socket_context` by the connection-notify callback, or NULL.
static inline void *CMicroHTTPD_socketContext(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/// The connection's socket, or -1.
static inline int CMicroHTTPD_socket(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

static const unsigned int CMicroHTTPD_flagsEpollPool =
    MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
static const unsigned int CMicroHTTPD_flagsPollPool =
    MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;

static const unsigned int CMicroHTTPD_flagIPv6 = MHD_USE_IPv6;

#endif
