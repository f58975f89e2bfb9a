/*
 * What the store and boot_env tests share: bounds for their waits, and a
 * free loopback port to point a store at.
 */
#ifndef ZSH_TESTS_UNIT_STORE_HELPERS_H_
#define ZSH_TESTS_UNIT_STORE_HELPERS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* Generous bounds for waits that should succeed; failures show up as errors
 * long before them. */
#define T_OK    5.0
#define T_SHORT 0.3

/* A port nothing listens on now (the kernel's pick for a socket we close). */
static inline int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len         = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if ((bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) &&
        (getsockname(fd, (struct sockaddr *)&sa, &len) == 0)) {
        port = ntohs(sa.sin_port);
    }
    close(fd);
    return port;
}

#endif /* ZSH_TESTS_UNIT_STORE_HELPERS_H_ */
