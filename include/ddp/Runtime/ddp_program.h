/*===- ddp_program.h - Entry points of a lowered step --------------*- C -*-===*
 *
 * What `ddp-lower-to-runtime` generates and what its hosts call: ddp-run
 * (through the JIT) and the ahead-of-time launcher runtime/launcher (linked
 * with an object file written by `ddp-run --emit-object`). Plain C with no
 * dependency but the runtime's ABI header, so that the launcher builds on a
 * machine without MLIR. docs/Lowering.md has the semantics.
 *
 * A host runs a program as
 *
 *   ddprt_context *context;
 *   ddp_program_init(DDPRT_BACKEND_CPU, 0, 0, NULL, &context);
 *   ddp_program_setup(context, seed);
 *   for (int i = 0; i < steps; ++i)
 *     ddp_program_step(context);
 *   ddp_program_teardown(context);
 *   ddprt_finalize(context);
 *
 * Every entry point returns the first failing runtime status (DDPRT_OK when
 * all went well); ddprt_last_error gives the message.
 *
 * Versioned with the runtime's ABI: ddp_program_init passes the
 * DDPRT_ABI_VERSION the program was lowered for to ddprt_init, which refuses
 * any other, so a program and a host built from different headers fail at
 * init, naming both versions. A change to these entry points bumps
 * DDPRT_ABI_VERSION (RuntimeFunctions.def).
 *
 *===----------------------------------------------------------------------===*/

#ifndef DDP_RUNTIME_DDP_PROGRAM_H
#define DDP_RUNTIME_DDP_PROGRAM_H

#include "ddp/Runtime/ddprt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symbol names, for the lowering (which defines them) and the JIT host
 * (which looks them up). */
#define DDP_PROGRAM_SYM_INIT "ddp_program_init"
#define DDP_PROGRAM_SYM_SETUP "ddp_program_setup"
#define DDP_PROGRAM_SYM_STEP "ddp_program_step"
#define DDP_PROGRAM_SYM_TEARDOWN "ddp_program_teardown"

/* ddprt_init with the ABI version the program was compiled against and the
 * program's mesh ("dp=2,tp=2"); the other arguments are ddprt_init's. */
ddprt_status ddp_program_init(int32_t backend, int32_t flags,
                              int32_t timeout_ms, const char *trace_path,
                              ddprt_context **context);

/* Creates the program's process groups (in the order the step first uses
 * them), registers its parameters (initialised from `seed` and their names,
 * identical on every rank), allocates its buffers and fills the step's inputs
 * from `seed` and the rank. Collective: every rank calls it. */
ddprt_status ddp_program_setup(ddprt_context *context, uint64_t seed);

/* Runs one step: forward, backward, gradient reduction and optimizer update,
 * as the step function lists them. Collective. */
ddprt_status ddp_program_step(ddprt_context *context);

/* Frees the buffers of ddp_program_setup (parameters stay with the
 * context until ddprt_finalize). */
ddprt_status ddp_program_teardown(ddprt_context *context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DDP_RUNTIME_DDP_PROGRAM_H */
