# The C declarations of the compiled loop (_cloop.pyx): Linux sockets and epoll,
# the response reader in _chttp.h, and the state of one client.

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    struct sockaddr:
        unsigned short sa_family
    struct sockaddr_storage:
        unsigned short ss_family
    int socket(int, int, int)
    int connect(int, const sockaddr *, socklen_t)
    int bind(int, const sockaddr *, socklen_t)
    ssize_t send(int, const void *, size_t, int)
    ssize_t recv(int, void *, size_t, int)
    int getsockopt(int, int, int, void *, socklen_t *)
    int setsockopt(int, int, int, const void *, socklen_t)
    enum: AF_INET, AF_INET6, SOCK_STREAM, SOCK_NONBLOCK, SOCK_CLOEXEC, SOL_SOCKET, SO_ERROR, MSG_NOSIGNAL

cdef extern from "<netinet/in.h>" nogil:
    struct in_addr:
        uint32_t s_addr
    struct in6_addr:
        pass
    struct sockaddr_in:
        unsigned short sin_family
        uint16_t sin_port
        in_addr sin_addr
    struct sockaddr_in6:
        unsigned short sin6_family
        uint16_t sin6_port
        uint32_t sin6_flowinfo
        in6_addr sin6_addr
        uint32_t sin6_scope_id
    uint16_t htons(uint16_t)

cdef extern from "<netinet/tcp.h>" nogil:
    enum: IPPROTO_TCP, TCP_NODELAY

cdef extern from "_cnet.h" nogil:
    int addr_set(sockaddr_storage *, int, const char *, int, int)

cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        uint64_t u64
    struct epoll_event:
        uint32_t events
        epoll_data_t data
    enum: EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CLOEXEC
    int epoll_create1(int)
    int epoll_ctl(int, int, int, epoll_event *)
    int epoll_wait(int, epoll_event *, int, int)

cdef extern from "_chttp.h" nogil:
    ctypedef struct resp_t:
        int status
        int keepalive
        int nobody
    enum: R_MORE, R_COMPLETE, R_BAD
    void resp_reset(resp_t *, int)
    void resp_free(resp_t *)
    int resp_feed(resp_t *, const char *, size_t)
    int resp_eof(resp_t *)

cdef struct Client:
    int fd, phase, counted
    int req  # the request it sends: an index into the loop's requests (a load of several pages)
    int registered  # the events its fd is watched for (0: not in the epoll set yet)
    uint32_t gen  # in every epoll event's data: an event of a closed socket is ignored
    double t_intended, t_connect, t_up, t_hs, t_sent, t_written, t_first, deadline  # t_hs: the TLS handshake's end
    int64_t nbytes
    resp_t resp
    char *out  # what it sends: the request's bytes, or (traced) its own copy with the header (`CLoop._trace_begin`)
    int64_t out_n
    uint64_t seq  # the request's sequence number in the loop's trial; traced: it carries the header
    int traced, conn_no  # conn_no: its connection's number in the loop
