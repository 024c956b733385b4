/* The floor under any 1 kHz sampler on this machine: a loop that only sleeps
 * to absolute CLOCK_MONOTONIC deadlines (timer slack 1 ns) and stamps its
 * wake-ups, reading nothing. Prints the same figures as xtk-log counters
 * --json: p99 |interval - period| in ns and CPU in % of one core.
 *
 *   cc -O2 -o sleep_floor sleep_floor.c && ./sleep_floor SECONDS [fifo]
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  const long long x = *(const long long*)a, y = *(const long long*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const long long period = 1000000, samples = (argc > 1 ? atoll(argv[1]) : 10) * 1000;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (argc > 2) {
    struct sched_param p = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) perror("SCHED_FIFO");
  }
  long long* errors = malloc(sizeof(long long) * samples);
  long long deadline = now_ns(), previous = 0, n = 0;
  for (long long i = 0; i < samples; ++i) {
    struct timespec t = {deadline / 1000000000LL, deadline % 1000000000LL};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    const long long woke = now_ns();
    if (previous > 0) errors[n++] = llabs(woke - previous - period);
    previous = woke;
    deadline += period;
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  const double cpu_us = u.ru_utime.tv_sec * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_sec * 1e6 + u.ru_stime.tv_usec;
  qsort(errors, (size_t)n, sizeof(long long), by_value);
  printf("{\"error_p99_ns\": %lld, \"cpu_percent\": %.3f}\n", errors[(n * 99) / 100], cpu_us / (samples * 1e3) * 100);
  free(errors);
  return 0;
}
