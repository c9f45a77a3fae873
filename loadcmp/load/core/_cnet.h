/* A numeric address and port as the sockaddr that connect() and bind() take (_cloop.pyx). */
#ifndef LOADCMP_CNET_H
#define LOADCMP_CNET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* 1 when `host` is a numeric address of `family`, as inet_pton says; `sa` is then filled in. */
static int addr_set(struct sockaddr_storage *sa, int family, const char *host, int port, int scope) {
    memset(sa, 0, sizeof(*sa));
    if (family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)sa;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        a6->sin6_scope_id = (uint32_t)scope;
        return inet_pton(AF_INET6, host, &a6->sin6_addr);
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)sa;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &a4->sin_addr);
}

#endif
