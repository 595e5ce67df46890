// Each field recorded false beside its Megatron flag recorded true.
module attributes {ddp.schedule_options = {"check-for-nan-in-grad" = false, "check-for-nan-in-loss-and-grad" = true, "average-in-collective" = false, "ddp-average-in-collective" = true, "grad-reduce-in-fp32" = false, "accumulate-allreduce-grads-in-fp32" = true, "pad-buckets-for-high-nccl-busbw" = false, "ddp-pad-buckets-for-high-nccl-busbw" = true, "use-distributed-optimizer" = true}} {
  ddp.mesh @world(dp = 2)
  ddp.param @w : tensor<8xbf16>
  func.func @step(%g: tensor<8xbf16>) {
    %r = ddp.grad_ready @w, %g : tensor<8xbf16>
    %a = ddp.all_reduce avg %r over @world[dp] : tensor<8xbf16>
    ddp.sgd @w, %a lr 0.5 : tensor<8xbf16>
    return
  }
}
