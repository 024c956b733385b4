/* The floor under any 1 kHz sampler on this machine: a loop that only sleeps
 * to absolute CLOCK_MONOTONIC deadlines (timer slack 1 ns) and stamps its
 * wake-ups, reading nothing. Prints the same figures as xtk-log counters
 * --json: p99 |interval - period| in ns and CPU in % of one core. The options
 * are those of xtk-log counters, so each sampler row has its floor:
 *
 *   cc -O2 -pthread -o sleep_floor sleep_floor.c
 *   ./sleep_floor SECONDS [--fifo] [--cpu N] [--spin US] [--cpu-wake-latency US]
 *
 * As xtk-log does, a wake latency on a kernel without a cpuidle driver is kept
 * by a SCHED_IDLE thread spinning on the loop's CPU (--cpu, else each CPU it
 * may use); the CPU figure is the loop's own, without them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  const long long x = *(const long long*)a, y = *(const long long*)b;
  return (x > y) - (x < y);
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static void* idle_poll(void* cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)(intptr_t)cpu, &set);
  struct sched_param p = {.sched_priority = 0};
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0 ||
      pthread_setschedparam(pthread_self(), SCHED_IDLE, &p) != 0) {
    die("idle poller");
  }
  for (;;) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return NULL;
}

/* Where idle CPUs halt whatever the request, the CPUs the loop wakes on spin instead. */
static void poll_if_no_cpuidle_driver(void) {
  char driver[64] = "";
  FILE* f = fopen("/sys/devices/system/cpu/cpuidle/current_driver", "r");
  if (f == NULL) return;
  if (fgets(driver, sizeof driver, f) == NULL) driver[0] = 0;
  fclose(f);
  if (strcmp(driver, "none\n") != 0) return;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) die("sched_getaffinity");
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    pthread_t t;
    if (CPU_ISSET(cpu, &set) && pthread_create(&t, NULL, idle_poll, (void*)(intptr_t)cpu) != 0) die("pthread_create");
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SECONDS [--fifo] [--cpu N] [--spin US] [--cpu-wake-latency US]\n", argv[0]);
    return 2;
  }
  const long long period = 1000000, samples = atoll(argv[1]) * 1000;
  long long spin = 0;
  int poll = 0;
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--fifo") == 0) {
      struct sched_param p = {.sched_priority = 50};
      if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) die("SCHED_FIFO");
    } else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(atoi(argv[++i]), &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) die("--cpu");
    } else if (strcmp(argv[i], "--spin") == 0 && i + 1 < argc) {
      spin = atoll(argv[++i]) * 1000;
    } else if (strcmp(argv[i], "--cpu-wake-latency") == 0 && i + 1 < argc) {
      /* Held open until exit: the PM QoS request lasts as long as the file. */
      const int fd = open("/dev/cpu_dma_latency", O_WRONLY);
      const int32_t us = atoi(argv[++i]);
      if (fd < 0 || write(fd, &us, sizeof us) != sizeof us) die("/dev/cpu_dma_latency");
      poll = 1;
    } else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (poll) poll_if_no_cpuidle_driver(); /* after --cpu: its CPU alone */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  long long* errors = malloc(sizeof(long long) * samples);
  long long deadline = now_ns(), previous = 0, n = 0;
  for (long long i = 0; i < samples; ++i) {
    const long long wake = deadline - spin;
    struct timespec t = {wake / 1000000000LL, wake % 1000000000LL};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    long long woke = now_ns();
    while (woke < deadline) woke = now_ns();
    if (previous > 0) errors[n++] = llabs(woke - previous - period);
    previous = woke;
    deadline += period;
  }
  struct timespec own;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &own); /* the loop's thread: no pollers */
  const double cpu_us = own.tv_sec * 1e6 + own.tv_nsec / 1e3;
  qsort(errors, (size_t)n, sizeof(long long), by_value);
  printf("{\"error_p99_ns\": %lld, \"cpu_percent\": %.3f}\n", errors[(n * 99) / 100], cpu_us / (samples * 1e3) * 100);
  free(errors);
  return 0;
}
