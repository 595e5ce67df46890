çddp.mesh @world(dp = 2)
func.func @branches(%g: tensor<8xf32>) {
  "test.br"()[^next] : () -> ()
^next:
  // expected-error @+1 {{this collective is in function @branches, which branches between blocks, so whether it runs may depend on the rank}}
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return
}
