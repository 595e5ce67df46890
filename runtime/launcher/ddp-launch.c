/*===- ddp-launch.c - main() for a step compiled ahead of time ------------===*
 *
 * Runs a step that `ddp-run --emit-object` compiled, on a machine that has
 * libddprt (with CUDA and NCCL, or MPI only) but no MLIR:
 *
 *   ddp-run step.mlir --emit-object=step.o              # where MLIR is
 *   cc -o step step.o ddp-launch.c -I<ddp>/include \
 *      -L<libddprt dir> -lddprt -Wl,-rpath,<libddprt dir> # where it runs
 *   mpirun -np 2 ./step --backend=cuda --steps=3 --dump-params=params.txt
 *
 * Options: --backend=cpu|cuda|auto (default cpu), --steps=N (default 3),
 * --seed=S (default 1), --trace=FILE, --timeout=SECONDS,
 * --dump-params=FILE (every parameter after the last step, in the format of
 * `ddp-run --dump-params`, so that the two compare with cmp),
 * --gemm=library|fixed-order (default library: GEMMs by cuBLAS on the CUDA
 * backend and OpenBLAS on the CPU one, or the fixed-order kernel, bitwise
 * the same on both; `cublas` is the old name of `library`),
 * --data=integers|bounded|fractions (default integers: the seeded values;
 * bounded: the integers, every GEMM's and stand-in's sums reduced modulo 8,
 * DDPRT_FLAG_BOUNDED_VALUES, as ddp-run --verify runs, with
 * --gemm=fixed-order; fractions use every mantissa bit, for timing,
 * DDPRT_FLAG_FRACTIONAL_DATA),
 * --graph (CUDA backend: the first step runs as it is issued, the second is
 * recorded as one CUDA graph, and every step from the second on is that
 * graph, launched once),
 * --sync=step|end (default step: each step waits for the device before the
 * next is issued; end: steps are issued back to back, as a training loop
 * issues them, and the device is waited for after the second step, which
 * with --graph records the graph, and after the last).
 *
 * Each step's line gives its time, synchronized, and the host's part of it:
 * the time to issue the step (to launch the graph, with --graph). With
 * --sync=end a step's line gives only the time to issue it, and a last line
 * the mean time of a step from the third on (the first two allocate, and
 * with --graph record), from the start of the third to the end of the last.
 *
 *===----------------------------------------------------------------------===*/

#include "ddp/Runtime/ddp_program.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank = 0;

/* Prints the runtime's message and ends this rank; mpirun then ends the
 * others. */
static void check(ddprt_context *context, ddprt_status status,
                  const char *what) {
  if (status == DDPRT_OK)
    return;
  fprintf(stderr, "ddp-launch: error: rank %d: %s failed: %s\n", rank, what,
          ddprt_last_error(context));
  exit(1);
}

static void usage(const char *program, const char *bad) {
  fprintf(stderr,
          "ddp-launch: error: unknown argument '%s'\n"
          "usage: %s [--backend=cpu|cuda|auto] [--steps=N] [--seed=S] "
          "[--trace=FILE] [--timeout=SECONDS] [--dump-params=FILE] "
          "[--gemm=library|fixed-order] [--data=integers|bounded|fractions] "
          "[--graph] [--sync=step|end]\n",
          bad, program);
  exit(2);
}

/* The value of `--name=value` in `arg`, or NULL. */
static const char *option(const char *arg, const char *name) {
  size_t length = strlen(name);
  if (strncmp(arg, name, length) == 0 && arg[length] == '=')
    return arg + length + 1;
  return NULL;
}

/* Parses all of `value` as a number from `min` to `max`; else ends the
 * launcher with an error that names the option and its range. strtoull
 * alone would take "2abc" as 2, "" as 0, and "-1" as 2^64 - 1. Base 0, as
 * ddp-run (llvm::cl) reads its numbers: "0x10" and "020" are 16 there too,
 * so that the same options run the same steps with the same seed. */
static unsigned long long parseNumber(const char *name, const char *value,
                                      unsigned long long min,
                                      unsigned long long max) {
  char *end = NULL;
  errno = 0;
  unsigned long long number = 0;
  /* strtoull skips white space and takes a sign: only digits are a number. */
  int valid = value[0] >= '0' && value[0] <= '9';
  if (valid) {
    number = strtoull(value, &end, 0);
    valid = *end == '\0' && errno != ERANGE && number >= min && number <= max;
  }
  if (!valid) {
    fprintf(stderr,
            "ddp-launch: error: %s must be a whole number from %llu to %llu, "
            "got '%s'\n",
            name, min, max, value);
    exit(2);
  }
  return number;
}

static const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case DDPRT_DTYPE_F16:
    return "f16";
  case DDPRT_DTYPE_BF16:
    return "bf16";
  case DDPRT_DTYPE_F32:
    return "f32";
  default:
    return "f64";
  }
}

