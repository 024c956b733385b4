"""The iterations file for a training script that xtk-run launches.

xtk-run (`[training] command = "..."`) starts the script once per rank with
torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)
and these:

  XTK_ITERATIONS_FILE  where this rank writes its iterations (docs/run-directory.md)
  XTK_ITERATIONS       iterations to record
  XTK_WARMUP           iterations to run first, unrecorded
  XTK_START_AT         Unix seconds: the first recorded iteration starts then,
                       together with every other rank (absent: at once)
  XTK_MODEL, XTK_BACKEND  the config's model profile and backend

Use:

    log = IterationLog()                      # reads the environment
    for i in range(log.warmup):
        train_step()
    log.wait_for_start()
    for i in range(log.iterations):
        with log.iteration():
            train_step()                      # end it with the GPU synchronised
    log.close()

The file is the one xtk-collective writes: a header, then one row per
iteration, flushed at least every second so a killed run keeps its rows.
"""

import contextlib
import os
import time

COLUMNS = "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes"


class IterationLog:
    def __init__(self, path=None, rank=None, ranks=None, header=None):
        env = os.environ
        self.path = path or env.get("XTK_ITERATIONS_FILE", "iterations.csv")
        self.rank = int(env.get("RANK", "0")) if rank is None else rank
        self.ranks = int(env.get("WORLD_SIZE", "1")) if ranks is None else ranks
        self.iterations = int(env.get("XTK_ITERATIONS", "20"))
        self.warmup = int(env.get("XTK_WARMUP", "1"))
        self.start_at = float(env["XTK_START_AT"]) if env.get("XTK_START_AT") else None
        fields = {"generator": "xtk_iterations.py", "model": env.get("XTK_MODEL", "script"),
                  "ranks": str(self.ranks), "backend": env.get("XTK_BACKEND", "")}
        fields.update(header or {})
        self._file = open(self.path, "w", encoding="ascii")
        self._file.write("# xtk-iterations\n# format_version=1\n")
        for key, value in fields.items():
            if value:
                self._file.write(f"# {key}={value}\n")
        self._file.write(COLUMNS + "\n")
        self._next = 0
        self._flushed = time.monotonic()

    def wait_for_start(self):
        """Sleeps until XTK_START_AT; fails if the warm-up outlasted it."""
        if self.start_at is None:
            return
        late = time.time() - self.start_at
        if late > 0:
            raise RuntimeError(f"XTK_START_AT is {late:.3f} s in the past after the warm-up: "
                               "run fewer warm-up iterations or start the script sooner")
        time.sleep(-late)

    def record(self, start_ns, end_ns, iter_us, comm_us=0.0, sent_bytes=0):
        """One iteration: CLOCK_REALTIME start and end, its duration on a monotonic clock."""
        self._file.write(f"{self.rank},{self._next},{start_ns},{end_ns},{iter_us:.1f},{comm_us:.1f},{sent_bytes}\n")
        self._next += 1
        if time.monotonic() - self._flushed >= 1.0:
            self._file.flush()
            self._flushed = time.monotonic()

    @contextlib.contextmanager
    def iteration(self):
        start_ns, t0 = time.time_ns(), time.monotonic_ns()
        yield
        t1, end_ns = time.monotonic_ns(), time.time_ns()
        self.record(start_ns, end_ns, (t1 - t0) / 1e3)

    def close(self):
        self._file.close()
