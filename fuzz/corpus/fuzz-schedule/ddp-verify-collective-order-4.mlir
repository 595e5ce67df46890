ùddp.mesh @world(dp = 2)
func.func @wait_in_other_block(%g: tensor<8xf32>) {
  // expected-error @+2 {{this collective is in function @wait_in_other_block, which branches between blocks}}
  // expected-error @+1 {{its token is waited in another block}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  "test.br"()[^next] : () -> ()
^next:
  // expected-note @+1 {{the wait}}
  ddp.wait %t
  return
}
