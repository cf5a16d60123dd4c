#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
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
    unsigned int threadPoolSize;
    unsigned int connectionLimit;
    unsigned int perIPConnectionLimit;  /* 0: unlimited */
    unsigned int connectionTimeoutSeconds;
    size_t connectionMemoryLimit;       /* bounds the request line plus headers */
    int strictForClient;                /* 1: reject sloppy HTTP with 400 */
    /* Called with the raw request target (path and query, before decoding) once the request line
       is parsed; its result becomes the request's first `req_cls`. */
    void *(*uriLog)(void *cls, const char *uri, struct MHD_Connection *connection);
    void *uriLogContext;
    /* Called when a connection is accepted and when it is closed (before its socket is closed). */
    MHD_NotifyConnectionCallback notifyConnection;
    void *notifyConnectionContext;
    /* TLS (GnuTLS): PEM certificate chain and private key; both NULL for plain HTTP. */
    const char *tlsCertificate;
    const char *tlsKey;
    const char *tlsPriorities;
} CMicroHTTPD_Options;

static inline struct MHD_Daemon *CMicroHTTPD_start(
    const CMicroHTTPD_Options *o,
    MHD_AccessHandlerCallback handler, void *handlerContext,
    MHD_RequestCompletedCallback completed, void *completedContext)
{
    int tls = o->tlsCertificate != NULL && o->tlsKey != NULL;
    struct MHD_OptionItem items[20];
    int n = 0;
#define CMicroHTTPD_ADD(kind, number, pointer) \
    items[n].option = (kind); items[n].value = (intptr_t) (number); items[n].ptr_value = (void *) (pointer); n++
    CMicroHTTPD_ADD(MHD_OPTION_THREAD_POOL_SIZE, o->threadPoolSize, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_CONNECTION_LIMIT, o->connectionLimit, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->perIPConnectionLimit, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_CONNECTION_TIMEOUT, o->connectionTimeoutSeconds, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connectionMemoryLimit, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_STRICT_FOR_CLIENT, o->strictForClient, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_NOTIFY_COMPLETED, completed, completedContext);
    CMicroHTTPD_ADD(MHD_OPTION_UNESCAPE_CALLBACK, CMicroHTTPD_keepEscaped, NULL);
    CMicroHTTPD_ADD(MHD_OPTION_URI_LOG_CALLBACK, o->uriLog, o->uriLogContext);
    CMicroHTTPD_ADD(MHD_OPTION_NOTIFY_CONNECTION, o->notifyConnection, o->notifyConnectionContext);
    if (tls) {
        CMicroHTTPD_ADD(MHD_OPTION_HTTPS_MEM_CERT, 0, o->tlsCertificate);
        CMicroHTTPD_ADD(MHD_OPTION_HTTPS_MEM_KEY, 0, o->tlsKey);
        if (o->tlsPriorities) { CMicroHTTPD_ADD(MHD_OPTION_HTTPS_PRIORITIES, 0, o->tlsPriorities); }
    }
    CMicroHTTPD_ADD(MHD_OPTION_END, 0, NULL);
#undef CMicroHTTPD_ADD
    unsigned int flags = o->flags | (tls ? MHD_USE_TLS : 0);
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handlerContext,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/// Whether GnuTLS accepts this certificate, key and priority string: a daemon without a listening
/// socket or threads is started with them and stopped again (1: accepted).
static enum MHD_Result CMicroHTTPD_refuse(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                          const char *version, const char *data, size_t *size, void **context) {
    (void) cls; (void) c; (void) url; (void) method; (void) version; (void) data; (void) size; (void) context;
    return MHD_NO;
}

static inline int CMicroHTTPD_checkTLS(const char *certificate, const char *key, const char *priorities) {
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, CMicroHTTPD_refuse, NULL,
        MHD_OPTION_HTTPS_MEM_CERT, certificate, MHD_OPTION_HTTPS_MEM_KEY, key,
        MHD_OPTION_HTTPS_PRIORITIES, priorities, MHD_OPTION_END);
    if (d == NULL) return 0;
    MHD_stop_daemon(d);
    return 1;
}

/// Whether this libmicrohttpd was built with TLS support.
static inline int CMicroHTTPD_tlsSupported(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/// Connections the daemon holds open.
static inline unsigned int CMicroHTTPD_currentConnections(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/// The daemon a connection belongs to, or NULL.
static inline struct MHD_Daemon *CMicroHTTPD_connectionDaemon(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
    return info ? info->daemon : NULL;
}

/// A blocking listening socket bound to `address`, set up as libmicrohttpd sets up its own
/// (address reuse; an IPv6 address without IPv4), or -1 (errno says why). The daemons are
/// started without one (`MHD_USE_NO_LISTEN_SOCKET`) and handed each connection accepted on it.
static inline int CMicroHTTPD_listen(const struct sockaddr *address, socklen_t length, unsigned int backlog) {
#ifdef SOCK_CLOEXEC
    int fd = socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
#else
    int fd = socket(address->sa_family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0
        || (address->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0)
        || bind(fd, address, length) != 0 || listen(fd, (int) backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// The port `fd` is bound to (useful after binding port 0), or 0.
static inline uint16_t CMicroHTTPD_boundPort(int fd) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *) &address, &length) != 0) return 0;
    if (address.ss_family == AF_INET) return ntohs(((struct sockaddr_in *) &address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *) &address)->sin6_port);
    return 0;
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

/// The serving daemons' flags: they never watch a listening socket (`CMicroHTTPD_listen`).
static const unsigned int CMicroHTTPD_flagsEpollPool =
    MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
static const unsigned int CMicroHTTPD_flagsPollPool =
    MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;

#endif
