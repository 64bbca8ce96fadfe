/* The pod sandbox's process: holds the pod's namespaces, reaps orphans, exits on SIGINT/SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void on_stop(int sig) { _exit(sig == SIGTERM ? 0 : 1); }
static void on_child(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction stop = {.sa_handler = on_stop}, child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &stop, NULL); sigaction(SIGTERM, &stop, NULL); sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
