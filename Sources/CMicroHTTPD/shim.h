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

/* The bind address is only read while MHD_start_daemon runs.
 * Swift cannot call the variadic MHD_start_daemon: this wrapper passes every option through
 * MHD_OPTION_ARRAY. It binds an IPv4 address (network byte order in `address`) and returns NULL
 * on failure (port in use, bad flags). `accept_policy` runs at every accept, after the total and
 * per-address caps; `notify` when a connection starts and when it closes (before its socket is
 * closed). */
static inline struct MHD_Daemon *parley_mhd_start(
    unsigned int flags, uint32_t address, uint16_t port, unsigned int connection_limit,
    unsigned int per_ip_connection_limit, unsigned int connection_timeout_seconds, size_t connection_memory_limit,
    MHD_AcceptPolicyCallback accept_policy, void *accept_policy_cls,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls)
{
    struct sockaddr_in local;
    memset(&local, 0, sizeof(local));
    local.sin_family = AF_INET;
    local.sin_port = htons(port);
    local.sin_addr.s_addr = address;
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &local},
        {MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_cls},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, port, accept_policy, accept_policy_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The port the daemon is bound to (after asking for port 0), or 0. */
static inline uint16_t parley_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* The socket of a connection, or -1. */
static inline int parley_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/* The client's IPv4 address of a connection (network byte order), or 0 when it is not IPv4. */
static inline uint32_t parley_mhd_connection_ipv4(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || info->client_addr->sa_family != AF_INET) return 0;
    return ((const struct sockaddr_in *)info->client_addr)->sin_addr.s_addr;
}

/* The IPv4 address of an accepted peer (network byte order), or 0 when it is not IPv4. */
static inline uint32_t parley_sockaddr_ipv4(const struct sockaddr *address, socklen_t length)
{
    if (address == NULL || length < (socklen_t)sizeof(struct sockaddr_in) || address->sa_family != AF_INET) return 0;
    return ((const struct sockaddr_in *)address)->sin_addr.s_addr;
}

/* MHD_SIZE_UNKNOWN is a macro of a cast. */
static inline uint64_t parley_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/* MHD_CONTENT_READER_END_OF_STREAM and _WITH_ERROR are macros of casts. */
static inline ssize_t parley_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t parley_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
#endif