static int64_t elementBytes(int32_t dtype) {
  return dtype == DDPRT_DTYPE_F16 || dtype == DDPRT_DTYPE_BF16 ? 2
         : dtype == DDPRT_DTYPE_F32                            ? 4
                                                               : 8;
}

/* Writes `name` so that the line stays one line of four fields: a
 * backslash as \\, a byte up to the space or DEL as \xhh, the rest as it is
 * (docs/ddp-run.md#options). ddp-run's RuntimeSession::dumpParams writes the
 * same bytes. */
static void writeEscapedName(FILE *file, const char *name) {
  for (const unsigned char *byte = (const unsigned char *)name; *byte; ++byte) {
    if (*byte == '\\')
      fputs("\\\\", file);
    else if (*byte <= ' ' || *byte == 0x7f)
      fprintf(file, "\\x%02x", *byte);
    else
      fputc(*byte, file);
  }
}

/* Every rank calls it: a parameter stored sharded is gathered whole (a
 * collective over its group); rank 0 writes. */
static void dumpParams(ddprt_context *context, const char *path, int rank) {
  FILE *file = rank == 0 ? fopen(path, "w") : NULL;
  if (rank == 0 && !file) {
    fprintf(stderr, "ddp-launch: error: cannot write '%s': %s\n", path,
            strerror(errno));
    exit(1);
  }
  int32_t count = 0;
  check(context, ddprt_param_count(context, &count), "ddprt_param_count");
  for (int32_t param = 0; param < count; ++param) {
    const char *name = NULL;
    int32_t dtype = 0;
    int64_t numel = 0;
    check(context, ddprt_param_info(context, param, &name, &dtype, &numel),
          "ddprt_param_info");
    int64_t bytes = numel * elementBytes(dtype);
    unsigned char *host = malloc(bytes ? bytes : 1);
    check(context, ddprt_param_gather(context, param, host, bytes),
          "ddprt_param_gather");
    if (!file) {
      free(host);
      continue;
    }
    writeEscapedName(file, name);
    fprintf(file, " %s %lld ", dtypeName(dtype), (long long)numel);
    for (int64_t i = 0; i < bytes; ++i)
      fprintf(file, "%02x", host[i]);
    fputc('\n', file);
    free(host);
  }
  if (!file)
    return;
  /* A full disk may show only now: the writes above went to stdio's
   * buffer. */
  int error = 0;
  errno = 0;
  if (fflush(file) != 0 || ferror(file))
    error = errno ? errno : EIO;
  if (fclose(file) != 0 && !error)
    error = errno;
  if (error) {
    fprintf(stderr, "ddp-launch: error: cannot write '%s': %s\n", path,
            strerror(error));
    exit(1);
  }
}

/* An option of two values, `on` and `off`, that sets or clears `flag`; any
 * other value is a usage error. */
static void setFlag(int32_t *flags, int32_t flag, const char *value,
                    const char *on, const char *off, const char *program,
                    const char *arg) {
  if (strcmp(value, on) == 0)
    *flags |= flag;
  else if (strcmp(value, off) == 0)
    *flags &= ~flag;
  else
    usage(program, arg);
}

