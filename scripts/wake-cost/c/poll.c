// Modbus TCP FC04 poller: N exchanges per second, evenly spaced, blocking socket.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
int main(int argc, char **argv) {
  int port = atoi(argv[1]), rate = atoi(argv[2]), secs = atoi(argv[3]);
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
  if (connect(fd, (struct sockaddr *)&a, sizeof a)) { perror("connect"); return 1; }
  struct timespec next; clock_gettime(CLOCK_MONOTONIC, &next);
  long step = 1000000000L / rate; unsigned short tid = 0; long n = 0, total = (long)rate * secs;
  unsigned char req[12] = {0,0,0,0,0,6,1,4,0,0,0,9}, rsp[64];
  for (; n < total; n++) {
    next.tv_nsec += step; while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    tid++; req[0] = tid >> 8; req[1] = tid & 0xff;
    if (write(fd, req, 12) != 12) { perror("write"); return 1; }
    int got = 0; while (got < 27) { int r = read(fd, rsp + got, sizeof rsp - got); if (r <= 0) { perror("read"); return 1; } got += r; }
  }
  printf("%ld exchanges\n", n);
  return 0;
}
