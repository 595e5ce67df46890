ddp.mesh @world(dp = 2)
func.func private @reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func private @indirect(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = func.call @reduce(%g) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @conditional_call(%g: tensor<8xf32>, %c: i1) {
  // expected-note @+1 {{the enclosing op}}
  "test.if"(%c) ({
    // expected-error @+1 {{this call of a function that issues collectives is issued inside 'test.if', so whether it runs may depend on the rank}}
    %r = func.call @indirect(%g) : (tensor<8xf32>) -> tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : (i1) -> ()
  return
}