static double now(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return time.tv_sec + time.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int32_t backend = DDPRT_BACKEND_CPU;
  long steps = 3;
  unsigned long long seed = 1;
  long timeoutSeconds = 0;
  const char *tracePath = NULL;
  const char *dumpPath = NULL;
  int32_t flags = DDPRT_FLAG_RETURN_ERRORS;
  int useGraph = 0;
  int32_t syncEachStep = 1; /* --sync=step, as a flag for setFlag */
  for (int i = 1; i < argc; ++i) {
    const char *value;
    if ((value = option(argv[i], "--backend"))) {
      if (strcmp(value, "cpu") == 0)
        backend = DDPRT_BACKEND_CPU;
      else if (strcmp(value, "cuda") == 0)
        backend = DDPRT_BACKEND_CUDA;
      else if (strcmp(value, "auto") == 0)
        backend = DDPRT_BACKEND_AUTO;
      else
        usage(argv[0], argv[i]);
    } else if ((value = option(argv[i], "--steps"))) {
      /* As ddp-run's --steps, an int. */
      steps = (long)parseNumber("--steps", value, 1, INT32_MAX);
    } else if ((value = option(argv[i], "--seed"))) {
      seed = parseNumber("--seed", value, 0, UINT64_MAX);
    } else if ((value = option(argv[i], "--timeout"))) {
      /* The runtime takes milliseconds in an int32_t. */
      char *end = NULL;
      errno = 0;
      timeoutSeconds = strtol(value, &end, 10);
      if (end == value || *end != '\0' || errno == ERANGE ||
          timeoutSeconds < 0 || timeoutSeconds > INT32_MAX / 1000) {
        fprintf(stderr,
                "ddp-launch: error: --timeout must be from 0 to %d seconds "
                "(0: DDPRT_TIMEOUT, else 60), got '%s'\n",
                INT32_MAX / 1000, value);
        exit(2);
      }
    } else if ((value = option(argv[i], "--trace"))) {
      tracePath = value;
    } else if ((value = option(argv[i], "--dump-params"))) {
      dumpPath = value;
    } else if ((value = option(argv[i], "--data"))) {
      flags &= ~(DDPRT_FLAG_FRACTIONAL_DATA | DDPRT_FLAG_BOUNDED_VALUES);
      if (strcmp(value, "bounded") == 0)
        flags |= DDPRT_FLAG_BOUNDED_VALUES;
      else
        setFlag(&flags, DDPRT_FLAG_FRACTIONAL_DATA, value, "fractions",
                "integers", argv[0], argv[i]);
    } else if (strcmp(argv[i], "--graph") == 0) {
      useGraph = 1;
    } else if ((value = option(argv[i], "--sync"))) {
      setFlag(&syncEachStep, 1, value, "step", "end", argv[0], argv[i]);
    } else if ((value = option(argv[i], "--gemm"))) {
      setFlag(&flags, DDPRT_FLAG_FIXED_ORDER_GEMM, value, "fixed-order",
              strcmp(value, "cublas") == 0 ? "cublas" : "library", argv[0],
              argv[i]);
    } else {
      usage(argv[0], argv[i]);
    }
  }

  ddprt_context *context = NULL;
  if (ddp_program_init(backend, flags,
                       (int32_t)(timeoutSeconds * 1000), tracePath,
                       &context) != DDPRT_OK) {
    fprintf(stderr, "ddp-launch: error: cannot start the runtime: %s\n",
            ddprt_last_error(NULL));
    return 1;
  }
  int32_t worldRank = 0, worldSize = 1, chosen = 0;
  check(context, ddprt_get_rank(context, &worldRank, &worldSize),
        "ddprt_get_rank");
  rank = worldRank;
  check(context, ddprt_get_backend(context, &chosen), "ddprt_get_backend");
  if (useGraph && chosen != DDPRT_BACKEND_CUDA) {
    fprintf(stderr, "ddp-launch: error: --graph records CUDA graphs, but the "
                    "runtime runs on the CPU backend; add --backend=cuda\n");
    exit(2);
  }
  check(context, ddp_program_setup(context, seed), "setting up the program");

  double thirdStart = 0;
  for (long step = 1; step <= steps; ++step) {
    double start = now();
    if (step == 3)
      thirdStart = start;
    if (useGraph && step >= 2) {
      /* The first step allocated the optimizer state: the second is
       * recorded, then run as the graph it became. */
      if (step == 2) {
        check(context, ddprt_graph_begin(context), "ddprt_graph_begin");
        check(context, ddp_program_step(context), "recording a step");
        check(context, ddprt_graph_end(context), "ddprt_graph_end");
        start = now();
      }
      check(context, ddprt_graph_launch(context), "ddprt_graph_launch");
    } else {
      check(context, ddp_program_step(context), "a step");
    }
    double issued = now();
    const char *graphNote = useGraph && step >= 2 ? ", CUDA graph" : "";
    const char *backendName = chosen == DDPRT_BACKEND_CUDA ? "cuda" : "cpu";
    if (!syncEachStep) {
      if (rank == 0)
        printf("ddp-launch: step %ld: issued in %.3f ms on rank 0 (%d ranks, "
               "%s backend%s, not waited for)\n",
               step, (issued - start) * 1e3, worldSize, backendName,
               graphNote);
      /* The mean from the third step on counts none of the first two. */
      if (step == 2)
        check(context, ddprt_synchronize(context), "ddprt_synchronize");
      continue;
    }
    check(context, ddprt_synchronize(context), "ddprt_synchronize");
    if (rank == 0)
      printf("ddp-launch: step %ld: %.3f ms on rank 0 (%d ranks, %s "
             "backend%s), issued in %.3f ms\n",
             step, (now() - start) * 1e3, worldSize, backendName, graphNote,
             (issued - start) * 1e3);
  }
  if (!syncEachStep) {
    check(context, ddprt_synchronize(context), "ddprt_synchronize");
    if (rank == 0 && steps >= 3)
      printf("ddp-launch: steps 3-%ld issued back to back: %.3f ms a step "
             "on rank 0\n",
             steps, (now() - thirdStart) * 1e3 / (double)(steps - 2));
  }

  /* A step built with overlap-param-gather leaves each rank with only its
   * shard of the update and gathers the rest in the next step: complete that
   * gather first (a collective, so on every rank). */
  if (dumpPath)
    check(context, ddprt_finish_param_sync(context), "ddprt_finish_param_sync");
  if (dumpPath)
    dumpParams(context, dumpPath, rank);
  check(context, ddp_program_teardown(context), "tearing down the program");
  ddprt_status status = ddprt_finalize(context);
  check(NULL, status, "ddprt_finalize");
  return 0;
}
