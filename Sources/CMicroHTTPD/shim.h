#ifndef PARLEY_CMICROHTTPD_SHIM_H
#define PARLEY_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* Counts the requests of each connection: a counter allocated when the connection opens, kept
 * as its socket context, freed when it closes. */
static void parley_mhd_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                         enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)connection;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = calloc(1, sizeof(unsigned long));
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        free(*socket_context);
        *socket_context = NULL;
    }
}

/* One more request on `connection`: how many it has carried, this one included (0 if unknown). */
static inline unsigned long parley_mhd_count_request(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == NULL || info->socket_context == NULL) return 0;
    unsigned long *count = (unsigned long *)info->socket_context;
    return ++*count;
}

/* The bind address is only read while MHD_start_daemon runs.
 * Swift cannot call the variadic MHD_start_daemon: this wrapper passes every option through
 * MHD_OPTION_ARRAY. It binds an IPv4 address (network byte order in `address`) and returns NULL
 * on failure (port in use, bad flags). */
static inline struct MHD_Daemon *parley_mhd_start(
    unsigned int flags, uint32_t address, uint16_t port, unsigned int connection_limit,
    unsigned int connection_timeout_seconds, size_t connection_memory_limit,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls)
{
    struct sockaddr_in local;
    memset(&local, 0, sizeof(local));
    local.sin_family = AF_INET;
    local.sin_port = htons(port);
    local.sin_addr.s_addr = address;
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &local},
        {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)parley_mhd_notify_connection, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The port the daemon is bound to (after asking for port 0), or 0. */
static inline uint16_t parley_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* MHD_SIZE_UNKNOWN is a macro of a cast. */
static inline uint64_t parley_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/* MHD_CONTENT_READER_END_OF_STREAM and _WITH_ERROR are macros of casts. */
static inline ssize_t parley_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t parley_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
#endif
