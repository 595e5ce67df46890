//===- CudaGraph.cpp - A step recorded once as a CUDA graph, then replayed ===//
//
// ddprt_graph_begin/end/launch. The compute stream is captured in relaxed
// mode (the watchdog's thread keeps querying events meanwhile); the
// communication stream joins the capture through the event every collective
// waits for, and leaves it through the event its handle is waited on. What
// reads the device from the host, and tracing, which times spans with
// events, are refused while recording (CudaBackend.cpp). DDPRT_GRAPH_DOT=FILE
// writes each recorded graph there as Graphviz (cudaGraphDebugDotPrint), to
// see what a replay launches.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <cstdlib>

using namespace ddprt;
using namespace ddprt::cuda;

Status CudaBackend::refuseWhileRecording(const char *what) const {
  if (!capturing)
    return Status::ok();
  return makeError(DDPRT_ERROR_INVALID_ARGUMENT, what,
                   " while a CUDA graph is being recorded (between "
                   "ddprt_graph_begin and ddprt_graph_end): a graph holds "
                   "device work only");
}

void CudaBackend::dropRecording() {
  if (!capturing)
    return;
  capturing = false;
  cudaGraph_t abandoned = nullptr;
  if (cudaStreamEndCapture(computeStream, &abandoned) == cudaSuccess &&
      abandoned)
    cudaGraphDestroy(abandoned);
}

Status CudaBackend::beginGraph() {
  if (capturing)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_graph_begin: a graph is already being recorded");
  if (env.trace.isEnabled())
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_graph_begin: tracing times every op with events, "
                     "which a CUDA graph does not replay; trace a run "
                     "without graphs");
  DDPRT_RETURN_IF_ERROR(flushPointToPoint());
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaStreamBeginCapture(computeStream, cudaStreamCaptureModeRelaxed),
      "cudaStreamBeginCapture(compute, relaxed)"));
  capturing = true;
  return Status::ok();
}

Status CudaBackend::endGraph() {
  if (!capturing)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_graph_end: no graph is being recorded (call "
                     "ddprt_graph_begin first)");
  Status flushed = flushPointToPoint();
  capturing = false;
  cudaGraph_t captured = nullptr;
  cudaError_t error = cudaStreamEndCapture(computeStream, &captured);
  if ((!flushed.isOk() || error != cudaSuccess) && captured) {
    cudaGraphDestroy(captured);
    captured = nullptr;
  }
  DDPRT_RETURN_IF_ERROR(flushed);
  if (error == cudaErrorStreamCaptureUnjoined)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_graph_end: work issued on the communication "
                     "stream while recording (an asynchronous collective, "
                     "or what ddprt_comm_wait ordered there) was not waited "
                     "for before ddprt_graph_end (a step built with "
                     "overlap-param-gather leaves its parameter gathers to "
                     "the next step); record a step that waits for all of "
                     "its collectives");
  DDPRT_RETURN_IF_ERROR(
      checkCuda(error, "cudaStreamEndCapture(compute) in ddprt_graph_end"));
  if (graphExec)
    cudaGraphExecDestroy(graphExec);
  if (graph)
    cudaGraphDestroy(graph);
  graphExec = nullptr;
  graph = captured;
  if (const char *dot = std::getenv("DDPRT_GRAPH_DOT"); dot && *dot)
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaGraphDebugDotPrint(graph, dot, 0),
                  concat("cudaGraphDebugDotPrint(DDPRT_GRAPH_DOT=", dot, ")")));
  DDPRT_RETURN_IF_ERROR(checkCuda(cudaGraphInstantiate(&graphExec, graph, 0),
                                  "cudaGraphInstantiate in ddprt_graph_end"));
  // Uploaded now, so that the first launch costs what the others do.
  return checkCuda(cudaGraphUpload(graphExec, computeStream),
                   "cudaGraphUpload in ddprt_graph_end");
}

Status CudaBackend::launchGraph() {
  DDPRT_RETURN_IF_ERROR(refuseWhileRecording("ddprt_graph_launch"));
  if (!graphExec)
    return makeError(DDPRT_ERROR_INVALID_ARGUMENT,
                     "ddprt_graph_launch: no graph has been recorded (call "
                     "ddprt_graph_begin, the step, then ddprt_graph_end)");
  return checkCuda(cudaGraphLaunch(graphExec, computeStream),
                   "cudaGraphLaunch(compute)");
}
